"""The named layers: one explicit class per cell, registered for saving under
its own name, taking `RNN`'s arguments and handing every other one to the cell."""

from __future__ import annotations

import inspect
import re

import keras
import pytest

import keras_rnncells as kr
from keras_rnncells.layers import named
from keras_rnncells.layers.rnn import RNN

NAMED_LAYERS = sorted(
    (
        obj
        for obj in vars(kr).values()
        if isinstance(obj, type) and issubclass(obj, kr.CellLayer) and obj is not kr.CellLayer
    ),
    key=lambda cls: cls.__name__,
)


def test_every_cell_class_has_one_named_layer_written_out() -> None:
    source = inspect.getsource(named)
    written = set(re.findall(r"^class (\w+)\(CellLayer\):", source, flags=re.MULTILINE))
    assert written == {layer.__name__ for layer in NAMED_LAYERS}
    cell_classes = {layer.cell_class for layer in NAMED_LAYERS}
    assert cell_classes == {kr.get_cell(name) for name in kr.list_cells()}
    assert len(cell_classes) == len(NAMED_LAYERS)


@pytest.mark.parametrize("layer", NAMED_LAYERS, ids=lambda layer: layer.__name__)
def test_named_layers_keep_their_registered_names(layer: type) -> None:
    name = f"keras_rnncells>{layer.__name__}"
    assert keras.saving.get_registered_name(layer) == name
    assert keras.saving.get_registered_object(name) is layer
    assert layer.__name__ == layer.cell_class.__name__.removesuffix("Cell")
    assert layer.__module__ == "keras_rnncells.layers.named"


def test_layer_arguments_are_rnns_own() -> None:
    parameters = list(inspect.signature(RNN.__init__).parameters)
    assert parameters[:2] == ["self", "cell"] and parameters[-1] == "kwargs"
    assert named.RNN_ARGS == tuple(parameters[2:-1])


def test_cell_arguments_read_as_layer_properties() -> None:
    layer = kr.MGU(3, reset_after=True, dropout=0.25)
    assert (layer.reset_after, layer.dropout, layer.units) == (True, 0.25, 3)
    assert isinstance(kr.GRU.recurrent_activation, property)
    assert not hasattr(kr.SimpleRNN, "recurrent_activation")
