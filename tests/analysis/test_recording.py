"""Gates recorded without touching the cells: the labels of GRU and LSTM gates
against the gates computed with NumPy from the weights, and the model computes
what it computes without the recording (masks, go_backwards)."""

import keras
import numpy as np

from keras_rnncells import RNN
from keras_rnncells.analysis.recording import (
    gate_labels,
    recorded_recurrences,
    recurrent_layers,
)
from keras_rnncells.cells.registry import get_cell


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_gru(x, kernel, recurrent, bias):
    """Keras' GRU, reset_after=True: bias row 0 on the input, row 1 on U h."""
    units = recurrent.shape[0]
    h = np.zeros((x.shape[0], units))
    found = {"z": [], "r": [], "h": []}
    for t in range(x.shape[1]):
        xw = x[:, t] @ kernel + bias[0]
        uh = h @ recurrent + bias[1]
        z = sigmoid(xw[:, :units] + uh[:, :units])
        r = sigmoid(xw[:, units : 2 * units] + uh[:, units : 2 * units])
        candidate = np.tanh(xw[:, 2 * units :] + r * uh[:, 2 * units :])
        h = z * h + (1 - z) * candidate
        for name, value in (("z", z), ("r", r), ("h", h)):
            found[name].append(value)
    return {name: np.stack(values, 1) for name, values in found.items()}


def numpy_lstm(x, kernel, recurrent, bias):
    units = recurrent.shape[0]
    h = c = np.zeros((x.shape[0], units))
    found = {"i": [], "f": [], "o": [], "h": []}
    for t in range(x.shape[1]):
        a = x[:, t] @ kernel + h @ recurrent + bias
        i, f, g, o = (a[:, k * units : (k + 1) * units] for k in range(4))
        i, f, o = sigmoid(i), sigmoid(f), sigmoid(o)
        c = f * c + i * np.tanh(g)
        h = o * np.tanh(c)
        for name, value in (("i", i), ("f", f), ("o", o), ("h", h)):
            found[name].append(value)
    return {name: np.stack(values, 1) for name, values in found.items()}


def test_gru_and_lstm_gates_are_labelled_by_their_blocks():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 6, 5)).astype("float32")
    for cell, expected_labels, reference in (
        ("gru", ["z", "r"], numpy_gru),
        ("lstm", ["i", "f", "o"], numpy_lstm),
    ):
        layer = RNN(get_cell(cell)(4, bias_initializer="random_normal"), return_sequences=True)
        layer(x)
        assert gate_labels(layer.cell) == expected_labels
        with recorded_recurrences() as records:
            outputs = np.asarray(layer(x))
        (record,) = records
        assert record.layer is layer and list(record.signals) == ["h", *expected_labels]
        weights = [np.asarray(w, np.float64) for w in layer.cell.weights]
        expected = reference(x.astype(np.float64), *weights)
        for name, values in expected.items():
            np.testing.assert_allclose(record.signals[name], values, atol=2e-5, err_msg=name)
        np.testing.assert_allclose(outputs, expected["h"], atol=2e-5)


def test_recorded_models_compute_what_they_compute_otherwise():
    """A bidirectional MGU over masked rows: outputs unchanged, the backward
    layer's record in input order, the cell without gates labelled with none."""
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(12, 5, mask_zero=True)(tokens)
    x = keras.layers.Bidirectional(RNN(get_cell("mgu")(3), return_sequences=True))(x)
    x = RNN(get_cell("simple")(2))(x)
    model = keras.Model(tokens, x)
    ids = np.array([[3, 4, 5, 6, 0, 0], [7, 8, 9, 10, 11, 1]], "int32")
    plain = np.asarray(model(ids))
    with recorded_recurrences() as records:
        recorded = np.asarray(model(ids))
    np.testing.assert_allclose(recorded, plain, atol=1e-6)
    forward, backward, simple = records
    assert len(recurrent_layers(model)) >= 3
    assert list(forward.signals) == ["h", "f"] and list(simple.signals) == ["h"]
    # The backward layer's step 0 has read the whole row: its last output.
    bidirectional = model.layers[2]
    both = np.asarray(bidirectional(model.layers[1](ids)))
    np.testing.assert_allclose(backward.signals["h"][0, :4], both[0, :4, 3:], atol=1e-6)
    assert np.all((forward.signals["f"] > 0) & (forward.signals["f"] < 1))
