"""MUT1-3 against numpy transcriptions of Jozefowicz et al. (2015)'s equations."""

from __future__ import annotations

import re

import numpy as np
import pytest

import keras_rnncells as kr
from keras_rnncells.cells.mut import MUT1Cell, MUT2Cell, MUT3Cell

UNITS = 4  # also the input feature size: MUT1/MUT2 need them equal


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def blocks(matrix, names):
    """Columns of ``matrix`` split into the named ``units``-wide blocks."""
    return dict(zip(names, np.split(matrix, len(names), axis=-1)))


# The published equations; weights read by the documented layout
# [kernel, recurrent_kernel, bias].
def mut1(x, h, weights):
    w, u, b = blocks(weights[0], "zr"), blocks(weights[1], "rh"), blocks(weights[2], "zrh")
    z = sigmoid(x @ w["z"] + b["z"])
    r = sigmoid(x @ w["r"] + h @ u["r"] + b["r"])
    return np.tanh((r * h) @ u["h"] + np.tanh(x) + b["h"]) * z + h * (1 - z)


def mut2(x, h, weights):
    w, u, b = blocks(weights[0], "zh"), blocks(weights[1], "zrh"), blocks(weights[2], "zrh")
    z = sigmoid(x @ w["z"] + h @ u["z"] + b["z"])
    r = sigmoid(x + h @ u["r"] + b["r"])
    return np.tanh((r * h) @ u["h"] + x @ w["h"] + b["h"]) * z + h * (1 - z)


def mut3(x, h, weights):
    w, u, b = blocks(weights[0], "zrh"), blocks(weights[1], "zrh"), blocks(weights[2], "zrh")
    z = sigmoid(x @ w["z"] + np.tanh(h) @ u["z"] + b["z"])
    r = sigmoid(x @ w["r"] + h @ u["r"] + b["r"])
    return np.tanh((r * h) @ u["h"] + x @ w["h"] + b["h"]) * z + h * (1 - z)


CELLS = {
    "mut1": (MUT1Cell, mut1, [(UNITS, 2 * UNITS), (UNITS, 2 * UNITS), (3 * UNITS,)]),
    "mut2": (MUT2Cell, mut2, [(UNITS, 2 * UNITS), (UNITS, 3 * UNITS), (3 * UNITS,)]),
    "mut3": (MUT3Cell, mut3, [(UNITS, 3 * UNITS), (UNITS, 3 * UNITS), (3 * UNITS,)]),
}


@pytest.mark.parametrize("name", sorted(CELLS))
def test_step_and_fused_sequence_follow_the_equations(name, rng, helpers):
    cls, reference, shapes = CELLS[name]
    assert kr.get_cell(name) is cls
    weights = helpers.check_step_and_sequence(cls(UNITS), reference, UNITS, rng)
    assert [w.shape for w in weights] == shapes


@pytest.mark.parametrize("cls, term", [(MUT1Cell, "tanh(x)"), (MUT2Cell, "x")])
def test_input_size_must_equal_units(cls, term):
    assert cls(5).input_dim_must_equal_units
    with pytest.raises(
        ValueError, match=rf"adds {re.escape(term)} .* input feature size 3 and units=5"
    ):
        kr.RNN(cls(5))(np.zeros((2, 4, 3), "float32"))


def test_mut3_takes_any_input_size():
    cell = MUT3Cell(5)
    assert not cell.input_dim_must_equal_units
    cell.build((None, 3))
    assert [w.shape for w in cell.get_weights()] == [(3, 15), (5, 15), (15,)]


@pytest.mark.parametrize("cls", [MUT1Cell, MUT2Cell, MUT3Cell])
@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"units": 0}, "units"),
        ({"units": 2.5}, "units"),
        ({"units": UNITS, "dropout": 1.0}, "dropout"),
        ({"units": UNITS, "recurrent_dropout": -0.1}, "recurrent_dropout"),
    ],
)
def test_bad_arguments(cls, kwargs, argument):
    with pytest.raises(ValueError, match=f"`{argument}`"):
        cls(**kwargs)
