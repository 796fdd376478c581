"""Streams a sequence through an exported step form as a client does, for the tests.

The client reads the artifact's ``manifest.json`` (its ``"streaming"`` entry:
which inputs hold the steps, the states and their shapes, which outputs hold
one entry per step), starts from zero states and feeds each sequence in
chunks of 1, 3 and 5 steps, then the rest, each call's ``next_state_i``
becoming the next call's ``state_i``:

* a SavedModel version directory: its ``"step"`` signature, run as a stock
  ``tensorflow_model_server`` runs it (XLA JIT disabled, keras_rnncells not
  importable, the tf-text ops linked, the session loader);
* a ``model_step.onnx``: onnxruntime on the CPU in a process that never
  imports TensorFlow;
* a ``model_step.tflite``: ``ai_edge_litert``'s interpreter, its ``"step"``
  signature, in a process where TensorFlow cannot be imported (as on a phone).

Usage: ``python stream_runner.py REQUEST.json``, the request a list of
``{"artifact", "inputs", "outputs"}`` (all SavedModels, all ONNX or all LiteRT files):
``inputs`` an ``.npz`` of whole sequences (and any other input) by name;
``outputs`` the ``.npz`` to write: each step output joined over the chunks,
each other output stacked over the chunks (axis 0: its value after each
chunk), the last chunk's new states (as ``next_state_i``) and the chunks'
ends (``chunk_ends``). A call that raises writes ``{"error": message}`` as
JSON to ``outputs + ".error"``; a crash of this process fails the caller.
"""

import json
import os
import sys
from pathlib import Path

import numpy as np

CHUNKS = (1, 3, 5)


def bounds(steps):
    """``(start, end)`` of chunks of 1, 3, 5 steps, then the rest."""
    result, start = [], 0
    for length in [*CHUNKS, max(steps - sum(CHUNKS), 0)]:
        end = min(start + length, steps)
        if end > start:
            result.append((start, end))
        start = end
    return result


def stream(step, streaming, inputs):
    """Feeds ``inputs`` to ``step(inputs) -> outputs`` chunk by chunk."""
    sequences = streaming["sequence_inputs"]
    batch = len(next(iter(inputs.values())))
    steps = inputs[sequences[0]].shape[1]
    states = {
        state["name"]: np.zeros((batch, *state["shape"][1:]), state["dtype"])
        for state in streaming["states"]
    }
    joined = {name: [] for name in streaming["step_outputs"]}
    current = {name: [] for name in streaming["current_outputs"]}
    ends = []
    for start, end in bounds(steps):
        feed = {k: v[:, start:end] if k in sequences else v for k, v in inputs.items()}
        outputs = step({**feed, **states})
        states = {state["name"]: outputs[state["next"]] for state in streaming["states"]}
        for name in joined:
            joined[name].append(outputs[name])
        for name in current:
            current[name].append(outputs[name])
        ends.append(end)
    result = {name: np.concatenate(values, axis=1) for name, values in joined.items()}
    result.update({name: np.stack(values) for name, values in current.items()})
    result.update({state["next"]: states[state["name"]] for state in streaming["states"]})
    result["chunk_ends"] = np.array(ends)
    return result


def saved_model_steps():
    """``artifact -> (step function, manifest)`` as a stock model server runs it."""
    import ctypes

    sys.modules["keras_rnncells"] = None  # an import of the package raises ImportError
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the model server links the tf-text ops)

    ctypes.CDLL(
        os.path.join(os.path.dirname(tf.__file__), "libtensorflow_cc.so.2")
    )._ZN10tensorflow21DisableXlaCompilationEv()

    def load(directory):
        manifest = json.loads((Path(directory) / "manifest.json").read_text(encoding="utf-8"))
        signature_name = manifest["streaming"]["signature"]
        session = tf.compat.v1.Session(graph=tf.Graph())
        with session.graph.as_default():
            graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], directory)
        signature = graph.signature_def[signature_name]

        def step(inputs):
            feed = {signature.inputs[name].name: value for name, value in inputs.items()}
            names = sorted(signature.outputs)
            values = session.run([signature.outputs[n].name for n in names], feed_dict=feed)
            return dict(zip(names, values))

        return step, manifest, tf.errors.OpError

    return load


def onnx_steps():
    """``artifact -> (step function, manifest)`` in onnxruntime, no TensorFlow."""
    import onnxruntime

    def load(path):
        manifest = json.loads((Path(path).parent / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["streaming"]["file"] == Path(path).name
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [output.name for output in session.get_outputs()]

        def step(inputs):
            return dict(zip(names, session.run(names, inputs)))

        return step, manifest, Exception  # onnxruntime's errors have no common base class

    return load


def litert_steps():
    """``artifact -> (step function, manifest)`` in LiteRT's interpreter, no TensorFlow."""
    sys.modules["tensorflow"] = None  # as on a phone: an import of TensorFlow fails
    from ai_edge_litert.interpreter import Interpreter

    def load(path):
        manifest = json.loads((Path(path).parent / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["streaming"]["file"] == Path(path).name
        interpreter = Interpreter(model_path=path)
        runner = interpreter.get_signature_runner(manifest["streaming"]["signature"])

        def step(inputs):
            return {name: np.asarray(value) for name, value in runner(**inputs).items()}

        return step, manifest, (RuntimeError, ValueError)

    return load


jobs = json.load(open(sys.argv[1], encoding="utf-8"))
kinds = {Path(job["artifact"]).suffix for job in jobs}
assert len(kinds) == 1, "a request streams artifacts of one kind"
kind = kinds.pop()
load = {".onnx": onnx_steps, ".tflite": litert_steps}.get(kind, saved_model_steps)()
loaded = {}
for job in jobs:
    if job["artifact"] not in loaded:
        loaded[job["artifact"]] = load(job["artifact"])
    step, manifest, errors = loaded[job["artifact"]]
    with np.load(job["inputs"]) as npz:
        inputs = dict(npz)
    try:
        outputs = stream(step, manifest["streaming"], inputs)
    except errors as error:
        message = getattr(error, "message", str(error))
        with open(job["outputs"] + ".error", "w", encoding="utf-8") as file:
            json.dump({"error": " ".join(message.split())[:2000]}, file)
        continue
    np.savez(job["outputs"], **outputs)
if kind in (".onnx", ".tflite"):
    assert sys.modules.get("tensorflow") is None
