"""The layers inside real Keras workflows: fit with masks and dropout, mixed
precision, stateful training, Bidirectional, plain keras.layers.RNN, and
weight checkpoints. Tiny shapes: these check that things work together."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import keras_rnncells as kr

BATCH, STEPS, FEATURES, UNITS = 2, 5, 3, 4
VOCAB = 6


def random_sequences(batch: int = BATCH, seed: int = 0, features: int = FEATURES) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(batch, STEPS, features)).astype("float32")


def numpy(tensors) -> list[np.ndarray]:
    return [keras.ops.convert_to_numpy(t) for t in keras.tree.flatten(tensors)]


def fit_losses(model: keras.Model, x: np.ndarray, y: np.ndarray, **kwargs) -> list[float]:
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
    return model.fit(x, y, verbose=0, **kwargs).history["loss"]


@pytest.fixture
def mixed_float16():
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def test_fit_with_embedding_mask_on_fused_path() -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, STEPS + 1, size=8)
    tokens = rng.integers(1, VOCAB, size=(8, STEPS)) * (np.arange(STEPS) < lengths[:, None])
    targets = (tokens == 1).sum(axis=1, keepdims=True).astype("float32")
    layer = kr.GRU(UNITS, implementation="fused")
    model = keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(VOCAB, FEATURES, mask_zero=True),
            layer,
            keras.layers.Dense(1),
        ]
    )
    losses = fit_losses(model, tokens, targets, epochs=8, batch_size=4)
    assert layer.path() == "fused"
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
    # The mask reaches the fused loop: more padding does not change a thing.
    padded = np.pad(tokens, ((0, 0), (0, 3)))
    np.testing.assert_allclose(
        numpy(model(padded))[0], numpy(model(tokens))[0], rtol=1e-6, atol=1e-6
    )


def test_fit_with_dropout_and_recurrent_dropout() -> None:
    layer = kr.LSTM(UNITS, dropout=0.3, recurrent_dropout=0.3, implementation="fused")
    model = keras.Sequential([keras.Input((STEPS, FEATURES)), layer, keras.layers.Dense(1)])
    x = random_sequences(batch=8)
    y = x.sum(axis=(1, 2))[:, None]
    losses = fit_losses(model, x, y, epochs=3, batch_size=4)
    assert np.all(np.isfinite(losses))
    inference = numpy(layer(x))[0]
    np.testing.assert_array_equal(numpy(layer(x))[0], inference)
    trained_a, trained_b = numpy(layer(x, training=True))[0], numpy(layer(x, training=True))[0]
    assert not np.allclose(trained_a, inference)
    assert not np.allclose(trained_a, trained_b)


def test_mixed_float16_fit(mixed_float16) -> None:
    layer = kr.GRU(UNITS)
    model = keras.Sequential(
        [keras.Input((STEPS, FEATURES)), layer, keras.layers.Dense(1, dtype="float32")]
    )
    x = random_sequences(batch=4)
    losses = fit_losses(model, x, x.sum(axis=(1, 2))[:, None], epochs=2, batch_size=2)
    assert np.all(np.isfinite(losses))
    assert layer.compute_dtype == "float16" and layer.cell.kernel.dtype == "float32"
    assert keras.backend.standardize_dtype(layer(x).dtype) == "float16"


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_stateful_fit_with_fixed_batch_size(policy: str) -> None:
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        layer = kr.GRU(UNITS, stateful=True)
        model = keras.Sequential(
            [
                keras.Input(batch_shape=(BATCH, STEPS, FEATURES)),
                layer,
                keras.layers.Dense(1, dtype="float32"),
            ]
        )
    finally:
        keras.mixed_precision.set_global_policy(previous)
    x = random_sequences(batch=2 * BATCH)
    losses = fit_losses(model, x, x[:, -1, :1], epochs=2, batch_size=BATCH, shuffle=False)
    assert np.all(np.isfinite(losses))
    assert any(np.any(s != 0) for s in numpy(layer.states))

    layer.reset_state()
    assert not any(np.any(s != 0) for s in numpy(layer.states))
    first, second = numpy(model(x[:BATCH]))[0], numpy(model(x[:BATCH]))[0]
    assert not np.allclose(first, second)  # the state carried over
    layer.reset_state()
    np.testing.assert_array_equal(numpy(model(x[:BATCH]))[0], first)


def test_mixed_float16_stateful_layer_close_to_float32(mixed_float16) -> None:
    half = kr.GRU(UNITS, stateful=True, return_sequences=True)
    full = kr.GRU(UNITS, stateful=True, return_sequences=True, dtype="float32")
    x1, x2 = random_sequences(seed=1), random_sequences(seed=2)
    half(x1)
    full(x1)
    half.set_weights(full.get_weights())
    half.reset_state()
    full.reset_state()
    for x in (x1, x2, x1):  # the state is carried across the three calls
        got, want = half(x), full(x)
        assert keras.backend.standardize_dtype(got.dtype) == "float16"
        np.testing.assert_allclose(numpy(got)[0], numpy(want)[0], rtol=1e-2, atol=1e-2)
    for got, want in zip(numpy(half.states), numpy(full.states), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


def test_bidirectional_saves_and_loads(tmp_path) -> None:
    model = keras.Sequential(
        [
            keras.Input((STEPS, FEATURES)),
            keras.layers.Bidirectional(kr.GRU(UNITS, return_sequences=True)),
        ]
    )
    x = random_sequences()
    expected = numpy(model(x))[0]
    path = tmp_path / "bidirectional.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    wrapper = loaded.layers[-1]
    assert isinstance(wrapper.forward_layer, kr.GRU)
    assert isinstance(wrapper.backward_layer, kr.GRU) and wrapper.backward_layer.go_backwards
    np.testing.assert_array_equal(numpy(loaded(x))[0], expected)


@pytest.mark.parametrize("name", kr.list_cells())
def test_cell_inside_keras_rnn_matches_ours(name: str) -> None:
    cell_class = kr.get_cell(name)
    features = UNITS if getattr(cell_class, "raw_input", None) else FEATURES  # MUT1, MUT2
    x = random_sequences(features=features)
    mask = np.arange(STEPS) < np.array([[STEPS], [2]])
    ours = kr.RNN(cell_class(UNITS), return_sequences=True, return_state=True)
    plain = keras.layers.RNN(cell_class(UNITS), return_sequences=True, return_state=True)
    expected = numpy(ours(x, mask=mask))
    plain(x)
    plain.set_weights(ours.get_weights())
    got = numpy(plain(x, mask=mask))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def stacked_model() -> keras.Model:
    return keras.Sequential(
        [
            keras.Input((STEPS, FEATURES)),
            kr.GRU(UNITS, return_sequences=True),
            kr.LSTM(UNITS, return_sequences=True),
            kr.MGU(UNITS),
        ]
    )


def test_weights_checkpoint_round_trip(tmp_path) -> None:
    model, fresh = stacked_model(), stacked_model()
    x = random_sequences()
    expected = numpy(model(x))[0]
    assert not np.allclose(numpy(fresh(x))[0], expected)
    path = tmp_path / "model.weights.h5"
    model.save_weights(path)
    fresh.load_weights(path)
    for got, want in zip(fresh.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(numpy(fresh(x))[0], expected)
