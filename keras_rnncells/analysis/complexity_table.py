"""The complexity measures of every registered cell and of each connection of
stacked layers, as table rows: what ``rnncells cells --complexity`` prints and
``benchmarks/complexity.py`` reports."""

from __future__ import annotations

from collections.abc import Sequence

from keras_rnncells.analysis.complexity import (
    Measures,
    cell_graph,
    connection_graph,
    format_measure,
)
from keras_rnncells.cells.registry import list_cells
from keras_rnncells.checks import check_choice
from keras_rnncells.layers.stacks import ALL_CONNECTIONS, LSTM_ONLY

HEADERS = ("d_r", "d_f", "s", "deepest cycle (d_r)", "fastest cycle (s)")


def measure_cells(measures: Measures, prefix: str = "") -> tuple[str, ...]:
    """``d_r``, ``d_f``, ``s`` and the two cycles of one row (node names
    without ``prefix``)."""

    def path(nodes: Sequence[str]) -> str:
        return " -> ".join(node.removeprefix(prefix) for node in nodes)

    return (
        format_measure(measures.recurrent_depth),
        format_measure(measures.feedforward_depth),
        format_measure(measures.skip_coefficient),
        path(measures.deepest_cycle),
        path(measures.fastest_cycle),
    )


def cell_rows() -> list[tuple[str, ...]]:
    """One row per registered cell: name, then `measure_cells`."""
    return [(name, *measure_cells(cell_graph(name).measures(), "cell.")) for name in list_cells()]


def connection_rows(layers: int, cell: str) -> list[tuple[str, ...]]:
    """One row per connection of ``layers`` layers of ``cell`` (the LSTM-only
    connections with ``"lstm"``): connection, cell, layers, then
    `measure_cells`."""
    check_choice("stack_cell", cell, list_cells())
    rows = []
    for connection in ALL_CONNECTIONS:
        used = "lstm" if connection in LSTM_ONLY else cell
        measures = connection_graph(connection, used, layers).measures()
        rows.append((connection, used, str(layers), *measure_cells(measures)))
    return rows
