"""SCRN against a numpy transcription of Mikolov et al. (2015)'s equations."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import keras_rnncells as kr
from keras_rnncells.cells.scrn import SCRNCell

BATCH, STEPS, FEATURES, UNITS, CONTEXT = 2, 5, 3, 4, 2


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def scrn(x, h, s, weights, alpha):
    """One step; weights by the documented layout [kernel (A | B),
    recurrent_kernel R, bias b, context_kernel P, (alpha_logit)]."""
    kernel, r, b, p = weights[:4]
    a, bx = x @ kernel[:, :UNITS], x @ kernel[:, UNITS:]
    s = (1 - alpha) * bx + alpha * s
    h = sigmoid(s @ p + a + h @ r + b)
    return np.concatenate([h, s], axis=-1), h, s


def fused_layer(**kwargs):
    cell = SCRNCell(UNITS, context_units=CONTEXT, **kwargs)
    layer = kr.RNN(cell, return_sequences=True, return_state=True, implementation="fused")
    layer.build((BATCH, STEPS, FEATURES))
    return layer


def inputs(rng):
    x = rng.normal(size=(BATCH, STEPS, FEATURES)).astype("float32")
    h0 = rng.uniform(size=(BATCH, UNITS)).astype("float32")
    s0 = rng.normal(size=(BATCH, CONTEXT)).astype("float32")
    return x, h0, s0


@pytest.mark.parametrize("learn_alpha", [False, True])
def test_step_and_fused_sequence_follow_the_equations(learn_alpha, rng, helpers):
    assert kr.get_cell("scrn") is SCRNCell
    layer = fused_layer(alpha=0.9, learn_alpha=learn_alpha)
    helpers.randomize_weights(layer, rng)  # a random alpha_logit: one alpha per unit
    weights = layer.get_weights()
    shapes = [(FEATURES, UNITS + CONTEXT), (UNITS, UNITS), (UNITS,), (CONTEXT, UNITS)]
    assert [w.shape for w in weights] == shapes + ([(CONTEXT,)] if learn_alpha else [])
    alpha = sigmoid(weights[4]) if learn_alpha else 0.9
    x, h0, s0 = inputs(rng)

    output, states = layer.cell(x[:, 0], [h0, s0])
    helpers.assert_all_close(
        [output, *states], list(scrn(x[:, 0], h0, s0, weights, alpha)), what="one step"
    )

    h, s, expected = h0, s0, []
    for t in range(STEPS):
        y, h, s = scrn(x[:, t], h, s, weights, alpha)
        expected.append(y)
    actual = layer(x, initial_state=[h0, s0])
    helpers.assert_all_close(actual, [np.stack(expected, axis=1), h, s], what="fused sequence")
    assert layer.cell.output_size == UNITS + CONTEXT


def test_learned_alpha_starts_as_the_fixed_one_and_learns(rng, helpers):
    fixed, learned = fused_layer(), fused_layer(learn_alpha=True)
    helpers.randomize_weights(fixed, rng)
    learned.set_weights([*fixed.get_weights(), learned.cell.alpha_logit.numpy()])
    np.testing.assert_allclose(sigmoid(learned.cell.alpha_logit.numpy()), 0.95, rtol=1e-6)
    x, h0, s0 = inputs(rng)
    helpers.assert_all_close(
        learned(x, initial_state=[h0, s0]), fixed(x, initial_state=[h0, s0]), what="at init"
    )
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(learned(x, initial_state=[h0, s0])[0] ** 2)
    assert np.all(np.abs(tape.gradient(loss, learned.cell.alpha_logit)) > 0)


def test_default_context_units():
    assert SCRNCell(100).context_units == 20
    assert SCRNCell(3).state_size == [3, 1]
    assert SCRNCell(3).get_config()["context_units"] == 1


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"alpha": -0.1}, "alpha"),
        ({"alpha": 1.5}, "alpha"),
        ({"alpha": "0.9"}, "alpha"),
        ({"alpha": True}, "alpha"),
        ({"alpha": 0.0, "learn_alpha": True}, "alpha"),
        ({"alpha": 1.0, "learn_alpha": True}, "alpha"),
        ({"context_units": 0}, "context_units"),
        ({"context_units": -2}, "context_units"),
        ({"context_units": 2.5}, "context_units"),
    ],
)
def test_bad_arguments_raise(kwargs, argument):
    with pytest.raises(ValueError, match=f"`{argument}`"):
        SCRNCell(UNITS, **kwargs)


@pytest.mark.parametrize("alpha", [0, 1.0])
def test_alpha_bounds_are_allowed_when_fixed(alpha):
    assert SCRNCell(UNITS, alpha=alpha).alpha == alpha
