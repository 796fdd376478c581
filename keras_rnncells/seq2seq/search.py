"""Decoding inside the graph: greedy search, sampling and beam search.

Both run one ``tf.while_loop`` of at most ``max_length`` steps over a
``step_fn(tokens, states) -> (log_probs, states)`` (tokens ``(N,)`` int32,
log-probabilities ``(N, V)``, states any nest of ``(N, ...)`` tensors), stop
early once every row has emitted ``end_id``, keep static shapes throughout and
so trace into SavedModel signatures and compile with XLA
(``tf.function(jit_compile=True)``).

Outputs are right-padded with ``pad_id`` after each row's ``end_id``. A row
that never emits ``end_id`` stops at ``max_length`` tokens, unfinished.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import tensorflow as tf

from keras_rnncells.checks import check_float, check_positive_int

StepFn = Callable[[tf.Tensor, Any], tuple[tf.Tensor, Any]]

NEG_INF = -1e9  # finite, so that sums and XLA stay free of NaN


class Decoded(NamedTuple):
    """Tokens ``(B, L)`` (greedy) or ``(B, K, L)`` (beam, best first) and
    their scores ``(B,)`` or ``(B, K)``: the sum of the tokens'
    log-probabilities (``end_id`` included), divided by the length penalty in
    beam search."""

    tokens: tf.Tensor
    scores: tf.Tensor


def length_penalty_factor(lengths: tf.Tensor, alpha: float) -> tf.Tensor:
    """Wu et al. 2016 (GNMT): lp(Y) = ((5 + |Y|) / 6) ** alpha; alpha = 0 means none."""
    return ((5.0 + tf.cast(lengths, tf.float32)) / 6.0) ** alpha


def write_column(tokens: tf.Tensor, step: tf.Tensor, column: tf.Tensor) -> tf.Tensor:
    """``tokens[..., step] = column``, in ops that XLA and ONNX both take."""
    at_step = tf.equal(tf.range(tokens.shape[-1]), step)
    return tf.where(at_step, column[..., None], tokens)


def check_search_args(max_length: int, beam_width: int = 1, length_penalty: float = 0.0) -> None:
    check_positive_int("max_length", max_length)
    check_positive_int("beam_width", beam_width)
    check_float("length_penalty", length_penalty)


def greedy_search(
    step_fn: StepFn,
    states: Any,
    batch_size: tf.Tensor | int,
    max_length: int,
    start_id: int,
    end_id: int,
    pad_id: int = 0,
    sample: bool = False,
) -> Decoded:
    """The most probable token at each step, fed back as the next input;
    with ``sample``, a token drawn from the step's distribution instead
    (ancestral sampling, for sequence-level training)."""
    check_search_args(max_length)
    tokens = tf.zeros((batch_size, max_length), tf.int32)
    finished = tf.zeros((batch_size,), tf.bool)
    scores = tf.zeros((batch_size,), tf.float32)
    previous = tf.fill((batch_size,), start_id)

    def body(step, tokens, finished, scores, previous, states):
        log_probs, states = step_fn(previous, states)
        log_probs = tf.cast(log_probs, tf.float32)
        if sample:
            chosen = tf.random.categorical(log_probs, 1, dtype=tf.int32)[:, 0]
        else:
            chosen = tf.argmax(log_probs, axis=-1, output_type=tf.int32)
        chosen = tf.where(finished, pad_id, chosen)
        gained = tf.gather(log_probs, chosen, batch_dims=1)
        scores += tf.where(finished, 0.0, gained)
        tokens = write_column(tokens, step, chosen)
        finished = finished | tf.equal(chosen, end_id)
        return step + 1, tokens, finished, scores, chosen, states

    def running(step, tokens, finished, *_):
        return tf.logical_not(tf.reduce_all(finished))

    _, tokens, _, scores, _, _ = tf.while_loop(
        running,
        body,
        (tf.constant(0), tokens, finished, scores, previous, states),
        maximum_iterations=max_length,
    )
    return Decoded(tokens, scores)


def repeat_beams(tensor: tf.Tensor, beam_width: int) -> tf.Tensor:
    """``(B, ...)`` -> ``(B * K, ...)``, row ``b * K + k`` a copy of row ``b``
    (the layout ``beam_search`` gives ``step_fn``; tile the decoder's memory
    with it)."""
    return tf.repeat(tensor, beam_width, axis=0)


def beam_search(
    step_fn: StepFn,
    states: Any,
    batch_size: tf.Tensor | int,
    beam_width: int,
    max_length: int,
    start_id: int,
    end_id: int,
    pad_id: int = 0,
    length_penalty: float = 0.0,
    vocabulary_size: int | None = None,
) -> Decoded:
    """Keeps the ``beam_width`` best partial outputs of each row.

    At each step every live hypothesis is extended by every token, and the
    ``beam_width`` best extensions by length-penalized score (see
    ``length_penalty_factor``) are kept; a hypothesis that has emitted
    ``end_id`` stays in the beam with its score frozen (it extends only by
    ``pad_id``, at no cost). ``states`` are given for ``batch_size`` rows and
    repeated per beam; ``step_fn`` sees ``batch_size * beam_width`` rows laid
    out as ``repeat_beams`` lays them out. With ``beam_width=1`` this is
    greedy search.
    """
    check_search_args(max_length, beam_width, length_penalty)
    k = beam_width
    states = tf.nest.map_structure(lambda s: repeat_beams(s, k), states)
    first_beam_only = tf.constant([0.0] + [NEG_INF] * (k - 1))  # k copies of one start
    log_probs = tf.tile(first_beam_only[None], (batch_size, 1))
    lengths = tf.zeros((batch_size, k), tf.int32)
    finished = tf.zeros((batch_size, k), tf.bool)
    tokens = tf.zeros((batch_size, k, max_length), tf.int32)
    previous = tf.fill((batch_size * k,), start_id)
    row_offsets = tf.range(batch_size)[:, None] * k

    def body(step, tokens, log_probs, lengths, finished, previous, states):
        step_log_probs, states = step_fn(previous, states)
        vocab = vocabulary_size or step_log_probs.shape[-1] or tf.shape(step_log_probs)[-1]
        step_log_probs = tf.reshape(tf.cast(step_log_probs, tf.float32), (batch_size, k, vocab))
        pad_only = tf.where(tf.range(vocab) == pad_id, 0.0, NEG_INF)
        step_log_probs = tf.where(finished[..., None], pad_only, step_log_probs)
        totals = log_probs[..., None] + step_log_probs
        new_lengths = lengths + tf.cast(tf.logical_not(finished), tf.int32)
        ranking = totals / length_penalty_factor(new_lengths, length_penalty)[..., None]
        _, best = tf.math.top_k(tf.reshape(ranking, (batch_size, k * vocab)), k)
        parent, chosen = best // vocab, best % vocab
        log_probs = tf.gather(tf.reshape(totals, (batch_size, k * vocab)), best, batch_dims=1)
        lengths = tf.gather(new_lengths, parent, batch_dims=1)
        finished = tf.gather(finished, parent, batch_dims=1) | tf.equal(chosen, end_id)
        tokens = write_column(tf.gather(tokens, parent, batch_dims=1), step, chosen)
        rows = tf.reshape(row_offsets + parent, (-1,))
        states = tf.nest.map_structure(lambda s: tf.gather(s, rows), states)
        return step + 1, tokens, log_probs, lengths, finished, tf.reshape(chosen, (-1,)), states

    def running(step, tokens, log_probs, lengths, finished, *_):
        return tf.logical_not(tf.reduce_all(finished))

    _, tokens, log_probs, lengths, _, _, _ = tf.while_loop(
        running,
        body,
        (tf.constant(0), tokens, log_probs, lengths, finished, previous, states),
        maximum_iterations=max_length,
    )
    return Decoded(tokens, log_probs / length_penalty_factor(lengths, length_penalty))


def decode(
    step_for: Callable[..., StepFn],
    context: dict[str, Any],
    states: Any,
    batch_size: tf.Tensor | int,
    beam_width: int,
    max_length: int,
    start_id: int,
    end_id: int,
    length_penalty: float = 0.0,
    sample: bool = False,
) -> Decoded:
    """Greedy search (or, with ``sample``, sampling) for ``beam_width=1``,
    beam search otherwise, over the
    step function ``step_for(**context)``. For beam search every context
    tensor ``(B, ...)`` (a memory, a prompt) is first repeated per beam."""
    check_search_args(max_length, beam_width, length_penalty)
    if beam_width == 1:
        step = step_for(**context)
        return greedy_search(step, states, batch_size, max_length, start_id, end_id, sample=sample)
    context = {
        key: None if value is None else repeat_beams(value, beam_width)
        for key, value in context.items()
    }
    return beam_search(
        step_for(**context),
        states,
        batch_size,
        beam_width,
        max_length,
        start_id,
        end_id,
        length_penalty=length_penalty,
    )
