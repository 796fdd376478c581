"""A text's token ids split into sentences, read by a hierarchical encoder.

The sentiment classifier's ``encoder="hierarchical"``: its tokenizer and
token ids are the flat classifier's (the same first ``max_tokens`` tokens
of each text), and the sentences are found among the ids, where a token
that ends a sentence (``.``, ``!``, ``?`` and their runs, as the vocabulary
holds them) closes one. Splitting ids rather than strings keeps the string
front end of the flat model (its ONNX model on strings included): the split
is tensor arithmetic (an exclusive cumulative sum, comparisons, a scatter),
which TensorFlow Serving and onnxruntime both run.
"""

from __future__ import annotations

import re
from typing import Any

import keras
import tensorflow as tf

from keras_rnncells.cells.registry import make_cell
from keras_rnncells.checks import check_input, check_mapping, check_positive_int
from keras_rnncells.layers.hierarchical import HierarchicalEncoder
from keras_rnncells.layers.rnn import RNN
from keras_rnncells.text.vocabulary import PAD_ID

# A token that ends a sentence: sentence punctuation only, after the marks a
# subword vocabulary puts on a token ("##" continues a word in WordPiece,
# "\u2581" starts one in SentencePiece).
SENTENCE_END = re.compile(r"^(##|\u2581)?[.!?]+$")


def sentence_end_ids(vocabulary: list[str]) -> list[int]:
    """The ids of the tokens of ``vocabulary`` that end a sentence
    (`SENTENCE_END`); a ``ValueError`` where it holds none."""
    ids = [i for i, token in enumerate(vocabulary) if SENTENCE_END.match(token)]
    if not ids:
        raise ValueError(
            "Argument `tokenizer` must have a token that ends a sentence ('.', '!' or '?') to "
            "split texts into sentences, received a vocabulary without one"
        )
    return ids


def split_sentences(
    token_ids: tf.Tensor,
    end_ids: list[int],
    max_sentences: int,
    max_words: int,
    multiple: int = 1,
) -> tf.Tensor:
    """Token ids ``(B, T)`` (``PAD_ID`` = padding) as ``(B, S, W)``: sentence
    ``k`` of a row holds its tokens after the ``k``-th sentence end (the end
    itself the sentence's last token; a run of ends, "?!" or ". . .", ends
    one sentence, at its last), its first ``max_words``; the first
    ``max_sentences`` sentences. Sentences past a row's last are empty
    (padding), which the hierarchical encoder skips. ``S`` and ``W`` are the
    longest kept (at least 1), rounded up to a multiple of ``multiple`` (so
    compiled loops see a few shapes)."""
    token_ids = tf.cast(token_ids, tf.int32)
    steps = tf.shape(token_ids)[1]
    is_end = tf.reduce_any(token_ids[:, :, None] == tf.constant(end_ids, token_ids.dtype), -1)
    next_is_end = tf.concat([is_end[:, 1:], tf.zeros_like(is_end[:, :1])], axis=1)
    closes = is_end & ~next_is_end  # the last end of a run ("?!", ". . .") closes the sentence
    sentence = tf.cumsum(tf.cast(closes, tf.int32), axis=1, exclusive=True)  # (B, T)
    present = token_ids != PAD_ID
    last = tf.reduce_max(tf.concat([tf.boolean_mask(sentence, present), [0]], 0))
    sentences = tf.minimum(last + 1, max_sentences)
    # a sentence's start: the number of the row's tokens in sentences before it
    starts = tf.reduce_sum(
        tf.cast(sentence[:, :, None] < tf.range(sentences)[None, None, :], tf.int32), axis=1
    )  # (B, S)
    kept_sentence = tf.minimum(sentence, sentences - 1)
    word = tf.range(steps)[None, :] - tf.gather(starts, kept_sentence, batch_dims=1)
    kept = present & (sentence < max_sentences) & (word < max_words)
    where = tf.where(kept)  # (N, 2): row, step
    words = tf.minimum(
        tf.reduce_max(tf.concat([tf.boolean_mask(word, kept), [0]], 0)) + 1, max_words
    )
    # non-negative operands: tf2onnx makes // a truncating Div
    sentences, words = [(n + multiple - 1) // multiple * multiple for n in (sentences, words)]
    indices = tf.stack(
        [
            tf.cast(where[:, 0], tf.int32),
            tf.gather_nd(sentence, where),
            tf.gather_nd(word, where),
        ],
        axis=1,
    )
    shape = tf.stack([tf.shape(token_ids)[0], sentences, words])
    return tf.scatter_nd(indices, tf.gather_nd(token_ids, where), shape)


@keras.saving.register_keras_serializable(package="keras_rnncells")
class HierarchicalTextEncoder(keras.layers.Layer):
    """Token ids ``(B, T)`` to ``(outputs, summary, mask)`` as
    `keras_rnncells.seq2seq.encoder.Encoder` gives them, through sentences:
    `split_sentences` (``end_ids``, ``max_sentences``, ``max_words``,
    ``pad_to_multiple``), an
    embedding, then `keras_rnncells.HierarchicalEncoder` with a word layer
    and a sentence layer of the registered cell ``cell`` (``units`` each,
    each a ``keras.layers.Bidirectional`` if ``bidirectional``).

    ``summary`` ``(B, d)`` is the document vector (zeros for a text without
    tokens); ``outputs`` ``(B, 1, d)`` is the same, as a sequence of one
    step, and ``mask`` ``(B, 1)`` whether the text has a token: there are no
    per-token outputs to attend over. ``d = units``, or ``2 * units`` when
    bidirectional."""

    def __init__(
        self,
        vocabulary_size: int,
        end_ids: list[int],
        embedding_dim: int = 64,
        cell: str = "gru",
        units: int = 128,
        bidirectional: bool = False,
        cell_options: dict | None = None,
        max_sentences: int = 64,
        max_words: int = 64,
        pad_to_multiple: int = 8,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.vocabulary_size = check_positive_int("vocabulary_size", vocabulary_size)
        self.embedding_dim = check_positive_int("embedding_dim", embedding_dim)
        self.units = check_positive_int("units", units)
        self.max_sentences = check_positive_int("max_sentences", max_sentences)
        self.max_words = check_positive_int("max_words", max_words)
        self.pad_to_multiple = check_positive_int("pad_to_multiple", pad_to_multiple)
        if not end_ids or not all(isinstance(i, int) and 0 < i < vocabulary_size for i in end_ids):
            raise ValueError(
                f"Argument `end_ids` must be a non-empty list of token ids in [1, "
                f"{vocabulary_size}), received: {end_ids!r}"
            )
        self.end_ids = [int(i) for i in end_ids]
        self.cell_name = cell
        self.bidirectional = bool(bidirectional)
        self.cell_options = check_mapping("cell_options", cell_options)
        self.num_layers = 1
        self.embedding = keras.layers.Embedding(vocabulary_size, embedding_dim, name="embedding")
        self.documents = HierarchicalEncoder(
            self.recurrent_layer("words"), self.recurrent_layer("sentences"), name="documents"
        )

    def recurrent_layer(self, name: str) -> keras.layers.Layer:
        layer = RNN(make_cell(self.cell_name, self.units, self.cell_options), name=name)
        if self.bidirectional:
            return keras.layers.Bidirectional(layer, name=f"bidirectional_{name}")
        return layer

    @property
    def output_dim(self) -> int:
        return self.units * (2 if self.bidirectional else 1)

    def call(self, token_ids, training=None):
        check_input(self, "token_ids", token_ids, ("batch", "steps"), dtype="ids")
        ids = split_sentences(
            token_ids, self.end_ids, self.max_sentences, self.max_words, self.pad_to_multiple
        )
        summary = self.documents(self.embedding(ids), mask=ids != PAD_ID, training=training)
        mask = tf.reduce_any(token_ids != PAD_ID, axis=1)[:, None]
        return summary[:, None], summary, mask

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "vocabulary_size": self.vocabulary_size,
            "end_ids": self.end_ids,
            "embedding_dim": self.embedding_dim,
            "cell": self.cell_name,
            "units": self.units,
            "bidirectional": self.bidirectional,
            "cell_options": self.cell_options,
            "max_sentences": self.max_sentences,
            "max_words": self.max_words,
            "pad_to_multiple": self.pad_to_multiple,
        }
