"""ONNX export: tf2onnx conversion, an onnxruntime parity check, a manifest.

Layout: ``EXPORT_DIR/onnx/<model>/<version>/model.onnx`` next to its
``manifest.json`` (``onnx_path``), so ``EXPORT_DIR/<model>/<version>/`` stays
TF Serving's SavedModel directory and each artifact has a directory (and a
manifest) of its own.

The model is traced afresh for ONNX under ``onnx_tracing`` (onnx_rnn.py):
GRU, LSTM and SimpleRNN layers become ONNX's GRU/LSTM/RNN nodes, every other
cell Keras' while loop (an ONNX ``Loop``); the manifest's
``recurrent_layers`` says which layer became what, and why.

``write_onnx`` takes an application's `Servable` or any Keras model
(`keras_rnncells.export.servable_from_model`). With ``streaming=True`` it also
writes ``model_step.onnx``, the step form (`keras_rnncells.export.streaming`:
the inputs holding k >= 1 new steps and ``state_0`` ... ``state_{n-1}`` in, the
outputs and the new states out), checked chunk by chunk against the whole
sequence in TensorFlow and against TensorFlow in onnxruntime; the manifest
describes it under ``streaming``.

tf2onnx's Python API (``tf2onnx.convert.from_function``, which Keras'
``model.export(format="onnx")`` calls too) converts with
``continue_on_error=True``: a node it fails to convert is logged, and the
model is written anyway, one onnxruntime refuses to load. Conversion here
(`onnx_convert.convert`) runs under `onnx_convert.tf2onnx_errors_raise`,
which turns such an error into a ``ValueError`` before anything is written;
wrap Keras' ``model.export(..., format="onnx")`` in it for the same.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import keras
import numpy as np

from keras_rnncells.checks import check_float
from keras_rnncells.export.check import full_float32
from keras_rnncells.export.manifest import write_manifest
from keras_rnncells.export.onnx_convert import MIN_OPSET, convert, value_specs
from keras_rnncells.export.onnx_text import STRING_MODEL_FILE, write_string_model
from keras_rnncells.export.saved_model import check_version
from keras_rnncells.export.servable import Servable, as_servable
from keras_rnncells.export.streaming import check_streaming, step_form
from keras_rnncells.files import write_atomically

TOLERANCE = 1e-4  # float outputs, onnxruntime vs TensorFlow
MODEL_FILE = "model.onnx"
STEP_MODEL_FILE = "model_step.onnx"  # the step form, next to the model (streaming=True)


def onnx_path(export_dir: str | os.PathLike, name: str, version: int) -> Path:
    """Where ``write_onnx`` puts model ``name``, version ``version``."""
    return Path(export_dir) / "onnx" / name / str(version) / MODEL_FILE


def run_onnx(model: Any, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``model`` (a ``ModelProto`` or a path) run by onnxruntime on the CPU."""
    import onnxruntime

    source = model if isinstance(model, (str, os.PathLike)) else model.SerializeToString()
    session = onnxruntime.InferenceSession(
        str(source) if isinstance(source, Path) else source, providers=["CPUExecutionProvider"]
    )
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


def parity(model: Any, function: Any, examples: dict[str, np.ndarray]) -> dict[str, float]:
    """Max absolute difference per output between onnxruntime and TensorFlow
    (in full float32, as onnxruntime computes: `check.full_float32`)."""
    with full_float32():
        expected = {name: np.asarray(value) for name, value in function(**examples).items()}
    found = run_onnx(model, examples)
    missing = sorted(set(expected) - set(found))
    if missing:
        raise ValueError(f"The ONNX model lacks output(s) {missing}; it has {sorted(found)}")
    return {
        name: float(np.max(np.abs(found[name].astype(np.float64) - value), initial=0.0))
        for name, value in expected.items()
    }


def write_vocabulary(path: Path, tokens: list[str]) -> None:
    write_atomically(
        path, lambda temporary: Path(temporary).write_text("\n".join(tokens) + "\n", "utf-8")
    )


def write_onnx(
    servable: Servable | keras.Model,
    path: str | os.PathLike,
    opset: int = MIN_OPSET,
    check: bool = True,
    tolerance: float = TOLERANCE,
    version: int | None = None,
    string_input: bool = True,
    streaming: bool = False,
) -> dict[str, Any]:
    """Converts ``servable.onnx()`` with tf2onnx and writes it to ``path``
    (atomically), with ``manifest.json`` and the vocabulary files next to it.
    ``servable``: a `Servable`, or any Keras model (its inputs and outputs
    named as `keras_rnncells.export.servable_from_model` names them).

    With ``check`` the model first runs in onnxruntime on the servable's
    examples; the largest absolute difference from TensorFlow per output is
    recorded as ``parity``, and a ``ValueError`` is raised (nothing written)
    when one exceeds ``tolerance``. Returns the manifest.

    With ``string_input``, a servable with ``onnx_text`` also gets
    ``model_text.onnx`` on strings (`keras_rnncells.export.onnx_text`),
    checked the same way, described under ``string_input`` in the manifest.

    With ``streaming``, also ``model_step.onnx``, the step form (`step_model`;
    a ``ValueError`` naming the layer where the model cannot stream),
    described under ``streaming`` in the manifest.
    """
    path = Path(path)
    if path.suffix != ".onnx":
        raise ValueError(f"Argument `path` must name a .onnx file, received: {str(path)!r}")
    check_float("tolerance", tolerance, "(0, inf)")
    check_version(version)
    if isinstance(opset, bool) or not isinstance(opset, int) or opset < MIN_OPSET:
        raise ValueError(f"Argument `opset` must be an integer >= {MIN_OPSET}, received: {opset!r}")
    servable = as_servable("servable", servable)
    function, examples = servable.onnx()
    model, layers = convert(function, opset)
    errors = parity(model, function, examples) if check else {}
    too_far = {name: error for name, error in errors.items() if not error <= tolerance}
    if too_far:
        raise ValueError(
            f"ONNX model {servable.name!r} differs from TensorFlow by {too_far} "
            f"(max abs error per output), above tolerance={tolerance}"
        )
    extra = {"file": path.name, "opset": opset_of(model), "recurrent_layers": layers}
    if streaming:  # converted and checked before anything is written
        if path.name == STEP_MODEL_FILE:
            raise ValueError(
                f"Argument `path` must not be named {STEP_MODEL_FILE!r} with streaming=True: "
                "the step model is written there"
            )
        step, extra["streaming"] = step_model(servable, opset, check, tolerance)
    if string_input and servable.onnx_text is not None:  # a model on strings; checked first
        extra["string_input"] = write_string_model(
            servable, path.parent / STRING_MODEL_FILE, opset, check, tolerance
        )
    write_atomically(path, lambda temporary: Path(temporary).write_bytes(model.SerializeToString()))
    if streaming:
        write_atomically(
            path.parent / STEP_MODEL_FILE,
            lambda temporary: Path(temporary).write_bytes(step.SerializeToString()),
        )
    for name, tokens in servable.vocabulary_files.items():
        write_vocabulary(path.parent / name, tokens)
    measured = {"max_abs_error": errors, "tolerance": tolerance, "runtime": "onnxruntime"}
    manifest_path = write_manifest(
        path.parent,
        model=servable.name,
        cell=servable.cell,
        version=version,
        format="onnx",
        inputs=value_specs(model.graph.input),
        outputs=value_specs(model.graph.output),
        parity=measured if check else {},
        vocabulary_files=sorted(servable.vocabulary_files),
        extra=extra,
    )
    return json.loads(manifest_path.read_text(encoding="utf-8"))


def step_model(
    servable: Servable, opset: int, check: bool, tolerance: float
) -> tuple[Any, dict[str, Any]]:
    """The step form of ``servable`` (`keras_rnncells.export.streaming`)
    converted to ONNX, and its manifest entry. With ``check``: fed chunk by
    chunk against the whole sequence in TensorFlow, then run by onnxruntime on
    inputs that continue a sequence (``StepForm.examples``) against TensorFlow;
    a ``ValueError`` above ``tolerance``."""
    form = step_form(servable)
    chunked = check_streaming(form, tolerance) if check else {}
    model, layers = convert(form.function, opset)
    errors = parity(model, form.function, form.examples) if check else {}
    too_far = {name: error for name, error in errors.items() if not error <= tolerance}
    if too_far:
        raise ValueError(
            f"ONNX step model {servable.name!r} differs from TensorFlow by {too_far} "
            f"(max abs error per output), above tolerance={tolerance}"
        )
    measured = {"max_abs_error": errors, "tolerance": tolerance, "runtime": "onnxruntime"}
    return model, {
        "file": STEP_MODEL_FILE,
        "inputs": value_specs(model.graph.input),
        "outputs": value_specs(model.graph.output),
        **form.description(),
        "recurrent_layers": layers,
        "parity": {"chunked": chunked, "onnxruntime": measured} if check else {},
    }


def opset_of(model: Any) -> int:
    """The default-domain opset an ONNX model was written for."""
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
