"""The scan path (``implementation="scan"``, layers/scan.py) gives Keras'
loop's numbers (``generic``) in float64 within 1e-9: outputs, states and
gradients (inputs, initial states, weights), with masks of every pattern,
``go_backwards``, ``zero_output_for_mask``, stateful layers and
Bidirectional; in a graph of unknown length; at 100,000 steps nothing
overflows; and a model of the scan layers serves as stock TF Serving does
and runs in onnxruntime."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_rnncells as kr
from keras_rnncells.layers.scan import chunked_scan, linear_scan

UNITS, FEATURES, BATCH, STEPS = 3, 2, 5, 37  # 37 steps: a part chunk, two levels

CELLS = {
    "min_gru": lambda: kr.MinGRUCell(UNITS, dtype="float64"),
    "min_lstm_g": lambda: kr.MinLSTMCell(UNITS, log_space_form=True, dtype="float64"),
    "qrnn": lambda: kr.QRNNCell(UNITS, dtype="float64"),
    "qrnn_window_2": lambda: kr.QRNNCell(UNITS, window=2, dtype="float64"),
}


def padded_mask() -> np.ndarray:
    """Left padding, right padding, holes, a fully masked row, none masked."""
    mask = np.ones((BATCH, STEPS), bool)
    mask[0, :6] = False
    mask[1, 20:] = False
    mask[2, 3:5] = mask[2, 17:30] = False
    mask[3] = False
    return mask


def run(layer, x, initial, mask, training=True):
    """Outputs, states and the gradients of a weighted sum of them."""
    x = tf.constant(x)
    initial = [tf.constant(s) for s in initial]
    with tf.GradientTape() as tape:
        tape.watch([x, *initial])
        results = layer(x, initial_state=initial, mask=mask, training=training)
        results = tf.nest.flatten(results)
        loss = sum(tf.reduce_sum(r * (k + 1.5) * tf.sin(r)) for k, r in enumerate(results))
    gradients = tape.gradient(loss, [x, *initial, *layer.trainable_weights])
    return [r.numpy() for r in results] + [g.numpy() for g in gradients]


def paired(cell: str, **options):
    """Generic and scan layers over ``cell`` with the same random weights."""
    layers = []
    for implementation in ("generic", "scan"):
        layer = kr.RNN(CELLS[cell](), implementation=implementation, dtype="float64", **options)
        layer.build((BATCH, STEPS, FEATURES))
        layers.append(layer)
    rng = np.random.default_rng(4)
    weights = [rng.uniform(-0.9, 0.9, size=w.shape) for w in layers[0].get_weights()]
    for layer in layers:
        layer.set_weights(weights)
    return layers


@pytest.mark.parametrize("masked", [False, True], ids=["unmasked", "masked"])
@pytest.mark.parametrize(
    "options",
    [
        {"return_sequences": True, "return_state": True},
        {"return_state": True, "go_backwards": True},
        {"return_sequences": True, "zero_output_for_mask": True, "go_backwards": True},
    ],
    ids=["sequences", "backwards", "zero_output"],
)
@pytest.mark.parametrize("cell", sorted(CELLS))
def test_scan_matches_keras_loop_in_float64(cell, options, masked):
    generic, scan = paired(cell, **options)
    assert (generic.path(True), scan.path(True)) == ("generic", "scan")
    rng = np.random.default_rng(5)
    x = rng.normal(size=(BATCH, STEPS, FEATURES))
    initial = [rng.normal(size=(BATCH, size)) for size in tf.nest.flatten(scan.cell.state_size)]
    mask = tf.constant(padded_mask()) if masked else None
    expected, found = (run(layer, x, initial, mask) for layer in (generic, scan))
    assert len(found) == len(expected)
    for value, reference in zip(found, expected):
        np.testing.assert_allclose(value, reference, rtol=0, atol=1e-9)


@pytest.mark.parametrize("cell", ["min_gru", "qrnn_window_2"])
def test_stateful_and_bidirectional_scan_match_keras_loop(cell):
    rng = np.random.default_rng(6)
    x = rng.normal(size=(BATCH, STEPS, FEATURES))
    mask = tf.constant(padded_mask())
    answers = []
    for implementation in ("generic", "scan"):
        keras.utils.set_random_seed(2)
        stateful = kr.RNN(CELLS[cell](), stateful=True, implementation=implementation)
        both = keras.layers.Bidirectional(
            kr.RNN(CELLS[cell](), return_sequences=True, implementation=implementation),
            dtype="float64",
        )
        first = stateful(x[:, :20], mask=mask[:, :20])
        second = stateful(x[:, 20:], mask=mask[:, 20:])  # continues the stored states
        answers.append([first, second, *stateful.states, both(x, mask=mask)])
    for value, reference in zip(*answers):
        np.testing.assert_allclose(np.asarray(value), np.asarray(reference), atol=1e-9)


def test_scan_of_unknown_length_matches():
    """A graph traced for any length scans its chunks' ends with ``tf.scan``."""
    generic, scan = paired("qrnn_window_2", return_sequences=True)
    rng = np.random.default_rng(7)
    x = rng.normal(size=(BATCH, 70, FEATURES))
    spec = tf.TensorSpec((None, None, FEATURES), "float64")
    traced = tf.function(lambda inputs: scan(inputs), input_signature=[spec])
    np.testing.assert_allclose(traced(x).numpy(), generic(x).numpy(), atol=1e-9)


@pytest.mark.parametrize("steps", [1, 16, 17, 256, 300])
def test_chunked_scan_is_the_recurrence(steps):
    rng = np.random.default_rng(steps)
    a = rng.uniform(0, 1, size=(steps, 2, 3))
    b = rng.normal(size=(steps, 2, 3))
    c0 = rng.normal(size=(2, 3))
    expected, c = [], c0
    for a_t, b_t in zip(a, b):
        c = a_t * c + b_t
        expected.append(c)
    found = chunked_scan(tf.constant(a), tf.constant(b), tf.constant(c0))
    np.testing.assert_allclose(found.numpy(), np.stack(expected), rtol=1e-12, atol=1e-12)


def test_linear_scan_gradient_is_exact():
    rng = np.random.default_rng(8)
    a, b = rng.uniform(0, 1, size=(2, 40, 2, 3))
    c0 = rng.normal(size=(2, 3))
    weights = rng.normal(size=(40, 2, 3))

    def loss(scan, a, b, c0):
        return tf.reduce_sum(weights * scan(a, b, c0) ** 2)

    def sequential(a, b, c0):
        states, c = [], c0
        for t in range(a.shape[0]):
            c = a[t] * c + b[t]
            states.append(c)
        return tf.stack(states)

    found, expected = [], []
    for scan, out in ((linear_scan, found), (sequential, expected)):
        args = [tf.constant(v) for v in (a, b, c0)]
        with tf.GradientTape() as tape:
            tape.watch(args)
            value = loss(scan, *args)
        out.extend(tape.gradient(value, args))
    for value, reference in zip(found, expected):
        np.testing.assert_allclose(value.numpy(), reference.numpy(), rtol=1e-12, atol=1e-12)


def test_a_hundred_thousand_steps_stay_finite():
    """MinGRU (plain form, float32) over 100,000 steps with a hole of masked
    steps: finite outputs and gradients, the last state that of a float64
    NumPy loop of the same equations."""
    steps = 100_000
    rng = np.random.default_rng(9)
    x = rng.normal(size=(1, steps, 1)).astype("float32") * 4
    mask = np.ones((1, steps), bool)
    mask[0, 40_000:60_000] = False
    layer = kr.MinGRU(2, return_sequences=True, return_state=True, implementation="scan")
    layer.build(x.shape)
    layer.set_weights([np.array([[3.0, -2.0, 1.0, 2.0]], "float32"), np.zeros(4, "float32")])
    x = tf.constant(x)

    @tf.function  # one graph: eagerly, the scan's ops over 100,000 steps cost 4 times the CPU
    def forward_and_gradient(x, mask):
        with tf.GradientTape() as tape:
            tape.watch(x)
            outputs, state = layer(x, mask=mask)
            loss = tf.reduce_sum(outputs)
        return outputs, state, tape.gradient(loss, [x, *layer.trainable_weights])

    outputs, state, gradient = forward_and_gradient(x, tf.constant(mask))
    assert layer.path() == "scan"
    assert all(np.isfinite(g.numpy()).all() for g in [outputs, *gradient])
    kernel = layer.get_weights()[0].astype("float64")
    h = np.zeros(2)
    for x_t, keep in zip(x.numpy()[0, :, 0].astype("float64"), mask[0]):
        if keep:
            z = 1 / (1 + np.exp(-x_t * kernel[0, :2]))
            h = (1 - z) * h + z * x_t * kernel[0, 2:]
    np.testing.assert_allclose(state.numpy()[0], h, rtol=1e-4, atol=1e-4)
    assert np.abs(outputs.numpy()).max() <= np.abs(x.numpy()).max() * 2 + 1e-3


def scan_model() -> keras.Model:
    keras.utils.set_random_seed(3)
    frames = keras.Input((None, FEATURES), name="frames")
    masked = keras.layers.Masking(0.0)(frames)
    hidden = kr.MinGRU(UNITS, return_sequences=True)(masked)
    hidden = kr.QRNN(UNITS, window=2, return_sequences=True, go_backwards=True)(hidden)
    outputs = kr.MinLSTM(UNITS, log_space_form=True)(hidden)
    return keras.Model(frames, outputs, name="scan-cells")


def test_scan_model_serves_as_tf_serving_does_and_runs_in_onnxruntime(
    tmp_path, serve_like_tf_serving, run_onnx_in_child
):
    from keras_rnncells.export import servable_from_model, write_onnx, write_saved_models

    model = scan_model()
    with kr.portable():  # what an export traces: auto takes the scan
        assert {layer.path() for layer in model.layers[2:]} == {"scan"}
    assert {layer.path(True) for layer in model.layers[2:]} == {"fused"}  # training: XLA loop
    rng = np.random.default_rng(10)
    frames = rng.normal(size=(3, 41, FEATURES)).astype("float32")
    frames[1, 30:] = 0.0  # right padding, masked
    expected = np.asarray(model(frames))
    servable = servable_from_model(model)
    # The writers' own checks (a fresh TensorFlow process; onnxruntime) are
    # left out: this test runs both artifacts where users run them, and
    # compares them with the model, below.
    (directory,) = write_saved_models([servable], tmp_path / "export", check=False)
    (served,) = serve_like_tf_serving([(directory, {"frames": frames})], tmp_path / "serve")
    assert isinstance(served, dict), served  # else the signature's error
    np.testing.assert_allclose(served["output_0"], expected, atol=1e-5)
    path = tmp_path / "onnx" / "model.onnx"
    write_onnx(servable, path, check=False)
    (found,) = run_onnx_in_child([(path, {"frames": frames})], tmp_path / "run")
    assert isinstance(found, dict), found  # else onnxruntime's error
    np.testing.assert_allclose(found["output_0"], expected, atol=1e-4)
