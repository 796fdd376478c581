"""A seq2seq model with its tokenizers: strings in, strings out."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from keras_rnncells.seq2seq.model import Seq2Seq
from keras_rnncells.seq2seq.sequence_level import SequenceLevelTraining
from keras_rnncells.text import END_ID, PAD_ID, UNK_ID, Tokenizer


@keras.saving.register_keras_serializable(package="keras_rnncells")
class TextSeq2Seq(SequenceLevelTraining, keras.Model):
    """A ``Seq2Seq`` between two tokenizers (``keras_rnncells.text``).

    ``from_tokenizers(..., copy=True)`` gives the decoder a copy mechanism
    over the tokens the two vocabularies share (`copy_map`).

    ``examples(sources, targets)`` turns string pairs into the training pair
    ``((source_ids, target_in), target_out)`` (use it in a ``tf.data`` map);
    the model trains on ids like ``Seq2Seq``. ``translate(strings)`` runs
    tokenization, decoding (greedy or beam search) and detokenization in the
    graph and returns ``(texts, scores)``. Saved as ``.keras``, the model keeps
    both vocabularies in its configuration.

    Edge cases: an empty string is encoded as an empty (fully padded) source,
    whose summary and attention context are zero, and gets whatever the model
    generates from nothing; characters or words outside the source vocabulary
    are read as ``[UNK]``; sources longer than any seen in training are encoded
    in full (the recurrence has no length limit), outputs stop at
    ``max_length`` tokens.
    """

    def __init__(
        self,
        source_tokenizer: Tokenizer,
        target_tokenizer: Tokenizer,
        seq2seq: Seq2Seq,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        tokenizers = {"source_tokenizer": source_tokenizer, "target_tokenizer": target_tokenizer}
        for name, tokenizer in tokenizers.items():
            if not isinstance(tokenizer, Tokenizer):
                raise ValueError(
                    f"Argument `{name}` must be a keras_rnncells.text tokenizer, "
                    f"received: {tokenizer!r}"
                )
        if not isinstance(seq2seq, Seq2Seq):
            raise ValueError(
                "Argument `seq2seq` must be a keras_rnncells.seq2seq.Seq2Seq, "
                f"received: {seq2seq!r}"
            )
        sizes = (seq2seq.encoder.vocabulary_size, seq2seq.decoder.vocabulary_size)
        if sizes != (source_tokenizer.vocabulary_size, target_tokenizer.vocabulary_size):
            raise ValueError(
                f"Argument `seq2seq` has vocabularies of {sizes} tokens, the tokenizers "
                f"{source_tokenizer.vocabulary_size} and {target_tokenizer.vocabulary_size}"
            )
        self.source_tokenizer = source_tokenizer
        self.target_tokenizer = target_tokenizer
        self.seq2seq = seq2seq
        self.built = True  # Seq2Seq creates its weights; tokenizers have none

    @classmethod
    def from_tokenizers(
        cls,
        source_tokenizer: Tokenizer,
        target_tokenizer: Tokenizer,
        copy: bool = False,
        **options: Any,
    ) -> TextSeq2Seq:
        """A new ``Seq2Seq(**options)`` sized for the two vocabularies; with
        ``copy``, its ``copy_map`` is theirs (`copy_map`)."""
        if copy:
            options["copy_map"] = copy_map(source_tokenizer, target_tokenizer)
        seq2seq = Seq2Seq(
            source_tokenizer.vocabulary_size, target_tokenizer.vocabulary_size, **options
        )
        return cls(source_tokenizer, target_tokenizer, seq2seq)

    def sequence_model(self) -> Seq2Seq:
        return self.seq2seq

    def call(self, inputs, training=None):
        return self.seq2seq(inputs, training=training)

    def examples(self, sources, targets):
        """String pairs to ``((source_ids, target_in), target_out)``: the target
        with a start token in front (``target_in``, end token removed) and an
        end token behind (``target_out``)."""
        source_ids = self.source_tokenizer(sources)
        target_ids = self.target_tokenizer(targets, add_start=True, add_end=True)
        target_in = target_ids[:, :-1]
        target_in = tf.where(target_in == END_ID, tf.constant(PAD_ID, target_in.dtype), target_in)
        return (source_ids, target_in), target_ids[:, 1:]

    def translate(
        self,
        strings,
        beam_width: int = 1,
        max_length: int | None = None,
        length_penalty: float = 0.0,
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Texts ``(B,)`` to the best outputs ``(B,)`` and their scores ``(B,)``."""
        source_ids = self.source_tokenizer(strings)
        decoded = self.seq2seq.generate(source_ids, beam_width, max_length, length_penalty)
        tokens, scores = decoded
        if beam_width > 1:
            tokens, scores = tokens[:, 0], scores[:, 0]
        return self.target_tokenizer.detokenize(tokens), scores

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "source_tokenizer": keras.saving.serialize_keras_object(self.source_tokenizer),
            "target_tokenizer": keras.saving.serialize_keras_object(self.target_tokenizer),
            "seq2seq": keras.saving.serialize_keras_object(self.seq2seq),
        }

    @classmethod
    def from_config(cls, config: dict) -> TextSeq2Seq:
        config = dict(config)
        for key in ("source_tokenizer", "target_tokenizer", "seq2seq"):
            config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)


def copy_map(source_tokenizer: Tokenizer, target_tokenizer: Tokenizer) -> list[int]:
    """For each source id, the target id of the same token (``UNK_ID`` where
    the target vocabulary lacks it): what the decoder's copy mechanism writes
    when it copies a source position."""
    target_ids = {token: index for index, token in enumerate(target_tokenizer.vocabulary)}
    return [target_ids.get(token, UNK_ID) for token in source_tokenizer.vocabulary]
