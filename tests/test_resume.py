"""Nothing lost: a ``rnncells train`` process killed (SIGKILL) during its
second epoch and started again with the same arguments ends with the weights
(and optimizer state, and history) of an uninterrupted run; the backup and
the history are restored by `ResumableRun`, and shuffled pipelines order an
epoch by ``(seed, epoch)`` alone."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest

from keras_rnncells.data.pipeline import example_indices, set_shuffle_epoch

ROOT = Path(__file__).resolve().parents[1]
# color-namer: fixed shapes (no recompiling per batch shape), shipped data, 20 batches an epoch
ARGUMENTS = "color-namer --cell mgu --units 4 --epochs 3 --limit 160 --batch-size 8".split()


def start(run_dir: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    command = [sys.executable, "-m", "keras_rnncells.cli", "train", *ARGUMENTS, "--out"]
    return subprocess.Popen(
        [*command, str(run_dir)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen) -> None:
    _, errors = process.communicate(timeout=300)
    assert process.returncode == 0, errors[-3000:]


def saved_arrays(model_file: Path) -> dict[str, np.ndarray]:
    """Every array of a ``.keras`` file's weights (layers and optimizer)."""
    with zipfile.ZipFile(model_file) as archive:
        content = io.BytesIO(archive.read("model.weights.h5"))
    arrays = {}
    with h5py.File(content, "r") as weights:
        weights.visititems(
            lambda name, item: (
                arrays.update({name: item[()]}) if isinstance(item, h5py.Dataset) else None
            )
        )
    return arrays


def history(run_dir: Path) -> list[dict[str, str]]:
    """The rows of ``history.csv`` without the epochs' wall times (``seconds``)."""
    with open(run_dir / "history.csv", encoding="utf-8") as file:
        return [{k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(file)]


def test_a_run_killed_mid_epoch_resumes_to_the_weights_of_an_uninterrupted_run(tmp_path):
    reference = start(tmp_path / "reference")
    run_dir = tmp_path / "killed"
    victim = start(run_dir)
    backup = run_dir / "backup" / "state.npz"
    while not backup.exists():  # written (renamed into place) at the end of epoch 1
        assert victim.poll() is None, victim.stderr.read()[-3000:]
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)
    victim.communicate()
    assert victim.returncode == -signal.SIGKILL
    with np.load(backup, allow_pickle=False) as state:
        assert int(state["epoch"]) == 1  # killed during epoch 2, not after it
    assert not (run_dir / "model.keras").exists()
    assert [row["epoch"] for row in history(run_dir)] == ["0"]

    finish(start(run_dir))
    finish(reference)
    expected, resumed = (saved_arrays(d / "model.keras") for d in (tmp_path / "reference", run_dir))
    assert resumed.keys() == expected.keys()
    assert any(name.startswith("optimizer") for name in expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(resumed[name], value, err_msg=name)
    assert history(run_dir) == history(tmp_path / "reference")
    assert [row["epoch"] for row in history(run_dir)] == ["0", "1", "2"]
    assert not (run_dir / "backup").exists()
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    assert len(results["seconds_per_epoch"]) == 3  # the killed process's epoch kept


def test_the_shuffled_order_depends_on_the_epoch_not_on_past_iterations():
    indices = example_indices(20, shuffle_seed=5)
    set_shuffle_epoch(0)
    orders = [list(indices.as_numpy_iterator()) for _ in range(3)]
    assert sorted(orders[0]) == list(range(20)) and orders[0] != orders[1]
    set_shuffle_epoch(2)  # as a run resumed at epoch 2 does
    assert list(indices.as_numpy_iterator()) == orders[2]
    fresh = example_indices(20, shuffle_seed=5)  # a new pipeline starts at epoch 0
    assert list(fresh.as_numpy_iterator()) == orders[0]
    set_shuffle_epoch(1)  # sets every pipeline
    assert list(fresh.as_numpy_iterator()) == list(indices.as_numpy_iterator()) == orders[1]
    for bad in (1.5, -1, True):
        with pytest.raises(ValueError, match="`epoch` must be a non-negative integer"):
            set_shuffle_epoch(bad)
