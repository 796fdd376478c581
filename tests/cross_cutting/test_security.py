"""Security and atomic writes: ``.keras`` files are loaded in Keras'
safe_mode (a Lambda layer's code is refused, not run); no pickle, marshal,
eval, exec or unsafe YAML anywhere in the package; a write that fails midway
leaves the old file (or none), never part of one; the CLI writes only under
the directories it is given."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import keras
import pytest

import keras_rnncells
from keras_rnncells.apps.runs import export_run
from keras_rnncells.cli import main
from keras_rnncells.export import verify_manifest
from keras_rnncells.files import write_atomically, write_json
from keras_rnncells.training import save_model, write_csv

PACKAGE = Path(keras_rnncells.__file__).parent
ROOT = PACKAGE.parent


def test_a_keras_file_with_python_code_is_refused(tmp_path):
    # a Python lambda is saved as its bytecode, which loading outside safe_mode would run
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Lambda(lambda x: x * 2.0)(inputs))
    save_model(model, tmp_path / "model.keras")
    with pytest.raises(ValueError, match="safe_mode"):
        export_run(tmp_path, tmp_path / "export")
    with pytest.raises(SystemExit, match="safe_mode"):
        main(["export", str(tmp_path), "--out", str(tmp_path / "export")])
    assert not (tmp_path / "export").exists()
    # the same file loads outside safe_mode: the refusal is safe_mode's, not a broken file
    assert keras.saving.load_model(tmp_path / "model.keras", safe_mode=False).count_params() == 0


# Calls that run code or build objects from data: (module, attribute) or a builtin name.
UNSAFE_CALLS = {("pickle", None), ("marshal", None), ("dill", None), ("cloudpickle", None)}
UNSAFE_BUILTINS = {"eval", "exec", "compile", "__import__"}


def unsafe_uses(source: str) -> list[str]:
    """The unsafe deserialization or code execution in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names]
            found += [f"import {n}" for n in names if (n.split(".")[0], None) in UNSAFE_CALLS]
        elif isinstance(node, ast.Call):
            function = node.func
            name = getattr(function, "id", None) or getattr(function, "attr", None)
            if isinstance(function, ast.Name) and name in UNSAFE_BUILTINS:
                found.append(f"{name}()")
            keywords = {k.arg: k.value for k in node.keywords}
            pickled = keywords.get("allow_pickle")
            if isinstance(pickled, ast.Constant) and pickled.value is True:
                found.append(f"{name}(allow_pickle=True)")
            if name == "load" and getattr(getattr(function, "value", None), "id", None) == "yaml":
                found.append("yaml.load()")
            if name == "load_model" and not (
                isinstance(keywords.get("safe_mode"), ast.Constant)
                and keywords["safe_mode"].value is True
            ):
                found.append("load_model() without safe_mode=True")
    return found


def test_the_scan_finds_each_unsafe_use():
    source = (
        "import pickle\nfrom marshal import loads\neval('1')\nexec('x=1')\n"
        "np.load(f, allow_pickle=True)\nyaml.load(s)\nkeras.saving.load_model(p)\n"
    )
    assert len(unsafe_uses(source)) == 7
    assert unsafe_uses("np.load(f)\nkeras.saving.load_model(p, safe_mode=True)\n") == []


def test_no_pickle_eval_or_exec_in_the_package():
    found = {
        str(path.relative_to(ROOT)): uses
        for path in sorted(PACKAGE.rglob("*.py"))
        if (uses := unsafe_uses(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def failing(partial: bytes):
    def write(temporary: str) -> None:
        Path(temporary).write_bytes(partial)
        raise OSError("disk full")

    return write


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "results.json"
    with pytest.raises(OSError, match="disk full"):
        write_atomically(target, failing(b'{"half": '))
    assert list(tmp_path.iterdir()) == []  # no partial target, no temporary left
    write_json(target, {"a": 1})
    write_csv(tmp_path / "history.csv", [{"epoch": 0, "loss": 0.5}])
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    for path in tmp_path.iterdir():
        with pytest.raises(OSError, match="disk full"):
            write_atomically(path, failing(b"x"))
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before
    assert before["history.csv"].decode() == "epoch,loss\n0,0.5\n"
    assert (tmp_path / "results.json").stat().st_mode & 0o777 == 0o666 & ~current_umask()


def current_umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def files_under(*directories: Path) -> list[str]:
    return sorted(
        os.path.relpath(path, directory.parent)
        for directory in directories
        for path in directory.rglob("*")
        if path.is_file()
    )


@pytest.mark.slow  # a fresh training run and export in child processes (31 s)
def test_the_cli_writes_only_under_the_directories_it_is_given(tmp_path):
    """``rnncells train`` then ``rnncells export`` with an empty working
    directory, HOME and TMPDIR: nothing lands there but what Keras and
    onnxruntime write by themselves."""
    cwd, home, temporary = (tmp_path / name for name in ("cwd", "home", "tmp"))
    for directory in (cwd, home, temporary):
        directory.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "TMPDIR": str(temporary),
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }
    env.pop("KERAS_HOME", None)
    env.pop("MPLCONFIGDIR", None)
    run_dir, export_dir = tmp_path / "run", tmp_path / "export"
    train = "train name-to-color --cell gru --units 4 --epochs 1 --limit 40 --batch-size 20"
    export = ["export", str(run_dir), "--out", str(export_dir)]
    for arguments in ([*train.split(), "--out", str(run_dir)], export):
        result = subprocess.run(
            [sys.executable, "-m", "keras_rnncells.cli", *arguments],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, result.stderr[-3000:]
    outside = files_under(cwd, home, temporary)
    # What the libraries alone write there: Keras its ~/.keras/keras.json (and
    # matplotlib its font cache), onnxruntime a session file $TMPDIR/.ses.
    for directory in (cwd, home, temporary):
        for path in directory.iterdir():
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    model = export_dir / "onnx" / "name-to-color" / "1" / "model.onnx"
    libraries_alone = f"import keras, onnxruntime; onnxruntime.InferenceSession({str(model)!r})"
    subprocess.run([sys.executable, "-c", libraries_alone], cwd=cwd, env=env, check=True)
    assert outside == files_under(cwd, home, temporary)
    assert (run_dir / "model.keras").is_file() and (export_dir / "name-to-color" / "1").is_dir()
    hidden = [p for p in [*run_dir.rglob(".*"), *export_dir.rglob(".*")] if p.name != ".keras"]
    assert hidden == []  # no temporary left behind
    for version in (
        export_dir / "name-to-color" / "1",
        export_dir / "onnx" / "name-to-color" / "1",
    ):
        assert verify_manifest(version)["version"] == 1
