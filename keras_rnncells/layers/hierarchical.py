"""A hierarchical recurrent encoder: words into sentence vectors, sentence
vectors into a document vector (Serban et al. 2016)."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from keras import ops

from keras_rnncells.checks import check_input

DOCUMENTS = ("batch", "sentences", "words", "features")


@keras.saving.register_keras_serializable(package="keras_rnncells")
class HierarchicalEncoder(keras.layers.Layer):
    """Documents ``(B, S, W, D)`` of embedded words to a vector per document.

    The hierarchical recurrent encoder of Serban et al. (2016), "Building
    End-To-End Dialogue Systems Using Generative Hierarchical Neural Network
    Models" (AAAI), whose utterances are here a document's sentences. For
    sentence ``n`` of words ``w_{n,1} .. w_{n,M_n}`` and a document of
    sentences ``1 .. N``:

        h_{n,m} = f_word(h_{n,m-1}, w_{n,m}),   h_{n,0} = 0
        s_n     = h_{n,M_n}                      (the word layer's output)
        d_n     = f_sent(d_{n-1}, s_n),          d_0 = 0
        output  = d_N                            (the sentence layer's output)

    ``word_layer`` and ``sentence_layer`` are recurrent layers: a
    `keras_rnncells.RNN` of any registered cell, a named layer (``GRU``,
    ``MGU``, ...), or a ``keras.layers.Bidirectional`` of one (its output
    the two directions' final outputs, joined). ``word_layer`` must return
    one vector per sentence (``return_sequences=False``); ``sentence_layer``
    may return one per document, or a sequence ``(B, S, H)`` (with
    ``return_sequences=True``, for attention over sentences), whose Keras
    mask is then the sentence mask.

    Inputs are embedded words, so that any embedding (trained, pre-trained,
    characters' encodings) goes in front: ids ``(B, S, W)`` go through
    ``keras.layers.Embedding(..., mask_zero=True)``, whose Keras mask
    ``(B, S, W)`` (0 = a padding word) the layer reads. Without a mask every
    word is present. The masks at both levels:

    * a word is read where the mask is true; a sentence is present where at
      least one of its words is. An empty sentence (all its words padding)
      is therefore absent, as a padding sentence is: it is skipped, so a
      document with one reads as the same document without it;
    * only present sentences run through the word layer (gathered into one
      batch of ``(number present, W, D)`` and scattered back), so padding
      sentences cost almost nothing and give the sentence layer zero
      vectors, which its mask skips. With ``round_rows`` (the default) that
      batch is rounded up to the next power of two with empty rows, whose
      outputs are dropped: compiled loops (XLA compiles one program per
      shape) then see a few batch sizes, not one per number of sentences;
    * an empty document (no present sentence) gives zeros: the initial state
      of our layers, which a fully masked sequence keeps (the output is
      multiplied by the document mask, so any sentence layer gives zeros
      there).

    A padded document (more words per sentence, more sentences) gives the
    numbers of the unpadded one.
    """

    def __init__(
        self,
        word_layer: keras.layers.Layer,
        sentence_layer: keras.layers.Layer,
        round_rows: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.round_rows = bool(round_rows)
        self.word_layer = recurrent_layer("word_layer", word_layer)
        self.sentence_layer = recurrent_layer("sentence_layer", sentence_layer)
        if getattr(word_layer, "return_sequences", False):
            raise ValueError(
                "Argument `word_layer` must return one vector per sentence "
                f"(return_sequences=False), received: {word_layer.name!r} with "
                "return_sequences=True"
            )
        self.supports_masking = True

    def word_vector_size(self, input_shape: tuple) -> int:
        return self.word_layer.compute_output_shape((None, input_shape[2], input_shape[3]))[-1]

    def build(self, input_shape: tuple) -> None:
        check_input(self, "documents", input_shape, DOCUMENTS)
        if input_shape[-1] is None:
            raise ValueError(
                f"Input `documents` of layer {self.name!r} must have a known last axis "
                f"(features), received shape {tuple(input_shape)}"
            )
        if not self.word_layer.built:
            self.word_layer.build((None, input_shape[2], input_shape[3]))
        if not self.sentence_layer.built:
            self.sentence_layer.build((None, input_shape[1], self.word_vector_size(input_shape)))
        self.built = True

    def call(self, documents, mask=None, training=None):
        check_input(self, "documents", documents, DOCUMENTS, dtype="float")
        shape = tf.shape(documents)
        batch, sentences, words = shape[0], shape[1], shape[2]
        features = documents.shape[-1]
        if mask is None:
            mask = tf.ones(shape[:3], tf.bool)
        mask = tf.cast(mask, tf.bool)
        count = batch * sentences
        # one more row, empty: where the rows added by `round_rows` read and write
        flat_words = tf.concat(
            [
                tf.reshape(documents, tf.stack([count, words, features])),
                tf.zeros(tf.stack([1, words, features]), documents.dtype),
            ],
            axis=0,
        )
        flat_mask = tf.reshape(mask, tf.stack([count, words]))
        present = tf.reduce_any(flat_mask, axis=-1)  # (B * S,)
        flat_mask = tf.concat([flat_mask, tf.zeros(tf.stack([1, words]), tf.bool)], axis=0)
        rows = tf.cast(tf.where(present)[:, 0], tf.int32)  # (number present,)
        if self.round_rows:
            rows = rounded_rows(rows, count)
        vectors = self.word_layer(
            tf.gather(flat_words, rows),
            mask=tf.gather(flat_mask, rows),
            training=training,
        )
        size = vectors.shape[-1]
        sentence_vectors = tf.scatter_nd(rows[:, None], vectors, tf.stack([count + 1, size]))
        sentence_vectors = tf.reshape(sentence_vectors[:-1], tf.stack([batch, sentences, size]))
        sentence_mask = tf.reshape(present, tf.stack([batch, sentences]))
        outputs = self.sentence_layer(sentence_vectors, mask=sentence_mask, training=training)
        if len(outputs.shape) == 2:  # one vector per document: zeros for an empty one
            nonempty = tf.reduce_any(sentence_mask, axis=-1)
            outputs = outputs * tf.cast(nonempty, outputs.dtype)[:, None]
        return outputs

    def compute_mask(self, documents, mask=None):
        if not getattr(self.sentence_layer, "return_sequences", False):
            return None
        if mask is None:
            return ops.ones(ops.shape(documents)[:2], "bool")
        return ops.any(ops.cast(mask, "bool"), axis=-1)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return self.sentence_layer.compute_output_shape(
            (input_shape[0], input_shape[1], self.word_vector_size(input_shape))
        )

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "word_layer": keras.saving.serialize_keras_object(self.word_layer),
            "sentence_layer": keras.saving.serialize_keras_object(self.sentence_layer),
            "round_rows": self.round_rows,
        }

    @classmethod
    def from_config(cls, config: dict) -> HierarchicalEncoder:
        config = dict(config)
        for name in ("word_layer", "sentence_layer"):
            config[name] = keras.saving.deserialize_keras_object(config[name])
        return cls(**config)


# 0, then the powers of two: the word layer's batch sizes with `round_rows`.
ROW_BUCKETS = (0, *(2**i for i in range(31)))


def rounded_rows(rows: tf.Tensor, empty_row: int) -> tf.Tensor:
    """Row indices ``(N,)`` followed by ``empty_row`` up to the smallest of
    `ROW_BUCKETS` that is at least N (with comparisons and a reduction,
    which ONNX converts exactly, no logarithm)."""
    count = tf.shape(rows)[0]
    buckets = tf.constant(ROW_BUCKETS, tf.int32)
    rounded = tf.reduce_min(tf.where(buckets >= count, buckets, ROW_BUCKETS[-1]))
    return tf.concat([rows, tf.fill([rounded - count], empty_row)], axis=0)


def recurrent_layer(name: str, layer: Any) -> keras.layers.Layer:
    """``layer`` once it is a Keras layer that returns no states."""
    if not isinstance(layer, keras.layers.Layer):
        raise ValueError(
            f"Argument `{name}` must be a recurrent Keras layer (keras_rnncells.RNN, a named "
            f"layer such as keras_rnncells.GRU, or keras.layers.Bidirectional of one), "
            f"received: {layer!r}"
        )
    if getattr(layer, "return_state", False):
        raise ValueError(
            f"Argument `{name}` must return its outputs only (return_state=False), received: "
            f"{layer.name!r} with return_state=True"
        )
    return layer
