"""The package's face is light: ``import keras_rnncells`` needs only TensorFlow,
Keras and numpy; the optional dependencies (the extras of setup.py) are imported
where they are used, and a missing one is named with its extra in one line."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from keras_rnncells.cli import COMMANDS, CommandExit, anticipated_message, main
from keras_rnncells.text._tf_text import tensorflow_text

# Imported by no `import keras_rnncells`: each belongs to an extra.
OPTIONAL = (
    "tensorflow_text",
    "tf2onnx",
    "onnx",
    "onnxruntime",
    "onnxruntime_extensions",
    "ai_edge_litert",
    "sentencepiece",
    "tensorboard",
    "matplotlib",
)


def run_python(source: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, env=environ, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_import_brings_no_optional_dependency():
    """None of `OPTIONAL` is imported by keras_rnncells beyond what ``import
    keras`` imports itself (Keras imports matplotlib where it is installed,
    for keras.visualization)."""
    done = run_python(
        "import sys\n"
        "import keras\n"
        f"optional = {OPTIONAL!r}\n"
        "by_keras = {name for name in optional if name in sys.modules}\n"
        "import keras_rnncells\n"
        "print(sorted((set(optional) - by_keras) & set(sys.modules)))\n"
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_export_names_import_on_first_use():
    """`keras_rnncells.export` names its writers without importing them
    (tests/test_import_graph.py checks that): each public name is there all
    the same, as ``from keras_rnncells.export import ...`` reads it."""
    import keras_rnncells.export as export
    from keras_rnncells.export import onnx, write_onnx

    assert write_onnx is onnx.write_onnx
    for name in export.__all__:
        value = getattr(export, name)
        assert value.__name__ == name, name
        assert value.__module__.startswith("keras_rnncells.export."), name
    assert set(export.__all__) <= set(dir(export))
    with pytest.raises(AttributeError, match=r"'keras_rnncells\.export' has no attribute 'nope'"):
        export.nope  # noqa: B018


WITHOUT_TENSORFLOW_TEXT = """
import sys
sys.modules["tensorflow_text"] = None  # an import of it raises ModuleNotFoundError
import numpy as np
import tensorflow as tf
import keras_rnncells
from keras_rnncells.text import CharTokenizer, WordPieceTokenizer

outputs = keras_rnncells.MGU(4)(np.zeros((2, 3, 5), "float32"))
assert tuple(outputs.shape) == (2, 4), outputs.shape
assert tuple(CharTokenizer.from_corpus(["ab"])(tf.constant(["ab"])).shape) == (1, 2)
vocabulary = ["[PAD]", "[UNK]", "[START]", "[END]", "a"]
for build, argument in ((WordPieceTokenizer, vocabulary), (WordPieceTokenizer.from_corpus, ["a"])):
    try:
        build(argument)
    except ModuleNotFoundError as error:
        print(str(error).replace("\\n", "|"))
    else:
        raise AssertionError("WordPieceTokenizer built without tensorflow_text")
"""


def test_without_tensorflow_text_the_cells_work_and_wordpiece_names_the_extra():
    lines = run_python(WITHOUT_TENSORFLOW_TEXT).stdout.strip().splitlines()[-2:]
    assert lines == [
        "WordPieceTokenizer needs tensorflow-text: pip install 'keras-rnncells[text]'",
        "WordPieceTokenizer.from_corpus needs tensorflow-text: pip install 'keras-rnncells[text]'",
    ]


def test_a_broken_tensorflow_text_is_not_reported_as_missing(monkeypatch):
    # A module tensorflow-text itself imports is missing: that error, unchanged.
    monkeypatch.setitem(sys.modules, "tensorflow_text_missing_part", None)
    with pytest.raises(ModuleNotFoundError, match="tensorflow_text_missing_part"):
        tensorflow_text("a test", "tensorflow_text_missing_part")


@pytest.mark.parametrize(
    ("missing", "expected"),
    [
        ("onnxruntime", "onnxruntime is missing: pip install 'keras-rnncells[export]'"),
        ("tf2onnx", "tf2onnx is missing: pip install 'keras-rnncells[export]'"),
        ("onnx.helper", "onnx is missing: pip install 'keras-rnncells[export]'"),
        ("tensorboard", "tensorboard is missing: pip install 'keras-rnncells[apps]'"),
        ("tensorflow_text", "tensorflow_text is missing: pip install 'keras-rnncells[text]'"),
    ],
)
def test_the_command_names_the_extra_of_a_missing_module(missing, expected):
    error = ModuleNotFoundError(f"No module named {missing!r}", name=missing)
    assert anticipated_message(error, COMMANDS["export"].anticipated) == expected


def test_the_command_keeps_the_packages_own_missing_extra_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow_text", None)
    with pytest.raises(ModuleNotFoundError) as raised:
        tensorflow_text("WordPieceTokenizer")
    assert anticipated_message(raised.value, COMMANDS["train"].anticipated) == (
        "WordPieceTokenizer needs tensorflow-text: pip install 'keras-rnncells[text]'"
    )
    other = ModuleNotFoundError("No module named 'nope'", name="nope")
    assert anticipated_message(other, COMMANDS["train"].anticipated) is None  # a bug: its traceback


def test_a_command_missing_an_extra_is_one_line_and_status_2(monkeypatch, capsys):
    def run(args):
        import onnxruntime  # noqa: F401

    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    monkeypatch.setitem(COMMANDS, "cells", dataclasses.replace(COMMANDS["cells"], run=run))
    with pytest.raises(CommandExit) as raised:
        main(["cells"])
    assert raised.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "rnncells cells: error: onnxruntime is missing: pip install 'keras-rnncells[export]'"
    ]
