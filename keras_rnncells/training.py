"""What every ``rnncells train`` run shares: its sequence, directory, callbacks and results.

`train_run` is the sequence of every run (the applications' and the data
tasks'): hold the run directory, seed, load the data, build the compiled
model, fit it, evaluate it, write the model and ``results.json``; each
trainer gives its own steps as hooks (``data``, ``build`` returning a `Fit`,
``evaluate`` returning an `Evaluation`).

A run directory holds ``model.keras`` (the trained model), ``results.json``
(held-out metrics, wall time, parameters, seconds per epoch, settings),
``history.csv`` (one row per epoch), ``logs/`` (TensorBoard) and, while the
run is unfinished, ``backup/``, from which an interrupted run resumes when
started again with the same arguments (`ResumableRun`).

Resuming gives the weights an uninterrupted run would have given: the backup,
taken at the end of every epoch, holds every model variable (the random seed
generators of dropout included), the optimizer's state, the history rows and
the epoch; a run killed during an epoch replays that epoch from its start,
and the shuffled pipelines of `keras_rnncells.data.pipeline` order an epoch
by ``(seed, epoch)`` alone (`set_shuffle_epoch`). Every file is written to a
temporary file renamed into place (`write_atomically`), so a kill leaves the
old file or the new one, never half of one.

Every trainer holds its run directory through `run_directory`: one run at a
time trains in it (``.lock``, `keras_rnncells.locks.run_lock`), and a backup
is resumed only by a run of the same settings (recorded in
``backup/settings.json`` when the run starts); any other is refused, naming
the settings that differ (`ChangedSettings`), unless ``overwrite`` starts the
run afresh. ``epochs`` is the one setting a resumed run may change, to any
number not below the epochs the backup holds: the data order of an epoch
depends on ``(seed, epoch)`` only and no schedule depends on the total, so
the run then ends with the weights of an uninterrupted run of that length.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json
import math
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_rnncells.data.pipeline import set_shuffle_epoch
from keras_rnncells.files import write_atomically, write_json
from keras_rnncells.locks import run_lock

BACKUP = "backup"  # the directory of a run's backup, deleted when the run ends
STATE = "state.npz"  # in it: the state of the last epoch's end (`ResumableRun`)
SETTINGS_RECORD = "settings.json"  # and the settings of the run (`run_directory`)
BEST = "best.npz"  # and, when stopping early, the best epoch's state (`ResumableRun`)


def save_model(model: keras.Model, path: str | os.PathLike) -> None:
    """``model.save`` to a ``.keras`` file, atomically."""
    write_atomically(path, lambda temporary: model.save(temporary))


class EpochTimes(keras.callbacks.Callback):
    """Records the wall time of every epoch in ``seconds`` and in the epoch's
    logs (``seconds``: a column of ``history.csv``); a resumed run's
    `ResumableRun` restores the epochs of the interrupted process."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds: list[float] = []

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self.started = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.seconds.append(time.perf_counter() - self.started)
        if logs is not None:
            logs["seconds"] = self.seconds[-1]


def write_csv(path: str | os.PathLike, rows: list[dict[str, Any]]) -> None:
    """``rows`` (dicts with the same keys) as a CSV file with a header, atomically."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]) if rows else [], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_atomically(path, lambda temporary: Path(temporary).write_text(text.getvalue(), "utf-8"))


class ResumableRun(keras.callbacks.Callback):
    """Backs a run up at the end of every epoch into ``run_dir/backup/`` and
    resumes from it, and writes ``run_dir/history.csv`` (one row per epoch).

    The backup is one ``.npz`` file (no pickle) written atomically: the epoch,
    the values of ``model.variables`` (weights, and the state of the seed
    generators dropout draws from) and of the optimizer's variables, the
    history rows and the `sessions`. ``on_train_begin`` restores it, rewrites
    ``history.csv`` from its rows and sets the shuffling epoch of ``data``,
    the training data (`set_shuffle_epoch`); Keras' fit then starts at the
    next epoch (the ``_initial_epoch`` hook Keras' own ``BackupAndRestore``
    sets). The backup is deleted when training ends.

    ``sessions`` has one record per process that trained the run: its first
    epoch (from 1), the epochs it trained and its wall seconds from the start
    of training to its last epoch's end.

    With ``patience``, training stops early: after ``patience`` epochs without
    a new lowest ``val_loss``, the weights of the best epoch (kept in
    ``backup/best.npz``) are restored and the run ends there; the best epoch
    and value come from the history rows, so a resumed run stops where an
    uninterrupted one would."""

    def __init__(
        self,
        run_dir: str | os.PathLike,
        timer: EpochTimes | None = None,
        patience: int | None = None,
        data: Any = None,
    ) -> None:
        super().__init__()
        self.data = data
        self.timer = timer
        self.patience = patience
        self.directory = Path(run_dir) / BACKUP
        self.history = Path(run_dir) / "history.csv"
        self.rows: list[dict[str, Any]] = []
        self.sessions: list[dict[str, Any]] = []

    @property
    def path(self) -> Path:
        return self.directory / STATE

    def variables(self) -> dict[str, list]:
        optimizer = self.model.optimizer
        if optimizer is not None and not optimizer.built:
            optimizer.build(self.model.trainable_variables)
        return {
            "model": list(self.model.variables),
            "optimizer": [] if optimizer is None else list(optimizer.variables),
        }

    @property
    def best_path(self) -> Path:
        return self.directory / BEST

    def best_epoch(self) -> int | None:
        """The epoch (from 1) of the lowest ``val_loss`` of the history rows."""
        losses = [row.get("val_loss", math.inf) for row in self.rows]
        if not losses or min(losses) == math.inf:
            return None
        return losses.index(min(losses)) + 1

    def stale(self) -> bool:
        """With ``patience``: no new best ``val_loss`` in its last ``patience`` epochs."""
        best = self.best_epoch()
        return self.patience is not None and len(self.rows) - (best or 0) >= self.patience

    def on_train_begin(self, logs: dict | None = None) -> None:
        epoch = 0
        self.rows = []
        self.sessions = []
        if self.path.is_file():
            with np.load(self.path, allow_pickle=False) as state:
                epoch = int(state["epoch"])
                self.rows = json.loads(str(state["history"]))
                if "sessions" in state:  # (older backups kept none)
                    self.sessions = json.loads(str(state["sessions"]))
                for group, variables in self.variables().items():
                    for index, variable in enumerate(variables):
                        value = state[f"{group}/{index}"]
                        if tuple(value.shape) != tuple(variable.shape):
                            raise ValueError(
                                f"{self.path} does not fit this model ({group} variable "
                                f"{variable.path}: {value.shape}, not {variable.shape}): "
                                "resume with the arguments of the interrupted run"
                            )
                        variable.assign(value)
            write_csv(self.history, self.rows)
            if self.timer is not None:
                self.timer.seconds = [row["seconds"] for row in self.rows if "seconds" in row]
        if self.stale():  # stopped early, killed before it ended: train no further
            epoch = max(epoch, self.params.get("epochs", epoch))
        self.model._initial_epoch = epoch
        if isinstance(self.data, tf.data.Dataset):  # (arrays: no shuffled pipeline)
            set_shuffle_epoch(self.data, epoch)
        self.started = time.time()
        self.sessions.append({"first_epoch": len(self.rows) + 1, "epochs": 0, "seconds": 0.0})

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.rows.append({"epoch": epoch, **{k: float(v) for k, v in sorted((logs or {}).items())}})
        self.sessions[-1].update(
            epochs=self.sessions[-1]["epochs"] + 1, seconds=time.time() - self.started
        )
        # history.csv first: a kill between the two leaves a row the resumed run rewrites
        write_csv(self.history, self.rows)
        if self.patience is not None and self.best_epoch() == len(self.rows):
            self.save(epoch + 1, self.best_path)
        if self.stale():
            self.model.stop_training = True
        self.save(epoch + 1)

    def save(self, epochs: int, path: Path | None = None) -> None:
        """Writes the backup of the model (set by ``set_model``) as a run
        that has trained ``epochs`` epochs, with this run's history rows (into
        ``path``, by default the backup's state file)."""
        arrays = {
            "epoch": np.array(epochs),
            "history": np.array(json.dumps(self.rows)),
            "sessions": np.array(json.dumps(self.sessions)),
        }
        for group, variables in self.variables().items():
            for index, variable in enumerate(variables):
                arrays[f"{group}/{index}"] = keras.ops.convert_to_numpy(variable)
        write_atomically(path or self.path, lambda temporary: np.savez(temporary, **arrays))

    def restore_best(self) -> None:
        """The model's variables of the best epoch (its ``backup/best.npz``)."""
        with np.load(self.best_path, allow_pickle=False) as best:
            for index, variable in enumerate(self.model.variables):
                variable.assign(best[f"model/{index}"])

    def on_train_end(self, logs: dict | None = None) -> None:
        if self.patience is not None and self.best_path.is_file():
            self.restore_best()
        shutil.rmtree(self.directory, ignore_errors=True)


def run_callbacks(
    run_dir: Path,
    timer: EpochTimes,
    ema: bool = False,
    patience: int | None = None,
    train: Any = None,
) -> list[keras.callbacks.Callback]:
    """Resumable backups of training on ``train`` with the per-epoch CSV
    (stopping early with ``patience``), TensorBoard logs and ``timer``; with
    ``ema`` (an optimizer averaging the weights), validation runs on the
    averaged weights."""
    callbacks = [
        timer,  # first: its `seconds` enter the logs the others record
        ResumableRun(run_dir, timer, patience, data=train),
        keras.callbacks.TensorBoard(str(run_dir / "logs"), write_graph=False),
    ]
    return [keras.callbacks.SwapEMAWeights(), *callbacks] if ema else callbacks


def fit_run(
    model: keras.Model,
    train: Any,
    run_dir: Path,
    epochs: int,
    validation_data: Any = None,
    verbose: int | str = "auto",
    ema: bool = False,
    patience: int | None = None,
    callbacks: list[keras.callbacks.Callback] = (),
) -> dict[str, Any]:
    """``model.fit`` of a run: ``train`` (a dataset that shuffles itself by
    ``(seed, epoch)``, `keras_rnncells.data.pipeline`) for ``epochs`` (at
    most, with ``patience``: see `ResumableRun`), with `run_callbacks`
    (resumable backups, ``history.csv``, TensorBoard logs, the epoch timer)
    and ``callbacks``.
    Returns what every run's ``results.json`` holds of its training:
    ``training_seconds`` (the sum over epochs, so the epochs of an
    interrupted process count in a resumed run), ``seconds_per_epoch``,
    ``parameters`` (trainable), ``sessions`` (`ResumableRun`) and, with
    ``patience``, ``best_epoch`` (the epoch whose weights the model keeps)."""
    timer = EpochTimes()
    callbacks = [
        *callbacks,
        *run_callbacks(run_dir, timer, ema=ema, patience=patience, train=train),
    ]
    model.fit(
        train,
        validation_data=validation_data,
        epochs=epochs,
        callbacks=callbacks,
        shuffle=False,  # the dataset shuffles itself
        verbose=verbose,
    )
    resumable = next(c for c in callbacks if isinstance(c, ResumableRun))
    return {
        "training_seconds": sum(timer.seconds),
        "seconds_per_epoch": timer.seconds,
        "parameters": parameter_count(model),
        "sessions": resumable.sessions,
        **({"best_epoch": resumable.best_epoch()} if patience is not None else {}),
    }


def finish_run(run_dir: Path, model: keras.Model, results: dict[str, Any]) -> dict[str, Any]:
    """Writes a finished run: ``model.keras`` and ``results.json`` (each
    atomically, the results last: a run directory with ``results.json`` is
    finished); returns ``results``."""
    save_model(model, run_dir / "model.keras")
    write_json(run_dir / "results.json", results)
    return results


def parameter_count(model: keras.Model) -> int:
    return int(sum(keras.ops.size(w) for w in model.trainable_weights))


# -- holding a run directory ----------------------------------------------------------
class ChangedSettings(ValueError):
    """A run directory's backup was made by a run of other settings:
    ``changes`` maps each differing setting to its (recorded, given) values."""

    def __init__(self, run_dir: Path, changes: dict[str, tuple[Any, Any]], trained: int) -> None:
        self.run_dir = run_dir
        self.changes = changes
        self.trained = trained
        listed = "; ".join(self.describe(name) for name in changes)
        super().__init__(
            f"{run_dir} holds an unfinished run started with other settings: {listed}. "
            "Give the run's settings to resume it, or pass overwrite=True to start afresh"
        )

    def describe(self, name: str, label: str | None = None) -> str:
        """``LABEL was OLD, now NEW`` for one of ``changes`` (``label``: the name)."""
        old, new = self.changes[name]
        text = f"{label or name} was {old!r}, now {new!r}"
        if name == "epochs":
            text += f" (below the {self.trained} epochs already trained)"
        return text


def settings_record(settings: Any) -> dict[str, Any]:
    """A settings dataclass as the JSON ``backup/settings.json`` holds."""
    return json.loads(json.dumps(dataclasses.asdict(settings)))


def differing_settings(
    recorded: Mapping[str, Any], given: Mapping[str, Any], trained: int = 0
) -> dict[str, tuple[Any, Any]]:
    """The settings of ``given`` whose value is not the ``recorded`` one (or
    that only one of them has), as ``{name: (recorded, given)}``. ``epochs``
    counts only when ``given`` asks for fewer than the ``trained`` epochs."""
    changes = {}
    for name in sorted(set(recorded) | set(given)):
        old, new = recorded.get(name), given.get(name)
        if old == new:
            continue
        if name == "epochs" and isinstance(new, int) and new >= trained:
            continue
        changes[name] = (old, new)
    return changes


def backed_up_epochs(run_dir: Path) -> int | None:
    """How many epochs the backup of ``run_dir`` holds; None without a backup."""
    state = run_dir / BACKUP / STATE
    if not state.is_file():
        return None
    with np.load(state, allow_pickle=False) as loaded:
        return int(loaded["epoch"])


@contextlib.contextmanager
def run_directory(
    run_dir: str | os.PathLike, settings: Any, overwrite: bool = False
) -> Iterator[Path]:
    """Holds ``run_dir`` (created where missing) for one training run of
    ``settings`` (a settings dataclass) and yields it.

    The run holds ``run_dir/.lock`` throughout (`run_lock`: a second run in
    the directory is refused, naming this one's pid). A backup (an
    interrupted run) is resumed only when it was made with the same settings,
    ``epochs`` aside (see the module); otherwise `ChangedSettings` names the
    settings that differ, or with ``overwrite`` the backup is deleted and the
    run starts afresh. Without a backup to resume, the ``history.csv`` of an
    earlier run is deleted. The settings are recorded in the backup directory
    for the next start."""
    with run_lock(run_dir) as run_dir:
        backup = run_dir / BACKUP
        given = settings_record(settings)
        trained = backed_up_epochs(run_dir)
        record = backup / SETTINGS_RECORD
        if trained is not None and record.is_file():  # (older versions wrote no record)
            recorded = json.loads(record.read_text(encoding="utf-8"))
            # A setting added since the backup was made has its default there:
            # the behaviour of the package that made it.
            recorded = {**settings_record(type(settings)()), **recorded}
            changes = differing_settings(recorded, given, trained)
            if changes and not overwrite:
                raise ChangedSettings(run_dir, changes, trained)
            if changes:
                trained = None
        if trained is None:  # a fresh start: no stale backup, no stale epochs in the CSV
            shutil.rmtree(backup, ignore_errors=True)
            (run_dir / "history.csv").unlink(missing_ok=True)
        write_json(record, given)
        try:
            yield run_dir
        except BaseException:
            if not (backup / STATE).exists():  # nothing to resume: no record left
                shutil.rmtree(backup, ignore_errors=True)
            raise


# -- the sequence of a run -------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Fit:
    """What a run trains, as its ``build`` hook gives it to `train_run`: the
    compiled ``model``, the ``train`` dataset (shuffling itself by ``(seed,
    epoch)``) and the ``validation`` one, the ``epochs`` (None: the
    settings'), more ``callbacks``, ``ema`` and ``patience`` (see `fit_run`)
    and ``record``, entries of ``results.json`` that follow the training's
    own (a pre-training's record, the recurrent layers' size)."""

    model: keras.Model
    train: Any
    validation: Any = None
    epochs: int | None = None
    callbacks: tuple[keras.callbacks.Callback, ...] = ()
    ema: bool = False
    patience: int | None = None
    record: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """What a run's ``evaluate`` hook gives `train_run`: the ``results``
    that open ``results.json`` (what was trained, the held-out metrics),
    the ``details`` that close it (samples, the command, figures) and the
    ``model`` saved as ``model.keras`` (None: the model trained)."""

    results: Mapping[str, Any]
    details: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    model: keras.Model | None = None


def train_run(
    run_dir: str | os.PathLike,
    settings: Any,
    *,
    data: Callable[[], Any],
    build: Callable[[Any, Path], Fit],
    evaluate: Callable[[keras.Model, Any, Path], Evaluation],
    overwrite: bool = False,
    verbose: int | str = "auto",
) -> dict[str, Any]:
    """The sequence of every ``rnncells train`` run, its own steps given as hooks:

    1. hold ``run_dir`` for a run of ``settings`` (`run_directory`: one run
       at a time, resumed only with the same settings, or ``overwrite``);
    2. seed Keras' random state with ``settings.seed``;
    3. ``data()``: the run's data;
    4. ``build(data, run_dir)``: the compiled model and what it trains on (`Fit`);
    5. train it (`fit_run`: resumable backups, ``history.csv``, logs);
    6. ``evaluate(model, data, run_dir)``: the results (`Evaluation`);
    7. write ``model.keras`` and ``results.json`` (`finish_run`): the
       evaluation's results, the training's record and the fit's, the
       settings, the evaluation's details.

    Returns the results."""
    with run_directory(run_dir, settings, overwrite) as run_dir:
        keras.utils.set_random_seed(settings.seed)
        loaded = data()
        fit = build(loaded, run_dir)
        training = fit_run(
            fit.model,
            fit.train,
            run_dir,
            settings.epochs if fit.epochs is None else fit.epochs,
            validation_data=fit.validation,
            verbose=verbose,
            ema=fit.ema,
            patience=fit.patience,
            callbacks=list(fit.callbacks),
        )
        evaluation = evaluate(fit.model, loaded, run_dir)
        results = {
            **evaluation.results,
            **training,
            **fit.record,
            "settings": dataclasses.asdict(settings),
            **evaluation.details,
        }
        saved = fit.model if evaluation.model is None else evaluation.model
        return finish_run(run_dir, saved, results)
