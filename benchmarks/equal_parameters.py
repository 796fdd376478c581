"""What the comparisons at equal parameters share (benchmarks/char_words.py,
benchmarks/ptb_chars.py): the size that brings a model to a parameter count
(`matching_size`), a task run by the ``rnncells train`` command in a
subprocess, resumed or reused where finished (`trained`), and the report
section written atomically (`write_section`)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import keras

from keras_rnncells.data import Task
from keras_rnncells.experiments import build_model
from keras_rnncells.files import write_atomically
from keras_rnncells.training import parameter_count


def model_parameters(task: Task, cell: str, units: int, **options: Any) -> int:
    """Trainable parameters of the task model `build_model` makes."""
    keras.backend.clear_session()
    return parameter_count(build_model(task, cell, units, **options))


def matching_size(count: Callable[[int], int], target: int, low: int, high: int) -> int:
    """The size in ``[low, high]`` whose ``count(size)`` (growing with the
    size) is nearest ``target``, by bisection."""
    while high - low > 1:
        middle = (low + high) // 2
        if count(middle) <= target:
            low = middle
        else:
            high = middle
    return min((low, high), key=lambda size: abs(count(size) - target))


def train_command(task: str, run_dir: Path, flags: dict[str, Any]) -> list[str]:
    """``rnncells train TASK --flag value ... --out RUN_DIR``."""
    words = ["rnncells", "train", task]
    for name, value in flags.items():
        words += ["--" + name.replace("_", "-"), str(value)]
    return [*words, "--out", str(run_dir)]


def trained(task: str, run_dir: Path, flags: dict[str, Any]) -> dict[str, Any]:
    """The results of ``rnncells train TASK`` with ``flags`` into ``run_dir``
    (run at ``nice -n 5``; a finished run is read, an interrupted one resumes)."""
    finished = run_dir / "results.json"
    if not finished.exists():
        command = train_command(task, run_dir, flags)
        command = ["nice", "-n", "5", sys.executable, "-m", "keras_rnncells.cli", *command[1:]]
        environ = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
        print("$", shlex.join(command[3:]), flush=True)
        subprocess.run(command, check=True, env=environ, stdout=subprocess.DEVNULL)
    return json.loads(finished.read_text(encoding="utf-8"))


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]


def write_section(out: Path, lines: Sequence[str]) -> Path:
    """``out/section.md`` written atomically; also printed."""
    text = "\n".join(lines) + "\n"
    print(text)
    path = out / "section.md"
    out.mkdir(parents=True, exist_ok=True)
    write_atomically(path, lambda temporary: Path(temporary).write_text(text, encoding="utf-8"))
    return path
