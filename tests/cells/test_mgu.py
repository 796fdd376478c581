"""The MGU layer follows the published equations (Zhou et al. 2016) with its
weights read in the documented layout, and has 2/3 of a GRU's parameters."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import keras_rnncells as krc


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def mgu_reference(x, h, kernel, recurrent_kernel, bias, reset_after):
    """The MGU over ``x`` (batch, time, features) from state ``h``, in numpy.

    Blocks (columns): ``[f | h]`` in kernel, recurrent kernel and bias.
    """
    units = h.shape[-1]
    (w_f, w_h), (u_f, u_h), (b_f, b_h) = (
        (m[..., :units], m[..., units:]) for m in (kernel, recurrent_kernel, bias)
    )
    outputs = []
    for x_t in np.swapaxes(x, 0, 1):
        f = sigmoid(x_t @ w_f + h @ u_f + b_f)
        recurrent = f * (h @ u_h) if reset_after else (f * h) @ u_h
        h_tilde = np.tanh(x_t @ w_h + recurrent + b_h)
        h = (1 - f) * h + f * h_tilde
        outputs.append(h)
    return np.stack(outputs, axis=1), h


@pytest.mark.parametrize("implementation", ["fused", "generic"])
@pytest.mark.parametrize("reset_after", [False, True])
def test_layer_follows_the_equations(reset_after, implementation, sequences, rng, helpers):
    units = 4
    layer = krc.MGU(
        units,
        reset_after=reset_after,
        return_sequences=True,
        return_state=True,
        implementation=implementation,
    )
    layer.build(sequences.shape)
    helpers.randomize_weights(layer, rng)
    kernel, recurrent_kernel, bias = layer.get_weights()
    assert kernel.shape == (sequences.shape[-1], 2 * units)
    assert recurrent_kernel.shape == (units, 2 * units)
    assert bias.shape == (2 * units,)
    initial = rng.normal(size=(len(sequences), units)).astype("float32")
    outputs, state = layer(sequences, initial_state=[initial])
    expected = mgu_reference(
        sequences.astype("float64"), initial, kernel, recurrent_kernel, bias, reset_after
    )
    helpers.assert_all_close([outputs, state], expected)


def test_mgu_has_two_thirds_of_the_gru_parameters():
    """100 units over 1 input feature: 20,400 parameters against 30,600."""

    def count(layer) -> int:
        layer.build((None, None, 1))
        return layer.count_params()

    units = 100
    gru = count(krc.GRU(units, reset_after=False))
    assert gru == count(keras.layers.GRU(units, reset_after=False)) == 30_600
    for reset_after in (False, True):
        mgu = count(krc.MGU(units, reset_after=reset_after))
        assert mgu == 2 * (units * 1 + units * units + units) == 20_400
        assert 3 * mgu == 2 * gru
