"""`ClockworkCell`, `GatedFeedbackCell`, `DepthGatedLSTMCell` and
`GridLSTMCell` against NumPy of their papers' equations (tanh cells where the
paper's cell is any), masks, LSTM parts, a `.keras` round trip, the
SavedModel served as a stock TF Serving serves it and the ONNX file in
onnxruntime, and what they refuse."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import keras_rnncells as kr
from keras_rnncells.export import servable_from_model, write_onnx, write_saved_models

UNITS, FEATURES = 3, 4


def weights(cell) -> list[list[np.ndarray]]:
    """Each part's (kernel, recurrent kernel, bias), float64."""
    return [[w.numpy().astype("float64") for w in part.weights] for part in cell.parts]


def clockwork_reference(cell, x, mask):
    """Koutník et al.'s CW-RNN, row by row; a masked step changes nothing."""
    parts, periods = weights(cell), cell.periods
    outputs = np.zeros((*x.shape[:2], UNITS * len(periods)))
    for row in range(len(x)):
        h, t = [np.zeros(UNITS) for _ in periods], 0
        for step in range(x.shape[1]):
            if mask[row, step]:
                new = []
                for i, (kernel, recurrent, bias) in enumerate(parts):
                    read = np.concatenate([x[row, step], *h[i + 1 :]])
                    active = t % periods[i] == 0
                    new.append(np.tanh(read @ kernel + h[i] @ recurrent + bias) if active else h[i])
                h, t = new, t + 1
            outputs[row, step] = np.concatenate(h)
    return outputs


def gated_feedback_reference(cell, x):
    """Chung et al.'s GF-RNN with tanh layers (the own state ungated)."""
    parts, depth = weights(cell), cell.depth
    gate_kernels = [k.numpy() for k in cell.gate_kernels]
    gate_recurrent, gate_bias = cell.gate_recurrent_kernel.numpy(), cell.gate_bias.numpy()
    outputs = np.zeros((*x.shape[:2], UNITS))
    for row in range(len(x)):
        h = [np.zeros(UNITS) for _ in range(depth)]
        for step in range(x.shape[1]):
            below, new = x[row, step], []
            for j, (kernel, recurrent, bias) in enumerate(parts):
                gates = 1 / (
                    1
                    + np.exp(
                        -(
                            below @ gate_kernels[j]
                            + np.concatenate(h) @ gate_recurrent[j]
                            + gate_bias[j]
                        )
                    )
                )
                fed = [gates[i] * h[i] for i in range(depth) if i != j]
                below = np.tanh(np.concatenate([below, *fed]) @ kernel + h[j] @ recurrent + bias)
                new.append(below)
            h = new
            outputs[row, step] = h[-1]
    return outputs


def depth_gated_reference(cell, x):
    """Yao et al.'s depth-gated LSTM: the memory cells joined across depth."""
    parts = weights(cell)
    depth_kernels = [k.numpy() for k in cell.depth_kernels]
    depth_weights = cell.depth_weights.numpy()
    outputs = np.zeros((*x.shape[:2], UNITS))
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    for row in range(len(x)):
        h, c = np.zeros((cell.depth, UNITS)), np.zeros((cell.depth, UNITS))
        for step in range(x.shape[1]):
            below_h, below_c = x[row, step], None
            for j, (kernel, recurrent, bias) in enumerate(parts):
                i, f, g, o = np.split(below_h @ kernel + h[j] @ recurrent + bias, 4)
                new_c = sigmoid(f) * c[j] + sigmoid(i) * np.tanh(g)
                if below_c is not None:
                    w_cd, w_ld, b_d = depth_weights[j - 1]
                    d = sigmoid(b_d + below_h @ depth_kernels[j - 1] + w_cd * c[j] + w_ld * below_c)
                    new_c = new_c + d * below_c
                h[j], c[j] = sigmoid(o) * np.tanh(new_c), new_c
                below_h, below_c = h[j], c[j]
            outputs[row, step] = h[-1]
    return outputs


def randomized(layer, x):
    layer(x)
    rng = np.random.default_rng(3)
    for weight in layer.weights:
        weight.assign(rng.normal(scale=0.6, size=weight.shape))
    return layer


def test_clockwork_follows_the_paper_and_counts_unmasked_steps(sequences, mask):
    cell = kr.ClockworkCell("simple", UNITS, periods=(1, 2, 3))
    layer = randomized(kr.RNN(cell, return_sequences=True), sequences)
    found = np.asarray(layer(sequences, mask=mask))
    expected = clockwork_reference(cell, sequences, mask)
    np.testing.assert_allclose(found[mask], expected[mask], atol=1e-5)


def test_gated_feedback_follows_the_paper(sequences):
    cell = kr.GatedFeedbackCell("simple", UNITS, layers=3)
    layer = randomized(kr.RNN(cell, return_sequences=True), sequences)
    found = np.asarray(layer(sequences))
    np.testing.assert_allclose(found, gated_feedback_reference(cell, sequences), atol=1e-5)


def test_depth_gated_lstm_follows_the_paper(sequences):
    cell = kr.DepthGatedLSTMCell(UNITS, layers=3)
    layer = randomized(kr.RNN(cell, return_sequences=True), sequences)
    found = np.asarray(layer(sequences))
    np.testing.assert_allclose(found, depth_gated_reference(cell, sequences), atol=1e-5)


@pytest.mark.parametrize(
    "cell",
    [
        lambda: kr.ClockworkCell("lstm", UNITS, periods=(1, 2)),
        lambda: kr.GatedFeedbackCell("gru", UNITS, 2),
        lambda: kr.DepthGatedLSTMCell(UNITS, 2),
    ],
    ids=["clockwork-lstm", "gated-feedback-gru", "depth-gated"],
)
def test_rows_do_not_mix_under_masks(cell, sequences, mask, helpers):
    helpers.assert_rows_independent(kr.RNN(cell()), sequences, mask)


def model_of_both() -> keras.Model:
    keras.utils.set_random_seed(2)
    inputs = keras.Input((None, FEATURES), name="frames")
    clockwork = kr.RNN(kr.ClockworkCell("mgu", UNITS, periods=(1, 2)))(inputs)
    feedback = kr.RNN(kr.GatedFeedbackCell("lstm", UNITS, 2))(inputs)
    depth_gated = kr.RNN(kr.DepthGatedLSTMCell(UNITS, 2))(inputs)
    grid = kr.RNN(kr.GridLSTMCell(UNITS, 2))(inputs)
    joined = keras.layers.Concatenate()([clockwork, feedback, depth_gated, grid])
    return keras.Model(inputs, joined, name="connected")


@pytest.mark.slow  # three exports in child processes (20 s of the default run)
def test_keras_file_saved_model_and_onnx(
    tmp_path, sequences, serve_like_tf_serving, run_onnx_in_child
):
    model = model_of_both()
    expected = np.asarray(model(sequences))
    model.save(tmp_path / "both.keras")
    loaded = keras.saving.load_model(tmp_path / "both.keras")
    np.testing.assert_allclose(loaded(sequences), expected, atol=1e-6)
    servable = servable_from_model(model)
    (directory,) = write_saved_models([servable], tmp_path / "export")
    write_onnx(servable, tmp_path / "onnx" / "both.onnx")
    requests = [{"frames": sequences}, {"frames": sequences[:1, :2]}]
    served = serve_like_tf_serving([(directory, r) for r in requests], tmp_path / "serve")
    ran = run_onnx_in_child(
        [(tmp_path / "onnx" / "both.onnx", r) for r in requests], tmp_path / "run"
    )
    short = np.asarray(model(sequences[:1, :2]))
    for outputs in (served, ran):
        np.testing.assert_allclose(outputs[0]["output_0"], expected, atol=1e-4)
        np.testing.assert_allclose(outputs[1]["output_0"], short, atol=1e-4)


def test_bad_arguments_name_themselves():
    with pytest.raises(
        ValueError, match="Argument `cell` must name a cell whose output is its first"
    ):
        kr.ClockworkCell("scrn", UNITS)
    with pytest.raises(
        ValueError, match="Argument `periods` must be one or more periods, ascending"
    ):
        kr.ClockworkCell("gru", UNITS, periods=(4, 2))
    with pytest.raises(ValueError, match="Argument `layers`"):
        kr.GatedFeedbackCell("gru", UNITS, layers=0)
    with pytest.raises(ValueError, match="Argument `cell`"):
        kr.GatedFeedbackCell("nope", UNITS)


def grid_reference(cell, x):
    """Kalchbrenner et al.'s 2-D Grid LSTM (time, depth) in NumPy."""
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    w_in = cell.input_kernel.numpy()
    kernels = {axis: cell.kernels[axis].numpy() for axis in ("time", "depth")}
    biases = {axis: cell.biases[axis].numpy() for axis in ("time", "depth")}

    def transform(axis, d, grid_input, memory):
        i, f, o, g = np.split(grid_input @ kernels[axis][d] + biases[axis][d], 4)
        memory = sigmoid(f) * memory + sigmoid(i) * np.tanh(g)
        return sigmoid(o) * np.tanh(memory), memory

    outputs = np.zeros((*x.shape[:2], UNITS))
    for row in range(len(x)):
        h, m = np.zeros((cell.depth, UNITS)), np.zeros((cell.depth, UNITS))
        for step in range(x.shape[1]):
            up, up_memory = x[row, step] @ w_in, np.zeros(UNITS)
            for d in range(cell.depth):
                grid_input = np.concatenate([h[d], up])
                h[d], m[d] = transform("time", d, grid_input, m[d])
                up, up_memory = transform("depth", d, grid_input, up_memory)
            outputs[row, step] = up
    return outputs


def test_grid_lstm_follows_the_paper(sequences, mask, helpers):
    cell = kr.GridLSTMCell(UNITS, layers=3)
    layer = randomized(kr.RNN(cell, return_sequences=True), sequences)
    np.testing.assert_allclose(layer(sequences), grid_reference(cell, sequences), atol=1e-5)
    helpers.assert_rows_independent(kr.RNN(kr.GridLSTMCell(UNITS, 2)), sequences, mask)
