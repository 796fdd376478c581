"""Recurrent batch normalization (``batch_norm=True``; Cooijmans et al. 2016):
the equations against NumPy, its statistics per step, the paths, saving and
the argument checks. Tiny shapes: the whole file runs in seconds."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_rnncells as krc
from keras_rnncells.layers.rnn import portable

BATCH, STEPS, FEATURES, UNITS = 4, 5, 2, 3
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [1, 0, 1, 1, 0]], dtype=bool)


def sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def lstm_reference(x, weights, steps, moving, training, momentum=0.99):
    """The BN-LSTM over ``x`` (batch, time, features) from zero states in
    NumPy: returns the outputs (batch, time, units) and the last ``c``;
    ``moving`` ({side: [mean, variance]}, rows per step) is read in inference
    and updated in place in training (``momentum``)."""
    kernel, recurrent_kernel, bias, g_x, g_h, g_c, b_c = weights
    h = c = np.zeros((x.shape[0], recurrent_kernel.shape[0]), "float64")
    outputs = []
    for t in range(x.shape[1]):
        k = min(t, steps - 1)  # the statistics of step T_max - 1 are reused

        def bn(side, a, gamma, beta=0.0, k=k):
            mean, variance = moving[side]
            if training:
                batch_mean, batch_variance = a.mean(0), a.var(0)
                mean[k] = momentum * mean[k] + (1 - momentum) * batch_mean
                variance[k] = momentum * variance[k] + (1 - momentum) * batch_variance
            else:
                batch_mean, batch_variance = mean[k], variance[k]
            return beta + gamma * (a - batch_mean) / np.sqrt(batch_variance + 1e-3)

        z = bn("recurrent", h @ recurrent_kernel, g_h) + bn("input", x[:, t] @ kernel, g_x) + bias
        i, f, g, o = np.split(z, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)  # carried un-normalized
        h = sigmoid(o) * np.tanh(bn("cell", c, g_c, b_c))
        outputs.append(h)
    return np.stack(outputs, 1), c


def moving_statistics(cell):
    return {
        side: [getattr(cell, f"{side}_moving_{part}").numpy().astype("float64") for part in parts]
        for side in ("input", "recurrent", "cell")
        for parts in [("mean", "variance")]
    }


def bn_layer(cell, rng, helpers, **kwargs):
    layer = krc.RNN(cell, return_sequences=True, return_state=True, **kwargs)
    layer.build((BATCH, STEPS, FEATURES))
    helpers.randomize_weights(layer, rng)
    return layer


def test_lstm_matches_numpy_in_training_and_inference(rng, helpers):
    """Five steps with T_max = 2: steps 1-4 share (and update) the statistics
    of step 1. Training: batch statistics, moving averages updated (momentum
    0.99); inference: the moving averages, on the generic and fused paths."""
    cell = krc.LSTMCell(UNITS, batch_norm=True, batch_norm_steps=2)
    layer = bn_layer(cell, rng, helpers, implementation="generic")
    x = rng.normal(size=(BATCH, STEPS, FEATURES))
    weights = [w.astype("float64") for w in layer.get_weights()[:7]]
    moving = moving_statistics(cell)
    expected, c = lstm_reference(x, weights, 2, moving, training=True)
    outputs, _, c_state, index = layer(x.astype("float32"), training=True)
    helpers.assert_all_close([outputs, c_state], [expected, c], tol=1e-4, what="training")
    np.testing.assert_array_equal(index, np.ones((BATCH, 1)))  # clamped at T_max - 1
    for side, (mean, variance) in moving.items():
        helpers.assert_all_close(
            [getattr(cell, f"{side}_moving_mean"), getattr(cell, f"{side}_moving_variance")],
            [mean, variance],
            tol=1e-4,
            what=f"{side} moving statistics",
        )
    assert not np.allclose(moving["input"][1][1], 1.0), "the moving variance was not updated"

    expected, _ = lstm_reference(x, weights, 2, moving, training=False)
    fused = krc.RNN(
        krc.LSTMCell.from_config(cell.get_config()), return_sequences=True, implementation="fused"
    )
    fused.build(x.shape)
    fused.set_weights(layer.get_weights())
    before = [w.numpy() for w in cell.non_trainable_weights]
    for name, actual in (("generic", layer(x)[0]), ("fused", fused(x))):
        helpers.assert_all_close([actual], [expected], tol=1e-4, what=f"inference, {name}")
    helpers.assert_all_close(cell.non_trainable_weights, before, tol=0, what="no update")


def test_gamma_starts_at_0_1_and_beta_at_0():
    cell = krc.LSTMCell(UNITS, batch_norm=True, batch_norm_steps=7)
    krc.RNN(cell).build((None, None, FEATURES))
    for side, width in (("input", 4 * UNITS), ("recurrent", 4 * UNITS), ("cell", UNITS)):
        np.testing.assert_array_equal(
            getattr(cell, f"{side}_norm_gamma"), np.full(width, 0.1, "float32")
        )
        np.testing.assert_array_equal(getattr(cell, f"{side}_moving_mean"), np.zeros((7, width)))
        np.testing.assert_array_equal(getattr(cell, f"{side}_moving_variance"), np.ones((7, width)))
    np.testing.assert_array_equal(cell.cell_norm_beta, np.zeros(UNITS))
    assert len(cell.trainable_weights) == 3 + 4 and len(cell.non_trainable_weights) == 6


@pytest.mark.parametrize(
    "make_cell",
    [
        # the LSTM in the slow run, which CI runs too (18 s of the default run)
        pytest.param(
            lambda: krc.LSTMCell(UNITS, batch_norm=True, batch_norm_steps=3),
            marks=pytest.mark.slow,
        ),
        # two recurrent matmuls, each normalized over its own columns
        lambda: krc.MGUCell(UNITS, batch_norm=True, batch_norm_steps=3),
    ],
    ids=["lstm", "mgu"],
)
def test_inference_paths_agree_with_masks_and_gradients(make_cell, rng, helpers):
    """Inference (moving statistics, set at random): the fused compiled loop
    (eager, its replaying gradient), the portable loop (a tf.function) and
    Keras' loop give the same outputs, states and gradients, masks of every
    pattern included; each row's step index counts its unmasked steps."""
    layers = {
        name: bn_layer(make_cell(), np.random.default_rng(3), helpers, implementation=name)
        for name in ("fused", "generic")
    }
    for variable in layers["fused"].cell.non_trainable_weights:
        low = 0.5 if "variance" in variable.name else -0.5
        variable.assign(rng.uniform(low, low + 1.0, size=variable.shape))
    layers["generic"].set_weights(layers["fused"].get_weights())
    x = rng.normal(size=(BATCH, STEPS, FEATURES)).astype("float32")
    generic = helpers.outputs_and_gradients(layers["generic"], x, mask=MASK)
    fused = helpers.outputs_and_gradients(layers["fused"], x, mask=MASK)
    with portable():
        traced = tf.function(lambda x: helpers.outputs_and_gradients(layers["fused"], x, mask=MASK))
        portable_result = traced(x)
    for name, result in (("fused", fused), ("portable", portable_result)):
        helpers.assert_all_close(result[0], generic[0], what=f"{name} outputs")
        helpers.assert_all_close(result[1], generic[1], what=f"{name} gradients")
    assert all(np.isfinite(g).all() for g in generic[1])
    assert np.abs(generic[1][-1]).max() > 0  # the last γ (or β) has a gradient
    np.testing.assert_array_equal(generic[0][-1][:, 0], np.minimum(MASK.sum(1), 2))


def test_training_takes_unmasked_rows_and_auto_trains_on_keras_loop(rng, helpers):
    """In training ``implementation="auto"`` runs Keras' loop (the generic
    path), with each step's statistics over the rows unmasked at that step:
    changing the padded values changes nothing. Gradients are finite."""
    layers = [
        bn_layer(krc.GRUCell(UNITS, batch_norm=True, batch_norm_steps=4), rng, helpers, **kw)
        for kw in ({}, {"implementation": "generic"})
    ]
    layers[1].set_weights(layers[0].get_weights())
    assert layers[0].path(training=True) == "generic" and layers[0].path() == "fused"
    x = rng.normal(size=(BATCH, STEPS, FEATURES)).astype("float32")
    padded = np.where(MASK[:, :, None], x, 100.0).astype("float32")
    results = [
        helpers.outputs_and_gradients(layer, inputs, mask=MASK, training=True)
        for layer, inputs in zip(layers, (x, padded))
    ]
    helpers.assert_all_close(results[0][0], results[1][0], what="outputs")
    helpers.assert_all_close(results[0][1][1:], results[1][1][1:], what="weight gradients")
    assert all(np.isfinite(g).all() for g in results[0][1])
    helpers.assert_all_close(
        layers[0].cell.non_trainable_weights, layers[1].cell.non_trainable_weights, what="stats"
    )
    with pytest.raises(ValueError, match=r"^Argument `implementation='fused'` cannot train"):
        krc.RNN(krc.GRUCell(UNITS, batch_norm=True), implementation="fused").path(training=True)


def test_fit_updates_moving_statistics_and_model_saves(rng, tmp_path):
    x = rng.normal(size=(BATCH, STEPS, FEATURES)).astype("float32")
    y = rng.normal(size=(BATCH, 1)).astype("float32")
    model = tf.keras.Sequential(
        [
            tf.keras.Input((STEPS, FEATURES)),
            krc.LSTM(UNITS, batch_norm=True, batch_norm_steps=3),
            tf.keras.layers.Dense(1),
        ]
    )
    model.compile("sgd", "mse")
    cell = model.layers[0].cell
    before = [w.numpy() for w in cell.non_trainable_weights]
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
    after = [w.numpy() for w in cell.non_trainable_weights]
    assert all(not np.allclose(a, b) for a, b in zip(after, before))
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    assert loaded.layers[0].cell.get_config() == cell.get_config()
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)
    rebuilt = krc.LSTMCell.from_config(cell.get_config())
    assert (rebuilt.batch_norm, rebuilt.batch_norm_steps) == (True, 3)
    assert rebuilt.state_size == [UNITS, UNITS, 1]


def test_cells_accept_it_and_library_kernels_refuse_it():
    for cell_class in (krc.GRUCell, krc.MGUCell, krc.SimpleRNNCell, krc.PeepholeLSTMCell):
        cell = cell_class(UNITS, batch_norm=True)
        plain = cell_class(UNITS)
        sizes = plain.state_size if isinstance(plain.state_size, list) else [plain.state_size]
        assert cell.state_size == [*sizes, 1], cell_class
    for cell in (krc.GRUCell(UNITS, batch_norm=True), krc.LSTMCell(UNITS, batch_norm=True)):
        assert "batch_norm=True" in cell.cudnn_ineligibility()
        assert "batch_norm=True" in cell.onnx_ineligibility()


@pytest.mark.parametrize(
    "build, argument",
    [
        (lambda: krc.LSTMCell(2, batch_norm=True, layer_norm=True), "batch_norm=True` and"),
        (lambda: krc.GRUCell(2, batch_norm=True, batch_norm_steps=0), "batch_norm_steps"),
        (lambda: krc.GRUCell(2, batch_norm=True, batch_norm_steps=2.5), "batch_norm_steps"),
        (lambda: krc.GRUCell(2, batch_norm_steps=True), "batch_norm_steps"),
        (lambda: krc.GRUCell(2, batch_norm="yes"), "batch_norm"),
        (lambda: krc.GRUCell(2, batch_norm=True, batch_norm_momentum=1.0), "batch_norm_momentum"),
        (lambda: krc.SCRNCell(2, batch_norm=True), "batch_norm=True"),
        (
            lambda: krc.GRUCell(2, batch_norm=True, batch_norm_steps=300, dtype="bfloat16"),
            "batch_norm_steps",
        ),
        (lambda: krc.Zoneout(krc.LSTMCell(2, batch_norm=True), 0.1), "cell"),
    ],
)
def test_bad_arguments_raise_one_line(build, argument):
    with pytest.raises(ValueError, match=f"^Arguments? `{argument}") as error:
        build()
    assert "\n" not in str(error.value)


def test_reestimate_measures_the_batches_read_as_one_at_each_step(rng, helpers):
    """Two batches of 5 steps, statistics steps T_max = 7: each average
    becomes the statistics at its step of the two batches' rows read as one
    batch (the NumPy reference with momentum 0 on all the rows, every step
    normalized with all the rows' statistics); steps 5 and 6, which no row
    reaches, keep theirs; the weights and the momentum are left as they
    were."""
    cell = krc.LSTMCell(UNITS, batch_norm=True, batch_norm_steps=7)
    layer = bn_layer(cell, rng, helpers, implementation="generic")
    model = keras.Sequential([keras.Input((STEPS, FEATURES)), layer])
    for variable in cell.non_trainable_weights:
        variable.assign(rng.uniform(0.5, 1.5, variable.shape))
    before = moving_statistics(cell)
    weights = [w.astype("float64") for w in layer.get_weights()[:7]]
    batches = rng.normal(size=(2, BATCH, STEPS, FEATURES))
    expected = moving_statistics(cell)
    lstm_reference(
        batches.reshape(-1, STEPS, FEATURES), weights, 7, expected, training=True, momentum=0.0
    )
    trainable = [w.numpy() for w in cell.trainable_weights]
    dataset = tf.data.Dataset.from_tensor_slices(
        (batches.astype("float32"), np.zeros((2, BATCH, 1), "float32"))
    )
    assert krc.reestimate_batch_norm(model, dataset, batches=5) == 2
    for side, (mean, variance) in moving_statistics(cell).items():
        reached = slice(0, STEPS)
        helpers.assert_all_close(
            [mean[reached], variance[reached]],
            [expected[side][0][reached], expected[side][1][reached]],
            tol=1e-4,
            what=f"{side} re-estimated",
        )
        np.testing.assert_array_equal(mean[STEPS:], before[side][0][STEPS:])
        np.testing.assert_array_equal(variance[STEPS:], before[side][1][STEPS:])
    for old, new in zip(trainable, cell.trainable_weights):
        np.testing.assert_array_equal(old, new.numpy())
    assert cell.batch_norm_momentum == 0.99


def test_reestimate_pads_shorter_batches_at_the_end(rng, helpers):
    """A batch of 3 steps and one of 5: the statistics are those of the
    3-step rows padded with zeros to 5 steps (as a padded batch is) and
    read with the 5-step rows (the NumPy reference on the padded rows)."""
    cell = krc.LSTMCell(UNITS, batch_norm=True, batch_norm_steps=7)
    layer = bn_layer(cell, rng, helpers, implementation="generic")
    model = keras.Sequential([keras.Input((None, FEATURES)), layer])
    short = rng.normal(size=(BATCH, 3, FEATURES)).astype("float32")
    long = rng.normal(size=(BATCH, STEPS, FEATURES)).astype("float32")
    padded = np.concatenate([short, np.zeros((BATCH, STEPS - 3, FEATURES), "float32")], axis=1)
    expected = moving_statistics(cell)
    weights = [w.astype("float64") for w in layer.get_weights()[:7]]
    rows = np.concatenate([padded, long]).astype("float64")
    lstm_reference(rows, weights, 7, expected, training=True, momentum=0.0)
    dataset = tf.data.Dataset.from_generator(
        lambda: iter([short, long]), output_signature=tf.TensorSpec((None, None, FEATURES))
    )
    assert krc.reestimate_batch_norm(model, dataset) == 2
    for side, (mean, variance) in moving_statistics(cell).items():
        helpers.assert_all_close(
            [mean[:STEPS], variance[:STEPS]],
            [expected[side][0][:STEPS], expected[side][1][:STEPS]],
            tol=1e-4,
            what=f"{side} re-estimated",
        )


def test_reestimate_refuses_a_model_without_batch_norm():
    model = keras.Sequential([keras.Input((STEPS, FEATURES)), krc.GRU(UNITS)])
    dataset = tf.data.Dataset.from_tensors(np.zeros((1, STEPS, FEATURES), "float32"))
    with pytest.raises(ValueError, match=r"^Argument `model` must hold a recurrent cell"):
        krc.reestimate_batch_norm(model, dataset)
    with pytest.raises(ValueError, match=r"^Argument `batches`"):
        krc.reestimate_batch_norm(model, dataset, batches=0)


def test_reestimate_refuses_a_stateful_model():
    """A stateful layer's batch size is fixed: the rows read as one batch
    cannot go through it; the error says to re-estimate a stateless copy."""
    layer = krc.RNN(krc.LSTMCell(UNITS, batch_norm=True), stateful=True)
    model = keras.Sequential([keras.Input((STEPS, FEATURES), batch_size=BATCH), layer])
    dataset = tf.data.Dataset.from_tensors(np.zeros((BATCH, STEPS, FEATURES), "float32"))
    with pytest.raises(ValueError, match=r"^Argument `model` must be stateless.*stateless copy$"):
        krc.reestimate_batch_norm(model, dataset)
