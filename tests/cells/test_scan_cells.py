"""MinGRU, MinLSTM (Feng et al. 2024) and QRNN (Bradbury et al. 2017) follow
their published equations, written here in NumPy, with the weights read in
the documented layout, on every path (scan, fused, Keras' loop); their
arguments are checked; the layers load from ``.keras`` files unchanged."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import keras_rnncells as kr

UNITS = 4


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def g(x):
    return np.where(x >= 0, x + 0.5, sigmoid(x))


def min_gru_reference(x, h, kernel, bias, log_space_form=False):
    w_z, w_h = np.split(kernel, 2, axis=-1)
    b_z, b_h = np.split(bias, 2)
    outputs = []
    for x_t in np.swapaxes(x, 0, 1):
        z = sigmoid(x_t @ w_z + b_z)
        candidate = x_t @ w_h + b_h
        candidate = g(candidate) if log_space_form else candidate
        h = (1 - z) * h + z * candidate
        outputs.append(h)
    return np.stack(outputs, axis=1), [h]


def min_lstm_reference(x, h, kernel, bias, log_space_form=False):
    w_f, w_i, w_h = np.split(kernel, 3, axis=-1)
    b_f, b_i, b_h = np.split(bias, 3)
    outputs = []
    for x_t in np.swapaxes(x, 0, 1):
        f = sigmoid(x_t @ w_f + b_f)
        i = sigmoid(x_t @ w_i + b_i)
        candidate = x_t @ w_h + b_h
        candidate = g(candidate) if log_space_form else candidate
        h = f / (f + i) * h + i / (f + i) * candidate
        outputs.append(h)
    return np.stack(outputs, axis=1), [h]


def qrnn_reference(x, c, kernel, bias, window, previous=None):
    """fo-pooling over a convolution of width ``window``; ``previous``: the
    input before the first (zeros where None)."""
    features = x.shape[-1]
    before = np.zeros_like(x[:, 0]) if previous is None else previous
    outputs = []
    for x_t in np.swapaxes(x, 0, 1):
        window_inputs = np.concatenate([before, x_t], -1) if window == 2 else x_t
        pre = window_inputs @ kernel + bias
        z, f, o = np.split(pre, 3, axis=-1)
        z, f, o = np.tanh(z), sigmoid(f), sigmoid(o)
        c = f * c + (1 - f) * z
        outputs.append(o * c)
        before = x_t
    assert kernel.shape == (window * features, 3 * c.shape[-1])
    return np.stack(outputs, axis=1), c


CASES = {
    "min_gru": (lambda: kr.MinGRU(UNITS, return_sequences=True, return_state=True), 2),
    "min_gru_g": (
        lambda: kr.MinGRU(UNITS, log_space_form=True, return_sequences=True, return_state=True),
        2,
    ),
    "min_lstm": (lambda: kr.MinLSTM(UNITS, return_sequences=True, return_state=True), 3),
    "min_lstm_g": (
        lambda: kr.MinLSTM(UNITS, log_space_form=True, return_sequences=True, return_state=True),
        3,
    ),
}


@pytest.mark.parametrize("implementation", ["scan", "fused", "generic"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_minimal_cells_follow_the_equations(case, implementation, sequences, rng, helpers):
    make, blocks = CASES[case]
    layer = make()
    layer.implementation = implementation
    layer.build(sequences.shape)
    helpers.randomize_weights(layer, rng)
    kernel, bias = layer.get_weights()
    assert kernel.shape == (sequences.shape[-1], blocks * UNITS)
    assert bias.shape == (blocks * UNITS,)
    initial = rng.normal(size=(len(sequences), UNITS)).astype("float32")
    outputs, state = layer(sequences, initial_state=[initial])
    reference = min_gru_reference if case.startswith("min_gru") else min_lstm_reference
    expected, (h,) = reference(
        sequences.astype("float64"), initial, kernel, bias, case.endswith("_g")
    )
    helpers.assert_all_close([outputs, state], [expected, h])


@pytest.mark.parametrize("implementation", ["scan", "fused", "generic"])
@pytest.mark.parametrize("window", [1, 2])
def test_qrnn_follows_the_equations(window, implementation, sequences, rng, helpers):
    layer = kr.QRNN(
        UNITS,
        window=window,
        return_sequences=True,
        return_state=True,
        implementation=implementation,
    )
    layer.build(sequences.shape)
    helpers.randomize_weights(layer, rng)
    kernel, bias = layer.get_weights()
    initial = rng.normal(size=(len(sequences), UNITS)).astype("float32")
    carried_before = [np.zeros((len(sequences), 3 * UNITS), "float32")] * (window - 1)
    outputs, c, *carried = layer(sequences, initial_state=[initial, *carried_before])
    expected, c_expected = qrnn_reference(
        sequences.astype("float64"), initial, kernel, bias, window
    )
    helpers.assert_all_close([outputs, c], [expected, c_expected])
    if window == 2:  # the state carried: the last input's product with the older rows
        features = sequences.shape[-1]
        helpers.assert_all_close(carried, [sequences[:, -1] @ kernel[:features]])


def test_qrnn_continues_from_the_previous_input(sequences, rng, helpers):
    """Two calls, the second from the first's states, give the whole
    sequence's outputs: the window reads the input before the cut."""
    layer = kr.QRNN(UNITS, window=2, return_sequences=True, return_state=True)
    layer.build(sequences.shape)
    helpers.randomize_weights(layer, rng)
    whole, *_ = layer(sequences)
    first, *states = layer(sequences[:, :3])
    second, *_ = layer(sequences[:, 3:], initial_state=states)
    helpers.assert_all_close([np.concatenate([first, second], 1)], [whole])


def test_minimal_cells_have_no_recurrent_weights():
    gru, lstm, qrnn = (kr.MinGRU(8), kr.MinLSTM(8), kr.QRNN(8, window=2))
    for layer in (gru, lstm, qrnn):
        layer.build((None, None, 6))
    assert gru.count_params() == 6 * 16 + 16  # a third of a GRU's (6*24 + 8*24 + 2*24)
    assert lstm.count_params() == 6 * 24 + 24
    assert qrnn.count_params() == 2 * 6 * 24 + 24
    assert [w.name for w in qrnn.weights] == ["kernel", "bias"]


def test_positive_g_is_the_papers():
    from keras_rnncells.cells.minimal import positive_g

    x = np.array([-30.0, -1.0, 0.0, 2.0])
    np.testing.assert_allclose(np.asarray(positive_g(x)), g(x), rtol=1e-12)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: kr.QRNN(3, window=3), r"Argument `window` must be one of \(1, 2\), received: 3"),
        (lambda: kr.QRNN(3, window=True), r"Argument `window` .* received: True"),
        (
            lambda: kr.MinGRU(3, recurrent_dropout=0.2),
            r"Argument `recurrent_dropout` must be 0 for MinGRUCell .* received: 0.2",
        ),
        (
            lambda: kr.MinLSTMCell(3, recurrent_dropconnect=0.1),
            r"Argument `recurrent_dropconnect` must be 0 for MinLSTMCell",
        ),
        (
            lambda: kr.MinLSTM(3, log_space_form="yes"),
            r"Argument `log_space_form` must be True or False, received: .yes.",
        ),
        (lambda: kr.MinGRU(0), r"Argument `units` must be a positive integer, received: 0"),
        (
            lambda: kr.GRU(3, implementation="scan"),
            r"Argument `implementation='scan'` needs a cell whose state is a linear recurrence"
            r".*GRUCell's state is not a linear recurrence",
        ),
        (
            lambda: kr.MinGRU(3, implementation="scan", unroll=True),
            r"Argument `implementation='scan'` .*: unroll=True",
        ),
    ],
)
def test_bad_arguments_raise_one_line(make, message):
    with pytest.raises(ValueError, match=message) as error:
        make()
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    "make",
    [
        lambda: kr.MinGRU(UNITS, log_space_form=True, return_sequences=True),
        lambda: kr.MinLSTM(UNITS, dropout=0.1),
        lambda: kr.QRNN(UNITS, window=2, return_sequences=True, go_backwards=True),
    ],
)
def test_keras_file_round_trip(make, sequences, tmp_path):
    keras.utils.set_random_seed(1)
    inputs = keras.Input(sequences.shape[1:])
    model = keras.Model(inputs, make()(inputs))
    expected = model.predict(sequences, verbose=0)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert loaded.layers[1].get_config() == model.layers[1].get_config()
    np.testing.assert_allclose(loaded.predict(sequences, verbose=0), expected, atol=1e-6)
