"""Named layers: ``GRU(units, ...)`` is ``RNN(GRUCell(units, ...), ...)``."""

from __future__ import annotations

import inspect
from typing import Any

import keras

from keras_rnncells import cells
from keras_rnncells.cells.base import AbstractRNNCell
from keras_rnncells.layers.rnn import RNN

# Arguments of the layer itself; every other keyword goes to the cell.
RNN_ARGS = tuple(inspect.signature(RNN.__init__).parameters)[2:-1]
BASE_LAYER_ARGS = ("name", "dtype", "trainable", "activity_regularizer", "autocast")
CELL_CONFIG_ONLY = ("name", "dtype", "trainable")


class CellLayer(RNN):
    """An `RNN` over a fixed cell class; its config is the cell's arguments
    plus the layer's (flat, like ``keras.layers.GRU``)."""

    cell_class: type[AbstractRNNCell]

    def __init__(self, units: int, **kwargs: Any) -> None:
        layer_kwargs = {k: kwargs.pop(k) for k in RNN_ARGS + BASE_LAYER_ARGS if k in kwargs}
        cell = self.cell_class(
            units,
            dtype=layer_kwargs.get("dtype"),
            trainable=layer_kwargs.get("trainable", True),
            name=f"{self.cell_class.__name__.lower()}",
            **kwargs,
        )
        super().__init__(cell, **layer_kwargs)

    @property
    def units(self) -> int:
        return self.cell.units

    def get_config(self) -> dict:
        config = super().get_config()
        del config["cell"]
        cell_config = self.cell.get_config()
        for key in CELL_CONFIG_ONLY:
            cell_config.pop(key, None)
        config.update(cell_config)
        return config

    @classmethod
    def from_config(cls, config: dict) -> CellLayer:
        return cls(**config)


def named_layer(cell_class: type[AbstractRNNCell], doc: str) -> type[CellLayer]:
    """The named layer class of ``cell_class``, registered for saving."""
    name = cell_class.__name__.removesuffix("Cell")
    layer = type(name, (CellLayer,), {"cell_class": cell_class, "__doc__": doc})
    layer.__module__ = __name__
    return keras.saving.register_keras_serializable(package="keras_rnncells")(layer)


SimpleRNN = named_layer(cells.SimpleRNNCell, "`RNN` over a `SimpleRNNCell` (Elman).")
IRNN = named_layer(cells.IRNNCell, "`RNN` over an `IRNNCell` (ReLU, identity init).")
JordanRNN = named_layer(cells.JordanRNNCell, "`RNN` over a `JordanRNNCell`.")
GRU = named_layer(cells.GRUCell, "`RNN` over a `GRUCell`.")
LSTM = named_layer(cells.LSTMCell, "`RNN` over an `LSTMCell`.")
PeepholeLSTM = named_layer(cells.PeepholeLSTMCell, "`RNN` over a `PeepholeLSTMCell`.")
CIFGLSTM = named_layer(cells.CIFGLSTMCell, "`RNN` over a `CIFGLSTMCell`.")
LSTMNoInputGate = named_layer(cells.LSTMNoInputGateCell, "`RNN` over an `LSTMNoInputGateCell`.")
LSTMNoForgetGate = named_layer(cells.LSTMNoForgetGateCell, "`RNN` over an `LSTMNoForgetGateCell`.")
LSTMNoOutputGate = named_layer(cells.LSTMNoOutputGateCell, "`RNN` over an `LSTMNoOutputGateCell`.")
SLSTM = named_layer(cells.SLSTMCell, "`RNN` over an `SLSTMCell`.")
MGU = named_layer(cells.MGUCell, "`RNN` over an `MGUCell` (minimal gated unit).")
MuFuRU = named_layer(cells.MuFuRUCell, "`RNN` over a `MuFuRUCell`.")
MUT1 = named_layer(cells.MUT1Cell, "`RNN` over a `MUT1Cell`.")
MUT2 = named_layer(cells.MUT2Cell, "`RNN` over a `MUT2Cell`.")
MUT3 = named_layer(cells.MUT3Cell, "`RNN` over a `MUT3Cell`.")
SCRN = named_layer(cells.SCRNCell, "`RNN` over an `SCRNCell`.")
SGU = named_layer(cells.SGUCell, "`RNN` over an `SGUCell`.")
DSGU = named_layer(cells.DSGUCell, "`RNN` over a `DSGUCell`.")
MIRNN = named_layer(cells.MIRNNCell, "`RNN` over an `MIRNNCell`.")
MIGRU = named_layer(cells.MIGRUCell, "`RNN` over an `MIGRUCell`.")
MILSTM = named_layer(cells.MILSTMCell, "`RNN` over an `MILSTMCell`.")
