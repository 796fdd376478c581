"""Nothing lost: a ``rnncells train`` process killed (SIGKILL) during its
second epoch and started again with the same arguments ends with the weights
(and optimizer state, and history) of an uninterrupted run; the backup and
the history are restored by `ResumableRun`, and shuffled pipelines order an
epoch by ``(seed, epoch)`` alone.

Nothing mixed: while a run trains, a second one into its directory is
refused, naming the first one's pid; once it died, its lock is taken over;
and a backup is resumed only by a run of the same arguments (``--epochs``
may grow), any other refused naming what differs (`run_directory`)."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest

from keras_rnncells.cli import main
from keras_rnncells.data.pipeline import example_indices, set_shuffle_epoch
from keras_rnncells.training import ChangedSettings, run_directory

# color-namer: fixed shapes (no recompiling per batch shape), shipped data, 20 batches an epoch
ARGUMENTS = "color-namer --cell mgu --units 4 --epochs 3 --limit 160 --batch-size 8".split()


def start(run_dir: Path, *options: str) -> subprocess.Popen:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    command = [sys.executable, "-m", "keras_rnncells.cli", "train", *ARGUMENTS, *options]
    return subprocess.Popen(
        [*command, "--out", str(run_dir)],
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


@pytest.mark.slow  # a killed training run and its resume (40 s of the default run)
def test_a_run_killed_mid_epoch_resumes_to_the_weights_of_an_uninterrupted_run(tmp_path, capsys):
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

    # another batch size would continue the run's weights (the shapes fit): refused, the
    # backup left as it was
    assert train_error(capsys, run_dir, "--batch-size", "16").startswith(
        f"--out {run_dir} holds an unfinished run started with other arguments: --batch-size "
        "was 8, now 16. Give the run's arguments to resume it, --overwrite to start afresh"
    )
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
    # and counted in the run's training time, as in an uninterrupted run (training.fit_run)
    assert results["training_seconds"] == pytest.approx(sum(results["seconds_per_epoch"]))


def wait_for_backup(process: subprocess.Popen, run_dir: Path) -> Path:
    """The backup of ``run_dir`` once written (at the end of epoch 1)."""
    backup = run_dir / "backup" / "state.npz"
    while not backup.exists():
        assert process.poll() is None, process.stderr.read()[-3000:]
        time.sleep(0.01)
    return backup


def train_error(capsys, run_dir: Path, *options: str) -> str:
    """The one line a refused ``rnncells train`` (in this process) prints."""
    with pytest.raises(SystemExit) as exit_info:
        main(["train", *ARGUMENTS, *options, "--out", str(run_dir)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1, error
    return error.removeprefix("rnncells train: error: ").rstrip("\n")


@pytest.mark.slow  # concurrent training runs (33 s of the default run)
def test_one_run_at_a_time_and_a_resume_only_with_the_runs_arguments(tmp_path, capsys):
    run_dir = tmp_path / "run"
    holder = start(run_dir, "--epochs", "50")
    try:
        backup = wait_for_backup(holder, run_dir)
        error = train_error(capsys, run_dir)  # the same arguments, while the first one trains
        assert re.fullmatch(
            rf"{re.escape(str(run_dir))} is in use by pid {holder.pid} \(host .*\): wait for "
            "that run to end, or choose another --out",
            error,
        ), error
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate()
    lock = json.loads((run_dir / ".lock").read_text(encoding="utf-8"))
    assert lock["pid"] == holder.pid  # left by the dead run: taken over below

    error = train_error(capsys, run_dir, "--epochs", "50", "--seed", "1", "--units", "5")
    assert error == (
        f"--out {run_dir} holds an unfinished run started with other arguments: --seed was 0, "
        "now 1; --units was 4, now 5. Give the run's arguments to resume it, --overwrite to "
        "start afresh, or choose another --out"
    )
    assert backup.is_file() and not (run_dir / ".lock").exists()  # untouched; lock released

    main(
        ["train", *ARGUMENTS, "--seed", "1", "--epochs", "1", "--out", str(run_dir), "--overwrite"]
    )
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    assert results["settings"]["seed"] == 1 and results["settings"]["epochs"] == 1
    assert [row["epoch"] for row in history(run_dir)] == ["0"]  # afresh, not from epoch 1
    assert not (run_dir / "backup").exists() and not (run_dir / ".lock").exists()


@dataclasses.dataclass(frozen=True)
class Tiny:
    seed: int = 0
    epochs: int = 5
    cell_options: dict = dataclasses.field(default_factory=dict)


def test_epochs_may_grow_on_resume_but_not_below_the_epochs_trained(tmp_path):
    """``run_directory`` over a backup of 3 epochs: a run asking for 4 (or 3)
    epochs resumes it, one asking for 2 is refused; a fresh start records the
    settings and deletes a stale history, and a run failing before its first
    backup leaves no record."""
    with run_directory(tmp_path, Tiny(epochs=5)):
        (tmp_path / "history.csv").write_text("epoch\n0\n")
    record = json.loads((tmp_path / "backup" / "settings.json").read_text())
    assert record == {"seed": 0, "epochs": 5, "cell_options": {}}
    np.savez(tmp_path / "backup" / "state.npz", epoch=np.array(3))
    for epochs in (4, 3):
        with run_directory(tmp_path, Tiny(epochs=epochs)):
            assert (tmp_path / "backup" / "state.npz").is_file()  # resumed
            assert (tmp_path / "history.csv").is_file()
    with pytest.raises(ChangedSettings, match=r"epochs was 3, now 2 \(below the 3 epochs"):
        with run_directory(tmp_path, Tiny(epochs=2)):
            pass
    with pytest.raises(ChangedSettings, match=r"cell_options was \{\}, now \{'a': 1\}\. Give"):
        with run_directory(tmp_path, Tiny(cell_options={"a": 1})):
            pass
    with run_directory(tmp_path, Tiny(seed=2), overwrite=True):
        assert not (tmp_path / "backup" / "state.npz").exists()  # afresh
        assert not (tmp_path / "history.csv").exists()
    assert json.loads((tmp_path / "backup" / "settings.json").read_text())["seed"] == 2
    with pytest.raises(RuntimeError, match="before the first epoch"):
        with run_directory(tmp_path / "failed", Tiny()):
            raise RuntimeError("before the first epoch")
    assert list((tmp_path / "failed").iterdir()) == []  # no record, no lock left


def test_the_shuffled_order_depends_on_the_epoch_not_on_past_iterations():
    indices = example_indices(20, shuffle_seed=5)
    set_shuffle_epoch(indices, 0)
    orders = [list(indices.as_numpy_iterator()) for _ in range(3)]
    assert sorted(orders[0]) == list(range(20)) and orders[0] != orders[1]
    set_shuffle_epoch(indices, 2)  # as a run resumed at epoch 2 does
    assert list(indices.as_numpy_iterator()) == orders[2]
    fresh = example_indices(20, shuffle_seed=5)  # a new pipeline starts at epoch 0
    assert list(fresh.as_numpy_iterator()) == orders[0]
    set_shuffle_epoch(fresh, 1)  # each pipeline's own counter
    set_shuffle_epoch(indices, 1)
    assert list(fresh.as_numpy_iterator()) == list(indices.as_numpy_iterator()) == orders[1]
    for bad in (1.5, -1, True):
        with pytest.raises(ValueError, match="`epoch` must be a non-negative integer"):
            set_shuffle_epoch(indices, bad)


def test_a_setting_added_since_the_backup_resumes_at_its_default(tmp_path):
    """A backup recorded before a setting existed resumes with that setting at
    its default (the old package's behaviour), and not with another value."""
    with run_directory(tmp_path, Tiny()):
        pass
    record = tmp_path / "backup" / "settings.json"
    record.write_text(json.dumps({"seed": 0, "epochs": 5}))  # no cell_options yet
    np.savez(tmp_path / "backup" / "state.npz", epoch=np.array(1))
    with run_directory(tmp_path, Tiny()):
        assert (tmp_path / "backup" / "state.npz").is_file()  # resumed
    record.write_text(json.dumps({"seed": 0, "epochs": 5}))
    with pytest.raises(ChangedSettings, match=r"cell_options was \{\}, now \{'a': 1\}"):
        with run_directory(tmp_path, Tiny(cell_options={"a": 1})):
            pass
