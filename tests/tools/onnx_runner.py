"""Runs ONNX models as a user does, for the tests: onnxruntime on the CPU in a
process that never imports TensorFlow (with TensorFlow loaded, the
onnxruntime-extensions regex ops bind to TensorFlow's RE2 and misbehave), with
the extensions' custom ops registered.

Usage: ``python onnx_runner.py REQUEST.json`` (or ``--serve``: requests named on
stdin, see serve_requests.py), where the request is a list of
``{"artifact", "inputs", "outputs"}`` (``artifact`` an ``.onnx`` file,
``inputs`` an ``.npz`` by input name, or
``.json`` for string inputs: lists of str; ``outputs`` the ``.npz`` to write,
strings as UTF-8 bytes). A run that raises writes ``{"error": message}`` as JSON to
``outputs + ".error"``; a crash of this process fails the caller.
"""

import json
import os
import sys

import numpy as np
import onnxruntime
import onnxruntime_extensions

assert "tensorflow" not in sys.modules


def utf8(strings):
    """A string output (str objects) as UTF-8 bytes, as TensorFlow returns strings."""
    return np.char.encode(strings.astype(str), "utf-8")


options = onnxruntime.SessionOptions()
options.register_custom_ops_library(onnxruntime_extensions.get_library_path())
sessions = {}


def reset():
    """Forgets every loaded model (a request starts from none)."""
    sessions.clear()


def run_request(path):
    """Runs each job of the request file ``path``."""
    for job in json.load(open(path, encoding="utf-8")):
        if job["inputs"].endswith(".json"):
            loaded = json.load(open(job["inputs"], encoding="utf-8"))
            inputs = {name: np.array(texts, dtype=object) for name, texts in loaded.items()}
        else:
            with np.load(job["inputs"]) as npz:
                inputs = dict(npz)
        if job["artifact"] not in sessions:
            sessions[job["artifact"]] = onnxruntime.InferenceSession(
                job["artifact"], options, providers=["CPUExecutionProvider"]
            )
        session = sessions[job["artifact"]]
        names = [output.name for output in session.get_outputs()]
        try:
            values = session.run(names, inputs)
        except Exception as error:  # onnxruntime's errors have no common base class
            with open(job["outputs"] + ".error", "w", encoding="utf-8") as file:
                json.dump({"error": " ".join(str(error).split())[:2000]}, file)
            continue
        np.savez(
            job["outputs"],
            **{n: utf8(v) if v.dtype == object else v for n, v in zip(names, values)},
        )


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from serve_requests import main

    main(run_request, reset)
    assert "tensorflow" not in sys.modules
