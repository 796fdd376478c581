"""Named layers: ``GRU(units, ...)`` is ``RNN(GRUCell(units, ...), ...)``.

One class per registered cell, each a `CellLayer` naming its ``cell_class``;
the equations, citation and weight layout are in the cell's docstring.
"""

from __future__ import annotations

import inspect
from typing import Any

import keras
from keras.src.utils.naming import to_snake_case  # Keras' own cell names; no public name

from keras_rnncells import cells
from keras_rnncells.cells.base import AbstractRNNCell
from keras_rnncells.layers.rnn import RNN

# Arguments of the layer itself (`RNN`'s, but its cell); every other keyword
# goes to the cell. tests/layers/test_keras_arguments.py holds it to RNN's signature.
RNN_ARGS = (
    "return_sequences",
    "return_state",
    "go_backwards",
    "stateful",
    "unroll",
    "zero_output_for_mask",
    "implementation",
    "use_cudnn",
    "column_blocks",
)
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
    plus the layer's (flat, like ``keras.layers.GRU``). As on Keras' GRU, LSTM
    and SimpleRNN, the cell's arguments read as properties of the layer
    (``GRU(3, dropout=0.1).dropout``): a subclass that names its
    ``cell_class`` gets them."""

    cell_class: type[AbstractRNNCell]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "cell_class" in vars(cls):
            for argument in cell_arguments(cls.cell_class):
                if not hasattr(CellLayer, argument):
                    setattr(cls, argument, cell_property(argument))

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


register = keras.saving.register_keras_serializable(package="keras_rnncells")


@register
class SimpleRNN(CellLayer):
    """`RNN` over a `SimpleRNNCell` (Elman; equations in its docstring)."""

    cell_class = cells.SimpleRNNCell


@register
class IRNN(CellLayer):
    """`RNN` over an `IRNNCell` (ReLU, identity init; equations in its docstring)."""

    cell_class = cells.IRNNCell


@register
class JordanRNN(CellLayer):
    """`RNN` over a `JordanRNNCell` (equations in its docstring)."""

    cell_class = cells.JordanRNNCell


@register
class GRU(CellLayer):
    """`RNN` over a `GRUCell` (equations in its docstring)."""

    cell_class = cells.GRUCell


@register
class LSTM(CellLayer):
    """`RNN` over an `LSTMCell` (equations in its docstring)."""

    cell_class = cells.LSTMCell


@register
class PeepholeLSTM(CellLayer):
    """`RNN` over a `PeepholeLSTMCell` (equations in its docstring)."""

    cell_class = cells.PeepholeLSTMCell


@register
class CIFGLSTM(CellLayer):
    """`RNN` over a `CIFGLSTMCell` (equations in its docstring)."""

    cell_class = cells.CIFGLSTMCell


@register
class LSTMNoInputGate(CellLayer):
    """`RNN` over an `LSTMNoInputGateCell` (equations in its docstring)."""

    cell_class = cells.LSTMNoInputGateCell


@register
class LSTMNoForgetGate(CellLayer):
    """`RNN` over an `LSTMNoForgetGateCell` (equations in its docstring)."""

    cell_class = cells.LSTMNoForgetGateCell


@register
class LSTMNoOutputGate(CellLayer):
    """`RNN` over an `LSTMNoOutputGateCell` (equations in its docstring)."""

    cell_class = cells.LSTMNoOutputGateCell


@register
class SLSTM(CellLayer):
    """`RNN` over an `SLSTMCell` (equations in its docstring)."""

    cell_class = cells.SLSTMCell


@register
class MGU(CellLayer):
    """`RNN` over an `MGUCell` (minimal gated unit; equations in its docstring)."""

    cell_class = cells.MGUCell


@register
class MinGRU(CellLayer):
    """`RNN` over a `MinGRUCell` (minimal GRU; equations in its docstring).
    ``implementation="auto"`` runs it on the scan path."""

    cell_class = cells.MinGRUCell


@register
class MinLSTM(CellLayer):
    """`RNN` over a `MinLSTMCell` (minimal LSTM; equations in its docstring).
    ``implementation="auto"`` runs it on the scan path."""

    cell_class = cells.MinLSTMCell


@register
class QRNN(CellLayer):
    """`RNN` over a `QRNNCell` (quasi-recurrent, fo-pooling; equations in its
    docstring). ``implementation="auto"`` runs it on the scan path."""

    cell_class = cells.QRNNCell


@register
class MuFuRU(CellLayer):
    """`RNN` over a `MuFuRUCell` (equations in its docstring)."""

    cell_class = cells.MuFuRUCell


@register
class MUT1(CellLayer):
    """`RNN` over a `MUT1Cell` (equations in its docstring)."""

    cell_class = cells.MUT1Cell


@register
class MUT2(CellLayer):
    """`RNN` over a `MUT2Cell` (equations in its docstring)."""

    cell_class = cells.MUT2Cell


@register
class MUT3(CellLayer):
    """`RNN` over a `MUT3Cell` (equations in its docstring)."""

    cell_class = cells.MUT3Cell


@register
class SCRN(CellLayer):
    """`RNN` over an `SCRNCell` (equations in its docstring)."""

    cell_class = cells.SCRNCell


@register
class SGU(CellLayer):
    """`RNN` over an `SGUCell` (equations in its docstring)."""

    cell_class = cells.SGUCell


@register
class DSGU(CellLayer):
    """`RNN` over a `DSGUCell` (equations in its docstring)."""

    cell_class = cells.DSGUCell


@register
class MIRNN(CellLayer):
    """`RNN` over an `MIRNNCell` (equations in its docstring)."""

    cell_class = cells.MIRNNCell


@register
class MIGRU(CellLayer):
    """`RNN` over an `MIGRUCell` (equations in its docstring)."""

    cell_class = cells.MIGRUCell


@register
class MILSTM(CellLayer):
    """`RNN` over an `MILSTMCell` (equations in its docstring)."""

    cell_class = cells.MILSTMCell
