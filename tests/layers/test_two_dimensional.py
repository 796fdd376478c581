"""MultiDimensionalRNN and RowLSTM against NumPy loops over the grid written
here (position by position, row by row), every one-state registered cell
against its own step at each position, the sweep directions, `.keras` round
trips, gradients reaching the far corner, the exports (SavedModel served as
TF Serving serves it, ONNX in onnxruntime) on grids of other sizes than
traced, and the one-line refusals."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_rnncells as kr
from keras_rnncells.cells.base import as_state_list

UNITS = 3
FEATURES = 2


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def grid(rng, batch=2, height=3, width=4):
    return rng.normal(size=(batch, height, width, FEATURES)).astype("float32")


def flipped(array, direction):
    """``array`` [B, H, W, ...] seen from the corner ``direction`` starts at."""
    rows, columns = {
        "down_right": (False, False),
        "down_left": (False, True),
        "up_right": (True, False),
        "up_left": (True, True),
    }[direction]
    if rows:
        array = array[:, ::-1]
    if columns:
        array = array[:, :, ::-1]
    return array


def sweep_numpy(x, position):
    """``position(x_ij, state_left, state_up) -> (output, state)`` at every
    position in raster order, neighbours outside the grid given as None."""
    _, height, width, _ = x.shape
    states, outputs = {}, {}
    for i in range(height):
        for j in range(width):
            left = states.get((i, j - 1))
            up = states.get((i - 1, j))
            outputs[i, j], states[i, j] = position(x[:, i, j], left, up)
    return np.stack([np.stack([outputs[i, j] for j in range(width)], 1) for i in range(height)], 1)


def zeros_if_none(state, batch):
    return np.zeros((batch, UNITS), "float32") if state is None else state


def elman_position(cell):
    kernel, recurrent, bias = (w.numpy() for w in (cell.kernel, cell.recurrent_kernel, cell.bias))

    def position(x, left, up):
        left, up = zeros_if_none(left, len(x)), zeros_if_none(up, len(x))
        h = np.tanh(np.concatenate([x, up], 1) @ kernel + left @ recurrent + bias)
        return h, h

    return position


def gru_position(cell):
    kernel, recurrent, bias = (w.numpy() for w in (cell.kernel, cell.recurrent_kernel, cell.bias))
    n = UNITS

    def position(x, left, up):
        left, up = zeros_if_none(left, len(x)), zeros_if_none(up, len(x))
        projected = np.concatenate([x, up], 1) @ kernel + bias[0]
        inner = left @ recurrent + bias[1]
        z = sigmoid(projected[:, :n] + inner[:, :n])
        r = sigmoid(projected[:, n : 2 * n] + inner[:, n : 2 * n])
        candidate = np.tanh(projected[:, 2 * n :] + r * inner[:, 2 * n :])
        h = z * left + (1 - z) * candidate
        return h, h

    return position


def md_lstm_position(cell, up_kernel, up_recurrent, up_bias):
    kernel, recurrent, bias = (w.numpy() for w in (cell.kernel, cell.recurrent_kernel, cell.bias))
    up_kernel, up_recurrent, up_bias = (w.numpy() for w in (up_kernel, up_recurrent, up_bias))
    n = UNITS

    def position(x, left, up):
        (h_left, c_left), (h_up, c_up) = (
            (zeros_if_none(None, len(x)),) * 2 if s is None else s for s in (left, up)
        )
        joined = np.concatenate([x, h_up], 1)
        gates = joined @ kernel + h_left @ recurrent + bias
        f_up = sigmoid(joined @ up_kernel + h_left @ up_recurrent + up_bias)
        i, f, g, o = (gates[:, k * n : (k + 1) * n] for k in range(4))
        c = sigmoid(f) * c_left + f_up * c_up + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        return h, (h, c)

    return position


def md_numpy(layer, x, positions):
    """The layer's output from NumPy: each direction's sweep on the flipped
    grid, flipped back, merged as the layer merges."""
    outputs = []
    for direction, position in zip(layer.directions, positions):
        swept = sweep_numpy(flipped(x, direction), position)
        outputs.append(flipped(swept, direction) if layer.return_grid else swept[:, -1, -1])
    if layer.merge_mode == "sum":
        return sum(outputs)
    return np.concatenate(outputs, -1)


@pytest.fixture
def built(rng, helpers):
    """``(layer, x) -> layer``, called on ``x`` and its weights random."""

    def build(layer, x):
        layer(x)
        helpers.randomize_weights(layer, rng)
        return layer

    return build


def test_elman_in_four_directions_is_graves_md_rnn(rng, built):
    x = grid(rng)
    layer = built(kr.MultiDimensionalRNN(kr.SimpleRNNCell(UNITS)), x)
    assert layer.directions == ("down_right", "down_left", "up_right", "up_left")
    expected = md_numpy(layer, x, [elman_position(c) for c in layer.direction_cells])
    assert expected.shape == (2, 3, 4, 4 * UNITS)
    np.testing.assert_allclose(layer(x), expected, atol=1e-5)


def test_gru_summed_directions_and_last_corners(rng, built):
    x = grid(rng, batch=3, height=4, width=2)
    for return_grid in (True, False):
        layer = kr.MultiDimensionalRNN(
            kr.GRUCell(UNITS),
            directions=["up_left", "down_left"],
            merge_mode="sum",
            return_grid=return_grid,
        )
        built(layer, x)
        expected = md_numpy(layer, x, [gru_position(c) for c in layer.direction_cells])
        np.testing.assert_allclose(layer(x), expected, atol=1e-5)
    assert expected.shape == (3, UNITS)


def test_lstm_is_the_md_lstm_with_a_forget_gate_per_neighbour(rng, built):
    x = grid(rng, height=3, width=5)
    layer = built(
        kr.MultiDimensionalRNN(kr.LSTMCell(UNITS), directions=("up_right", "down_right")), x
    )
    positions = [
        md_lstm_position(cell, *forget)
        for cell, forget in zip(layer.direction_cells, layer.up_forget)
    ]
    np.testing.assert_allclose(layer(x), md_numpy(layer, x, positions), atol=1e-5)
    fresh = kr.MultiDimensionalRNN(kr.LSTMCell(UNITS), directions="down_right")
    fresh(x)
    np.testing.assert_array_equal(fresh.up_forget[0][2].numpy(), np.ones(UNITS))


def runs_in_a_grid(name: str) -> bool:
    """One state, and an input of any width (MUT1/MUT2 add theirs to a block)."""
    cell = kr.get_cell(name)(UNITS)
    one_state = len(as_state_list(cell.state_size)) == 1
    return one_state and not getattr(cell, "input_dim_must_equal_units", False)


ONE_STATE_CELLS = [name for name in kr.list_cells() if runs_in_a_grid(name)]


@pytest.mark.parametrize("name", ONE_STATE_CELLS)
def test_every_one_state_cell_matches_its_own_step_at_each_position(name, rng, built):
    """Any one-state cell: the diagonal sweep equals the cell's own ``call``
    at each position in raster order, on ``[x; s_up]`` and ``s_left``."""
    x = grid(rng, batch=2, height=3, width=2)
    layer = built(kr.MultiDimensionalRNN(kr.get_cell(name)(UNITS), directions="down_right"), x)
    cell = layer.cell

    def position(x_ij, left, up):
        up = zeros_if_none(up, len(x_ij))
        output, states = cell(np.concatenate([x_ij, up], 1), [zeros_if_none(left, len(x_ij))])
        return np.asarray(output), np.asarray(as_state_list(states)[0])

    np.testing.assert_allclose(layer(x), sweep_numpy(x, position), atol=1e-5)
    assert layer.compute_output_shape(x.shape) == layer(x).shape


def row_lstm_numpy(layer, x):
    """PixelRNN's row LSTM, convolutions written as sums over taps."""
    k, n = layer.kernel_size, layer.units
    kernel = layer.input_kernel.numpy()
    if layer.input_mask is not None:  # taps past the centre (and the centre's, "A") dropped
        last = k // 2 + (1 if layer.input_mask == "B" else 0)
        kernel = kernel * (np.arange(k) < last)[:, None, None]
    state_kernel, bias = layer.state_kernel.numpy(), layer.bias.numpy()
    batch, height, width, _ = x.shape
    h = c = np.zeros((batch, width, n), "float32")
    rows = []
    for r in range(height):
        gates = np.zeros((batch, width, 4 * n)) + bias
        for j in range(width):
            for tap in range(k):
                column = j + tap - k // 2
                if 0 <= column < width:
                    gates[:, j] += x[:, r, column] @ kernel[tap] + h[:, column] @ state_kernel[tap]
        i, f, g, o = (gates[..., q * n : (q + 1) * n] for q in range(4))
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        rows.append(h)
    return np.stack(rows, 1)


@pytest.mark.parametrize("input_mask", [None, "A", "B"])
def test_row_lstm_matches_numpy(input_mask, rng, built):
    x = grid(rng, height=4, width=5)
    layer = built(kr.RowLSTM(UNITS, kernel_size=3, input_mask=input_mask), x)
    expected = row_lstm_numpy(layer, x)
    np.testing.assert_allclose(layer(x), expected, atol=1e-5)
    last = kr.RowLSTM.from_config({**layer.get_config(), "return_grid": False})
    last(x)
    last.set_weights(layer.get_weights())
    np.testing.assert_allclose(last(x), expected[:, -1], atol=1e-5)


def test_row_lstm_masks_keep_later_columns_out():
    """With mask "A" the first row's column j reads no input at columns >= j."""
    x = np.zeros((1, 1, 4, FEATURES), "float32")
    changed = x.copy()
    changed[0, 0, 2] = 5.0
    for mask, unchanged_columns in (("A", 3), ("B", 2), (None, 1)):
        layer = kr.RowLSTM(UNITS, input_mask=mask)
        first, second = np.asarray(layer(x)), np.asarray(layer(changed))
        np.testing.assert_array_equal(
            first[..., :unchanged_columns, :], second[..., :unchanged_columns, :]
        )
        assert not np.allclose(first[..., unchanged_columns, :], second[..., unchanged_columns, :])


def far_corner_gradient(layer, x):
    """The gradients of the output at the last position with respect to the
    input grid and the weights."""
    x = tf.convert_to_tensor(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        output = layer(x)[:, -1, -1]
        loss = tf.reduce_sum(output * np.linspace(-1, 1, output.shape[-1]).astype("float32"))
    return tape.gradient(loss, [x, *layer.trainable_weights])


@pytest.mark.parametrize(
    "make",
    [
        lambda: kr.MultiDimensionalRNN(kr.LSTMCell(UNITS), directions="down_right"),
        lambda: kr.MultiDimensionalRNN(kr.GRUCell(UNITS), directions="down_right"),
        lambda: kr.RowLSTM(UNITS, kernel_size=3),
    ],
    ids=["md_lstm", "md_gru", "row_lstm"],
)
def test_gradients_reach_the_first_position_and_every_weight(make, rng):
    x = grid(rng, batch=2, height=4, width=4)
    layer = make()
    gradients = far_corner_gradient(layer, x)
    assert all(np.isfinite(g.numpy()).all() for g in gradients)
    assert np.abs(gradients[0].numpy()[:, 0, 0]).sum() > 0  # the first input reaches the end
    for weight, gradient in zip(layer.trainable_weights, gradients[1:]):
        assert np.abs(gradient.numpy()).sum() > 0, weight.path
    if isinstance(layer, kr.MultiDimensionalRNN):  # across the whole grid, by finite difference
        shifted = x.copy()
        shifted[:, 0, 0] += 1e-2
        difference = np.asarray(layer(shifted) - layer(x))[:, -1, -1]
        assert np.abs(difference).max() > 0


def grid_model(rng, helpers) -> keras.Model:
    keras.utils.set_random_seed(5)
    inputs = keras.Input((None, None, FEATURES))
    md_lstm = kr.MultiDimensionalRNN(
        kr.LSTMCell(UNITS), directions=["down_right", "up_left"], name="md_lstm"
    )(inputs)
    corners = kr.MultiDimensionalRNN(
        kr.GRUCell(UNITS), directions=["down_left", "up_right"], return_grid=False, name="md_gru"
    )(inputs)
    rows = kr.RowLSTM(UNITS, input_mask="B", name="row_lstm")(inputs)
    model = keras.Model(inputs, {"md": md_lstm, "corners": corners, "rows": rows}, name="grids")
    for layer in model.layers[1:]:
        helpers.randomize_weights(layer, rng)
    return model


def test_keras_round_trip(rng, helpers, tmp_path):
    model = grid_model(rng, helpers)
    x = grid(rng, batch=2, height=5, width=3)
    path = tmp_path / "grids.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert [type(layer).__name__ for layer in loaded.layers[1:]] == [
        "MultiDimensionalRNN",
        "MultiDimensionalRNN",
        "RowLSTM",
    ]
    expected, found = model(x), loaded(x)
    for name in expected:
        np.testing.assert_allclose(found[name], expected[name], atol=1e-6, err_msg=name)


EXPORT_GRIDS = {
    "odd": (3, 5, 7),
    "one_by_one": (1, 1, 1),
    "tall": (1, 6, 2),
    "empty_batch": (0, 3, 3),
}


def export_inputs(rng):
    return {
        name: rng.normal(size=(*shape, FEATURES)).astype("float32")
        for name, shape in EXPORT_GRIDS.items()
    }


@pytest.mark.slow
def test_exports_serve_other_grid_sizes(
    rng, helpers, tmp_path, serve_like_tf_serving, run_onnx_in_child
):
    """Traced on the export's examples, served on odd grids, a 1×1 grid, one
    row of one image and an empty batch: the SavedModel as a stock TF Serving
    serves it, the ONNX file in onnxruntime without TensorFlow."""
    from keras_rnncells.export import servable_from_model, write_onnx, write_saved_models

    model = grid_model(rng, helpers)
    servable = servable_from_model(model)
    (saved,) = write_saved_models([servable], tmp_path / "export")
    onnx_path = tmp_path / "onnx" / "model.onnx"
    manifest = write_onnx(servable, onnx_path)
    assert all(e <= 1e-4 for e in manifest["parity"]["max_abs_error"].values())
    feeds = export_inputs(rng)
    served = serve_like_tf_serving([(saved, {"inputs": x}) for x in feeds.values()], tmp_path / "s")
    ran = run_onnx_in_child([(onnx_path, {"inputs": x}) for x in feeds.values()], tmp_path / "r")
    for (name, x), from_serving, from_onnx in zip(feeds.items(), served, ran):
        expected = {key: np.asarray(value) for key, value in model(x).items()}
        for found, tolerance in ((from_serving, 1e-5), (from_onnx, 1e-4)):
            assert isinstance(found, dict), f"{name}: {found}"
            assert set(found) == set(expected)
            for key, value in expected.items():
                assert found[key].shape == value.shape, (name, key)
                np.testing.assert_allclose(found[key], value, atol=tolerance, err_msg=name)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: kr.MultiDimensionalRNN(kr.SimpleRNNCell(2), directions=["down", "up_left"]),
            r"^Argument `directions` must be distinct names among .*"
            r"received: \['down', 'up_left'\]$",
        ),
        (
            lambda: kr.MultiDimensionalRNN(kr.SimpleRNNCell(2), directions=[]),
            r"^Argument `directions` must be distinct names",
        ),
        (
            lambda: kr.MultiDimensionalRNN(kr.SimpleRNNCell(2), directions=("up_left",) * 2),
            r"^Argument `directions` must be distinct names",
        ),
        (
            lambda: kr.MultiDimensionalRNN(kr.SCRNCell(2)),
            r"^Argument `cell` of MultiDimensionalRNN must be a cell with one state or an "
            r"LSTMCell \(the MD-LSTM\), received SCRNCell with 2 states$",
        ),
        (
            lambda: kr.MultiDimensionalRNN(kr.PeepholeLSTMCell(2)),
            r"received PeepholeLSTMCell with 2 states$",
        ),
        (
            lambda: kr.MultiDimensionalRNN(kr.GRUCell(2, batch_norm=True)),
            r"received GRUCell with 2 states$",
        ),
        (
            lambda: kr.MultiDimensionalRNN(kr.MUT1Cell(2)),
            r"^Argument `cell` of MultiDimensionalRNN: MUT1Cell adds its input itself to a "
            r"units-sized block",
        ),
        (
            lambda: kr.MultiDimensionalRNN(kr.LSTMCell(2, layer_norm=True)),
            r"^Argument `cell` of MultiDimensionalRNN: its MD-LSTM form computes LSTMCell "
            r"without layer_norm",
        ),
        (
            lambda: kr.MultiDimensionalRNN(kr.GRUCell(2, recurrent_dropout=0.1)),
            r"^Argument `cell` of MultiDimensionalRNN must have no `recurrent_dropout`",
        ),
        (
            lambda: kr.MultiDimensionalRNN("gru"),
            r"^Argument `cell` must be a recurrent cell instance, received: 'gru'$",
        ),
        (
            lambda: kr.MultiDimensionalRNN(kr.GRUCell(2), merge_mode="mul"),
            r"^Argument `merge_mode` must be one of \('concat', 'sum'\), received: 'mul'$",
        ),
        (lambda: kr.RowLSTM(4, kernel_size=2), r"^Argument `kernel_size` must be an odd"),
        (lambda: kr.RowLSTM(0), r"^Argument `units` must be a positive integer"),
        (
            lambda: kr.RowLSTM(4, input_mask="C"),
            r"^Argument `input_mask` must be one of \(None, 'A', 'B'\), received: 'C'$",
        ),
    ],
)
def test_bad_arguments_are_refused_in_one_line(make, message):
    with pytest.raises(ValueError, match=message) as raised:
        make()
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "layer", [kr.MultiDimensionalRNN(kr.GRUCell(2)), kr.RowLSTM(2)], ids=["md", "row"]
)
def test_inputs_other_than_a_grid_are_refused(layer):
    with pytest.raises(ValueError, match=r"must be of rank 4 \(batch, height, width, features\)"):
        layer(np.zeros((2, 3, 4), "float32"))


@pytest.mark.parametrize(
    "layer", [kr.MultiDimensionalRNN(kr.GRUCell(2)), kr.RowLSTM(2)], ids=["md", "row"]
)
def test_grids_without_a_known_feature_size_are_refused(layer):
    with pytest.raises(ValueError, match=r"must have a known number of features \(last axis\)"):
        layer.build((None, 3, 4, None))
