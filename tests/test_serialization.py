"""Saving and loading: configs, `.keras` files and the documented weight order.

Parametrized at collection time over every registered cell, every named layer
exported at top level and every ``implementation`` of the `RNN` wrapper, so
cells and layers added later are covered without editing this file.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable

import keras
import numpy as np
import pytest

import keras_rnncells as kr
from keras_rnncells.layers import IMPLEMENTATIONS
from keras_rnncells.layers.rnn import gpu_available

BATCH, STEPS, FEATURES, UNITS = 2, 4, 3, 5
CELLS = kr.list_cells()
NAMED_LAYERS = sorted(
    (
        obj
        for obj in vars(kr).values()
        if isinstance(obj, type) and issubclass(obj, kr.CellLayer) and obj is not kr.CellLayer
    ),
    key=lambda cls: cls.__name__,
)


def input_features(cell_class: type) -> int:
    """Cells that add the raw input to a units-sized gate (MUT1, MUT2) need
    ``input_dim == units``; every other cell gets a different size, so that a
    transposed weight cannot go unnoticed."""
    return UNITS if getattr(cell_class, "raw_input", None) else FEATURES


def random_sequences(features: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(BATCH, STEPS, features)).astype("float32")


def model_of(layer: keras.layers.Layer, features: int) -> keras.Model:
    inputs = keras.Input((STEPS, features))
    return keras.Model(inputs, layer(inputs))


def outputs(model: keras.Model, x: np.ndarray) -> list[np.ndarray]:
    return [keras.ops.convert_to_numpy(t) for t in keras.tree.flatten(model(x))]


def assert_same(got: list, want: list) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def as_json(config: dict) -> dict:
    """``config`` as it reads back from a file (tuples become lists)."""
    return json.loads(json.dumps(config))


def runs_here(implementation: str):
    """The cuDNN path cannot build without a GPU; there `portable()` makes the
    same configuration run (and save) on the fused path."""
    if implementation == "cudnn" and not gpu_available():
        return kr.portable()
    return contextlib.nullcontext()


# case id -> (implementation, cell class, layer factory)
LayerCase = tuple[str, type, Callable[[], keras.layers.Layer]]
LAYER_CASES: dict[str, LayerCase] = {}
for _cls in NAMED_LAYERS:
    LAYER_CASES[_cls.__name__] = (
        "auto",
        _cls.cell_class,
        lambda cls=_cls: cls(UNITS, return_sequences=True),
    )
# Every cell on the generic path: a config does not depend on the path, and
# this path needs no XLA compilation (the fused path is saved through the
# named layers and the GRU cases below).
for _name in CELLS:
    LAYER_CASES[f"RNN-{_name}"] = (
        "generic",
        kr.get_cell(_name),
        lambda name=_name: kr.RNN(
            kr.get_cell(name)(UNITS), return_sequences=True, implementation="generic"
        ),
    )
for _impl in IMPLEMENTATIONS:
    LAYER_CASES[f"RNN-gru-{_impl}"] = (
        _impl,
        kr.GRUCell,
        lambda impl=_impl: kr.RNN(
            kr.GRUCell(UNITS), return_sequences=True, return_state=True, implementation=impl
        ),
    )


@pytest.mark.parametrize("name", CELLS)
def test_cell_config_round_trip(name: str) -> None:
    cell = kr.get_cell(name)(UNITS)
    clone = type(cell).from_config(cell.get_config())
    assert clone.get_config() == cell.get_config()

    x = random_sequences(input_features(type(cell)))[:, 0]
    sizes = cell.state_size if isinstance(cell.state_size, (list, tuple)) else [cell.state_size]
    rng = np.random.default_rng(1)
    states = [rng.normal(size=(BATCH, size)).astype("float32") for size in sizes]
    expected, expected_states = cell(x, states)
    clone(x, states)
    clone.set_weights(cell.get_weights())
    output, new_states = clone(x, states)
    assert_same([output, *new_states], [expected, *expected_states])


@pytest.mark.parametrize("case", sorted(LAYER_CASES))
def test_layer_config_and_keras_file_round_trip(case: str, tmp_path) -> None:
    implementation, cell_class, make = LAYER_CASES[case]
    features = input_features(cell_class)
    x = random_sequences(features)
    with runs_here(implementation):
        layer = make()
        model = model_of(layer, features)
        expected = outputs(model, x)

        clone = type(layer).from_config(layer.get_config())
        assert clone.get_config() == layer.get_config()
        clone_model = model_of(clone, features)
        clone.set_weights(layer.get_weights())
        assert_same(outputs(clone_model, x), expected)

        path = tmp_path / "model.keras"
        model.save(path)
        loaded = keras.saving.load_model(path)
        loaded_layer = loaded.layers[-1]
        assert type(loaded_layer) is type(layer)
        assert loaded_layer.implementation == implementation
        assert as_json(loaded_layer.get_config()) == as_json(layer.get_config())
        assert_same(outputs(loaded, x), expected)


# Column blocks of the cells documented in DESIGN.md's weight table.
DOCUMENTED_BLOCKS = {"gru": 3, "lstm": 4, "simple": 1, "mgu": 2}


@pytest.mark.parametrize("name", CELLS)
def test_weights_order_and_shapes(name: str) -> None:
    cell = kr.get_cell(name)(UNITS)
    features = input_features(type(cell))
    layer = kr.RNN(cell)
    layer.build((BATCH, STEPS, features))
    assert [w.name for w in layer.weights[:3]] == ["kernel", "recurrent_kernel", "bias"]
    values = layer.get_weights()
    for variable, value in zip(layer.weights, values, strict=True):
        np.testing.assert_array_equal(value, keras.ops.convert_to_numpy(variable))
    shapes = [v.shape for v in values]
    if isinstance(cell, kr.DenseGatesCell):
        documented = [cell.kernel_shape(features), cell.recurrent_kernel_shape(), cell.bias_shape()]
        assert shapes[:3] == [tuple(s) for s in documented]
    if name in DOCUMENTED_BLOCKS:
        width = DOCUMENTED_BLOCKS[name] * UNITS
        bias = (2, width) if name == "gru" else (width,)  # GRU's default reset_after=True
        assert shapes == [(features, width), (UNITS, width), bias]


def test_gru_reset_before_bias_shape() -> None:
    layer = kr.GRU(UNITS, reset_after=False)
    layer.build((BATCH, STEPS, FEATURES))
    assert [w.shape for w in layer.get_weights()] == [
        (FEATURES, 3 * UNITS),
        (UNITS, 3 * UNITS),
        (3 * UNITS,),
    ]
