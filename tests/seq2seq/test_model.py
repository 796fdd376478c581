"""Seq2Seq: learns copy and reverse, works with every cell, saves, serves."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells import list_cells
from keras_rnncells.seq2seq import (
    Decoder,
    Encoder,
    ScheduledSampling,
    Seq2Seq,
    inverse_sigmoid_decay,
)

START, END = 2, 3


def string_task(rng, count, transform, alphabet=8, max_length=8):
    """Strings of 3-8 symbols (ids 4..4+alphabet) and ``transform`` of each:
    (source, target_in, target_out), 0-padded; target_out ends with END."""
    source = np.zeros((count, max_length), "int32")
    target_out = np.zeros((count, max_length + 1), "int32")
    for row, length in enumerate(rng.integers(3, max_length + 1, count)):
        symbols = rng.integers(4, 4 + alphabet, length)
        source[row, :length] = symbols
        target_out[row, :length] = transform(symbols)
        target_out[row, length] = END
    target_in = np.concatenate([np.full((count, 1), START), target_out[:, :-1]], 1)
    return source, np.where(target_in == END, 0, target_in), target_out


def exact_match(model, source, target_out, **kwargs):
    tokens = np.asarray(model.generate(source, **kwargs).tokens)
    if tokens.ndim == 3:
        tokens = tokens[:, 0]
    return np.mean(np.all(tokens == target_out, axis=1))


@pytest.mark.slow  # two training runs to accuracy (39 s of the default run)
@pytest.mark.parametrize(
    "task, cell, options",
    [
        ("reverse", "gru", {"attention": "general"}),
        ("copy", "mgu", {"attention": "concat", "bidirectional": True}),
    ],
)
def test_learns_to_copy_and_reverse(task, cell, options):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    transform = (lambda s: s[::-1]) if task == "reverse" else (lambda s: s)
    source, target_in, target_out = string_task(rng, 3000, transform)
    model = Seq2Seq(12, 12, cell=cell, units=32, embedding_dim=16, max_output_length=9, **options)
    model.compile(
        keras.optimizers.Adam(1e-2),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
    )
    model.fit((source, target_in), target_out, batch_size=32, epochs=8, verbose=0)
    held_out, _, expected = string_task(np.random.default_rng(1), 500, transform)
    assert exact_match(model, held_out, expected) >= 0.99
    assert exact_match(model, held_out, expected, beam_width=3) >= 0.99


@pytest.mark.cell_sweep
@pytest.mark.parametrize("cell", list_cells())
def test_every_cell_encodes_and_decodes(cell):
    model = Seq2Seq(7, 9, cell=cell, units=4, embedding_dim=4, max_output_length=3)
    source = np.array([[4, 5, 6], [5, 0, 0]], "int32")
    logits = model((source, np.array([[2, 4], [2, 5]], "int32")))
    assert logits.shape == (2, 2, 9) and np.all(np.isfinite(logits))
    decoded = model.generate(source, beam_width=2)
    assert decoded.tokens.shape == (2, 2, 3) and np.all(np.isfinite(decoded.scores))


def test_padding_changes_nothing():
    """A padded source encodes as the same source without the padding, in
    both directions of a stacked bidirectional encoder."""
    encoder = Encoder(9, 4, cell="gru", units=5, num_layers=2, bidirectional=True)
    padded = np.array([[4, 5, 6, 7, 0, 0]], "int32")
    outputs, summary, mask = encoder(padded)
    short_outputs, short_summary, _ = encoder(padded[:, :4])
    np.testing.assert_array_equal(mask, padded != 0)
    np.testing.assert_allclose(summary, short_summary, atol=1e-6)
    np.testing.assert_allclose(outputs[:, :4], short_outputs, atol=1e-6)
    assert summary.shape == (1, 10)


def test_decoder_steps_match_its_training_call(rng):
    """A decoder prompted at every step (as a color namer is, by its color)
    without a summary: stepping it token by token gives the teacher-forced
    logits."""
    decoder = Decoder(8, 4, cell="lstm", units=6)
    tokens = rng.integers(2, 8, size=(3, 5)).astype("int32")
    prompt = rng.uniform(size=(3, 3)).astype("float32")
    logits = decoder(tokens, prompt=prompt)
    states = decoder.initial_state(3)
    for t in range(5):
        step_logits, states = decoder.step(tokens[:, t], states, prompt=prompt)
        np.testing.assert_allclose(step_logits, logits[:, t], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="`memory`"):
        Decoder(8, 4, units=6, attention="dot")(tokens)


def test_scheduled_sampling():
    model = Seq2Seq(9, 9, cell="gru", units=6, embedding_dim=4, scheduled_sampling=True)
    rng = np.random.default_rng(0)
    source, target_in, target_out = string_task(rng, 4, lambda s: s, alphabet=5)
    teacher_forced = model((source, target_in), training=False)
    np.testing.assert_allclose(  # probability 0: the step loop is teacher forcing
        model((source, target_in), training=True), teacher_forced, rtol=1e-5, atol=1e-5
    )
    model.decoder.sampling_probability.assign(1.0)
    sampled = np.asarray(model((source, target_in), training=True))
    np.testing.assert_allclose(sampled[:, 0], teacher_forced[:, 0], rtol=1e-5, atol=1e-5)
    assert not np.allclose(sampled[:, 1:], teacher_forced[:, 1:], atol=1e-3)

    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    schedule = ScheduledSampling(k=2.0)
    model.fit((source, target_in), target_out, epochs=3, verbose=0, callbacks=[schedule])
    # Set before the third (last) batch: i = 2.
    expected = 1 - inverse_sigmoid_decay(2, 2.0)
    assert float(model.decoder.sampling_probability.numpy()) == pytest.approx(expected)
    assert inverse_sigmoid_decay(0, 100.0) == pytest.approx(100 / 101)
    with pytest.raises(ValueError, match="`k`"):
        ScheduledSampling(k=0.5)


@pytest.fixture(scope="module")
def trained_pair():
    model = Seq2Seq(9, 9, cell="mgu", units=6, embedding_dim=4, max_output_length=5)
    source = np.array([[4, 5, 6, 0], [7, 8, 4, 5]], "int32")
    return model, source


def test_keras_file_round_trip(trained_pair, tmp_path):
    model, source = trained_pair
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert loaded.get_config() == model.get_config()
    for width in (1, 2):
        original, reloaded = model.generate(source, width), loaded.generate(source, width)
        np.testing.assert_array_equal(original.tokens, reloaded.tokens)
        np.testing.assert_allclose(original.scores, reloaded.scores, rtol=1e-6)


def test_decoding_from_a_saved_model_signature(trained_pair, tmp_path):
    model, source = trained_pair
    module = tf.Module()
    module.model = model
    module.decode = tf.function(
        lambda s: model.generate(s, beam_width=2)._asdict(),
        input_signature=[tf.TensorSpec((None, None), tf.int32)],
    )
    tf.saved_model.save(module, str(tmp_path), signatures={"serving_default": module.decode})
    serving = tf.saved_model.load(str(tmp_path)).signatures["serving_default"]
    served = serving(tf.constant(source))
    expected = model.generate(source, beam_width=2)
    np.testing.assert_array_equal(served["tokens"], expected.tokens)
    np.testing.assert_allclose(served["scores"], expected.scores, rtol=1e-6)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="`cell`"):
        Seq2Seq(5, 5, cell="no_such_cell")
    with pytest.raises(ValueError, match="`attention`"):
        Seq2Seq(5, 5, attention="cosine")
    with pytest.raises(ValueError, match="`units`"):
        Seq2Seq(5, 5, units=0)
    with pytest.raises(ValueError, match="`max_output_length`"):
        Seq2Seq(5, 5, max_output_length="long")
