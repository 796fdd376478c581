"""The LSTM variants: numpy steps from the published equations, the documented
weight blocks, the reductions (peephole LSTM with zero peepholes and the default
`LSTMVariantCell` are the LSTM; CIFG's input gate is 1 - f), argument errors."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import keras_rnncells as krc
from keras_rnncells.cells import CIFGLSTMCell, LSTMCell, LSTMVariantCell, PeepholeLSTMCell

UNITS, FEATURES, BATCH, STEPS = 4, 3, 2, 5


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def pre_activations(cell, blocks, x, h):
    """``W x + U h + b`` per column block, in the documented block order."""
    z = x @ np.float64(cell.kernel) + h @ np.float64(cell.recurrent_kernel) + np.float64(cell.bias)
    return {name: z[:, k * UNITS : (k + 1) * UNITS] for k, name in enumerate(blocks)}


def peephole(z, c, p):  # Gers, Schraudolph & Schmidhuber 2002
    i = sigmoid(z["i"] + p[0] * c)
    f = sigmoid(z["f"] + p[1] * c)
    c = f * c + i * np.tanh(z["c"])
    return sigmoid(z["o"] + p[2] * c) * np.tanh(c), c


def cifg(z, c, p):  # Greff et al. 2015, i = 1 - f
    f = sigmoid(z["f"])
    c = f * c + (1.0 - f) * np.tanh(z["c"])
    return sigmoid(z["o"]) * np.tanh(c), c


def no_input_gate(z, c, p):  # Greff et al. 2015, i = 1
    c = sigmoid(z["f"]) * c + np.tanh(z["c"])
    return sigmoid(z["o"]) * np.tanh(c), c


def no_forget_gate(z, c, p):  # Greff et al. 2015, f = 1
    c = c + sigmoid(z["i"]) * np.tanh(z["c"])
    return sigmoid(z["o"]) * np.tanh(c), c


def no_output_gate(z, c, p):  # Greff et al. 2015, o = 1
    c = sigmoid(z["f"]) * c + sigmoid(z["i"]) * np.tanh(z["c"])
    return np.tanh(c), c


def slstm(z, c, p):  # Wu & King 2016: forget gate only, h = tanh(c)
    f = sigmoid(z["f"])
    c = f * c + (1.0 - f) * np.tanh(z["c"])
    return np.tanh(c), c


def cifg_peephole(z, c, p):  # Greff et al.'s CIFG keeps the peepholes of their LSTM
    f = sigmoid(z["f"] + p[0] * c)
    c = f * c + (1.0 - f) * np.tanh(z["c"])
    return sigmoid(z["o"] + p[1] * c) * np.tanh(c), c


# name -> (cell factory, documented blocks, peephole rows, numpy step)
VARIANTS = {
    "peephole_lstm": (lambda **kw: krc.get_cell("peephole_lstm")(UNITS, **kw), "ifco", 3, peephole),
    "cifg_lstm": (lambda **kw: krc.get_cell("cifg_lstm")(UNITS, **kw), "fco", 0, cifg),
    "lstm_no_input_gate": (
        lambda **kw: krc.get_cell("lstm_no_input_gate")(UNITS, **kw),
        "fco",
        0,
        no_input_gate,
    ),
    "lstm_no_forget_gate": (
        lambda **kw: krc.get_cell("lstm_no_forget_gate")(UNITS, **kw),
        "ico",
        0,
        no_forget_gate,
    ),
    "lstm_no_output_gate": (
        lambda **kw: krc.get_cell("lstm_no_output_gate")(UNITS, **kw),
        "ifc",
        0,
        no_output_gate,
    ),
    "slstm": (lambda **kw: krc.get_cell("slstm")(UNITS, **kw), "fc", 0, slstm),
    "cifg+peephole": (
        lambda **kw: CIFGLSTMCell(UNITS, peephole=True, **kw),
        "fco",
        2,
        cifg_peephole,
    ),
}


def numpy_step(cell, blocks, step, x, h, c):
    p = np.float64(cell.peephole_kernel) if cell.peephole else None
    return step(pre_activations(cell, blocks, x, h), c, p)


def zeros_state(batch=BATCH):
    return [np.zeros((batch, UNITS), "float32")] * 2


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_step_and_fused_sequence_match_numpy(variant, rng, helpers):
    make, blocks, _, step = VARIANTS[variant]
    layer = krc.RNN(make(), return_sequences=True, return_state=True, implementation="fused")
    x = rng.normal(size=(BATCH, STEPS, FEATURES)).astype("float32")
    layer(x)
    helpers.randomize_weights(layer, rng)
    cell = layer.cell
    h, c = (rng.normal(size=(BATCH, UNITS)).astype("float32") for _ in range(2))

    output, new_states = cell(x[:, 0], [h, c])
    expected_h, expected_c = numpy_step(cell, blocks, step, x[:, 0], h, c)
    helpers.assert_all_close([output, *new_states], [expected_h, expected_h, expected_c])

    outputs, last_h, last_c = layer(x, initial_state=[h, c])
    expected = []
    for t in range(STEPS):
        h, c = numpy_step(cell, blocks, step, x[:, t], h, c)
        expected.append(h)
    helpers.assert_all_close([outputs, last_h, last_c], [np.stack(expected, axis=1), h, c])


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_blocks_weight_shapes_and_initial_biases(variant):
    make, blocks, peephole_rows, _ = VARIANTS[variant]
    cell = make(forget_bias=2.5)
    cell(np.zeros((BATCH, FEATURES), "float32"), zeros_state())
    width = len(blocks) * UNITS
    assert cell.blocks == tuple(blocks)
    shapes = [(FEATURES, width), (UNITS, width), (width,)]
    shapes += [(peephole_rows, UNITS)] if peephole_rows else []
    assert [tuple(w.shape) for w in cell.get_weights()] == shapes
    expected_bias = np.concatenate([np.full(UNITS, 2.5 if b == "f" else 0.0) for b in blocks])
    np.testing.assert_array_equal(cell.bias.numpy(), expected_bias)
    if peephole_rows:
        np.testing.assert_array_equal(cell.peephole_kernel.numpy(), 0.0)


def run_cell(cell, x, states):
    """The cell stepped eagerly over ``x``: (outputs, final states)."""
    outputs = []
    for t in range(x.shape[1]):
        output, states = cell(x[:, t], states)
        outputs.append(np.asarray(output))
    return np.stack(outputs, axis=1), [np.asarray(s) for s in states]


def test_zero_peepholes_and_default_variant_are_the_lstm(rng, helpers):
    x = rng.normal(size=(BATCH, STEPS, FEATURES)).astype("float32")
    states = [rng.normal(size=(BATCH, UNITS)).astype("float32") for _ in range(2)]
    lstm = LSTMCell(UNITS)
    lstm(x[:, 0], states)
    helpers.randomize_weights(lstm, rng)
    expected_outputs, expected_states = run_cell(lstm, x, states)

    peep = PeepholeLSTMCell(UNITS)
    peep(x[:, 0], states)
    assert not np.any(peep.peephole_kernel.numpy())  # zeros at initialization
    peep.set_weights([*lstm.get_weights(), peep.peephole_kernel.numpy()])
    default = LSTMVariantCell(UNITS)
    default(x[:, 0], states)
    default.set_weights(lstm.get_weights())  # LSTM weights load unchanged
    for cell in (peep, default):
        outputs, final = run_cell(cell, x, states)
        helpers.assert_all_close([outputs, *final], [expected_outputs, *expected_states])

    peep.peephole_kernel.assign(np.full((3, UNITS), 0.5, "float32"))  # the test can fail
    assert not np.allclose(run_cell(peep, x, states)[0], expected_outputs, atol=1e-3)


def test_cifg_input_gate_is_one_minus_forget_gate(rng, helpers):
    cell = CIFGLSTMCell(UNITS)
    x = rng.normal(size=(BATCH, FEATURES)).astype("float32")
    h, c = (rng.normal(size=(BATCH, UNITS)).astype("float32") for _ in range(2))
    cell(x, [h, c])
    helpers.randomize_weights(cell, rng)
    new_h, (_, new_c) = cell(x, [h, c])
    z = pre_activations(cell, "fco", x, h)
    f, candidate = sigmoid(z["f"]), np.tanh(z["c"])
    well_posed = np.abs(candidate) > 0.1  # where i = (c' - f c) / c~ is not ill-conditioned
    assert well_posed.mean() > 0.5
    input_gate = (np.float64(new_c) - f * c) / candidate  # i from c' = f c + i c~
    np.testing.assert_allclose(input_gate[well_posed], 1.0 - f[well_posed], atol=1e-4)
    tanh_c = np.tanh(np.float64(new_c))
    well_posed = np.abs(tanh_c) > 0.1
    output_gate = np.float64(new_h)[well_posed] / tanh_c[well_posed]  # from h' = o tanh(c')
    np.testing.assert_allclose(output_gate, sigmoid(z["o"])[well_posed], atol=1e-4)


def test_any_option_combination_round_trips_through_keras_saving(rng):
    cell = LSTMVariantCell(UNITS, coupled=True, output_gate=False, peephole=True, forget_bias=0.0)
    x = rng.normal(size=(BATCH, FEATURES)).astype("float32")
    states = [rng.normal(size=(BATCH, UNITS)).astype("float32") for _ in range(2)]
    expected = cell(x, states)[1]
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(cell))
    assert type(clone) is LSTMVariantCell and clone.get_config() == cell.get_config()
    clone(x, states)
    clone.set_weights(cell.get_weights())
    np.testing.assert_array_equal(clone(x, states)[1], expected)
    assert [tuple(w.shape) for w in clone.get_weights()][-1] == (1, UNITS)  # p_f only


@pytest.mark.parametrize(
    ("make", "argument"),
    [
        (lambda: LSTMVariantCell(UNITS, coupled=True, forget_gate=False), "coupled"),
        (lambda: LSTMVariantCell(UNITS, coupled=True, input_gate=False), "coupled"),
        (lambda: LSTMVariantCell(UNITS, forget_bias="1"), "forget_bias"),
        (lambda: LSTMVariantCell(UNITS, forget_bias=True), "forget_bias"),
        (lambda: LSTMVariantCell(0), "units"),
        (lambda: PeepholeLSTMCell(UNITS, peephole=False), "peephole"),
        (lambda: krc.get_cell("slstm")(UNITS, output_gate=True), "output_gate"),
        (lambda: krc.get_cell("lstm_no_forget_gate")(UNITS, forget_gate=True), "forget_gate"),
    ],
)
def test_bad_arguments_raise(make, argument):
    with pytest.raises(ValueError, match=f"`{argument}"):
        make()
