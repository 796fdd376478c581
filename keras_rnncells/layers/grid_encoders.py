"""A feature task's sequences read as 2-D grids, for `rnncells train ... --model
mdrnn|rowlstm` (`keras_rnncells.experiments.build_model`).

A batch ``[batch, steps, features]`` (MNIST's rows: 28 steps of 28 pixels)
becomes the grid ``[batch, steps, features, 1]``, one value per position,
and the encoder gives the head one vector per example:

* "mdrnn": `MultiDimensionalRNN` of the run's cell in the four sweep
  directions, each sweep's state at its last corner, concatenated;
* "rowlstm": `RowLSTM` (``--cell lstm``: it is an LSTM) down the rows, its
  last row's states ``[features, units]`` flattened (a position of the last
  row reads a triangle of the rows above: the row together reads the grid).
"""

from __future__ import annotations

from typing import Any

import keras

from keras_rnncells.cells.registry import make_cell
from keras_rnncells.layers.two_dimensional import MultiDimensionalRNN, RowLSTM

GRID_ENCODERS = ("mdrnn", "rowlstm")


def grid_encoding(model: str, cell: str, units: int, sequences: Any) -> Any:
    """The vector per example that encoder ``model`` (one of `GRID_ENCODERS`)
    of ``units`` reads from ``sequences`` ``[batch, steps, features]`` (a
    Keras tensor) as a grid; a one-line ``ValueError`` for ``rowlstm`` with a
    cell other than "lstm"."""
    grid = keras.layers.Reshape((-1, sequences.shape[-1], 1), name="grid")(sequences)
    if model == "mdrnn":
        return MultiDimensionalRNN(make_cell(cell, units), return_grid=False, name="mdrnn")(grid)
    if cell != "lstm":
        raise ValueError(
            f"Argument `cell` must be 'lstm' for model 'rowlstm' (PixelRNN's row LSTM), "
            f"received: {cell!r}"
        )
    rows = RowLSTM(units, return_grid=False, name="rowlstm")(grid)
    return keras.layers.Flatten(name="last_row")(rows)
