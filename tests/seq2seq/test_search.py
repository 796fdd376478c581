"""Greedy and beam search on a known distribution, and on a real Seq2Seq."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.seq2seq import Seq2Seq, beam_search, greedy_search

PAD, START, END, A, B, C, D = 0, 2, 3, 4, 5, 6, 7
VOCABULARY = 8
TINY = 1e-6


def markov_step(probabilities):
    """A step function whose next-token distribution depends on the previous
    token only: ``probabilities[previous]``."""
    log_table = tf.math.log(tf.constant(probabilities, tf.float32) + TINY)

    def step(tokens, states):
        return tf.gather(log_table, tokens), states

    return step


def table(*transitions):
    """A transition table from (previous, next, probability) triples; rows
    left empty (PAD, START after the first step, ...) go to END."""
    probabilities = np.zeros((VOCABULARY, VOCABULARY))
    for previous, following, probability in transitions:
        probabilities[previous, following] = probability
    probabilities[probabilities.sum(1) == 0, END] = 1.0
    return probabilities


# From START, A (0.6) beats B (0.4); but after A the best next token is END
# at 0.3, while B is followed by END with 1.0. Greedy: A END, probability
# 0.18; the best sequence is B END, 0.4.
TRAP = table(
    (START, A, 0.6),
    (START, B, 0.4),
    (A, END, 0.3),
    (A, C, 0.25),
    (A, D, 0.25),
    (A, A, 0.2),
    (B, END, 1.0),
)


def decode(search, probabilities, **kwargs):
    states = [tf.zeros((2, 1))]
    return search(
        markov_step(probabilities), states, 2, max_length=4, start_id=START, end_id=END, **kwargs
    )


def test_beam_search_finds_what_greedy_misses():
    greedy = decode(greedy_search, TRAP)
    beam = decode(beam_search, TRAP, beam_width=2)
    np.testing.assert_array_equal(greedy.tokens[0], [A, END, PAD, PAD])
    np.testing.assert_array_equal(beam.tokens[0, 0], [B, END, PAD, PAD])
    np.testing.assert_allclose(np.exp(greedy.scores), 0.18, rtol=1e-4)
    np.testing.assert_allclose(np.exp(beam.scores[:, 0]), 0.4, rtol=1e-4)
    assert np.all(beam.scores[:, 0] > greedy.scores)
    # The runner-up is greedy's answer, and beams are sorted best first.
    np.testing.assert_array_equal(beam.tokens[0, 1], [A, END, PAD, PAD])
    assert np.all(np.diff(beam.scores, axis=1) <= 0)


def test_length_penalty_prefers_longer_outputs():
    # "A END" (0.55) beats "B C END" (0.45) without a penalty; with alpha = 3,
    # ln(0.55) / (7/6)^3 = -0.376 < ln(0.45) / (8/6)^3 = -0.337 turns it round.
    choice = table((START, A, 0.55), (START, B, 0.45), (B, C, 1.0))
    plain = decode(beam_search, choice, beam_width=2)
    penalized = decode(beam_search, choice, beam_width=2, length_penalty=3.0)
    np.testing.assert_array_equal(plain.tokens[0, 0], [A, END, PAD, PAD])
    np.testing.assert_array_equal(penalized.tokens[0, 0], [B, C, END, PAD])
    np.testing.assert_allclose(penalized.scores[0, 0], np.log(0.45) / (8 / 6) ** 3, rtol=1e-4)
    np.testing.assert_allclose(penalized.scores[0, 1], np.log(0.55) / (7 / 6) ** 3, rtol=1e-4)


def test_unfinished_rows_stop_at_max_length():
    endless = np.zeros((VOCABULARY, VOCABULARY))
    endless[:, A] = 1.0
    for search, kwargs in ((greedy_search, {}), (beam_search, {"beam_width": 2})):
        tokens = np.asarray(decode(search, endless, **kwargs).tokens)
        assert tokens.shape[-1] == 4 and np.all(tokens[..., 0] == A)


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)  # the same model whichever tests ran before in the worker
    return Seq2Seq(
        9,
        11,
        cell="mgu",
        units=8,
        embedding_dim=4,
        attention="general",
        bidirectional=True,
        max_output_length=6,
    )


@pytest.fixture(scope="module")
def source():
    rng = np.random.default_rng(3)
    ids = rng.integers(4, 9, size=(5, 7)).astype("int32")
    ids[1, 4:] = 0
    ids[2, 1:] = 0
    return ids


def test_beam_width_one_is_greedy(model, source):
    greedy = model.generate(source)
    beam = model.generate(source, beam_width=1)
    np.testing.assert_array_equal(greedy.tokens, beam.tokens)
    via_beam_search = model.generate(source, beam_width=2)  # a different search altogether
    assert via_beam_search.tokens.shape == (5, 2, 6)
    # Not a theorem (beam search can prune the greedy prefix and end worse), but
    # true of this seeded model: it failed for one unseeded draw in the full suite.
    assert np.all(via_beam_search.scores[:, 0] >= greedy.scores - 1e-5)


def teacher_forced_score(model, source, tokens):
    """Σ log p(token) of ``tokens`` (B, L) under the training-time call."""
    tokens = np.asarray(tokens)
    lengths = (
        np.argmax(np.concatenate([tokens == END, np.ones_like(tokens[:, :1], bool)], 1), 1) + 1
    )
    lengths = np.minimum(lengths, tokens.shape[1])
    target_in = np.concatenate([np.full((len(tokens), 1), START), tokens[:, :-1]], 1)
    log_probs = tf.nn.log_softmax(model((source, target_in))).numpy()
    picked = np.take_along_axis(log_probs, tokens[..., None], -1)[..., 0]
    return np.array([picked[i, : lengths[i]].sum() for i in range(len(tokens))])


def test_scores_are_the_models_log_probabilities(model, source):
    """The step function used in decoding and the teacher-forced call agree."""
    greedy = model.generate(source)
    np.testing.assert_allclose(
        greedy.scores, teacher_forced_score(model, source, greedy.tokens), rtol=1e-4, atol=1e-4
    )
    beam = model.generate(source, beam_width=3)
    for k in range(3):
        np.testing.assert_allclose(
            beam.scores[:, k],
            teacher_forced_score(model, source, beam.tokens[:, k]),
            rtol=1e-4,
            atol=1e-4,
        )


def test_decoding_compiles_with_xla(model, source):
    for width in (1, 3):
        compiled = tf.function(lambda s, w=width: model.generate(s, beam_width=w), jit_compile=True)
        eager = model.generate(source, beam_width=width)
        xla = compiled(tf.constant(source))
        np.testing.assert_array_equal(xla.tokens, eager.tokens)
        np.testing.assert_allclose(xla.scores, eager.scores, rtol=1e-4, atol=1e-5)


def test_bad_search_arguments(model, source):
    with pytest.raises(ValueError, match="`beam_width`"):
        model.generate(source, beam_width=0)
    with pytest.raises(ValueError, match="`max_length`"):
        model.generate(source, max_length=-1)
