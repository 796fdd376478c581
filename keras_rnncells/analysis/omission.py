"""Omission scores: how much a sentence's encoding depends on each of its tokens.

For a sentence ``S = (w_1, ..., w_n)`` and an encoder whose final hidden state
is ``h_end(S)``, the omission score of the ``i``-th token is (Kádár, Chrupała &
Alishahi 2016, "Representation of linguistic form and function in recurrent
neural networks"; Computational Linguistics 43(4), 2017)::

    omission(i, S) = 1 - cos(h_end(S), h_end(S \\ w_i))

where ``S \\ w_i`` is ``S`` without its ``i``-th token. A score near 0: the
encoding barely notices the token is gone; up to 2: it points the other way.

`omission_scores` computes them for a batch of sentences with any encoder,
`sentiment_encoder` and `sentiment_token_ids` plug in the sentiment
classifier (`keras_rnncells.apps.sentiment`), and `mean_by_token` averages the
scores per token type over a corpus.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from keras_rnncells.checks import check_positive_int
from keras_rnncells.text.vocabulary import PAD_ID

Encode = Callable[[np.ndarray], Any]

__all__ = [
    "Encode",
    "cosine_rows",
    "mean_by_token",
    "omission_scores",
    "sentiment_encoder",
    "sentiment_token_ids",
    "seq2seq_encoder",
    "seq2seq_token_ids",
]


def omission_scores(encode: Encode, token_ids: Any, batch_size: int = 256) -> list[np.ndarray]:
    """The omission score of every token of every sentence.

    ``encode`` maps an int32 id matrix ``(B, T)``, ``0`` being padding, to the
    final hidden states ``h_end`` ``(B, D)`` (anything ``np.asarray`` reads).
    ``token_ids`` is an ``(N, T)`` integer array; the tokens of a row are its
    non-zero ids, in order (right padding, as tokenizers write it). For a row
    of ``n`` tokens the result holds ``n`` float64 scores::

        omission(i, S) = 1 - cos(h_end(S), h_end(S \\ w_i))

    (Kádár, Chrupała & Alishahi 2016). ``S \\ w_i`` is the row with its
    ``i``-th token removed, the rest shifted left and a ``0`` appended, so
    every variant keeps the width ``T``. The cosine with a zero vector is
    taken as 0: when ``h_end`` of either is zero, as the sentiment encoder's
    encoding of an empty sentence is, the score is 1. So a one-token row
    scores ``1 - cos(h_end(S), h_end(empty))``, 1 for that encoder; a row
    without tokens gives an empty array.

    The rows and their ``n`` variants go to ``encode`` in chunks of at most
    ``batch_size`` rows, grouped by number of tokens (so an ``encode`` that
    drops all-padding columns runs short chunks); each row's scores depend on
    that row alone.
    """
    batch_size = check_positive_int("batch_size", batch_size)
    tokens, lengths = compact_rows(token_ids)
    count = len(lengths)
    # One job per encoding: (row, removed position), first the rows themselves
    # (-1: none removed; rows without tokens need none), then their variants.
    whole_rows = np.flatnonzero(lengths)
    first_variant = len(whole_rows)
    rows = np.concatenate([whole_rows, np.repeat(np.arange(count), lengths)]).astype(np.int64)
    removed = np.concatenate([np.full(first_variant, -1), positions_within(lengths)])
    job_lengths = lengths[rows] - (removed >= 0)
    order = np.argsort(job_lengths, kind="stable")
    encodings: np.ndarray | None = None
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        states = encoded(encode, variants(tokens, rows[chunk], removed[chunk]))
        if encodings is None:
            encodings = np.empty((len(order), states.shape[1]), np.float64)
        encodings[chunk] = states
    if encodings is None:  # no row has a token
        return [np.zeros(0) for _ in range(count)]
    whole = np.zeros((count, encodings.shape[1]))
    whole[whole_rows] = encodings[:first_variant]
    scores = 1.0 - cosine_rows(whole[rows[first_variant:]], encodings[first_variant:])
    return np.split(scores, np.cumsum(lengths)[:-1])


def compact_rows(token_ids: Any) -> tuple[np.ndarray, np.ndarray]:
    """``token_ids`` with each row's non-zero ids moved to its front, in order
    (int32), and the number of them per row."""
    ids = np.asarray(token_ids)
    if ids.ndim != 2 or not (np.issubdtype(ids.dtype, np.integer) or ids.size == 0):
        raise ValueError(
            "Argument `token_ids` must be a 2-D integer array (sentences, steps), "
            f"received dtype {ids.dtype} and shape {ids.shape}"
        )
    if ids.size and (ids.min() < 0 or ids.max() > np.iinfo(np.int32).max):
        raise ValueError(
            f"Argument `token_ids` must hold ids in [0, 2**31), received ids from {ids.min()} "
            f"to {ids.max()}"
        )
    present = ids != PAD_ID
    # A stable sort of "is padding" brings the tokens first, in order.
    order = np.argsort(~present, axis=1, kind="stable")
    tokens = np.take_along_axis(ids, order, axis=1).astype(np.int32)
    return tokens, present.sum(axis=1)


def positions_within(lengths: np.ndarray) -> np.ndarray:
    """``0, 1, ..., n - 1`` for each ``n`` of ``lengths``, concatenated."""
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(int(lengths.sum())) - starts


def variants(tokens: np.ndarray, rows: np.ndarray, removed: np.ndarray) -> np.ndarray:
    """Row ``rows[k]`` of the compacted ``tokens`` without its token at
    ``removed[k]`` (``-1``: none removed), shifted left, ``0`` appended."""
    width = tokens.shape[1]
    columns = np.arange(width)[None, :]
    source = columns + (columns >= removed[:, None]) * (removed[:, None] >= 0)
    shifted = np.take_along_axis(tokens[rows], np.minimum(source, width - 1), axis=1)
    return np.where(source < width, shifted, PAD_ID).astype(np.int32)


def encoded(encode: Encode, ids: np.ndarray) -> np.ndarray:
    """``encode(ids)`` as a float64 ``(B, D)`` array, or a ValueError."""
    states = np.asarray(encode(ids), dtype=np.float64)
    if states.ndim != 2 or states.shape[0] != ids.shape[0]:
        raise ValueError(
            f"Argument `encode` must return a (batch, features) array of {ids.shape[0]} rows "
            f"for {ids.shape[0]} sentences, received shape {states.shape}"
        )
    return states


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The cosine of each row of ``a`` with the same row of ``b``: ``a·b /
    (|a| |b|)``, and 0 where either row is zero."""
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    dots = np.einsum("ij,ij->i", a, b)
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


# -- the encoders of the package's models ------------------------------------------
def encoder_summary(encoder: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The ``encode`` of `omission_scores` for a `keras_rnncells.seq2seq.Encoder`
    (masked, 0 = padding): ids ``(B, T)`` to its summary ``(B, D)``, in
    inference mode. One ``tf.function`` traced once for int32 ``(None, None)``
    ids; each batch loses its all-padding columns first (masked: the summary
    does not change)."""

    @tf.function(input_signature=[tf.TensorSpec((None, None), tf.int32)])
    def summary(token_ids: tf.Tensor) -> tf.Tensor:
        _, h_end, _ = encoder(token_ids, training=False)
        return h_end

    def encode(token_ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(token_ids, dtype=np.int32)
        used = np.flatnonzero(ids.any(axis=0))
        width = int(used[-1]) + 1 if used.size else 1
        return summary(tf.constant(ids[:, :width])).numpy()

    return encode


def pieces_of(ids: np.ndarray, vocabulary: Sequence[str]) -> list[list[str]]:
    """Each row's tokens: the vocabulary entries of its non-padding ids."""
    return [[vocabulary[i] for i in row if i != PAD_ID] for row in np.asarray(ids).tolist()]


def check_model(model: Any, expected: type) -> None:
    if not isinstance(model, expected):
        raise ValueError(
            f"Argument `model` must be a {expected.__name__}, received: {type(model).__name__}"
        )


def check_texts(texts: Any) -> None:
    if isinstance(texts, str) or not all(isinstance(text, str) for text in texts):
        raise ValueError(
            f"Argument `texts` must be a sequence of strings, received: {type(texts).__name__}"
        )


# -- the sentiment classifier (keras_rnncells.apps.sentiment) -------------------------
def sentiment_encoder(model: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The ``encode`` of `omission_scores` for a `SentimentClassifier`: its
    encoder's summary, ``h_end`` (the forward state after the last token,
    joined with the backward state after the first when bidirectional)."""
    from keras_rnncells.apps.sentiment import SentimentClassifier

    check_model(model, SentimentClassifier)
    return encoder_summary(model.encoder)


def sentiment_token_ids(model: Any, texts: Sequence[str]) -> tuple[np.ndarray, list[list[str]]]:
    """The padded token ids ``(N, T)`` of ``texts`` (`model.token_ids`)
    and, per text, its tokens (vocabulary entries: WordPiece's ``"##"`` marks
    a continuation, SentencePiece's ``"▁"`` a word's first piece, ``"[UNK]"``
    an unknown word), one per non-padding id."""
    check_texts(texts)
    ids = np.asarray(model.token_ids(tf.constant(list(texts), tf.string)))
    return ids, pieces_of(ids, model.tokenizer.vocabulary)


# -- the date normalizer's encoder (keras_rnncells.seq2seq.TextSeq2Seq) ---------------
def seq2seq_encoder(model: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The ``encode`` of `omission_scores` for a `TextSeq2Seq`: its encoder's
    summary (what the decoder's initial state is made from)."""
    from keras_rnncells.seq2seq import TextSeq2Seq

    check_model(model, TextSeq2Seq)
    return encoder_summary(model.seq2seq.encoder)


def seq2seq_token_ids(model: Any, texts: Sequence[str]) -> tuple[np.ndarray, list[list[str]]]:
    """The padded source ids ``(N, T)`` of ``texts`` and, per text, its source
    tokens (characters for the date normalizer), one per non-padding id."""
    check_texts(texts)
    ids = np.asarray(model.source_tokenizer(tf.constant(list(texts), tf.string)), np.int32)
    return ids, pieces_of(ids, model.source_tokenizer.vocabulary)


# -- over a corpus -------------------------------------------------------------------
def mean_by_token(
    scores: Sequence[np.ndarray], pieces: Sequence[Sequence[str]], min_count: int = 5
) -> list[tuple[str, float, int]]:
    """``(token, mean omission score, count)`` of every token type seen at
    least ``min_count`` times in ``pieces`` (``scores[k][i]`` being the score
    of ``pieces[k][i]``), highest mean first (ties by token)."""
    min_count = check_positive_int("min_count", min_count)
    if len(scores) != len(pieces):
        raise ValueError(
            f"Argument `pieces` must hold one row per row of `scores` ({len(scores)}), "
            f"received {len(pieces)}"
        )
    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for row, (values, tokens) in enumerate(zip(scores, pieces)):
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        if len(values) != len(tokens):
            raise ValueError(
                f"Argument `pieces` must match `scores` token for token, received {len(tokens)} "
                f"tokens for {len(values)} scores in row {row}"
            )
        for token, value in zip(tokens, values.tolist()):
            totals[token] += value
            counts[token] += 1
    means = [
        (token, totals[token] / count, count)
        for token, count in counts.items()
        if count >= min_count
    ]
    return sorted(means, key=lambda entry: (-entry[1], entry[0]))
