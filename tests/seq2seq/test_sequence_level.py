"""Sequence-level fine-tuning (REINFORCE with a baseline, minimum risk
training): the reward, the sequence log-probability and both losses against
direct NumPy computations, the phase switch and its resumption, a fine-tuning
that raises the held-out reward, and one-line errors."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.apps.seq2seq import edit_distance
from keras_rnncells.seq2seq import Seq2Seq
from keras_rnncells.seq2seq.sequence_level import (
    objective_loss,
    sequence_log_probs,
    similarity,
)

from .test_model import string_task

START, END = 2, 3


def content(row):
    """The tokens of a row before its first END (padding 0 left out)."""
    row = list(row)
    row = row[: row.index(END)] if END in row else row
    return [token for token in row if token != 0]


def test_similarity_is_one_minus_the_normalized_edit_distance(rng):
    tokens = rng.integers(4, 8, size=(40, 7))
    targets = rng.integers(4, 8, size=(40, 6))
    for rows, cut in ((tokens, rng.integers(0, 8, 40)), (targets, rng.integers(1, 7, 40))):
        for row, length in zip(rows, cut):
            row[length:] = 0
            if length < rows.shape[1]:
                row[length] = END
    tokens[0] = np.pad(content(targets[0]), (0, 7 - len(content(targets[0]))))  # no END: whole
    found = similarity(tf.constant(tokens), tf.constant(targets)).numpy()
    for value, row, target in zip(found, tokens, targets):
        a, b = content(row), content(target)
        expected = max(0.0, 1 - edit_distance("".join(map(chr, a)), "".join(map(chr, b))) / len(b))
        assert value == pytest.approx(expected)
    assert found[0] == 1.0


def test_sequence_log_probs_sum_the_teacher_forced_steps_up_to_the_end():
    keras.utils.set_random_seed(0)
    model = Seq2Seq(9, 9, units=6, embedding_dim=4)
    source = np.array([[4, 5, 6, 0], [7, 8, 0, 0]], "int32")
    tokens = np.array([[5, 4, END, 0, 0], [8, 8, 7, 6, 5]], "int32")  # the second never ends
    found = sequence_log_probs(model, source, tokens).numpy()
    target_in = np.array([[START, 5, 4, 0, 0], [START, 8, 8, 7, 6]], "int32")
    log_probs = tf.nn.log_softmax(model((source, target_in), training=False)).numpy()
    expected = [
        sum(log_probs[0, t, tokens[0, t]] for t in range(3)),
        sum(log_probs[1, t, tokens[1, t]] for t in range(5)),
    ]
    np.testing.assert_allclose(found, expected, rtol=1e-5)


def test_the_two_losses_and_their_gradients_match_numpy(rng):
    reward = rng.uniform(size=(3, 4))
    log_probs = tf.Variable(rng.normal(size=(3, 4)) - 5)
    with tf.GradientTape(persistent=True) as tape:
        reinforce = objective_loss("reinforce", tf.constant(reward), log_probs)
        risk = objective_loss("mrt", tf.constant(reward), log_probs, sharpness=0.5)
    lp = log_probs.numpy()
    baseline = (reward.sum(1, keepdims=True) - reward) / 3
    assert reinforce.numpy() == pytest.approx(-np.mean((reward - baseline) * lp))
    np.testing.assert_allclose(tape.gradient(reinforce, log_probs), -(reward - baseline) / 12)
    q = np.exp(0.5 * lp) / np.exp(0.5 * lp).sum(1, keepdims=True)
    assert risk.numpy() == pytest.approx(np.mean((q * (1 - reward)).sum(1)))
    # d/dlp_k of Σ_j q_j (1 - r_j) = α q_k ((1 - r_k) - Σ_j q_j (1 - r_j)), over 3 rows
    expected = 0.5 * q * ((1 - reward) - (q * (1 - reward)).sum(1, keepdims=True)) / 3
    np.testing.assert_allclose(tape.gradient(risk, log_probs), expected, rtol=1e-6)


def mean_similarity(model, source, target_out):
    tokens = model.generate(source).tokens
    return float(tf.reduce_mean(similarity(tokens, tf.constant(target_out))))


@pytest.mark.slow  # two training runs
@pytest.mark.parametrize("objective", ["reinforce", "mrt"])
def test_fine_tuning_switches_at_its_epoch_and_raises_the_held_out_reward(objective):
    keras.utils.set_random_seed(0)
    reverse = lambda s: s[::-1]  # noqa: E731
    source, target_in, target_out = string_task(np.random.default_rng(0), 1000, reverse)
    held_out, _, expected = string_task(np.random.default_rng(1), 300, reverse)
    model = Seq2Seq(12, 12, units=16, embedding_dim=8, max_output_length=9)
    model.compile(
        keras.optimizers.Adam(1e-2),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
    )
    phase = model.fine_tune(objective, from_epoch=4, samples=4)
    model.fit(
        (source, target_in), target_out, batch_size=64, epochs=4, callbacks=[phase], verbose=0
    )
    assert not model.sequence_level_active
    before = mean_similarity(model, held_out, expected)
    weights = [w.numpy() for w in model.trainable_weights]
    # Resumed at epoch 4, as a run backed up there: fine-tuning from the first step.
    model.fit(
        (source, target_in),
        target_out,
        batch_size=64,
        epochs=7,
        initial_epoch=4,
        callbacks=[phase],
        verbose=0,
    )
    assert model.sequence_level_active
    assert any(not np.allclose(a, b.numpy()) for a, b in zip(weights, model.trainable_weights))
    after = mean_similarity(model, held_out, expected)
    assert after > before, (before, after)


def test_sampling_draws_from_the_model():
    keras.utils.set_random_seed(0)
    model = Seq2Seq(9, 9, units=6, embedding_dim=4, max_output_length=6)
    source = np.tile(np.array([[4, 5, 6]], "int32"), (64, 1))
    greedy = model.generate(source).tokens.numpy()
    drawn = model.generate(source, sample=True).tokens.numpy()
    assert (greedy == greedy[0]).all()  # one source: one greedy output
    assert len({tuple(row) for row in drawn}) > 1  # an untrained model: many samples


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda m: m.fine_tune("ppo"),
            r"Argument `objective` must be one of \('reinforce', 'mrt'\)",
        ),
        (lambda m: m.fine_tune("mrt", samples=1), r"Argument `samples`"),
        (lambda m: m.fine_tune("mrt", from_epoch=-1), r"Argument `from_epoch`"),
        (lambda m: m.fine_tune("mrt", sharpness=0.0), r"Argument `sharpness`"),
        (
            lambda m: m.generate(np.ones((1, 2), "int32"), 2, sample=True),
            r"`sample` needs beam_width=1",
        ),
    ],
)
def test_bad_arguments_are_refused(build, message):
    model = Seq2Seq(9, 9, units=4, embedding_dim=4)
    with pytest.raises(ValueError, match=message):
        build(model)


def test_a_fine_tuning_step_takes_keras_batches_and_refuses_sample_weights():
    """`train_on_batch` hands the step (x, y, sample_weight): a step is taken,
    and a sample weight is refused in one line, not silently dropped."""
    keras.utils.set_random_seed(0)
    model = Seq2Seq(6, 6, units=6, embedding_dim=4, max_output_length=6)
    model.compile(
        keras.optimizers.Adam(1e-2),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
    )
    model.fine_tune("mrt", samples=16)  # two tokens, targets of four: the rewards differ
    model.sequence_level_active = True
    source = np.array([[4, 5, 4], [5, 5, 0]], "int32")
    target_in = np.array([[START, 4, 5, 4, 5], [START, 5, 5, 4, 4]], "int32")
    target_out = np.array([[4, 5, 4, 5, END], [5, 5, 4, 4, END]], "int32")
    before = [w.numpy() for w in model.trainable_weights]
    loss = model.train_on_batch((source, target_in), target_out)
    assert np.isfinite(loss)
    assert any(not np.allclose(a, b.numpy()) for a, b in zip(before, model.trainable_weights))
    with pytest.raises(ValueError, match=r"^Argument `sample_weight`: sequence-level"):
        model.train_on_batch((source, target_in), target_out, sample_weight=np.ones(2))
