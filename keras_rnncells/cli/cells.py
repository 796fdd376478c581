"""``rnncells cells``: the registered cells, their sizes and citations."""

from __future__ import annotations

import argparse
import math

from keras_rnncells.cli.command import Command, format_table
from keras_rnncells.flags import positive_int


def cells_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input-dim", type=positive_int, default=64, help="input features (default 64)"
    )
    parser.add_argument("--units", type=positive_int, default=128, help="units (default 128)")


def cell_sizes(cls: type, input_dim: int, units: int) -> tuple[int, object]:
    """Parameters and state size of ``cls(units)`` built for ``input_dim`` features."""
    cell = cls(units)
    cell.build((None, input_dim))
    return sum(math.prod(w.shape) for w in cell.weights), cell.state_size


def cells_run(args: argparse.Namespace) -> None:
    from keras_rnncells import get_cell, list_cells

    rows, notes = [], []
    for name in list_cells():
        cls = get_cell(name)
        try:
            parameters, state_size = cell_sizes(cls, args.input_dim, args.units)
        except (TypeError, ValueError) as error:
            parameters, state_size = "n/a", "n/a"
            notes.append(f"{name}: {error}")
        blocks = " ".join(getattr(cls(args.units), "blocks", ())) or "-"
        row = (name, cls.__name__, cls.__module__, blocks, parameters, state_size)
        rows.append((*row, cls.citation or "-"))
    headers = ("name", "class", "module", "blocks", "parameters", "state size", "citation")
    print(f"Registered cells; parameters for input {args.input_dim}, units {args.units}:")
    print(format_table(headers, rows))
    if notes:
        print("\nn/a: cannot be built at this shape:")
        print("\n".join(notes))


COMMAND = Command("list the registered cells and their sizes", cells_arguments, cells_run)
