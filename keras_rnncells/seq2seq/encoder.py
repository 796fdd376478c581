"""The encoder: a token sequence to a vector, and to the outputs attention reads."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_rnncells.cells.registry import make_cell
from keras_rnncells.checks import check_input, check_mapping, check_positive_int
from keras_rnncells.layers.rnn import RNN

TOKENS = ("batch", "steps")


@keras.saving.register_keras_serializable(package="keras_rnncells")
class Encoder(keras.layers.Layer):
    """Token ids ``(B, S)`` (0 = padding) to ``(outputs, summary, mask)``.

    An embedding, then ``num_layers`` stacked recurrent layers of the
    registered cell ``cell`` (``get_cell(cell)(units, **cell_options)``), each
    bidirectional if asked (a forward and a backward layer, outputs
    concatenated). ``outputs`` ``(B, S, d)`` are the last layer's outputs at
    every position, for attention; ``summary`` ``(B, d)`` is the sequence as one
    vector: the forward layer's output at the last non-padding position,
    joined with the backward layer's output at the first one; ``mask``
    ``(B, S)`` marks the non-padding positions. ``d = units``, or ``2 * units``
    when bidirectional.
    """

    def __init__(
        self,
        vocabulary_size: int,
        embedding_dim: int = 64,
        cell: str = "gru",
        units: int = 128,
        num_layers: int = 1,
        bidirectional: bool = False,
        cell_options: dict | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.vocabulary_size = check_positive_int("vocabulary_size", vocabulary_size)
        self.embedding_dim = check_positive_int("embedding_dim", embedding_dim)
        self.units = check_positive_int("units", units)
        self.num_layers = check_positive_int("num_layers", num_layers)
        self.cell_name = cell
        self.bidirectional = bool(bidirectional)
        self.cell_options = check_mapping("cell_options", cell_options)
        self.embedding = keras.layers.Embedding(vocabulary_size, embedding_dim, name="embedding")
        self.forward_layers = [self.recurrent_layer(i, False) for i in range(num_layers)]
        self.backward_layers = (
            [self.recurrent_layer(i, True) for i in range(num_layers)] if bidirectional else []
        )

    def recurrent_layer(self, index: int, backward: bool) -> RNN:
        cell = make_cell(self.cell_name, self.units, self.cell_options)
        name = f"{'backward' if backward else 'forward'}_{index}"
        return RNN(cell, return_sequences=True, go_backwards=backward, name=name)

    @property
    def output_dim(self) -> int:
        return self.units * (2 if self.bidirectional else 1)

    def call(self, token_ids, training=None):
        check_input(self, "token_ids", token_ids, TOKENS, dtype="ids")
        mask = ops.not_equal(token_ids, 0)
        x = self.embedding(token_ids)
        for i, forward in enumerate(self.forward_layers):
            outputs = forward(x, mask=mask, training=training)
            summary = outputs[:, -1]  # padding carries the last valid output forward
            if self.bidirectional:
                # go_backwards returns time reversed: position 0 holds the
                # output after reading the whole sequence backwards.
                backward = ops.flip(self.backward_layers[i](x, mask=mask, training=training), 1)
                outputs = ops.concatenate([outputs, backward], axis=-1)
                summary = ops.concatenate([summary, backward[:, 0]], axis=-1)
            x = outputs
        return outputs, summary, mask

    @classmethod
    def of_model(
        cls,
        vocabulary_size: int,
        cell: str,
        units: int,
        embedding_dim: int,
        encoder_layers: int,
        bidirectional: bool,
        cell_options: dict | None,
    ) -> Encoder:
        """The encoder ``"encoder"`` of an encoder-decoder model, from the
        model's arguments (`model_config` gives them back)."""
        return cls(vocabulary_size, embedding_dim, cell, units, encoder_layers, bidirectional,
                   cell_options, name="encoder")  # fmt: skip

    def model_config(self) -> dict:
        """The arguments of `of_model` (but the vocabulary's size) that
        build this encoder, as an encoder-decoder model's configuration holds them."""
        return {
            "cell": self.cell_name,
            "units": self.units,
            "embedding_dim": self.embedding_dim,
            "encoder_layers": self.num_layers,
            "bidirectional": self.bidirectional,
            "cell_options": self.cell_options,
        }

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "vocabulary_size": self.vocabulary_size,
            "embedding_dim": self.embedding_dim,
            "cell": self.cell_name,
            "units": self.units,
            "num_layers": self.num_layers,
            "bidirectional": self.bidirectional,
            "cell_options": self.cell_options,
        }
