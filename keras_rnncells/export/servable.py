"""What an application hands the exporters: its serving functions and examples."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_rnncells.cells.registry import get_cell
from keras_rnncells.layers.rnn import RNN, portable


@dataclass
class Servable:
    """A trained model ready for export.

    * ``name``: the model's name in TF Serving's layout (``EXPORT/<name>/<version>``).
    * ``module``: a ``tf.Module`` tracking every variable and lookup table the
      functions use (the Keras model, tokenizers).
    * ``serve``: a ``tf.function`` with an ``input_signature`` of named
      tensors (batch dimension ``None``), returning a dict of named outputs:
      the SavedModel's ``serving_default``. Strings in and out where the
      application reads or writes text; tokenization and decoding inside.
    * ``examples``: a batch of valid inputs of ``serve``, by input name,
      used to measure parity and to check the reloaded artifact.
    * ``onnx_function`` / ``onnx_examples``: the same model on token ids or
      numbers (no string ops), for ONNX; ``None`` where ``serve`` has no
      string input and converts as it is.
    * ``onnx_text``: a ``keras_rnncells.export.onnx_text.StringFrontEnd``
      where the ONNX export also writes a model on strings (the app's
      tokenizer rebuilt from onnx and onnxruntime-extensions ops), else ``None``.
    * ``vocabulary_files``: file name -> tokens, written next to the model.
    """

    name: str
    cell: str | None
    module: tf.Module
    serve: Any
    examples: dict[str, np.ndarray]
    onnx_function: Any = None
    onnx_examples: dict[str, np.ndarray] | None = None
    onnx_text: Any = None
    vocabulary_files: dict[str, list[str]] = field(default_factory=dict)

    def onnx(self) -> tuple[Any, dict[str, np.ndarray]]:
        """The function and examples to convert to ONNX."""
        if self.onnx_function is None:
            return self.serve, self.examples
        return self.onnx_function, self.onnx_examples


def check_servable(name: str, servable: Any) -> Servable:
    """``servable`` if it is a `Servable`, else a ``ValueError`` naming ``name``."""
    if not isinstance(servable, Servable):
        raise ValueError(
            f"Argument `{name}` must be a keras_rnncells.export.Servable "
            f"(from keras_rnncells.apps.servable_for), received: {servable!r}"
        )
    return servable


def traced(function: Callable, input_signature: dict[str, tf.TensorSpec]) -> Any:
    """``function(**inputs)`` as a ``tf.function`` whose signature names its
    inputs, traced on the portable path (no cuDNN-only op, so an artifact
    written on a GPU serves on a CPU)."""
    names = list(input_signature)

    def call(*tensors):
        return function(**dict(zip(names, tensors)))

    call.__signature__ = inspect.Signature(  # callable by input name
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names]
    )

    specs = [
        tf.TensorSpec(spec.shape, spec.dtype, name=name) for name, spec in input_signature.items()
    ]
    serve = tf.function(call, input_signature=specs)
    with portable():
        serve.get_concrete_function()
    return serve


def layer_servable(
    layer: keras.layers.Layer, name: str, input_dim: int, cell: str | None = None, seed: int = 0
) -> Servable:
    """A bare sequence-to-sequence layer on float sequences ``(batch, steps,
    input_dim)``, returning its outputs and their last step."""
    layer.build((None, None, input_dim))
    module = tf.Module()
    module.layer = layer

    def run(sequences):
        outputs = layer(sequences)
        return {"outputs": outputs, "last": outputs[:, -1]}

    serve = traced(run, {"sequences": tf.TensorSpec((None, None, input_dim), tf.float32)})
    rng = np.random.default_rng(seed)
    examples = {"sequences": rng.normal(size=(2, 5, input_dim)).astype("float32")}
    return Servable(name=name, cell=cell, module=module, serve=serve, examples=examples)


def recurrent_layer_servable(
    cell: str, units: int = 4, input_dim: int = 3, seed: int = 0, **layer_kwargs: Any
) -> Servable:
    """``layer_servable`` of ``RNN(get_cell(cell)(units), return_sequences=True)``:
    what the exporters' tests convert for every cell."""
    keras.utils.set_random_seed(seed)
    layer = RNN(get_cell(cell)(units), return_sequences=True, **layer_kwargs)
    return layer_servable(layer, f"rnn-{cell}", input_dim, cell, seed)
