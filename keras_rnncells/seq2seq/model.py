"""The encoder-decoder (seq2seq) model, trained with ``fit``, decoding in the graph."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from keras import ops

from keras_rnncells.checks import check_positive_int
from keras_rnncells.layers import portable
from keras_rnncells.seq2seq.decoder import Decoder
from keras_rnncells.seq2seq.encoder import Encoder
from keras_rnncells.seq2seq.search import Decoded, check_search_args, decode
from keras_rnncells.seq2seq.sequence_level import SequenceLevelTraining
from keras_rnncells.text.vocabulary import END_ID, START_ID


@keras.saving.register_keras_serializable(package="keras_rnncells")
class Seq2Seq(SequenceLevelTraining, keras.Model):
    """An ``Encoder`` and a ``Decoder`` attending to the encoder's outputs.

    Trained with teacher forcing: ``model((source, target_in))`` maps source
    ids ``(B, S)`` and the target shifted right behind ``start_id``
    ``(B, T)`` to logits ``(B, T, V)``; fit it on ``target_out`` (the target
    followed by ``end_id``) with padding 0 ignored, e.g.
    ``keras.losses.SparseCategoricalCrossentropy(from_logits=True,
    ignore_class=0)``. ``generate(source)`` decodes in the graph (greedy or
    beam search). The decoder starts from the encoder's summary vector, so
    ``attention=None`` gives the plain encoder-decoder of Cho et al. 2014 and
    Sutskever et al. 2014. ``fine_tune(objective)`` continues training on a
    sequence-level objective (REINFORCE or minimum risk training,
    `keras_rnncells.seq2seq.sequence_level`). ``copy_map`` (target id per source id) lets the
    decoder copy source tokens through its attention (`Decoder`'s copy
    mechanism); its outputs are then log-probabilities, which the same loss
    reads as logits.

    Token ids follow ``keras_rnncells.text``: 0 padding, 2 start, 3 end.
    """

    def __init__(
        self,
        source_vocabulary_size: int,
        target_vocabulary_size: int,
        cell: str = "gru",
        units: int = 128,
        embedding_dim: int = 64,
        encoder_layers: int = 1,
        bidirectional: bool = False,
        attention: str | None = "general",
        scheduled_sampling: bool = False,
        cell_options: dict | None = None,
        max_output_length: int = 32,
        copy_map: list[int] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.max_output_length = check_positive_int("max_output_length", max_output_length)
        self.encoder = Encoder.of_model(
            source_vocabulary_size, cell, units, embedding_dim, encoder_layers, bidirectional,
            cell_options,
        )  # fmt: skip
        self.decoder = Decoder(
            target_vocabulary_size,
            embedding_dim,
            cell,
            self.encoder.output_dim,
            attention,
            scheduled_sampling=scheduled_sampling,
            cell_options=cell_options,
            copy_map=copy_map,
            name="decoder",
        )
        self.build_from_sizes()

    def build_from_sizes(self) -> None:
        """Creates every weight (a call on one dummy pair), so that a fresh
        model can decode, count parameters and load weights at once."""
        source = ops.ones((1, 2), "int32")
        with portable():  # no XLA compilation for a dummy call
            self((source, source))
            memory, _, mask = self.encoder(source)
        states = self.decoder.initial_state(1)
        self.decoder.step(ops.ones((1,), "int32"), states, memory, mask, source_ids=source)

    def call(self, inputs, training=None):
        source, target_in = inputs
        return self.teacher_forced(
            self.encoder(source, training=training), source, target_in, training
        )

    def teacher_forced(self, encoded: tuple, source, target_in, training=None):
        """The decoder's logits for ``target_in`` under teacher forcing, from
        ``encoded``, the encoder's ``(memory, summary, mask)`` of ``source``."""
        memory, summary, mask = encoded
        return self.decoder(
            target_in,
            summary=summary,
            memory=memory,
            memory_mask=mask,
            source_ids=source,
            training=training,
        )

    def generate(
        self,
        source,
        beam_width: int = 1,
        max_length: int | None = None,
        length_penalty: float = 0.0,
        sample: bool = False,
    ) -> Decoded:
        """Decodes ``source`` ``(B, S)``: greedy search for ``beam_width=1``,
        beam search otherwise (tokens ``(B, K, L)``, best first); with
        ``sample``, one output drawn from the model per row instead. See
        ``keras_rnncells.seq2seq.search``."""
        max_length = self.max_output_length if max_length is None else max_length
        check_search_args(max_length, beam_width, length_penalty)  # before encoding
        if sample and beam_width != 1:
            raise ValueError(f"Argument `sample` needs beam_width=1, received {beam_width}")
        encoded = self.encoder(source, training=False)
        return self.search(encoded, source, beam_width, max_length, length_penalty, sample)

    def search(
        self,
        encoded: tuple,
        source,
        beam_width: int,
        max_length: int,
        length_penalty: float,
        sample: bool,
    ) -> Decoded:
        """`generate` from ``encoded``, the encoder's ``(memory, summary,
        mask)`` of ``source`` (arguments as checked there)."""
        memory, summary, mask = encoded
        states = self.decoder.initial_state(ops.shape(source)[0], summary)
        return decode(
            self.decoder.log_prob_step,
            {"memory": memory, "memory_mask": mask, "source_ids": source},
            states,
            tf.shape(source)[0],
            beam_width,
            max_length,
            START_ID,
            END_ID,
            length_penalty,
            sample,
        )

    def get_config(self) -> dict:
        encoder, decoder = self.encoder, self.decoder
        return {
            **super().get_config(),
            "source_vocabulary_size": encoder.vocabulary_size,
            "target_vocabulary_size": decoder.vocabulary_size,
            **encoder.model_config(),
            "attention": decoder.attention_score,
            "scheduled_sampling": decoder.scheduled_sampling,
            "max_output_length": self.max_output_length,
            "copy_map": None if decoder.copy_map is None else list(decoder.copy_map),
        }
