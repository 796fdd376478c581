"""Runs an export's standalone tokenizer as a phone app does, for the tests:
``tokenizer.py`` loaded by path from the export's version directory, in a
process where TensorFlow, NumPy, Keras, tensorflow-text and keras_rnncells
cannot be imported (each blocked in ``sys.modules`` before anything runs).

Usage: ``python standalone_tokenizer.py REQUEST.json RESULT.json``, where the
request is a list of ``{"export", "encode", "decode"}``: ``export`` a version
directory, ``encode`` a list of ``{"input", "texts"}`` (``input``: the id
input's name, or null where the model has one), ``decode`` a list of
``{"output", "ids"}``. The result holds, per job, ``"encode"`` (the id rows of
each batch) and ``"decode"`` (the texts of each), an error's one-line message
in place of a batch's result where it raised ``ValueError``, and
``"imported"``: the blocked modules found imported after all (none expected).
"""

import sys

BLOCKED = ("tensorflow", "tensorflow_text", "numpy", "keras", "keras_rnncells", "tf_keras")
for name in BLOCKED:
    sys.modules[name] = None  # `import name` now raises ImportError

import importlib.util  # noqa: E402
import json  # noqa: E402
from pathlib import Path  # noqa: E402


def load_module(directory: Path):
    spec = importlib.util.spec_from_file_location(
        f"tokenizer_{len(sys.modules)}", directory / "tokenizer.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def attempt(method, *arguments):
    try:
        return method(*arguments)
    except ValueError as error:
        return {"error": str(error)}


results = []
for job in json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")):
    text = load_module(Path(job["export"])).load()  # the directory of tokenizer.py
    encoded = [attempt(text.encode, b["texts"], b["input"]) for b in job.get("encode", [])]
    decoded = [attempt(text.decode, b["ids"], b["output"]) for b in job.get("decode", [])]
    results.append({"encode": encoded, "decode": decoded})
imported = sorted(
    name
    for name, module in sys.modules.items()
    if module is not None and name.split(".")[0] in BLOCKED
)
Path(sys.argv[2]).write_text(
    json.dumps({"results": results, "imported": imported}), encoding="utf-8"
)
