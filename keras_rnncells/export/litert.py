"""LiteRT export (the successor of TensorFlow Lite): ``model.tflite`` for
phones and microcontrollers, builtin ops only, checked in LiteRT's own
interpreter without TensorFlow.

``write_litert(servable_or_model, export_root)`` writes
``export_root/<name>/<version>/`` (``rnncells export`` puts it under
``EXPORT_DIR/litert/``)::

    model.tflite     the model on numbers or token ids (the servable's ONNX form,
                     `Servable.onnx`: the text stays in the app), signature
                     "serving_default", inputs and outputs named as the servable's
    <vocabulary>     the tokens, one per line, where the model takes token ids
    tokenizer.py     for a model on token ids: the app's tokenizer in plain Python
                     (keras_rnncells.text.standalone; no TensorFlow), reading the
                     manifest's "tokenizer" entry and the files it names
    manifest.json    keras_rnncells.export.manifest: ops, quantization, parity

with the SavedModel writer's staging, version claims and signing
(`keras_rnncells.export.saved_model.Staging`): a version directory appears
whole, once every check passed, or not at all.

How recurrences convert (`litert_tracing`): TensorFlow's while loop becomes
LiteRT's ``WHILE``, but the TensorList in which Keras' loop (and our portable
loop, for tf2onnx) collects a sequence's outputs lowers to builtin ops only
where its element shape is static, which a batch known at run time is not:
Keras' own ``GRU`` and ``LSTM`` need the Flex ops that the LiteRT interpreter
lacks. Our layers run their portable loop with its outputs in one tensor
written step by step (`keras_rnncells.layers.portable_loop.scattered_outputs`), so
every registered cell converts to builtin ops and one file serves any batch
and any length (the interpreter resizes its inputs).

With a fixed ``batch_size``, an ``LSTM`` layer in LiteRT's configuration
(``fused_lstm_ineligibility`` is None: an ``LSTMCell`` with sigmoid and tanh,
no layer norm, float32, no mask, no returned or carried state) becomes one
``UNIDIRECTIONAL_SEQUENCE_LSTM`` op, LiteRT's fused kernel: the converter
fuses a function marked as Keras' LSTM (``api_implements="lstm_..."``) only
where its initial states have a static shape. The converter writes that op
with a cell clip of 10; `unclipped_lstm_cells` sets it to none, so the op
computes our LSTM exactly. A ``Bidirectional`` over such layers becomes two
ops. The converter's fusion takes the plain LSTM's six arguments only, so
the peephole, CIFG and layer-norm variants stay loops (LiteRT's op has
operands for them, but nothing in the converter writes them).

Quantization (``quantize``): ``"dynamic"`` (int8 weights, float
activations), ``"float16"`` (float16 weights) or ``"int8"`` (full integer
kernels from a representative dataset; the model's inputs and outputs stay
float). A quantized model's errors against the float model are recorded in
the manifest, not held to ``tolerance``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_rnncells.cells.lstm import LSTMCell
from keras_rnncells.checks import check_float
from keras_rnncells.export import litert_run
from keras_rnncells.export.check import full_float32
from keras_rnncells.export.fresh import run_fresh_python
from keras_rnncells.export.manifest import sign_manifest, tensor_spec, write_manifest
from keras_rnncells.export.saved_model import Staging, check_version
from keras_rnncells.export.servable import Servable, as_servable
from keras_rnncells.export.streaming import (
    STEP_SIGNATURE,
    TREE_PACKAGE,
    StepForm,
    check_streaming,
    servable_layers,
    step_form,
)
from keras_rnncells.export.tokenizer_files import tokenizer_manifest
from keras_rnncells.layers.portable_loop import scattered_outputs
from keras_rnncells.layers.rnn import RNN, in_fed_loop, loop_override, portable

MODEL_FILE = "model.tflite"
STEP_MODEL_FILE = "model_step.tflite"  # the step form, with `streaming`
SIGNATURE = "serving_default"
QUANTIZATIONS = (None, "dynamic", "float16", "int8")
TOLERANCE = 1e-5  # float outputs, LiteRT's interpreter vs TensorFlow
# The checks' inputs beside the servable's examples: one row of one step, and
# CHECK_ROWS rows of CHECK_STEPS steps (an odd length, another batch).
CHECK_ROWS, CHECK_STEPS = 3, 7

__all__ = [
    "MODEL_FILE",
    "QUANTIZATIONS",
    "fused_lstm_ineligibility",
    "litert_tracing",
    "write_litert",
]


# -- tracing -------------------------------------------------------------------


def fused_lstm_ineligibility(layer: Any, sequences: Any, mask: Any) -> str | None:
    """``None`` where ``layer`` (an ``RNN``) on ``sequences`` becomes LiteRT's
    ``UNIDIRECTIONAL_SEQUENCE_LSTM`` op, else a sentence naming what stands in
    the way."""
    cell = layer.cell
    if type(cell) is not LSTMCell:
        return f"{type(cell).__name__} is not LSTMCell"
    reason = cell.onnx_ineligibility()  # sigmoid / tanh, no layer norm, float32
    if reason is not None:
        return reason
    if mask is not None:
        return "the op takes no mask"
    if layer.stateful or layer.return_state or in_fed_loop():
        return "the op returns no final state"
    if sequences.shape[0] is None:
        return "the batch size is not fixed (write_litert(batch_size=...))"
    return None


def standard_lstm(inputs, init_h, init_c, kernel, recurrent_kernel, bias, go_backwards=False):
    """An LSTM over batch-major ``inputs`` (gates i, f, c, o; sigmoid and tanh;
    from the last step with ``go_backwards``, the outputs in the order run)
    with the five results of Keras 2's ``standard_lstm``: ``(last_output,
    outputs, h, c, runtime)``. The converter replaces the body by its fused op
    (reversing the inputs itself, from the function's ``go_backwards``
    attribute), so this is what the function means wherever TensorFlow runs it."""
    if go_backwards:
        inputs = tf.reverse(inputs, [1])

    def step(carry, x):
        h, c = carry
        i, f, g, o = tf.split(tf.matmul(x, kernel) + tf.matmul(h, recurrent_kernel) + bias, 4, 1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        return tf.sigmoid(o) * tf.tanh(c), c

    hs, cs = tf.scan(step, tf.transpose(inputs, (1, 0, 2)), (init_h, init_c))
    outputs = tf.transpose(hs, (1, 0, 2))
    return outputs[:, -1], outputs, hs[-1], cs[-1], tf.constant(0.0)


def fused_lstm(layer: Any, sequences, initial_state) -> tuple:
    """``inner_loop``'s ``(last_output, outputs, states)`` of an eligible LSTM
    layer as the function LiteRT's converter fuses. Its final states are not
    computed (the op returns none): ``states`` are the initial ones, which an
    eligible layer (`fused_lstm_ineligibility`) never returns."""
    cell = layer.cell
    attributes = {
        "api_implements": f"lstm_{uuid.uuid4()}",
        "time_major": False,
        "go_backwards": bool(layer.go_backwards),
    }
    lstm = tf.function(
        functools.partial(standard_lstm, go_backwards=attributes["go_backwards"]),
        autograph=False,
        experimental_attributes=attributes,
    )
    bias = cell.bias if cell.bias is not None else tf.zeros((4 * cell.units,), sequences.dtype)
    h, c = (tf.convert_to_tensor(s) for s in initial_state)
    weights = [tf.convert_to_tensor(w) for w in (cell.kernel, cell.recurrent_kernel, bias)]
    last, outputs, *_ = lstm(sequences, h, c, *weights)
    if not layer.return_sequences:
        outputs = last[:, None]
    return last, outputs, list(initial_state)


def litert_loop(layer: Any, sequences, initial_state, mask, training) -> tuple:
    """``loop_override`` for LiteRT tracing: the fused LSTM op where it fits,
    else the layer's own loop (the portable loop, under `scattered_outputs`)."""
    if not training and fused_lstm_ineligibility(layer, sequences, mask) is None:
        return fused_lstm(layer, sequences, initial_state)
    with loop_override(None):
        return layer.inner_loop(sequences, initial_state, mask, training=training)


@contextlib.contextmanager
def litert_tracing() -> Iterator[None]:
    """Within this context layers trace what LiteRT's converter turns into
    builtin ops: no cuDNN op, loops whose outputs are one tensor, and
    the fused LSTM op where `fused_lstm_ineligibility` allows."""
    with portable(), scattered_outputs(), loop_override(litert_loop):
        yield


# -- conversion ------------------------------------------------------------------


def signature_of(function: Any, batch_size: int | None) -> list[tf.TensorSpec]:
    """``function``'s named input signature, its batch ``batch_size``."""
    signature = getattr(function, "input_signature", None)
    if not signature:
        raise ValueError(
            "Argument `servable` must give a tf.function with an input_signature of "
            f"named TensorSpecs for LiteRT, received: {function!r}"
        )
    strings = [spec.name for spec in signature if spec.dtype == tf.string]
    if strings:
        raise ValueError(
            f"Argument `servable`: input(s) {strings} are strings, which LiteRT's builtin "
            "ops do not read; give the servable a form on ids (Servable.onnx_function)"
        )
    return [
        tf.TensorSpec([batch_size, *spec.shape[1:]], spec.dtype, spec.name) for spec in signature
    ]


def litert_refusal(servable: Servable) -> str | None:
    """Why a layer of ``servable`` has no form of builtin LiteRT ops (a
    sentence naming it), or None: Keras' own recurrent layers and the tree
    layers collect their steps in a TensorList of a batch known only at run
    time, which LiteRT's builtin ops do not hold (they would need Flex ops)."""
    for layer in servable_layers(servable.module):
        what = f"layer {layer.name!r} ({type(layer).__name__})"
        if isinstance(layer, keras.layers.RNN) and not isinstance(layer, RNN):
            return (
                f"{what} is Keras' own recurrent layer, whose loop needs Flex ops; use "
                "keras_rnncells' layers (keras_rnncells.GRU, LSTM, RNN(cell), ...)"
            )
        if type(layer).__module__.startswith(TREE_PACKAGE):
            return (
                f"{what} composes its tree in a TensorList, which needs Flex ops; "
                "export it as a SavedModel or ONNX"
            )
    return None


def convert(
    servable: Servable,
    quantize: str | None = None,
    representative: Callable[[], Iterable[dict[str, np.ndarray]]] | None = None,
    batch_size: int | None = None,
) -> bytes:
    """``servable``'s model on numbers or ids (`Servable.onnx`) as a ``.tflite``
    flatbuffer of builtin ops (`converted`)."""
    reason = litert_refusal(servable)
    if reason is not None:
        raise ValueError(f"Argument `servable` has no LiteRT form of builtin ops: {reason}")
    function, _ = servable.onnx()
    return converted(
        function, servable.module, servable.name, SIGNATURE, quantize, representative, batch_size
    )


def converted(
    function: Any,
    module: tf.Module,
    name: str,
    signature: str = SIGNATURE,
    quantize: str | None = None,
    representative: Callable[[], Iterable[dict[str, np.ndarray]]] | None = None,
    batch_size: int | None = None,
) -> bytes:
    """``function`` (a ``tf.function`` with a named input signature, reading
    the variables of ``module``) as a ``.tflite`` flatbuffer of builtin ops
    whose one signature is ``signature``: traced under `litert_tracing` and
    converted from a SavedModel (the converter fuses an LSTM only there)."""
    specs = signature_of(function, batch_size)
    fresh = tf.function(function.python_function, input_signature=specs)
    with litert_tracing():
        concrete = fresh.get_concrete_function()
    outputs = concrete.structured_outputs
    if not isinstance(outputs, dict) or not all(isinstance(t, tf.Tensor) for t in outputs.values()):
        raise ValueError(
            "Argument `servable` must give a function returning a flat dict of named "
            f"tensors for LiteRT, received outputs {outputs!r}"
        )
    root = tf.Module()
    root.module = module
    root.serving_variables = list(concrete.variables)
    with tempfile.TemporaryDirectory(prefix="rnncells-litert-") as directory:
        tf.saved_model.save(root, directory, signatures={signature: concrete})
        converter = tf.lite.TFLiteConverter.from_saved_model(directory, [signature])
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        if quantize is not None:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        if quantize == "int8":
            converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            converter.representative_dataset = representative_dataset(representative, specs)
        try:
            model = converter.convert()
        except Exception as error:  # the converter's ConverterError: its first error line
            raise ValueError(
                f"LiteRT cannot convert {name!r} to builtin ops: {first_error(error)}"
            ) from error
    return unclipped_lstm_cells(model)


def first_error(error: Exception) -> str:
    """The first line of a converter error that says what failed."""
    lines = [line.strip() for line in str(error).splitlines() if "error:" in line]
    line = lines[0] if lines else str(error).strip().splitlines()[0]
    return line.split("error:", 1)[-1].strip()[:300]


def representative_dataset(
    representative: Callable[[], Iterable[dict[str, np.ndarray]]] | None,
    specs: Sequence[tf.TensorSpec],
) -> Callable[[], Iterator[dict[str, np.ndarray]]]:
    """The converter's representative dataset: each batch a dict by input name."""
    if representative is None:
        raise ValueError(
            'Argument `representative` must be given with quantize="int8": a function '
            "returning batches (dicts of arrays by input name) like those served"
        )
    names = {spec.name: spec for spec in specs}

    def batches() -> Iterator[dict[str, np.ndarray]]:
        for batch in representative():
            if not isinstance(batch, dict) or set(batch) != set(names):
                raise ValueError(
                    f"Argument `representative` must yield dicts with the keys {sorted(names)}"
                )
            yield {k: np.asarray(v, names[k].dtype.as_numpy_dtype) for k, v in batch.items()}

    return batches


def unclipped_lstm_cells(model: bytes) -> bytes:
    """``model`` with the cell clip of its ``UNIDIRECTIONAL_SEQUENCE_LSTM`` ops
    set to 0 (none): the converter writes 10, which our LSTM does not have."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    tree = schema.ModelT.InitFromPackedBuf(model, 0)
    lstm = schema.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in tree.operatorCodes]
    changed = False
    for graph in tree.subgraphs:
        for op in graph.operators or []:
            if codes[op.opcodeIndex] == lstm and op.builtinOptions.cellClip != 0:
                op.builtinOptions.cellClip = 0.0
                changed = True
    if not changed:
        return model
    builder = flatbuffers.Builder(len(model))
    builder.Finish(tree.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


# -- checks ----------------------------------------------------------------------


def check_inputs(
    examples: dict[str, np.ndarray], specs: Sequence[tf.TensorSpec], batch_size: int | None
) -> list[dict[str, np.ndarray]]:
    """The inputs a LiteRT export is checked on: the examples; one row of one
    step; `CHECK_ROWS` rows of `CHECK_STEPS` steps (rows and steps of the
    examples repeated in turn); with ``batch_size``, each of that batch."""
    lengths = {
        spec.name: [a for a, d in enumerate(spec.shape) if a > 0 and d is None] for spec in specs
    }

    def resized(rows: int, steps: int) -> dict[str, np.ndarray]:
        batch = {}
        for name, value in examples.items():
            value = np.take(value, np.arange(rows) % len(value), axis=0)
            for axis in lengths[name]:
                value = np.take(value, np.arange(steps) % value.shape[axis], axis=axis)
            batch[name] = value
        return batch

    rows = next(iter(examples.values())).shape[0]
    steps = next((examples[n].shape[a[0]] for n, a in lengths.items() if a), 1)
    shapes = [(rows, steps), (1, 1), (CHECK_ROWS, CHECK_STEPS)]
    if batch_size is not None:
        shapes = [(batch_size, s) for _, s in shapes]
    return [resized(r, s) for r, s in shapes]


def run_in_fresh_process(
    model: Path, batches: Sequence[dict[str, np.ndarray]], signature: str = SIGNATURE
) -> tuple[list[dict[str, np.ndarray]], list[str]]:
    """Each batch's outputs from ``model`` in ``ai_edge_litert``'s interpreter,
    in a new Python process that cannot import TensorFlow (`litert_run`), and
    the model's op list."""
    with tempfile.TemporaryDirectory(prefix=".check.", dir=model.parent) as temporary:
        temporary = Path(os.path.abspath(temporary))
        jobs = []
        for index, batch in enumerate(batches):
            np.savez(temporary / f"inputs{index}.npz", **batch)
            jobs.append(
                {
                    "model": os.fspath(model.resolve()),
                    "signature": signature,
                    "inputs": os.fspath(temporary / f"inputs{index}.npz"),
                    "outputs": os.fspath(temporary / f"outputs{index}.npz"),
                }
            )
        (temporary / "request.json").write_text(json.dumps(jobs), encoding="utf-8")
        source = Path(litert_run.__file__).read_text(encoding="utf-8")
        run_fresh_python(
            source, [temporary / "request.json"], "Running the LiteRT model", temporary
        )
        outputs = []
        for job in jobs:
            with np.load(job["outputs"]) as loaded:
                outputs.append(dict(loaded))
        ops = json.loads(Path(f"{jobs[0]['outputs']}.ops.json").read_text(encoding="utf-8"))
        return outputs, ops


def litert_parity(
    name: str,
    function: Any,
    examples: dict[str, np.ndarray],
    model: Path,
    batch_size: int | None,
    tolerance: float,
    quantize: str | None,
    signature: str = SIGNATURE,
) -> tuple[dict[str, Any], list[str]]:
    """The interpreter's outputs of ``model``'s ``signature`` against
    ``function``'s in this process (full float32) on `check_inputs` of
    ``examples``, and the op list. Float models must agree to ``tolerance``
    (times the value's magnitude where it exceeds 1); a quantized one's errors
    are recorded only (but must be finite where the reference is). A failed
    check is a ValueError, and nothing is published."""
    specs = signature_of(function, batch_size)
    batches = check_inputs(examples, specs, batch_size)
    found, ops = run_in_fresh_process(model, batches, signature)
    errors: dict[str, float] = {}
    for batch, actual in zip(batches, found):
        with full_float32():
            expected = function(**{k: tf.constant(v) for k, v in batch.items()})
        for output, want in expected.items():
            want = want.numpy()
            got = actual.get(output)
            if got is None or got.shape != want.shape:
                raise ValueError(
                    f"LiteRT model {name!r}: output {output!r} came back as "
                    f"{None if got is None else got.shape}, not {want.shape}"
                )
            if np.issubdtype(want.dtype, np.floating):
                difference = np.abs(got.astype(np.float64) - want)
                error = float(np.max(difference, initial=0.0))
                # relative beyond magnitude 1: a score summed over many tokens
                # rounds in float32 with its size
                allowed = tolerance * np.maximum(1.0, np.abs(want))
                if not np.isfinite(error) or (quantize is None and np.any(difference > allowed)):
                    raise ValueError(
                        f"LiteRT model {name!r}: output {output!r} differs by {error} "
                        f"> {tolerance} (times the value's magnitude beyond 1) at input "
                        f"shapes {[v.shape for v in batch.values()]}"
                    )
            elif not np.array_equal(got, want):
                if quantize is None:
                    raise ValueError(f"LiteRT model {name!r}: output {output!r} differs")
                error = float(np.mean(got != want))
            else:
                error = 0.0
            errors[output] = max(errors.get(output, 0.0), error)
    flex = [op for op in ops if op.startswith("CUSTOM:")]
    if flex:
        raise ValueError(f"LiteRT model {name!r} needs non-builtin ops {flex}")
    parity = {
        "reference": "the servable's function in the exporting process (TensorFlow)",
        "checked_in": "ai_edge_litert's interpreter in a fresh process without TensorFlow",
        "input_shapes": [{k: list(v.shape) for k, v in batch.items()} for batch in batches],
        "max_abs_error": errors,
        "tolerance": tolerance if quantize is None else None,
    }
    return parity, ops


# -- the writer ------------------------------------------------------------------


def check_batch_size(batch_size: Any) -> int | None:
    """``batch_size`` if it is a positive integer or ``None``."""
    if batch_size is not None and (
        isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
    ):
        raise ValueError(
            f"Argument `batch_size` must be a positive integer or None, received: {batch_size!r}"
        )
    return batch_size


def check_quantize(quantize: Any) -> str | None:
    if quantize not in QUANTIZATIONS:
        raise ValueError(
            f"Argument `quantize` must be one of {QUANTIZATIONS}, received: {quantize!r}"
        )
    return quantize


def stage_litert(
    servable: Servable,
    directory: Path,
    version: int,
    quantize: str | None = None,
    representative: Callable[[], Iterable[dict[str, np.ndarray]]] | None = None,
    batch_size: int | None = None,
    check: bool = True,
    tolerance: float = TOLERANCE,
    streaming: bool = False,
) -> Path:
    """``servable`` converted and checked in ``directory`` (a `Staging`
    directory): ``model.tflite`` (and with ``streaming`` ``model_step.tflite``),
    its vocabulary and tokenizer files and its manifest."""
    form = step_form(servable) if streaming else None  # refused before any conversion
    function, examples = servable.onnx()
    model = convert(servable, quantize, representative, batch_size)
    path = directory / MODEL_FILE
    path.write_bytes(model)
    for name, tokens in servable.vocabulary_files.items():
        (directory / name).write_text("".join(f"{token}\n" for token in tokens), encoding="utf-8")
    tokenizer = tokenizer_manifest(servable, check=check)
    if tokenizer is not None:  # the app's side: tokenizer.py and what it reads
        for name, data in tokenizer[1].items():
            target = directory / name
            target.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    if check:
        parity, ops = litert_parity(
            servable.name, function, examples, path, batch_size, tolerance, quantize
        )
    else:
        parity, ops = {}, litert_run.model_ops(model)
    inputs, outputs = signature_specs(function, batch_size)
    extra = {
        "file": MODEL_FILE,
        "signature": SIGNATURE,
        "quantize": quantize,
        "batch_size": batch_size,
        "ops": ops,
        "bytes": len(model),
    }
    if form is not None:
        extra["streaming"] = stage_step_model(
            servable, form, directory, quantize, batch_size, check, tolerance
        )
    if tokenizer is not None:
        extra["tokenizer"] = tokenizer[0]
    write_manifest(
        directory,
        model=servable.name,
        cell=servable.cell,
        version=version,
        format="litert",
        inputs=inputs,
        outputs=outputs,
        parity=parity,
        vocabulary_files=sorted(servable.vocabulary_files),
        extra=extra,
    )
    return directory


def stage_step_model(
    servable: Servable,
    form: StepForm,
    directory: Path,
    quantize: str | None,
    batch_size: int | None,
    check: bool,
    tolerance: float,
) -> dict[str, Any]:
    """``form`` (the servable's step form) as ``model_step.tflite`` in
    ``directory``, signature ``"step"``, and its manifest entry. With
    ``check``: fed chunk by chunk against the whole sequence in TensorFlow
    (`check_streaming`), then run by LiteRT's interpreter without TensorFlow
    on inputs that continue a sequence (``form.examples``) against the step
    function in TensorFlow. An ``"int8"`` model is calibrated on those inputs."""
    specs = signature_of(form.function, batch_size)
    calibration = check_inputs(form.examples, specs, batch_size)
    model = converted(
        form.function,
        servable.module,
        f"{servable.name} (step form)",
        STEP_SIGNATURE,
        quantize,
        lambda: calibration,
        batch_size,
    )
    path = directory / STEP_MODEL_FILE
    path.write_bytes(model)
    parity: dict[str, Any] = {}
    if check:
        chunked = check_streaming(form, tolerance)
        measured, ops = litert_parity(
            f"{servable.name} (step form)",
            form.function,
            form.examples,
            path,
            batch_size,
            tolerance,
            quantize,
            STEP_SIGNATURE,
        )
        parity = {"chunked": chunked, "litert": measured}
    else:
        ops = litert_run.model_ops(model)
    inputs, outputs = signature_specs(form.function, batch_size)
    return {
        "file": STEP_MODEL_FILE,
        "signature": STEP_SIGNATURE,
        "inputs": inputs,
        "outputs": outputs,
        **form.description(),
        "ops": ops,
        "bytes": len(model),
        "parity": parity,
    }


def signature_specs(
    function: Any, batch_size: int | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The manifest's inputs and outputs of ``function`` as LiteRT serves it."""
    specs = signature_of(function, batch_size)
    with litert_tracing():
        traced = tf.function(function.python_function, input_signature=specs)
        outputs = traced.get_concrete_function().structured_outputs
    inputs = [tensor_spec(s.name, s.dtype.name, s.shape.as_list()) for s in specs]
    return inputs, [
        tensor_spec(name, t.dtype.name, t.shape.as_list()) for name, t in sorted(outputs.items())
    ]


def write_litert(
    servable: Servable | keras.Model,
    export_root: str | os.PathLike,
    version: int | None = None,
    quantize: str | None = None,
    representative: Callable[[], Iterable[dict[str, np.ndarray]]] | None = None,
    batch_size: int | None = None,
    overwrite: bool = False,
    check: bool = True,
    tolerance: float = TOLERANCE,
    key: bytes | None = None,
    streaming: bool = False,
) -> Path:
    """Exports ``servable`` (a `Servable` or any built Keras model) as LiteRT to
    ``export_root/<name>/<version>/`` and returns that directory (see the
    module docstring).

    * ``version``: a positive integer, or ``None`` for the next one (as
      `keras_rnncells.export.write_saved_model`); an existing one is replaced
      only with ``overwrite``.
    * ``quantize``: one of `QUANTIZATIONS`; ``"int8"`` needs ``representative``,
      a function returning an iterable of input batches (dicts of arrays by
      input name) like those served.
    * ``batch_size``: ``None`` for a model of any batch; a fixed batch lets
      LSTM layers become LiteRT's fused LSTM op (`fused_lstm_ineligibility`).
    * ``check``: run the model in ``ai_edge_litert``'s interpreter in a
      process without TensorFlow at three input shapes (`check_inputs`),
      against the servable in this process, within ``tolerance`` for a float
      model; the manifest records the errors and the model's ops.
    * ``key``: the manifest is signed under it before the version appears.
    * ``streaming``: also ``model_step.tflite``, the step form (signature
      ``"step"``: the model's inputs holding k >= 1 new steps and ``state_0``
      ... in, its outputs and ``next_state_0`` ... out; zero states start a
      sequence; `keras_rnncells.export.streaming`), described in the
      manifest's ``"streaming"``; a model that cannot stream is refused in
      one line naming the layer.
    """
    check_version(version)
    check_quantize(quantize)
    check_batch_size(batch_size)
    check_float("tolerance", tolerance, "(0, inf)")
    servable = as_servable("servable", servable)
    export_root = Path(os.path.abspath(export_root))
    with Staging() as staging:
        model_directory = export_root / servable.name
        number = staging.claim([model_directory], version, overwrite)
        target = model_directory / str(number)
        directory = staging.directory(target)
        stage_litert(
            servable,
            directory,
            number,
            quantize,
            representative,
            batch_size,
            check,
            tolerance,
            streaming,
        )
        if key is not None:
            sign_manifest(directory, key)
        staging.publish()
    return target
