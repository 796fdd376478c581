"""SGU and DSGU against numpy transcriptions of Gao & Glowacka (2016)'s equations."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import keras_rnncells as kr
from keras_rnncells.cells.sgu import DSGUCell, SGUCell

FEATURES, UNITS = 3, 4


def hard_sigmoid(v):  # Keras 3's: relu6(v + 3) / 6
    return np.clip(v / 6.0 + 0.5, 0.0, 1.0)


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def softplus(v):
    return np.log1p(np.exp(v))


def blocks(matrix, names):
    """Columns of ``matrix`` split into the named ``units``-wide blocks."""
    return dict(zip(names, np.split(matrix, len(names), axis=-1)))


# The published equations; weights read by the documented layout
# [kernel, recurrent_kernel, bias].
def sgu_or_dsgu(x, h, weights, deep):
    w, b = blocks(weights[0], "gz"), blocks(weights[2], "gz")
    u = blocks(weights[1], "gzo" if deep else "gz")
    x_g = x @ w["g"] + b["g"]
    z_g = np.tanh((x_g * h) @ u["g"])
    z_out = sigmoid((z_g * h) @ u["o"]) if deep else softplus(z_g * h)
    z = hard_sigmoid(x @ w["z"] + b["z"] + h @ u["z"])
    return (1 - z) * h + z * z_out


CELLS = {
    "sgu": (
        SGUCell,
        partial(sgu_or_dsgu, deep=False),
        [(FEATURES, 2 * UNITS), (UNITS, 2 * UNITS), (2 * UNITS,)],
    ),
    "dsgu": (
        DSGUCell,
        partial(sgu_or_dsgu, deep=True),
        [(FEATURES, 2 * UNITS), (UNITS, 3 * UNITS), (2 * UNITS,)],
    ),
}


@pytest.mark.parametrize("name", sorted(CELLS))
def test_step_and_fused_sequence_follow_the_equations(name, rng, helpers):
    cls, reference, shapes = CELLS[name]
    assert kr.get_cell(name) is cls
    weights = helpers.check_step_and_sequence(cls(UNITS), reference, FEATURES, rng)
    assert [w.shape for w in weights] == shapes


@pytest.mark.parametrize("cls", [SGUCell, DSGUCell])
def test_output_activation_is_configurable(cls):
    cell = cls(UNITS, output_activation="tanh")
    config = cell.get_config()
    assert config["output_activation"] == "tanh"
    assert cls.from_config(config).get_config() == config
    default = cls(UNITS).get_config()["output_activation"]
    assert default == ("sigmoid" if cls is DSGUCell else "softplus")


@pytest.mark.parametrize("cls", [SGUCell, DSGUCell])
@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"units": 0}, "units"),
        ({"units": "4"}, "units"),
        ({"units": UNITS, "output_activation": "no_such_activation"}, "output_activation"),
        ({"units": UNITS, "dropout": 1.5}, "dropout"),
        ({"units": UNITS, "recurrent_dropout": -0.1}, "recurrent_dropout"),
    ],
)
def test_bad_arguments(cls, kwargs, argument):
    with pytest.raises(ValueError, match=f"`{argument}`"):
        cls(**kwargs)
