"""tf2onnx conversion, below the ONNX writers: `convert` (a ``tf.function``
to an ONNX model, recurrences traced under `onnx_tracing`), tf2onnx's logged
errors raised (`tf2onnx_errors_raise`) and the manifest's description of an
ONNX graph's inputs and outputs (`value_specs`). Used by `onnx` (the model on
ids or numbers) and `onnx_text_graph` (the model on strings)."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import tensorflow as tf

from keras_rnncells.export.manifest import tensor_spec
from keras_rnncells.export.onnx_rnn import native_op_handlers, onnx_tracing

MIN_OPSET = 17


class RaiseOnError(logging.Handler):
    """A logging handler raising ``ValueError`` on each error record."""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage().splitlines()[0]
        if record.exc_info and record.exc_info[1] is not None:
            message = f"{message}: {record.exc_info[1]!r}"
        raise ValueError(
            f"tf2onnx failed to convert the model ({message}); it would have written an "
            "ONNX model that onnxruntime refuses"
        )


class PlaceholderShapeNotes(logging.Filter):
    """Drops tf2onnx's warnings that it cannot infer the output shapes of our
    native-op placeholders (``onnx_GRU``, ``onnx_LSTM``, ``onnx_RNN``, see
    `keras_rnncells.export.onnx_rnn`): TensorFlow ops it does not know, which
    `native_op_handlers` turns into ONNX nodes whose shapes ONNX knows. Every
    other record passes."""

    PLACEHOLDER = re.compile(r"^Cannot infer shape for \S*onnx_(GRU|LSTM|RNN)(_\d+)?: ")

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.PLACEHOLDER.match(record.getMessage())


@contextlib.contextmanager
def placeholder_shape_notes_dropped() -> Iterator[None]:
    logger = logging.getLogger("tf2onnx.shape_inference")
    notes = PlaceholderShapeNotes()
    logger.addFilter(notes)
    try:
        yield
    finally:
        logger.removeFilter(notes)


@contextlib.contextmanager
def tf2onnx_errors_raise() -> Iterator[None]:
    """Within this context an error tf2onnx logs while converting (a node it
    could not convert, unsupported ops) raises ``ValueError`` at once, before
    tf2onnx writes anything. For Keras' own export::

        with tf2onnx_errors_raise():
            model.export("model.onnx", format="onnx")
    """
    logger = logging.getLogger("tf2onnx")
    handler = RaiseOnError(logging.ERROR)
    level = logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.ERROR:  # errors silenced: still raise
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def convert(function: Any, opset: int = MIN_OPSET) -> tuple[Any, list[dict[str, str]]]:
    """``function`` (a ``tf.function`` with a named ``input_signature``) as an
    ONNX ``ModelProto``, and what each recurrent layer became."""
    import tf2onnx

    if isinstance(opset, bool) or not isinstance(opset, int) or opset < MIN_OPSET:
        raise ValueError(f"Argument `opset` must be an integer >= {MIN_OPSET}, received: {opset!r}")
    signature = getattr(function, "input_signature", None)
    if not signature:
        raise ValueError(
            "Argument `servable` must give a tf.function with an input_signature of "
            f"named TensorSpecs for ONNX, received: {function!r}"
        )
    fresh = tf.function(function.python_function, input_signature=signature)
    with onnx_tracing() as layers:
        outputs = fresh.get_concrete_function().structured_outputs
    if not isinstance(outputs, dict) or not all(isinstance(t, tf.Tensor) for t in outputs.values()):
        raise ValueError(
            "Argument `servable` must give a function returning a flat dict of named "
            f"tensors for ONNX, received outputs {outputs!r}"
        )
    with tf2onnx_errors_raise(), placeholder_shape_notes_dropped():
        model, _ = tf2onnx.convert.from_function(
            fresh, input_signature=signature, opset=opset, custom_op_handlers=native_op_handlers()
        )
    return model, layers


def value_specs(values: Any) -> list[dict[str, Any]]:
    """The manifest's inputs or outputs from an ONNX graph's value infos."""
    from onnx import helper

    specs = []
    for value in values:
        tensor = value.type.tensor_type
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type)).name
        dtype = "string" if dtype == "object" else dtype  # ONNX's only object type
        shape = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
        specs.append(tensor_spec(value.name, dtype, shape))
    return specs
