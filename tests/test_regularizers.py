"""The regularizers of recurrent cells on every path: Zoneout (wrapper),
recurrent DropConnect and layer normalization (cell options), and the
norm-stabilizer and temporal coherence (loss terms, each also a layer)."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_rnncells as krc
from keras_rnncells.layers.wrappers import Zoneout
from keras_rnncells.regularizers import (
    NormStabilizer,
    TemporalCoherence,
    norm_stabilizer,
    temporal_coherence,
)

SEED = 5


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def random_states(cell, batch: int, rng: np.random.Generator) -> list[np.ndarray]:
    sizes = keras.tree.flatten(cell.state_size)
    return [rng.normal(size=(batch, size)).astype("float32") for size in sizes]


def built_cell(cell, features: int, rng: np.random.Generator, helpers):
    cell.build((None, features))
    helpers.randomize_weights(cell, rng)
    return cell


def layer_pair(make_cell, sequences, rng, helpers, **layer_kwargs):
    """Fused and generic layers over ``make_cell()`` with the same random weights."""
    layers = [
        krc.RNN(make_cell(), implementation=implementation, **layer_kwargs)
        for implementation in ("fused", "generic")
    ]
    for layer in layers:
        layer.build(sequences.shape)
    helpers.randomize_weights(layers[0], rng)
    layers[1].set_weights(layers[0].get_weights())
    return layers


def kept_or_new(zoned, old, new) -> np.ndarray:
    """Asserts each unit of ``zoned`` equals ``old`` or ``new`` (which differ);
    returns where it kept ``old``."""
    zoned, old, new = (np.asarray(a) for a in (zoned, old, new))
    kept, updated = np.isclose(zoned, old, atol=1e-6), np.isclose(zoned, new, atol=1e-6)
    assert not np.any(np.isclose(old, new, atol=1e-6)), "old and new states coincide"
    assert np.all(kept | updated), "a zoned unit is neither the old nor the new value"
    return kept


# -- Zoneout ---------------------------------------------------------------------


def test_zoneout_inference_is_the_expectation(rng, helpers):
    """At inference every state is rate * old + (1 - rate) * new, with one rate
    per state (LSTM) or one for all (GRU); the output is the zoned h."""
    x = rng.normal(size=(3, 4)).astype("float32")
    for inner, rate in ((krc.LSTMCell(5), (0.2, 0.6)), (krc.GRUCell(5), 0.3)):
        cell = Zoneout(built_cell(inner, 4, rng, helpers), rate)
        states = random_states(inner, 3, rng)
        _, new_states = inner(x, states)
        output, zoned = cell(x, states)
        rates = rate if isinstance(rate, tuple) else (rate,)
        expected = [r * s + (1 - r) * np.asarray(n) for r, s, n in zip(rates, states, new_states)]
        helpers.assert_all_close(zoned, expected, what=type(inner).__name__)
        helpers.assert_all_close([output], expected[:1], what="output")


def test_zoneout_training_keeps_each_unit_with_its_rate(rng, helpers):
    """In training each unit of each state is its old or its new value, old
    with probability `rate` (per state), and the output is the zoned h."""
    inner = built_cell(krc.LSTMCell(64), 4, rng, helpers)
    cell = Zoneout(inner, rate=(0.1, 0.6), seed=SEED)
    x = rng.normal(size=(64, 4)).astype("float32")
    states = random_states(inner, 64, rng)
    _, new_states = inner(x, states)
    output, zoned = cell(x, states, training=True)
    for rate, z, old, new in zip((0.1, 0.6), zoned, states, new_states):
        assert abs(kept_or_new(z, old, new).mean() - rate) < 0.03  # 4096 draws, std <= 0.008
    np.testing.assert_array_equal(output, zoned[0])


@pytest.mark.parametrize("implementation", ["fused", "generic"])
def test_zoneout_training_draws_per_step(implementation, rng, helpers):
    """In training each step zones out anew on both paths: h_t is unit-wise
    h_{t-1} or the cell's step from h_{t-1}, kept with probability `rate`, the
    pattern changing between steps."""
    rate, units, batch, steps = 0.4, 32, 8, 5
    cell = Zoneout(krc.GRUCell(units), rate, seed=SEED)
    layer = krc.RNN(cell, return_sequences=True, implementation=implementation)
    x = rng.normal(size=(batch, steps, 3)).astype("float32")
    h0 = random_states(cell, batch, rng)[0]
    outputs = np.asarray(layer(x, initial_state=[h0], training=True))
    previous, patterns = h0, []
    for t in range(steps):
        new, _ = cell.cell(x[:, t], [previous])
        patterns.append(kept_or_new(outputs[:, t], previous, new))
        previous = outputs[:, t]
    assert abs(np.mean(patterns) - rate) < 0.05  # 1280 draws, std 0.014
    assert not np.array_equal(patterns[0], patterns[1])


def test_zoneout_fused_gradient_replays_the_noise(rng, helpers):
    """The fused path draws the noise of the whole sequence before its loop;
    its outputs and gradient equal autodiff of the steps fed that noise."""
    cell = Zoneout(krc.LSTMCell(3), (0.3, 0.6), seed=SEED)
    layer = krc.RNN(cell, return_sequences=True, implementation="fused")
    x = rng.normal(size=(2, 5, 4)).astype("float32")
    layer.build(x.shape)
    helpers.randomize_weights(layer, rng)
    seed_state = cell.seed_generator.state.numpy()
    outputs, grads = helpers.outputs_and_gradients(layer, x, training=True)

    cell.seed_generator.state.assign(seed_state)  # the same noise again
    with tf.GradientTape() as tape:
        projected = cell.step_inputs(tf.transpose(x, (1, 0, 2)), training=True)
        states, expected = cell.get_initial_state(2), []
        context = krc.StepContext(training=True)
        for t in range(x.shape[1]):
            h, states = cell.advance(tuple(p[t] for p in projected), states, context)
            expected.append(h)
        expected = [tf.stack(expected, axis=1)]
        loss = helpers.linear_loss(expected)
    expected_grads = tape.gradient(loss, layer.trainable_weights)
    helpers.assert_all_close(outputs, expected, what="outputs")
    helpers.assert_all_close(grads[1:], expected_grads, what="weight gradients")


def test_zoneout_fused_equals_generic_at_inference(sequences, mask, rng, helpers):
    def make_cell():
        return Zoneout(krc.LSTMCell(3), rate=(0.2, 0.5))

    fused, generic = layer_pair(make_cell, sequences, rng, helpers, return_state=True)
    actual = helpers.outputs_and_gradients(fused, sequences, mask=mask)
    expected = helpers.outputs_and_gradients(generic, sequences, mask=mask)
    helpers.assert_all_close(actual[0], expected[0], what="outputs")
    helpers.assert_all_close(actual[1], expected[1], what="gradients")
    assert len(actual[1]) == 4 and all(np.abs(g).max() > 0 for g in actual[1])


# -- recurrent DropConnect -------------------------------------------------------


def test_dropconnect_mask_rate_scale_and_cache():
    """One mask per sequence, shaped as recurrent_kernel: a fraction `rate` of
    zeros, the rest 1 / (1 - rate); cached until reset."""
    cell = krc.LSTMCell(32, recurrent_dropconnect=0.4, seed=SEED)
    cell.build((None, 3))
    state = np.zeros((2, 32), "float32")
    masks = cell.get_recurrent_dropout_mask(state)
    assert masks.state is None and masks.kernel.shape == cell.recurrent_kernel.shape
    kernel = np.asarray(masks.kernel)
    assert abs(np.mean(kernel == 0) - 0.4) < 0.04  # 4096 entries, std 0.008
    np.testing.assert_allclose(kernel[kernel != 0], 1 / 0.6, rtol=1e-6)
    assert cell.get_recurrent_dropout_mask(state) is masks
    cell.reset_recurrent_dropout_mask()
    assert not np.array_equal(cell.get_recurrent_dropout_mask(state).kernel, kernel)


@pytest.mark.parametrize(
    "make_cell",
    [
        lambda: krc.LSTMCell(3, recurrent_dropconnect=0.5, seed=SEED),
        lambda: krc.GRUCell(
            3,
            reset_after=False,
            recurrent_dropconnect=0.5,
            recurrent_dropout=0.3,
            dropout=0.3,
            seed=SEED,
        ),
    ],
    ids=["lstm", "gru_with_dropouts"],
)
def test_dropconnect_fused_equals_generic(make_cell, sequences, mask, rng, helpers):
    """With the same seed the fused path equals the generic one in training
    (outputs, states, gradients); without other dropout the training output
    equals the plain cell with recurrent_kernel * mask (one mask for the
    sequence), and inference equals the plain cell."""
    kwargs = {"return_sequences": True, "return_state": True}
    fused, generic = layer_pair(make_cell, sequences, rng, helpers, **kwargs)
    cell = fused.cell
    assert not cell.cudnn_compatible()
    seed_state = cell.seed_generator.state.numpy()
    actual = helpers.outputs_and_gradients(fused, sequences, mask=mask, training=True)
    expected = helpers.outputs_and_gradients(generic, sequences, mask=mask, training=True)
    helpers.assert_all_close(actual[0], expected[0], what="outputs")
    helpers.assert_all_close(actual[1], expected[1], what="gradients")

    no_dropout = {"dropout": 0.0, "recurrent_dropout": 0.0, "recurrent_dropconnect": 0.0}
    plain_cell = type(cell).from_config({**cell.get_config(), **no_dropout})
    plain = krc.RNN(plain_cell, implementation="generic", **kwargs)
    plain.build(sequences.shape)
    plain.set_weights(fused.get_weights())
    for layer in (fused, generic):
        inference = keras.tree.flatten(layer(sequences, mask=mask))
        helpers.assert_all_close(inference, keras.tree.flatten(plain(sequences, mask=mask)))
        assert not np.allclose(inference[0], actual[0][0]), "DropConnect had no effect"
    if cell.recurrent_dropout == 0 and cell.dropout == 0:
        cell.seed_generator.state.assign(seed_state)
        kernel_mask = cell.get_recurrent_dropout_mask(sequences[:, 0]).kernel
        cell.reset_recurrent_dropout_mask()
        plain.cell.recurrent_kernel.assign(cell.recurrent_kernel * kernel_mask)
        helpers.assert_all_close(keras.tree.flatten(plain(sequences, mask=mask)), actual[0])


# -- layer normalization ---------------------------------------------------------


def layer_norm(a: np.ndarray, gain: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean, variance = a.mean(-1, keepdims=True), a.var(-1, keepdims=True)
    return (a - mean) / np.sqrt(variance + 1e-3) * gain + bias


def test_layer_norm_lstm_step_matches_numpy(rng, helpers):
    """One LN-LSTM step (Ba et al. 2016): LN(W x) + LN(U h) + b over the four
    blocks, weights in the documented order; off by default (3 weights)."""
    assert len(built_cell(krc.LSTMCell(5), 4, rng, helpers).weights) == 3
    cell = built_cell(krc.LSTMCell(5, layer_norm=True), 4, rng, helpers)
    kernel, recurrent_kernel, bias, g_x, b_x, g_h, b_h = cell.get_weights()
    x = rng.normal(size=(3, 4)).astype("float32")
    h, c = random_states(cell, 3, rng)
    z = layer_norm(x @ kernel, g_x, b_x) + layer_norm(h @ recurrent_kernel, g_h, b_h) + bias
    i, f, c_tilde, o = np.split(z, 4, axis=-1)
    c_new = sigmoid(f) * c + sigmoid(i) * np.tanh(c_tilde)
    h_new = sigmoid(o) * np.tanh(c_new)
    output, states = cell(x, [h, c])
    helpers.assert_all_close([output, *states], [h_new, h_new, c_new])
    assert not cell.cudnn_compatible() and krc.LSTMCell(5).cudnn_compatible()


@pytest.mark.parametrize(
    "make_cell",
    [
        lambda: krc.GRUCell(3, layer_norm=True),
        lambda: krc.LSTMCell(3, layer_norm=True),
        lambda: krc.MGUCell(3, layer_norm=True),  # two recurrent matmuls on column ranges
    ],
    ids=["gru", "lstm", "mgu"],
)
def test_layer_norm_fused_equals_generic(make_cell, sequences, mask, rng, helpers):
    fused, generic = layer_pair(make_cell, sequences, rng, helpers, return_sequences=True)
    actual = helpers.outputs_and_gradients(fused, sequences, mask=mask)
    expected = helpers.outputs_and_gradients(generic, sequences, mask=mask)
    helpers.assert_all_close(actual[0], expected[0], what="outputs")
    helpers.assert_all_close(actual[1], expected[1], what="gradients")
    assert len(actual[1]) == 1 + 7 and all(np.abs(g).max() > 0 for g in actual[1])


# -- norm-stabilizer -------------------------------------------------------------


def test_norm_stabilizer_value_and_gradient(rng):
    """beta * mean over consecutive pairs (and the batch) of the squared change
    of the L2 norm; with a mask, over the pairs of two unmasked steps."""
    h = rng.normal(size=(3, 6, 4)).astype("float32")
    h[1, 2] = 0.0  # a zero vector: the norm's gradient stays finite
    mask = np.ones((3, 6), bool)
    mask[0, 4:] = False
    mask[2, 1] = False
    norms = np.linalg.norm(h, axis=-1)
    changes = (norms[:, 1:] - norms[:, :-1]) ** 2
    pairs = mask[:, 1:] & mask[:, :-1]
    np.testing.assert_allclose(norm_stabilizer(h, 2.5), 2.5 * changes.mean(), rtol=1e-5)
    np.testing.assert_allclose(
        norm_stabilizer(h, 2.5, mask), 2.5 * changes[pairs].mean(), rtol=1e-5
    )
    layer = NormStabilizer(2.5)
    np.testing.assert_array_equal(layer(h, mask=mask), h)
    np.testing.assert_allclose(layer.losses, [2.5 * changes[pairs].mean()], rtol=1e-5)
    variable = tf.Variable(h)
    with tf.GradientTape() as tape:
        penalty = norm_stabilizer(variable, 2.5, mask)
    grad = tape.gradient(penalty, variable).numpy()
    assert np.all(np.isfinite(grad)) and np.abs(grad).max() > 0


def test_norm_stabilizer_layer_adds_one_loss_that_fit_minimizes(rng):
    x = rng.normal(size=(4, 5, 3)).astype("float32")
    keras.utils.set_random_seed(SEED)
    model = keras.Sequential(
        [
            keras.Input((5, 3)),
            krc.RNN(krc.GRUCell(4), return_sequences=True, implementation="fused"),
            NormStabilizer(beta=3.0),
        ]
    )
    outputs = model(x)
    np.testing.assert_array_equal(model.layers[-1](outputs), outputs)
    assert len(model.losses) == 1
    np.testing.assert_allclose(model.losses[0], norm_stabilizer(outputs, 3.0), rtol=1e-6)
    before = model.get_weights()
    model.compile(keras.optimizers.SGD(0.1))
    history = model.fit(x, epochs=2, batch_size=4, verbose=0).history["loss"]
    np.testing.assert_allclose(history[0], norm_stabilizer(outputs, 3.0), rtol=1e-5)
    assert history[1] < history[0]
    assert any(not np.allclose(a, b) for a, b in zip(before, model.get_weights()))


# -- temporal coherence ----------------------------------------------------------


def coherence_pairs(h: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """(batch, time - 1): the pairs of consecutive steps that count."""
    if mask is None:
        return np.ones((h.shape[0], h.shape[1] - 1), bool)
    return mask[:, 1:] & mask[:, :-1]


def numpy_coherence(h: np.ndarray, beta: float, mask: np.ndarray | None = None) -> float:
    """beta * the mean squared distance between consecutive states over the
    pairs that count, in float64; 0 without any."""
    h = h.astype("float64")
    squared = ((h[:, 1:] - h[:, :-1]) ** 2).sum(axis=-1)
    pairs = coherence_pairs(h, mask)
    return beta * squared[pairs].mean() if pairs.any() else 0.0


def numpy_coherence_gradient(h: np.ndarray, beta: float, mask: np.ndarray | None) -> np.ndarray:
    """d/dh of numpy_coherence: each counted pair (t - 1, t) adds
    2 beta / P (h_t - h_{t-1}) to step t and its negative to step t - 1."""
    h = h.astype("float64")
    pairs = coherence_pairs(h, mask)
    grad = np.zeros_like(h)
    scale = 2.0 * beta / max(pairs.sum(), 1)
    for b, t in zip(*np.nonzero(pairs)):
        step = scale * (h[b, t + 1] - h[b, t])
        grad[b, t + 1] += step
        grad[b, t] -= step
    return grad


def coherence_mask() -> np.ndarray:
    """Rows: full, right-padded, with holes, with one unmasked step (no pair)."""
    return np.array(
        [
            [1, 1, 1, 1, 1, 1],
            [1, 1, 1, 1, 0, 0],
            [1, 0, 1, 1, 0, 1],
            [0, 0, 1, 0, 0, 0],
        ],
        bool,
    )


def test_temporal_coherence_value_matches_numpy(rng):
    """beta * mean over consecutive pairs (and the batch) of ||h_t - h_{t-1}||^2;
    with a mask, over the pairs of two unmasked steps; 0 with none; at least
    float32."""
    h = rng.normal(size=(4, 6, 5)).astype("float32")
    mask = coherence_mask()
    np.testing.assert_allclose(temporal_coherence(h, 0.7), numpy_coherence(h, 0.7), rtol=1e-5)
    np.testing.assert_allclose(
        temporal_coherence(h, 0.7, mask), numpy_coherence(h, 0.7, mask), rtol=1e-5
    )
    assert coherence_pairs(h, mask).sum() == 5 + 3 + 1  # the holes leave pairs out
    np.testing.assert_array_equal(temporal_coherence(h, 0.7, np.zeros((4, 6), bool)), 0.0)
    np.testing.assert_array_equal(temporal_coherence(h, 0.7, mask[3:].repeat(4, 0)), 0.0)
    np.testing.assert_array_equal(temporal_coherence(h[:, :1], 0.7), 0.0)  # one step: no pair
    assert temporal_coherence(h.astype("float16"), 1.0).dtype == "float32"
    h64 = h.astype("float64")
    assert temporal_coherence(h64, 1.0).dtype == "float64"
    np.testing.assert_allclose(temporal_coherence(h64, 1.0, mask), numpy_coherence(h, 1.0, mask))


@pytest.mark.parametrize("masked", ["none", "holes", "all"])
def test_temporal_coherence_gradient_matches_numpy(masked, rng):
    h = rng.normal(size=(4, 6, 5)).astype("float64")
    mask = {"none": None, "holes": coherence_mask(), "all": np.zeros((4, 6), bool)}[masked]
    variable = tf.Variable(h)
    with tf.GradientTape() as tape:
        penalty = temporal_coherence(variable, 1.5, mask)
    grad = tape.gradient(penalty, variable).numpy()
    assert np.all(np.isfinite(grad))
    np.testing.assert_allclose(grad, numpy_coherence_gradient(h, 1.5, mask), atol=1e-12)
    assert (np.abs(grad).max() > 0) == (masked != "all")


def test_temporal_coherence_layer_adds_one_loss_that_fit_minimizes(rng):
    """Under a GRU (return_sequences=True) behind a Masking layer, the layer
    returns its input, adds one loss (the function's value with the mask) and
    model.fit lowers it."""
    x = rng.normal(size=(4, 6, 3)).astype("float32")
    x[1, 4:] = 0.0  # padding: masked by keras.layers.Masking
    x[3, 2:] = 0.0
    mask = np.any(x != 0, axis=-1)
    keras.utils.set_random_seed(SEED)
    model = keras.Sequential(
        [
            keras.Input((6, 3)),
            keras.layers.Masking(0.0),
            krc.GRU(5, return_sequences=True),
            TemporalCoherence(beta=2.0),
        ]
    )
    outputs = model(x)
    np.testing.assert_array_equal(model.layers[-1](outputs), outputs)
    model(x)
    assert len(model.losses) == 1
    expected = temporal_coherence(outputs, 2.0, mask)
    np.testing.assert_allclose(model.losses[0], expected, rtol=1e-6)
    np.testing.assert_allclose(expected, numpy_coherence(np.asarray(outputs), 2.0, mask), rtol=1e-5)
    before = model.get_weights()
    model.compile(keras.optimizers.SGD(0.5))
    history = model.fit(x, epochs=2, batch_size=4, verbose=0).history["loss"]
    assert np.all(np.isfinite(history))
    np.testing.assert_allclose(history[0], expected, rtol=1e-5)
    assert history[1] < history[0]
    assert any(not np.allclose(a, b) for a, b in zip(before, model.get_weights()))


def test_temporal_coherence_keras_file_round_trip_keeps_beta(tmp_path, rng):
    layer = TemporalCoherence(0.25)
    assert TemporalCoherence.from_config(layer.get_config()).get_config() == layer.get_config()
    model = keras.Sequential([keras.Input((4, 2)), krc.GRU(3, return_sequences=True), layer])
    path = str(tmp_path / "coherence.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded.layers[-1]) is TemporalCoherence and loaded.layers[-1].beta == 0.25
    x = rng.normal(size=(2, 4, 2)).astype("float32")
    np.testing.assert_allclose(loaded(x), model(x), rtol=1e-6)
    np.testing.assert_allclose(loaded.losses[0], model.losses[0], rtol=1e-6)


@pytest.mark.parametrize("beta", [-0.5, "0.5", True, None, float("nan")])
def test_temporal_coherence_bad_beta_raises(beta):
    for build in (
        lambda: TemporalCoherence(beta),
        lambda: temporal_coherence(np.ones((2, 3, 1)), beta),
    ):
        with pytest.raises(ValueError, match="Argument `beta` must be a float >= 0"):
            build()


def test_temporal_coherence_bad_rank_raises():
    with pytest.raises(ValueError, match="`hidden_sequence` must be of rank 3"):
        TemporalCoherence(1.0)(np.ones((2, 3), "float32"))


# -- serialization and arguments -------------------------------------------------


def test_config_and_keras_file_round_trips(tmp_path, rng, helpers):
    """Zoneout (nested cell, per-state rates), DropConnect, layer norm and the
    NormStabilizer survive get_config/from_config and a `.keras` file."""
    cell = Zoneout(
        krc.LSTMCell(3, layer_norm=True, recurrent_dropconnect=0.3, seed=1), (0.1, 0.3), seed=2
    )
    for obj in (cell, cell.cell, NormStabilizer(1.5)):
        clone = type(obj).from_config(obj.get_config())
        assert clone.get_config() == obj.get_config()
    layer = krc.RNN(cell, return_sequences=True, implementation="generic")
    model = keras.Sequential([keras.Input((4, 2)), layer, NormStabilizer(1.5)])
    helpers.randomize_weights(model, rng)
    path = str(tmp_path / "regularized.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    loaded_cell = loaded.layers[0].cell
    assert type(loaded_cell) is Zoneout and loaded_cell.rates == (0.1, 0.3)
    assert loaded_cell.cell.get_config() == cell.cell.get_config()
    x = rng.normal(size=(2, 4, 2)).astype("float32")
    np.testing.assert_allclose(loaded(x), model(x), rtol=1e-6)
    np.testing.assert_allclose(loaded.losses[0], model.losses[0], rtol=1e-6)


@pytest.mark.parametrize(
    "build, argument",
    [
        (lambda: Zoneout(krc.GRUCell(2), 1.0), "rate"),
        (lambda: Zoneout(krc.GRUCell(2), -0.1), "rate"),
        (lambda: Zoneout(krc.GRUCell(2), "0.1"), "rate"),
        (lambda: Zoneout(krc.LSTMCell(2), (0.1,)), "rate"),
        (lambda: Zoneout(krc.LSTMCell(2), (0.1, 1.5)), "rate"),
        (lambda: Zoneout(keras.layers.GRUCell(2), 0.1), "cell"),
        (lambda: krc.GRUCell(2, recurrent_dropconnect=1.0), "recurrent_dropconnect"),
        (lambda: krc.LSTMCell(2, recurrent_dropconnect=-0.5), "recurrent_dropconnect"),
        (lambda: krc.SCRNCell(2, layer_norm=True), "layer_norm"),
        (lambda: NormStabilizer(-1.0), "beta"),
        (lambda: norm_stabilizer(np.ones((2, 3)), 1.0), "hidden_sequence"),
    ],
)
def test_bad_arguments_raise(build, argument):
    with pytest.raises(ValueError, match=f"`{argument}"):
        build()
