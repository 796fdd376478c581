"""Saving and loading: configs, `.keras` files and the documented weight order.

Parametrized at collection time over every registered cell, every named layer
exported at top level and every ``implementation`` of the `RNN` wrapper, so
cells and layers added later are covered without editing this file.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
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
    # the scan path runs linear recurrences only: MinGRU's
    _cell = kr.MinGRUCell if _impl == "scan" else kr.GRUCell
    _case = "RNN-min_gru-scan" if _impl == "scan" else f"RNN-gru-{_impl}"
    LAYER_CASES[_case] = (
        _impl,
        _cell,
        lambda impl=_impl, cell=_cell: kr.RNN(
            cell(UNITS), return_sequences=True, return_state=True, implementation=impl
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
    if isinstance(cell, kr.LinearRecurrenceCell):  # no recurrent kernel
        assert [w.name for w in layer.weights] == ["kernel", "bias"]
    else:
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


# -- every .keras file the package writes loads after the README's import ---------------
# Run in a fresh interpreter: loads each .keras file after IMPORT (the class
# and weights of each, or its error), then, after importing every module of
# the package, lists the classes registered with Keras that IMPORT had not.
LOAD_EACH = """
import importlib, json, pkgutil, sys
import keras
IMPORT
def registered():
    return {k for k in keras.saving.get_custom_objects() if k.startswith("keras_rnncells>")}
report = {"registered": len(registered())}
for name, path in json.loads(sys.argv[1]).items():
    try:
        model = keras.saving.load_model(path)
    except Exception as error:
        report[name] = {"error": f"{type(error).__name__}: {error}"}
        continue
    weights = [float(abs(w).sum()) for w in model.get_weights()]
    report[name] = {"class": type(model).__name__, "weights": weights}
before = registered()
import keras_rnncells
for module in pkgutil.walk_packages(keras_rnncells.__path__, "keras_rnncells."):
    importlib.import_module(module.name)
report["registered_late"] = sorted(registered() - before)
print(json.dumps(report))
"""


def load_each_in_child(paths: dict[str, str], import_line: str) -> subprocess.Popen:
    """`LOAD_EACH` of ``paths`` (name: .keras file) after ``import_line``,
    started in a fresh interpreter."""
    environ = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.Popen(
        [sys.executable, "-c", LOAD_EACH.replace("IMPORT", import_line), json.dumps(paths)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
    )


def report_of(child: subprocess.Popen) -> dict:
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err[-3000:]
    return json.loads(out.splitlines()[-1])


def test_every_model_file_the_package_writes_loads_after_import_keras_rnncells(
    tmp_path, tiny_app_models
) -> None:
    """What `rnncells train` saves (the four applications, and the data tasks'
    functional models) loads in a fresh process after ``import keras_rnncells``
    alone, as the README says, and that import registers every class the
    package registers. Without it, Keras' error names the missing class by its
    registered name, ``keras_rnncells>Class``."""
    from keras_rnncells.data.tasks import load_task
    from keras_rnncells.experiments import build_model
    from keras_rnncells.training import save_model

    task = load_task("adding", train_size=8, validation_size=8, test_size=8, steps=(4, 5))
    models = [*tiny_app_models(), build_model(task, "mgu", 3)]
    paths, weights = {}, {}
    for model in models:
        name = type(model).__name__
        paths[name] = str(tmp_path / f"{name}.keras")
        save_model(model, paths[name])
        weights[name] = [float(np.abs(w).sum()) for w in model.get_weights()]
    assert len(paths) == 5
    with_import = load_each_in_child(paths, "import keras_rnncells")
    without = load_each_in_child(paths, "")
    loaded = report_of(with_import)
    for name in paths:
        assert "error" not in loaded[name], loaded[name]
        assert loaded[name]["class"] == name
        np.testing.assert_allclose(loaded[name]["weights"], weights[name], rtol=1e-6)
    assert loaded["registered"] > 50 and loaded["registered_late"] == []
    failed = report_of(without)
    assert failed["registered"] == 0
    for name in paths:
        error = failed[name].get("error", "")
        assert error.startswith("TypeError: ") and "Could not locate class" in error, error
        # a Keras Functional model: the error names our layer inside it
        missing = "RNN" if name == "Functional" else name
        assert f"keras_rnncells>{missing}" in error, error


def test_the_connections_and_tree_layers_load_in_a_fresh_process(tmp_path) -> None:
    """Models holding `StackedRNN`, the clockwork and gated-feedback cells and
    both tree layers load, with their weights, after ``import keras_rnncells``."""
    keras.utils.set_random_seed(0)
    frames = keras.Input((None, 3))
    stacked = kr.StackedRNN("gru", 4, layers=2, connection="dense", return_sequences=True)(frames)
    clockwork = kr.RNN(kr.ClockworkCell("mgu", 2, periods=(1, 3)), return_sequences=True)(stacked)
    feedback = kr.RNN(kr.GatedFeedbackCell("lstm", 2, 2), return_sequences=True)(clockwork)
    depth_gated = kr.RNN(kr.DepthGatedLSTMCell(2, 2), return_sequences=True)(feedback)
    connected = keras.Model(frames, kr.RNN(kr.GridLSTMCell(2, 2))(depth_gated))
    tokens = keras.Input((None,), dtype="int32")
    parents = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(5, 3, mask_zero=True)(tokens)
    transitions = kr.tree.TransitionsFromTokens([3, 4])(tokens)
    spinn = kr.tree.ShiftReduceEncoder(4, tracking_units=2)([embedded, transitions])
    child_sum = kr.tree.ChildSumTreeLSTM(4)([embedded, parents])
    trees = keras.Model([tokens, parents], keras.layers.Concatenate()([spinn, child_sum]))
    paths, weights = {}, {}
    for name, model in (("connected", connected), ("trees", trees)):
        paths[name] = str(tmp_path / f"{name}.keras")
        model.save(paths[name])
        weights[name] = [float(np.abs(w).sum()) for w in model.get_weights()]
    loaded = report_of(load_each_in_child(paths, "import keras_rnncells"))
    for name in paths:
        assert "error" not in loaded[name], loaded[name]
        np.testing.assert_allclose(loaded[name]["weights"], weights[name], rtol=1e-6)
