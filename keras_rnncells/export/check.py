"""Runs SavedModels' serving signature with nothing but TensorFlow.

This module imports only numpy and tensorflow (and tensorflow_text, for its
ops), so it is also the program ``write_saved_model`` runs in a fresh Python
process (its source passed with ``-c``) to prove that an export serves without
keras_rnncells: there, any import of keras_rnncells raises ``ImportError``,
and XLA JIT compilation is disabled as ``tensorflow_model_server`` disables it
by default (`disable_xla_jit`), so a graph that demands XLA fails the check.
The program reads a JSON list of jobs ``{"directory", "inputs", "outputs"}``
(``inputs`` an ``.npz`` path, ``outputs`` a path prefix; optionally
``"signature"``, default ``serving_default``) and runs that signature of each
SavedModel on the inputs with each of the `LOADERS`, in
full float32 (`full_float32`), writing ``<outputs>.<loader>.npz`` (strings as
bytes):

* ``load``: TensorFlow 2's ``tf.saved_model.load`` (`load_and_run`);
* ``session``: the graph in a TensorFlow 1 session after the SavedModel's
  restore and initialization ops, fed and fetched by the signature's tensor
  names (`run_in_session`): how TF Serving and ``saved_model_cli run`` run it.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.abc
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import tensorflow as tf

SIGNATURE = "serving_default"
FORBIDDEN = "keras_rnncells"


def load_and_run(
    path: str | os.PathLike, inputs: dict[str, Any], signature: str = SIGNATURE
) -> dict[str, np.ndarray]:
    """``tf.saved_model.load(path).signatures[signature](**inputs)`` as numpy
    arrays by output name (strings as arrays of ``bytes`` objects)."""
    loaded = tf.saved_model.load(os.fspath(path))
    function = loaded.signatures[signature]
    outputs = function(**{name: tf.constant(value) for name, value in inputs.items()})
    return {name: tensor.numpy() for name, tensor in outputs.items()}


def run_in_session(
    path: str | os.PathLike, inputs: dict[str, Any], signature: str = SIGNATURE
) -> dict[str, np.ndarray]:
    """The signature run as TF Serving runs it (see the module docstring)."""
    with tf.Graph().as_default() as graph, tf.compat.v1.Session(graph=graph) as session:
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], os.fspath(path))
        signature_def = meta_graph.signature_def[signature]
        feed = {signature_def.inputs[name].name: value for name, value in inputs.items()}
        names = sorted(signature_def.outputs)
        fetches = [signature_def.outputs[name].name for name in names]
        return dict(zip(names, session.run(fetches, feed_dict=feed)))


LOADERS = {"load": load_and_run, "session": run_in_session}


@contextlib.contextmanager
def full_float32() -> Iterator[None]:
    """Float32 matmuls in full float32 within, the process's setting restored
    after. GPUs since Ampere run them in TF32 by default, about 1e-3 relative
    from float32 and above the export checks' tolerances: every check compares
    an artifact with the model's float32 function (onnxruntime on a CPU
    computes in float32). Found on the first GPU run, where an exporting
    process without TF32 and a fresh one with it differed by 5e-5."""
    enabled = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(False)
    try:
        yield
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(enabled)


def disable_xla_jit() -> None:
    """Disables XLA JIT compilation in this process for good, as
    ``tensorflow_model_server`` does at start-up unless it is given
    ``--xla_cpu_compilation_enabled``: a function compiled with
    ``jit_compile=True`` then fails with "XLA compilation disabled"."""
    library = ctypes.CDLL(os.path.join(os.path.dirname(tf.__file__), "libtensorflow_cc.so.2"))
    library._ZN10tensorflow21DisableXlaCompilationEv()  # tensorflow::DisableXlaCompilation()


class RefuseImport(importlib.abc.MetaPathFinder):
    """Makes ``import keras_rnncells`` (and its submodules) fail."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.split(".")[0] == FORBIDDEN:
            raise ImportError(f"the serving check must not import {FORBIDDEN} (imported {name})")
        return None


def savable(array: np.ndarray) -> np.ndarray:
    """Object arrays of bytes (TensorFlow strings) as fixed-width bytes, which
    ``np.savez`` stores without pickling."""
    return array.astype(bytes) if array.dtype == object else array


def main(request_path: str) -> None:
    sys.meta_path.insert(0, RefuseImport())
    disable_xla_jit()
    try:
        import tensorflow_text  # noqa: F401  (registers the text ops exports use)
    except ImportError:
        pass
    with open(request_path, encoding="utf-8") as file:
        jobs = json.load(file)
    for job in jobs:
        with np.load(job["inputs"]) as loaded:
            inputs = dict(loaded)
        for loader, run in LOADERS.items():
            with full_float32():
                outputs = run(job["directory"], inputs, job.get("signature", SIGNATURE))
            np.savez(
                f"{job['outputs']}.{loader}.npz",
                **{name: savable(value) for name, value in outputs.items()},
            )
    imported = sorted(name for name in sys.modules if name.split(".")[0] == FORBIDDEN)
    if imported:
        raise SystemExit(f"{FORBIDDEN} was imported: {imported}")


if __name__ == "__main__":
    main(sys.argv[1])
