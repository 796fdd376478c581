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
    ``what`` failed, with the end of its standard error, when it exits non-zero."""
    result = subprocess.run(
        [sys.executable, "-c", source, *map(os.fspath, arguments)],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"{what} failed in a fresh process (exit {result.returncode}):\n"
            + result.stderr[-4000:]
        )
