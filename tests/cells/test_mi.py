"""MI-RNN, MI-GRU and MI-LSTM against numpy transcriptions of Wu et al.
(2016)'s equations, and their additive special case."""

from __future__ import annotations

import numpy as np
import pytest

import keras_rnncells as kr
from keras_rnncells.cells import GRUCell, LSTMCell, SimpleRNNCell
from keras_rnncells.cells.mi import MIGRUCell, MILSTMCell, MIRNNCell

BATCH, STEPS, FEATURES, UNITS = 2, 4, 3, 3


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def mi(wx, uh, gates, block, b=0.0):
    """alpha ⊙ Wx ⊙ Uh + beta1 ⊙ Uh + beta2 ⊙ Wx + b, with the gating vectors
    (alpha, beta1, beta2) of one block."""
    alpha, beta1, beta2 = (g[block * UNITS : (block + 1) * UNITS] for g in gates)
    return alpha * wx * uh + beta1 * uh + beta2 * wx + b


def columns(matrix, block):
    return matrix[..., block * UNITS : (block + 1) * UNITS]


# One step each; weights by the documented layout
# [kernel W, recurrent_kernel U, bias b, alpha, beta1, beta2].
def mi_rnn(x, states, weights):
    w, u, b, *gates = weights
    h = np.tanh(mi(x @ w, states[0] @ u, gates, 0, b))
    return h, [h]


def mi_lstm(x, states, weights):
    w, u, b, *gates = weights
    h, c = states
    i, f, g, o = (
        mi(x @ columns(w, k), h @ columns(u, k), gates, k, columns(b, k)) for k in range(4)
    )
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    h = sigmoid(o) * np.tanh(c)
    return h, [h, c]


def mi_gru(x, states, weights, reset_after):
    w, u, b, *gates = weights
    h = states[0]
    b_in, b_rec = (b[0], b[1]) if reset_after else (b, np.zeros_like(b))
    wx = [x @ columns(w, k) for k in range(3)]
    uh = [h @ columns(u, k) + columns(b_rec, k) for k in range(2)]
    z, r = (sigmoid(mi(wx[k], uh[k], gates, k, columns(b_in, k))) for k in range(2))
    if reset_after:
        u_h = r * (h @ columns(u, 2) + columns(b_rec, 2))
    else:
        u_h = (r * h) @ columns(u, 2)
    h_tilde = np.tanh(mi(wx[2], u_h, gates, 2, columns(b_in, 2)))
    h = z * h + (1 - z) * h_tilde
    return h, [h]


CELLS = {
    "mi_rnn": (MIRNNCell, {}, mi_rnn, SimpleRNNCell),
    "mi_gru": (MIGRUCell, {}, lambda *a: mi_gru(*a, reset_after=True), GRUCell),
    "mi_gru_reset_before": (
        MIGRUCell,
        {"reset_after": False},
        lambda *a: mi_gru(*a, reset_after=False),
        GRUCell,
    ),
    "mi_lstm": (MILSTMCell, {}, mi_lstm, LSTMCell),
}


def random_states(cell, rng):
    return [rng.normal(size=(BATCH, n)).astype("float32") for n in np.atleast_1d(cell.state_size)]


@pytest.mark.parametrize("name", sorted(CELLS))
def test_step_and_fused_sequence_follow_the_equations(name, rng, helpers):
    cls, kwargs, reference, _ = CELLS[name]
    assert kr.get_cell(name.removesuffix("_reset_before")) is cls
    layer = kr.RNN(
        cls(UNITS, **kwargs), return_sequences=True, return_state=True, implementation="fused"
    )
    layer.build((BATCH, STEPS, FEATURES))
    helpers.randomize_weights(layer, rng)
    weights = layer.get_weights()
    width = len(cls.blocks) * UNITS
    assert [w.shape for w in weights[3:]] == [(width,)] * 3
    x = rng.normal(size=(BATCH, STEPS, FEATURES)).astype("float32")
    states0 = random_states(layer.cell, rng)

    output, states = layer.cell(x[:, 0], states0)
    expected, expected_states = reference(x[:, 0], states0, weights)
    helpers.assert_all_close([output, *states], [expected, *expected_states], what="one step")

    states, expected = states0, []
    for t in range(STEPS):
        output, states = reference(x[:, t], states, weights)
        expected.append(output)
    actual = layer(x, initial_state=states0)
    helpers.assert_all_close(actual, [np.stack(expected, axis=1), *states], what="fused")


@pytest.mark.parametrize("name", sorted(CELLS))
def test_additive_gating_is_the_ordinary_cell(name, rng, helpers):
    """alpha = 0, beta1 = beta2 = 1: the MI cell is the ordinary cell with the
    same W, U and b."""
    cls, kwargs, _, ordinary_cls = CELLS[name]
    mi_cell, ordinary = cls(UNITS, **kwargs), ordinary_cls(UNITS, **kwargs)
    for cell in (mi_cell, ordinary):
        cell.build((None, FEATURES))
    helpers.randomize_weights(ordinary, rng)
    width = len(cls.blocks) * UNITS
    additive = [np.zeros(width), np.ones(width), np.ones(width)]
    mi_cell.set_weights([*ordinary.get_weights(), *additive])
    x = rng.normal(size=(BATCH, FEATURES)).astype("float32")
    states = random_states(ordinary, rng)
    expected_output, expected_states = ordinary(x, states)
    output, new_states = mi_cell(x, states)
    helpers.assert_all_close([output, *new_states], [expected_output, *expected_states])
    # alpha = 1 brings in the second-order term: no longer the ordinary cell.
    mi_cell.set_weights([*ordinary.get_weights(), np.ones(width), *additive[1:]])
    assert not np.allclose(mi_cell(x, states)[0], expected_output, atol=1e-3)


def test_default_gating_and_no_cudnn():
    cell = MIGRUCell(UNITS)
    cell.build((None, FEATURES))
    np.testing.assert_array_equal(cell.alpha.numpy(), np.ones(3 * UNITS))
    for beta in (cell.beta1, cell.beta2):
        np.testing.assert_array_equal(beta.numpy(), np.full(3 * UNITS, 0.5))
    with pytest.raises(ValueError, match="cudnn"):
        kr.RNN(MILSTMCell(UNITS), implementation="cudnn")
