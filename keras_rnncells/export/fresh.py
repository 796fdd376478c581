"""Runs a Python program in a fresh interpreter, the way exports are checked
without the modules (keras_rnncells, or TensorFlow) of the exporting process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence


def run_fresh_python(
    source: str, arguments: Sequence[str | os.PathLike], what: str, cwd: str | os.PathLike
) -> None:
    """``python -c source *arguments`` in ``cwd``; a ``RuntimeError`` saying
    ``what`` failed, with the end of its standard error, when it exits non-zero.

    Path arguments (``os.PathLike``) are made absolute first: the child runs in
    ``cwd``, where a path relative to this process' directory means something
    else. Plain strings are passed as they are."""
    command = [sys.executable, "-c", source, *map(absolute, arguments)]
    result = subprocess.run(command, cwd=absolute(cwd), capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(
            f"{what} failed in a fresh process (exit {result.returncode}):\n"
            + result.stderr[-4000:]
        )


def absolute(argument: str | os.PathLike) -> str:
    """An ``os.PathLike`` as an absolute path; a ``str`` unchanged."""
    if isinstance(argument, os.PathLike):
        return os.path.abspath(argument)
    return argument
