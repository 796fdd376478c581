"""IRNN and the Jordan network: numpy steps from the published equations, the
IRNN's initialization, the Jordan state being its output, argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import keras_rnncells as krc
from keras_rnncells.cells import IRNNCell, JordanRNNCell

UNITS, OUTPUTS, FEATURES, BATCH, STEPS = 4, 3, 3, 2, 5


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def irnn_step(cell, x, h):
    """Le et al. 2015: h' = relu(W x + U h + b); output h'."""
    w, u, b = (np.float64(v) for v in cell.get_weights())
    h = np.maximum(0.0, x @ w + h @ u + b)
    return h, h


def jordan_step(phi_y):
    """Jordan 1986: h = tanh(W x + U y + b), y' = phi_y(V h + c); output y'."""

    def step(cell, x, y):
        w, u, b, v, c = (np.float64(a) for a in cell.get_weights())
        y = phi_y(np.tanh(x @ w + y @ u + b) @ v + c)
        return y, y

    return step


CASES = {
    "irnn": (lambda: IRNNCell(UNITS), irnn_step),
    "jordan": (lambda: JordanRNNCell(UNITS, output_units=OUTPUTS), jordan_step(np.tanh)),
    "jordan-logistic": (
        lambda: JordanRNNCell(UNITS, output_units=OUTPUTS, output_activation="sigmoid"),
        jordan_step(sigmoid),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_step_and_fused_sequence_match_numpy(case, rng, helpers):
    make, numpy_step = CASES[case]
    layer = krc.RNN(make(), return_sequences=True, return_state=True, implementation="fused")
    x = rng.normal(size=(BATCH, STEPS, FEATURES)).astype("float32")
    layer(x)
    helpers.randomize_weights(layer, rng)
    cell = layer.cell
    state = rng.normal(size=(BATCH, cell.state_size)).astype("float32")

    output, (new_state,) = cell(x[:, 0], [state])
    expected_output, expected_state = numpy_step(cell, x[:, 0], state)
    helpers.assert_all_close([output, new_state], [expected_output, expected_state])

    outputs, last_state = layer(x, initial_state=[state])
    expected, s = [], state
    for t in range(STEPS):
        out, s = numpy_step(cell, x[:, t], s)
        expected.append(out)
    helpers.assert_all_close([outputs, last_state], [np.stack(expected, axis=1), s])


@pytest.mark.parametrize("scale", [1.0, 0.25])
def test_irnn_initialization_is_the_papers(scale):
    cell = IRNNCell(UNITS, identity_scale=scale)
    for c in (cell, IRNNCell.from_config(cell.get_config())):
        c(np.zeros((1, 50), "float32"), [np.zeros((1, UNITS), "float32")])
        np.testing.assert_array_equal(c.recurrent_kernel.numpy(), scale * np.eye(UNITS))
        np.testing.assert_array_equal(c.bias.numpy(), np.zeros(UNITS))
        kernel = c.kernel.numpy()  # N(0, 0.001^2), 200 draws
        assert 0.0007 < kernel.std() < 0.0013 and abs(kernel.mean()) < 0.0003
        assert c.get_config()["activation"] == "relu"


def test_jordan_state_is_its_output_and_weight_layout(rng):
    cell = JordanRNNCell(UNITS, output_units=OUTPUTS)
    layer = krc.RNN(cell, return_sequences=True, return_state=True, implementation="fused")
    outputs, state = layer(rng.normal(size=(BATCH, STEPS, FEATURES)).astype("float32"))
    np.testing.assert_array_equal(np.asarray(state), np.asarray(outputs[:, -1]))
    assert cell.state_size == cell.output_size == OUTPUTS
    assert [tuple(w.shape) for w in cell.get_weights()] == [
        (FEATURES, UNITS),
        (OUTPUTS, UNITS),
        (UNITS,),
        (UNITS, OUTPUTS),
        (OUTPUTS,),
    ]
    assert JordanRNNCell(UNITS).output_units == UNITS

    no_bias = JordanRNNCell(UNITS, use_bias=False)
    no_bias(np.zeros((1, FEATURES), "float32"), [np.zeros((1, UNITS), "float32")])
    assert [w.name for w in no_bias.weights] == ["kernel", "recurrent_kernel", "output_kernel"]


@pytest.mark.parametrize(
    ("make", "argument"),
    [
        (lambda: IRNNCell(0), "units"),
        (lambda: IRNNCell(UNITS, identity_scale=-1.0), "identity_scale"),
        (lambda: IRNNCell(UNITS, identity_scale=0.0), "identity_scale"),
        (lambda: IRNNCell(UNITS, identity_scale="1"), "identity_scale"),
        (lambda: IRNNCell(UNITS, identity_scale=float("nan")), "identity_scale"),
        (lambda: IRNNCell(UNITS, recurrent_initializer="orthogonal"), "recurrent_initializer"),
        (lambda: JordanRNNCell(-2), "units"),
        (lambda: JordanRNNCell(UNITS, output_units=0), "output_units"),
        (lambda: JordanRNNCell(UNITS, output_units=2.5), "output_units"),
    ],
)
def test_bad_arguments_raise(make, argument):
    with pytest.raises(ValueError, match=f"`{argument}"):
        make()


def test_cells_are_registered():
    assert krc.get_cell("irnn") is IRNNCell
    assert krc.get_cell("jordan") is JordanRNNCell
