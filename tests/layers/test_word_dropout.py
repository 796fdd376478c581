"""WordDropout: whole tokens replaced in training (by the [UNK] id, a zero
vector or the sequence's mean vector), the identity at inference, with the same
drops for the same seed; in model.fit, a tf.function, a `.keras` file and an
exported inference graph."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_rnncells as krc
from keras_rnncells.layers.word_dropout import WordDropout

UNK, VOCAB, SEED = 1, 20, 11


def token_ids(rng: np.random.Generator, batch: int, steps: int) -> np.ndarray:
    """Ids in [2, VOCAB) (neither padding nor [UNK]), each row right-padded
    with 0 to a random length in [1, steps]."""
    ids = rng.integers(2, VOCAB, size=(batch, steps)).astype("int32")
    lengths = rng.integers(1, steps + 1, size=(batch, 1))
    return np.where(np.arange(steps) < lengths, ids, 0).astype("int32")


def vectors(rng: np.random.Generator, batch: int, steps: int, features: int) -> np.ndarray:
    """Float vectors with no zero feature, so that a zeroed one shows."""
    x = rng.uniform(0.5, 1.5, size=(batch, steps, features))
    return (x * rng.choice([-1.0, 1.0], size=x.shape)).astype("float32")


def holes_mask(rng: np.random.Generator, batch: int, steps: int) -> np.ndarray:
    """A random boolean mask with holes, its last row fully masked."""
    mask = rng.random((batch, steps)) < 0.7
    mask[-1] = False
    return mask


def replaced_steps(outputs: np.ndarray, inputs: np.ndarray) -> np.ndarray:
    """(batch, time): where any feature of a token vector changed."""
    return np.any(np.asarray(outputs) != inputs, axis=-1)


def numpy_means(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The mean vector of each sequence over its unmasked steps, (batch, 1, features)."""
    weights = mask[..., None].astype("float64")
    total = (x.astype("float64") * weights).sum(axis=1, keepdims=True)
    return total / np.maximum(weights.sum(axis=1, keepdims=True), 1.0)


@pytest.mark.parametrize(
    "mode, make_inputs",
    [
        ("unknown", lambda rng: token_ids(rng, 6, 7)),
        ("zero", lambda rng: vectors(rng, 6, 7, 3)),
        ("mean", lambda rng: vectors(rng, 6, 7, 3)),
    ],
)
def test_identity_at_inference(mode, make_inputs, rng):
    x = make_inputs(rng)
    layer = WordDropout(0.5, mode=mode, unknown_id=UNK if mode == "unknown" else None, seed=SEED)
    for outputs in (layer(x), layer(x, training=False)):
        assert outputs.dtype == x.dtype
        np.testing.assert_array_equal(outputs, x)
    assert not np.array_equal(layer(x, training=True), x)  # training does drop


def test_unknown_mode_drops_ids_at_rate_and_never_padding(rng):
    """A fraction `rate` of the non-padding ids become [UNK]; padding stays 0;
    the others are unchanged. Over ~20,000 non-padding draws the fraction's
    standard deviation is sqrt(0.3 * 0.7 / 20000) < 0.0033: the tolerance 0.02
    is 6 of them (a failure chance below 1e-8 for any seed; the seed is fixed)."""
    ids = token_ids(rng, 800, 50)
    layer = WordDropout(0.3, mode="unknown", unknown_id=UNK, seed=SEED)
    outputs = np.asarray(layer(ids, training=True))
    padding = ids == 0
    assert (~padding).sum() > 19_000
    np.testing.assert_array_equal(outputs[padding], 0)
    dropped = outputs != ids
    np.testing.assert_array_equal(outputs[dropped], UNK)
    assert abs(dropped[~padding].mean() - 0.3) < 0.02


def test_unknown_mode_keeps_masked_steps_and_passes_the_mask(rng):
    ids = token_ids(rng, 40, 9)
    mask = holes_mask(rng, 40, 9)
    layer = WordDropout(0.5, mode="unknown", unknown_id=UNK, seed=SEED)
    outputs = np.asarray(layer(ids, training=True, mask=mask))
    np.testing.assert_array_equal(outputs[~mask], ids[~mask])
    assert np.any(outputs[mask] == UNK)
    np.testing.assert_array_equal(layer.compute_mask(ids, mask), mask)


def dropped_in_training(mode, rate, x, with_mask, rng):
    """``WordDropout(rate, mode)`` over vectors ``x`` in training, with a mask
    with holes or none: ``(outputs, dropped steps, present steps)``."""
    mask = holes_mask(rng, *x.shape[:2]) if with_mask else None
    present = np.ones(x.shape[:2], bool) if mask is None else mask
    outputs = np.asarray(WordDropout(rate, mode=mode, seed=SEED)(x, training=True, mask=mask))
    return outputs, replaced_steps(outputs, x), present


@pytest.mark.parametrize("with_mask", [False, True], ids=["no_mask", "mask"])
def test_zero_mode_drops_whole_vectors_at_rate(with_mask, rng):
    """Each token's vector is whole or all zeros (never single features), a
    fraction `rate` of the unmasked ones zeroed; masked steps are kept.
    ~14,000 (mask) to 20,000 draws: std < 0.0042, tolerance 0.025 (6 std)."""
    x = vectors(rng, 400, 50, 4)
    outputs, dropped, present = dropped_in_training("zero", 0.4, x, with_mask, rng)
    np.testing.assert_array_equal(outputs[dropped], 0.0)
    np.testing.assert_array_equal(outputs[~dropped], x[~dropped])
    assert not np.any(dropped[~present])
    assert abs(dropped[present].mean() - 0.4) < 0.025


@pytest.mark.parametrize("with_mask", [False, True], ids=["no_mask", "mask"])
def test_mean_mode_replaces_whole_vectors_by_the_sequence_mean(with_mask, rng):
    """A dropped token's vector is the mean of its sequence's unmasked vectors
    (before any drop), checked against numpy; the others are unchanged, masked
    steps (and the fully masked last row) are kept."""
    x = vectors(rng, 12, 9, 5)
    outputs, dropped, present = dropped_in_training("mean", 0.5, x, with_mask, rng)
    assert dropped.sum() > 10 and not np.any(dropped[~present])
    means = np.broadcast_to(numpy_means(x, present), x.shape)
    np.testing.assert_allclose(outputs[dropped], means[dropped], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(outputs[~dropped], x[~dropped])
    # Whole vectors: no feature of a replaced token kept its input value.
    assert not np.any((outputs == x)[dropped])


def test_same_seed_same_drops(rng):
    """Two layers with one seed drop the same tokens; successive calls of one
    layer (and another seed) drop others."""
    ids = token_ids(rng, 16, 12)
    first, second = (WordDropout(0.4, mode="unknown", unknown_id=UNK, seed=7) for _ in range(2))
    a, b = first(ids, training=True), second(ids, training=True)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first(ids, training=True), a)
    other = WordDropout(0.4, mode="unknown", unknown_id=UNK, seed=8)
    assert not np.array_equal(other(ids, training=True), a)


def test_rate_zero_never_drops(rng):
    x = vectors(rng, 4, 6, 3)
    np.testing.assert_array_equal(WordDropout(0.0, mode="mean")(x, training=True), x)


def test_in_a_tf_function_with_unknown_shapes(rng):
    """Traced once for any (batch, time): drops in training, fresh each call,
    padding kept."""
    layer = WordDropout(0.5, mode="unknown", unknown_id=UNK, seed=SEED)
    spec = tf.TensorSpec((None, None), tf.int32)
    train = tf.function(lambda ids: layer(ids, training=True), input_signature=[spec])
    infer = tf.function(lambda ids: layer(ids, training=False), input_signature=[spec])
    for shape in ((3, 4), (16, 10)):
        ids = token_ids(rng, *shape)
        first, second = np.asarray(train(ids)), np.asarray(train(ids))
        for outputs in (first, second):
            np.testing.assert_array_equal(outputs[ids == 0], 0)
            assert set(np.unique(outputs[outputs != ids])) <= {UNK}
        np.testing.assert_array_equal(infer(ids), ids)
    assert np.any(first != ids) and not np.array_equal(first, second)
    assert train.experimental_get_tracing_count() == 1


BAD_ARGUMENTS = [
    ({"rate": 1.0}, "rate"),
    ({"rate": -0.1}, "rate"),
    ({"rate": "0.1"}, "rate"),
    ({"rate": True}, "rate"),
    ({"rate": 0.1, "mode": "drop"}, "mode"),
    ({"rate": 0.1, "mode": None}, "mode"),
    ({"rate": 0.1, "mode": "unknown"}, "unknown_id"),
    ({"rate": 0.1, "mode": "unknown", "unknown_id": 0}, "unknown_id"),
    ({"rate": 0.1, "mode": "unknown", "unknown_id": 1.0}, "unknown_id"),
    ({"rate": 0.1, "mode": "zero", "unknown_id": 1}, "unknown_id"),
    ({"rate": 0.1, "seed": "a"}, "seed"),
    ({"rate": 0.1, "seed": 1.5}, "seed"),
]


@pytest.mark.parametrize("kwargs, argument", BAD_ARGUMENTS)
def test_bad_arguments_raise(kwargs, argument):
    with pytest.raises(ValueError, match=f"Argument `{argument}`"):
        WordDropout(**kwargs)


@pytest.mark.parametrize(
    "kwargs, inputs, match",
    [
        ({"mode": "unknown", "unknown_id": UNK}, np.ones((2, 3), "float32"), "`mode`.*float32"),
        ({"mode": "zero"}, np.ones((2, 3), "int32"), "`mode`.*int32"),
        ({"mode": "mean"}, np.ones((2, 3, 4), "int64"), "`mode`.*int64"),
        ({"mode": "zero"}, np.ones((2, 3), "float32"), "`inputs`.*rank 3"),
        ({"mode": "unknown", "unknown_id": UNK}, np.ones((2, 3, 1), "int32"), "`inputs`.*rank 2"),
    ],
)
def test_inputs_that_the_mode_does_not_read_raise(kwargs, inputs, match):
    layer = WordDropout(0.1, **kwargs)
    for training in (False, True):
        with pytest.raises(ValueError, match=match):
            layer(inputs, training=training)
    with pytest.raises(ValueError, match=match):  # at model construction
        layer(keras.Input(inputs.shape[1:], dtype=inputs.dtype.name))


def text_model(mean_seed: int = SEED) -> keras.Model:
    """ids -> WordDropout([UNK]) -> Embedding(mask_zero) -> WordDropout(mean) -> GRU -> Dense."""
    ids = keras.Input((None,), dtype="int32")
    x = WordDropout(0.2, mode="unknown", unknown_id=UNK, seed=SEED)(ids)
    x = keras.layers.Embedding(VOCAB, 8, mask_zero=True)(x)
    x = WordDropout(0.2, mode="mean", seed=mean_seed)(x)
    x = krc.GRU(6)(x)
    return keras.Model(ids, keras.layers.Dense(1)(x))


def test_config_and_keras_file_round_trip(tmp_path, rng):
    for layer in (
        WordDropout(0.25, mode="unknown", unknown_id=3, seed=4),
        WordDropout(0.1, mode="mean"),
    ):
        clone = WordDropout.from_config(layer.get_config())
        assert clone.get_config() == layer.get_config()
    keras.utils.set_random_seed(SEED)
    model = text_model()
    path = str(tmp_path / "word_dropout.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    for saved, restored in zip(model.layers, loaded.layers):
        if isinstance(saved, WordDropout):
            assert type(restored) is WordDropout
            assert restored.get_config() == saved.get_config()
    ids = token_ids(rng, 4, 7)
    np.testing.assert_allclose(loaded(ids), model(ids), rtol=1e-6)


def test_fit_with_embedding_word_dropout_and_gru(rng):
    """ids -> WordDropout -> Embedding -> WordDropout -> GRU -> Dense trains
    with a finite loss; the trained model's WordDropout is the identity at
    inference."""
    keras.utils.set_random_seed(SEED)
    model = text_model()
    ids = token_ids(rng, 16, 7)
    y = rng.normal(size=(16, 1)).astype("float32")
    model.compile(keras.optimizers.Adam(0.01), loss="mse")
    history = model.fit(ids, y, epochs=2, batch_size=8, verbose=0).history["loss"]
    assert len(history) == 2 and np.all(np.isfinite(history))
    np.testing.assert_array_equal(model.layers[1](ids), ids)  # inference: the identity


def test_exported_inference_graph_is_the_identity(tmp_path, rng):
    """In a SavedModel's serving function WordDropout is the identity: the
    export equals the model at inference, and the model without the layers."""
    keras.utils.set_random_seed(SEED)
    ids = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(VOCAB, 4, mask_zero=True)(ids)
    dropped = WordDropout(0.5, mode="zero", seed=SEED)(embedded)
    model = keras.Model(ids, dropped)
    path = str(tmp_path / "exported")
    model.export(path, format="tf_saved_model", verbose=False)
    exported = tf.saved_model.load(path)  # held: its functions use its variables
    x = token_ids(rng, 5, 6)
    expected = np.asarray(model.layers[1](x))
    np.testing.assert_array_equal(exported.serve(tf.constant(x)), expected)
    np.testing.assert_array_equal(model(x), expected)
