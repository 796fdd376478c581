"""Stacks of recurrent layers, connected as the literature connects them.

`StackedRNN` holds ``layers`` `RNN` layers of one registered cell (each on
its fast path) and feeds layer k+1 with ``x_{k+1}``, from the input
sequence ``x_1`` and layer k's output sequence ``h_k``:

* ``"plain"``: ``x_{k+1} = h_k``;
* ``"residual"`` (Wu et al. 2016, "Google's Neural Machine Translation
  System", §3.1: residual connections between stacked LSTM layers):
  ``x_{k+1} = h_k + x_k`` for k ≥ 2, ``x_2 = h_1`` (the input has another
  width);
* ``"dense"`` (Zhou et al. 2016, "Deep Recurrent Models with Fast-Forward
  Connections for Neural Machine Translation"): ``x_{k+1} = [x_k; h_k]``,
  each layer reads the input of the layer below and its output.

The output is the top's ``x_{layers+1}`` with its top layer's output in place
of ``x``: ``h_L`` (plain), ``h_L + x_L`` (residual, L ≥ 2), ``h_L`` (dense);
the sequence with ``return_sequences``, else its last step (a masked last
step carries the last unmasked one, as in Keras' `RNN`).

`connected_stack` builds any connection by name, these three and the cells
of cells (gated feedback, clockwork, depth-gated, grid): what `rnncells
train TASK --model` and `benchmarks/stacks.py` build.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_rnncells.cells.registry import make_cell
from keras_rnncells.checks import check_choice, check_positive_int
from keras_rnncells.layers.clockwork import ClockworkCell
from keras_rnncells.layers.depth_gated import DepthGatedLSTMCell
from keras_rnncells.layers.gated_feedback import GatedFeedbackCell
from keras_rnncells.layers.grid_lstm import GridLSTMCell
from keras_rnncells.layers.rnn import RNN

CONNECTIONS = ("plain", "residual", "dense")
# Every connection `connected_stack` builds: StackedRNN's, then the cells of
# cells (`keras_rnncells.defaults.STACKS` names them for the tasks).
ALL_CONNECTIONS = (*CONNECTIONS, "gated_feedback", "clockwork", "depth_gated", "grid")
LSTM_ONLY = ("depth_gated", "grid")


def connected_stack(
    connection: str,
    cell: str,
    units: int,
    layers: int,
    return_sequences: bool = False,
    name: str | None = None,
) -> keras.layers.Layer:
    """``layers`` layers of ``cell`` joined by ``connection``: a `StackedRNN`
    (plain, residual, dense), or an `RNN` over a gated-feedback cell, clockwork
    modules of periods 1, 2, 4, ..., depth-gated LSTM layers or a grid LSTM
    (the last two for ``cell`` "lstm" only)."""
    check_choice("connection", connection, ALL_CONNECTIONS)
    if connection in CONNECTIONS:
        return StackedRNN(cell, units, layers, connection, return_sequences, name=name)
    if connection in LSTM_ONLY and cell != "lstm":
        raise ValueError(
            f"Argument `cell` must be 'lstm' for model {connection!r} (it joins LSTM memory "
            f"cells), received: {cell!r}"
        )
    if connection == "gated_feedback":
        compound = GatedFeedbackCell(cell, units, layers)
    elif connection == "clockwork":
        compound = ClockworkCell(cell, units, periods=[2**i for i in range(layers)])
    else:
        compound = (DepthGatedLSTMCell if connection == "depth_gated" else GridLSTMCell)(
            units, layers
        )
    return RNN(compound, return_sequences=return_sequences, name=name)


@keras.saving.register_keras_serializable(package="keras_rnncells")
class StackedRNN(keras.layers.Layer):
    """``layers`` recurrent layers of ``cell`` (a registered name) with
    ``units`` each, joined by ``connection`` (see the module).

    Args:
        cell: a registered cell's name (``keras_rnncells.list_cells()``).
        units: units of every layer.
        layers: how many.
        connection: ``"plain"``, ``"residual"`` or ``"dense"``.
        return_sequences: the whole top sequence, else its last step.
        cell_options: keyword arguments of every layer's cell.
    """

    def __init__(
        self,
        cell: str,
        units: int,
        layers: int = 2,
        connection: str = "plain",
        return_sequences: bool = False,
        cell_options: dict | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.cell = cell
        self.units = check_positive_int("units", units)
        self.depth = check_positive_int("layers", layers)
        self.connection = check_choice("connection", connection, CONNECTIONS)
        self.return_sequences = bool(return_sequences)
        self.cell_options = dict(cell_options or {})
        self.recurrent_layers = [
            RNN(
                make_cell(cell, units, self.cell_options),
                return_sequences=True,
                name=f"layer_{index + 1}",
                dtype=self.dtype_policy,
            )
            for index in range(self.depth)
        ]
        self.supports_masking = True

    def input_widths(self, features: int) -> list[int]:
        """The width of each layer's input ``x_k``."""
        if self.connection != "dense":
            return [features] + [self.units] * (self.depth - 1)
        return [features + index * self.units for index in range(self.depth)]

    def build(self, input_shape: tuple) -> None:
        for layer, width in zip(self.recurrent_layers, self.input_widths(input_shape[-1])):
            layer.build((*input_shape[:-1], width))

    def call(self, inputs: Any, mask: Any = None, training: bool = False) -> Any:
        x = inputs
        for index, layer in enumerate(self.recurrent_layers):
            h = layer(x, mask=mask, training=training)
            last = index == self.depth - 1
            if self.connection == "residual" and index > 0:
                x = h + x
            elif self.connection == "dense" and not last:
                x = ops.concatenate([x, h], axis=-1)
            else:
                x = h
        return x if self.return_sequences else x[:, -1]

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        if self.return_sequences:
            return (*input_shape[:-1], self.units)
        return (input_shape[0], self.units)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return mask if self.return_sequences else None

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "cell": self.cell,
            "units": self.units,
            "layers": self.depth,
            "connection": self.connection,
            "return_sequences": self.return_sequences,
            "cell_options": self.cell_options,
        }
