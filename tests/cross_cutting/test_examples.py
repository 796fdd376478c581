"""The scripts of examples/ run as a reader runs them: `python examples/X.py
--quick` in a fresh working directory (relative outputs land there), in a
process of its own; each must exit 0 and print what its docstring promises."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # run by `pytest -m slow` (.ci/run), not by default

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, cwd: Path, *arguments: str) -> str:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    finished = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--quick", *arguments],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert finished.returncode == 0, f"{name} exited {finished.returncode}:\n{finished.stderr}"
    return finished.stdout


def test_every_example_is_tested():
    tested = {"custom_cell.py", "export_user_model.py", "sentiment_from_text.py", "seq2seq.py"}
    assert {p.name for p in EXAMPLES.glob("*.py")} == tested


def test_custom_cell_trains_in_model_fit_and_saves(tmp_path):
    output = run_example("custom_cell.py", tmp_path)
    assert "coupled (ours): test MSE" in output and "GRU: test MSE" in output
    assert (tmp_path / "custom_cell.keras").is_file()


def test_export_user_model_writes_both_formats_that_agree(tmp_path):
    output = run_example("export_user_model.py", tmp_path)
    assert (tmp_path / "export-example" / "my-model" / "1" / "saved_model.pb").is_file()
    assert (tmp_path / "export-example" / "onnx" / "my-model" / "1" / "model.onnx").is_file()
    difference = float(output.rsplit("largest difference from model.predict: ", 1)[1])
    assert difference < 1e-4


def test_sentiment_from_text(tmp_path, require_data):
    require_data("sst2")
    output = run_example("sentiment_from_text.py", tmp_path, "mgu")
    assert "mgu: test accuracy" in output
    assert output.count("'dull and far too long'") == 1


def test_seq2seq_translates_dates_and_saves(tmp_path):
    output = run_example("seq2seq.py", tmp_path, "gru")
    assert "beam width 4: exact match" in output
    assert (tmp_path / "date_normalizer.keras").is_file()
