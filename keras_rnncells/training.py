"""What every ``rnncells train`` run shares: its directory, callbacks and results.

A run directory holds ``model.keras`` (the trained model), ``results.json``
(held-out metrics, wall time, parameters, seconds per epoch, settings),
``history.csv`` (one row per epoch), ``logs/`` (TensorBoard) and, while the
run is unfinished, ``backup/``, from which an interrupted run resumes where it
stopped when started again with the same arguments.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keras


def write_atomically(path: str | os.PathLike, write: Callable[[str], None]) -> None:
    """``write(temporary_path)``, then rename the temporary file onto ``path``
    (same directory), so readers see the old file or the new one, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(
        prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent
    )
    os.close(handle)
    try:
        write(temporary)
        os.chmod(temporary, 0o666 & ~current_umask())  # mkstemp made it private
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def current_umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def write_json(path: str | os.PathLike, data: Any) -> None:
    """``data`` as indented JSON, written atomically."""

    def write(temporary: str) -> None:
        Path(temporary).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

    write_atomically(path, write)


def save_model(model: keras.Model, path: str | os.PathLike) -> None:
    """``model.save`` to a ``.keras`` file, atomically."""
    write_atomically(path, lambda temporary: model.save(temporary))


class EpochTimes(keras.callbacks.Callback):
    """Records the wall time of every epoch in ``seconds``."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds: list[float] = []

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self.started = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.seconds.append(time.perf_counter() - self.started)


def run_callbacks(run_dir: Path, timer: EpochTimes) -> list[keras.callbacks.Callback]:
    """Resumable backups, the per-epoch CSV, TensorBoard logs and ``timer``."""
    return [
        keras.callbacks.BackupAndRestore(str(run_dir / "backup")),
        keras.callbacks.CSVLogger(str(run_dir / "history.csv"), append=True),
        keras.callbacks.TensorBoard(str(run_dir / "logs"), write_graph=False),
        timer,
    ]


def parameter_count(model: keras.Model) -> int:
    return int(sum(keras.ops.size(w) for w in model.trainable_weights))


def settings_from_arguments(cls: type, args: Any, **extra: Any) -> Any:
    """The ``cls`` settings of ``rnncells train`` arguments and ``extra``
    fields; a value of None keeps the field's default."""
    given = {key: getattr(args, key) for key in ("cell", "units", "epochs", "batch_size", "seed")}
    given.update(train_size=args.limit, **extra)
    return cls(**{key: value for key, value in given.items() if value is not None})
