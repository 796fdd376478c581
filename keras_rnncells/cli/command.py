"""What every subcommand of ``rnncells`` is (`Command`) and how commands
print a table (`format_table`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """One subcommand: its one-line help, its arguments, what it runs and,
    optionally, the checks of its arguments that need no TensorFlow (run
    before TensorFlow is imported, so a mistake is told at once) and the
    exceptions that, wherever raised, mean a bad input (``anticipated``: for
    `export` and `verify`, every ``ValueError`` is about the file given)."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], None]
    check: Callable[[argparse.Namespace], None] | None = None
    anticipated: tuple[type[Exception], ...] = ()


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table: columns left-aligned, two spaces apart."""
    cells = [[str(value) for value in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(value.ljust(width) for value, width in zip(row, widths)) for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(line.rstrip() for line in lines)
