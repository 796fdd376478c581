"""Runs SavedModels as a stock ``tensorflow_model_server`` does, for the tests.

Independent of keras_rnncells on purpose (the package cannot be imported
here): the model server calls ``tensorflow::DisableXlaCompilation()`` at
start-up unless given ``--xla_cpu_compilation_enabled``, links the
tensorflow-text ops, loads a version directory once with the SavedModel
loader (restore op, then the signature's tensors fed and fetched in one
session for every request to it) and never imports Python code of the
model's author.

Usage: ``python stock_server.py REQUEST.json`` (or ``--serve``: requests named on
stdin, see serve_requests.py), where the request is a list of
``{"artifact", "inputs", "outputs"}`` (``artifact`` a version directory,
``inputs`` an ``.npz`` by input name, or ``.json`` for string inputs: lists
of str, sent as UTF-8; ``outputs`` the ``.npz`` to write by output name;
strings as bytes). A job
whose signature raises writes ``{"error": message, "seconds": s}`` (how
long the session ran before it failed) as JSON to ``outputs + ".error"``
instead; a crash of this process fails the caller.
"""

import ctypes
import json
import os
import sys
import time

sys.modules["keras_rnncells"] = None  # an import of the package raises ImportError

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401  (the model server links the tf-text ops)

ctypes.CDLL(
    os.path.join(os.path.dirname(tf.__file__), "libtensorflow_cc.so.2")
)._ZN10tensorflow21DisableXlaCompilationEv()


sessions = {}  # version directory -> (session, signature): loaded once, as the server does


def reset():
    """Forgets every loaded version directory (a request starts from none)."""
    for session, _ in sessions.values():
        session.close()
    sessions.clear()


def serve(directory, inputs):
    if directory not in sessions:
        session = tf.compat.v1.Session(graph=tf.Graph())
        with session.graph.as_default():
            meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], directory)
        sessions[directory] = session, meta_graph.signature_def["serving_default"]
    session, signature = sessions[directory]
    feed = {signature.inputs[name].name: value for name, value in inputs.items()}
    names = sorted(signature.outputs)
    values = session.run([signature.outputs[name].name for name in names], feed_dict=feed)
    return {n: v.astype(bytes) if v.dtype == object else v for n, v in zip(names, values)}


def run_request(path):
    """Serves each job of the request file ``path``."""
    for job in json.load(open(path, encoding="utf-8")):
        if job["inputs"].endswith(".json"):  # lists of str, kept whole (a NUL at the end too)
            texts = json.load(open(job["inputs"], encoding="utf-8"))
            inputs = {
                k: np.array([t.encode("utf-8") for t in v], dtype=object) for k, v in texts.items()
            }
        else:
            with np.load(job["inputs"]) as loaded:
                inputs = dict(loaded)
        started = time.perf_counter()
        try:
            outputs = serve(job["artifact"], inputs)
        except tf.errors.OpError as error:
            refused = {"error": " ".join(error.message.split())[:2000]}
            with open(job["outputs"] + ".error", "w", encoding="utf-8") as file:
                json.dump({**refused, "seconds": time.perf_counter() - started}, file)
            continue
        np.savez(job["outputs"], **outputs)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from serve_requests import main

    main(run_request, reset)
