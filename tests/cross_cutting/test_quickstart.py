"""`rnncells quickstart` as a newcomer runs it (no flags, from a fresh
directory), then `rnncells export` of its runs: artifacts written, checked,
readable, versioned."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from keras_rnncells.cli import main
from keras_rnncells.export import verify_manifest
from keras_rnncells.files import current_umask

pytestmark = pytest.mark.slow  # run by `pytest -m slow` (.ci/run), not by default

SCREEN_LINES = 40
MODELS = ("color-namer", "name-to-color")


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    """The working directory of one ``rnncells quickstart``, and what it printed."""
    script = shutil.which("rnncells")
    assert script, "no rnncells command on PATH: pip install -e ."
    cwd = tmp_path_factory.mktemp("newcomer")
    done = subprocess.run(
        [script, "quickstart"], cwd=cwd, capture_output=True, text=True, timeout=1200
    )
    return cwd, done


def test_quickstart_runs_from_a_fresh_directory_on_one_screen(newcomer):
    cwd, done = newcomer
    assert done.returncode == 0, done.stderr[-4000:]
    printed = done.stdout + done.stderr
    assert len(printed.splitlines()) <= SCREEN_LINES, printed
    # no TensorFlow C++ log lines (I0000 ..., E0000 ...), no Keras epoch lines, no library
    # warnings (TensorFlow's retracing note, tf2onnx's shape inference of our placeholders)
    noise = r"^[IWEF]\d{4} |absl::InitializeLog|^Epoch \d|^WARNING:"
    assert not re.search(noise, printed, re.M), printed
    export = cwd / "rnncells-quickstart" / "export"
    readable = 0o777 & ~current_umask()
    for model in MODELS:
        for directory, fmt in (
            (export / model / "1", "savedmodel"),
            (export / "onnx" / model / "1", "onnx"),
        ):
            manifest = verify_manifest(directory)
            assert manifest["format"] == fmt and manifest["model"] == model
            assert stat.S_IMODE(os.stat(directory).st_mode) == readable  # not mkdtemp's 0700
        assert str(export / model / "1") in done.stdout
        assert (cwd / "rnncells-quickstart" / "runs" / model / "model.keras").is_file()
    assert "'dark red' -> (" in done.stdout


def test_export_of_the_quickstart_runs_versions_and_refuses(newcomer, capsys):
    cwd, done = newcomer
    assert done.returncode == 0, done.stderr[-4000:]
    export = cwd / "rnncells-quickstart" / "export"
    run = cwd / "rnncells-quickstart" / "runs" / "name-to-color"

    # A second export of the same run gets the next version; an existing one is refused.
    main(["export", str(run), "--out", str(export), "--format", "onnx"])
    assert (export / "onnx" / "name-to-color" / "2" / "model.onnx").is_file()
    assert not (export / "name-to-color" / "2").exists()
    capsys.readouterr()
    for argv, expected in (
        (["--version", "1", "--format", "onnx"], r"--version: .*/1\S* exists; pass --overwrite"),
        (["--format", "tflite"], r"--format must name"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(["export", str(run), "--out", str(export), *argv])
        assert exit_info.value.code == 2
        error = capsys.readouterr().err
        assert re.fullmatch(rf"rnncells export: error: {expected}.*\n", error), error
    main(["export", str(run), "--out", str(export), "--version", "1", "--overwrite"])
    parity = json.loads((export / "name-to-color" / "1" / "manifest.json").read_text())["parity"]
    assert parity  # measured at export
