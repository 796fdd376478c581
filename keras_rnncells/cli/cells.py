"""``rnncells cells``: the registered cells, their sizes and citations; with
``--complexity``, their complexity measures and those of each connection of
stacked layers (`keras_rnncells.analysis.complexity`)."""

from __future__ import annotations

import argparse
import math

from keras_rnncells.cli.command import Command, format_table
from keras_rnncells.flags import positive_int


def cells_arguments(parser: argparse.ArgumentParser) -> None:
    """``--input-dim`` and ``--units`` of the table's cells."""
    parser.add_argument(
        "--input-dim", type=positive_int, default=64, help="input features (default 64)"
    )
    parser.add_argument("--units", type=positive_int, default=128, help="units (default 128)")
    parser.add_argument(
        "--complexity",
        action="store_true",
        help="print the recurrent depth, feedforward depth and recurrent skip coefficient "
        "(Zhang et al. 2016) of every cell and of each connection of stacked layers instead",
    )
    parser.add_argument(
        "--layers",
        type=positive_int,
        default=3,
        help="with --complexity: layers (clockwork: modules) of each connection (default 3)",
    )
    parser.add_argument(
        "--stack-cell",
        default="lstm",
        help="with --complexity: the registered cell of the connections (default lstm)",
    )


def cell_sizes(cls: type, input_dim: int, units: int) -> tuple[int, object]:
    """Parameters and state size of ``cls(units)`` built for ``input_dim`` features."""
    cell = cls(units)
    cell.build((None, input_dim))
    return sum(math.prod(w.shape) for w in cell.weights), cell.state_size


def cells_run(args: argparse.Namespace) -> None:
    """Prints the table of the registered cells (or their complexity measures)."""
    from keras_rnncells import get_cell, list_cells

    if args.complexity:
        complexity_run(args.layers, args.stack_cell)
        return

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


def complexity_run(layers: int, cell: str) -> None:
    """Prints the complexity measures of the cells and of the connections of
    ``layers`` layers of ``cell``."""
    from keras_rnncells.analysis.complexity import CITATION
    from keras_rnncells.analysis.complexity_table import HEADERS, cell_rows, connection_rows

    print(f"Complexity measures ({CITATION}):")
    print("d_r: recurrent depth, d_f: feedforward depth, s: recurrent skip coefficient;")
    print("a cell's step counts as one transformation, the readout as one more.\n")
    print(format_table(("cell", *HEADERS), cell_rows()))
    print(f"\nConnections of {layers} layers (clockwork: modules of periods 1, 2, 4, ...):")
    print(format_table(("connection", "cell", "layers", *HEADERS), connection_rows(layers, cell)))


COMMAND = Command("list the registered cells and their sizes", cells_arguments, cells_run)
