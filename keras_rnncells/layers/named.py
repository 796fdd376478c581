"""Named layers: ``GRU(units, ...)`` is ``RNN(GRUCell(units, ...), ...)``."""

from __future__ import annotations

import inspect
from typing import Any

import keras
from keras.src.utils.naming import to_snake_case  # Keras' own cell names; no public name

from keras_rnncells import cells
from keras_rnncells.cells.base import AbstractRNNCell
from keras_rnncells.layers.rnn import RNN

# Arguments of the layer itself; every other keyword goes to the cell.
RNN_ARGS = tuple(inspect.signature(RNN.__init__).parameters)[2:-1]
# keras.layers.Layer's own (``input_shape``/``input_dim``: what a Sequential
# model's first layer may be given in place of an ``Input``).
BASE_LAYER_ARGS = (
    "name",
    "dtype",
    "trainable",
    "activity_regularizer",
    "autocast",
    "input_shape",
    "input_dim",
)
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
            name=to_snake_case(self.cell_class.__name__),  # Keras' "gru_cell": same weight paths
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
        # As keras.layers.GRU, LSTM and SimpleRNN (keras.layers.RNN drops it).
        config["activity_regularizer"] = keras.regularizers.serialize(self.activity_regularizer)
        return config

    @classmethod
    def from_config(cls, config: dict) -> CellLayer:
        return cls(**config)


def cell_arguments(cell_class: type[AbstractRNNCell]) -> list[str]:
    """The keyword arguments of ``cell_class`` and its bases, ``units`` and
    keras.layers.Layer's own excepted."""
    names: list[str] = []
    for klass in cell_class.__mro__:
        if "__init__" not in vars(klass) or not issubclass(klass, AbstractRNNCell):
            continue
        for parameter in list(inspect.signature(klass.__init__).parameters.values())[1:]:
            kinds = (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL)
            if parameter.kind not in kinds and parameter.name not in names:
                names.append(parameter.name)
    return [n for n in names if n != "units" and n not in BASE_LAYER_ARGS + RNN_ARGS]


def cell_property(name: str) -> property:
    return property(
        lambda self: getattr(self.cell, name),
        doc=f"The cell's ``{name}`` (read-only, as on keras.layers.GRU).",
    )


def named_layer(cell_class: type[AbstractRNNCell], doc: str) -> type[CellLayer]:
    """The named layer class of ``cell_class``, registered for saving. As on
    Keras' GRU, LSTM and SimpleRNN, the cell's arguments read as properties
    of the layer (``GRU(3, dropout=0.1).dropout``)."""
    name = cell_class.__name__.removesuffix("Cell")
    namespace = {"cell_class": cell_class, "__doc__": doc}
    for argument in cell_arguments(cell_class):
        if not hasattr(CellLayer, argument):
            namespace[argument] = cell_property(argument)
    layer = type(name, (CellLayer,), namespace)
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
