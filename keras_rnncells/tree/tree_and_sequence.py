"""A tree-and-sequence encoder (Eriguchi, Hashimoto & Tsuruoka 2016,
"Tree-to-Sequence Attentional Neural Machine Translation").

A sequence encoder (a recurrent layer of any registered cell) reads the
words; the binary Tree-LSTM then composes along the tree with the sequence
encoder's outputs at its leaves (`ShiftReduceEncoder` on those outputs, so a
leaf's state is the Tree-LSTM unit of its word's state). An attention reads
both: the words' states and the phrases' (the REDUCE nodes'), one memory of
``2 · steps`` vectors with its mask, words first. The tree's root summarizes
the sentence (the paper starts its decoder from it and the last word's
state).
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from keras_rnncells.cells.registry import make_cell
from keras_rnncells.checks import check_input, check_positive_int
from keras_rnncells.layers.rnn import RNN
from keras_rnncells.tree.shift_reduce import (
    PAD,
    REDUCE,
    ShiftReduceEncoder,
    padded_transitions,
)


@keras.saving.register_keras_serializable(package="keras_rnncells")
class TreeAndSequenceEncoder(keras.layers.Layer):
    """Words by a recurrent layer of ``cell``, phrases by a Tree-LSTM over its
    outputs (see the module), ``units`` each.

    Call it on ``[features, transitions]`` (as `ShiftReduceEncoder`: one
    transition per token, a word SHIFTed, an operator or phrase marker
    REDUCEd, ``PAD`` for padding). Returns ``(memory, memory_mask, root)``:
    ``memory`` (batch, 2·steps, units), the words' states then the phrases',
    ``memory_mask`` true at each word and each phrase, ``root`` (batch,
    units)."""

    def __init__(self, units: int, cell: str = "gru", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.cell = cell
        self.words = RNN(
            make_cell(cell, units, {"dtype": self.dtype_policy}),
            return_sequences=True,
            name="words",
            dtype=self.dtype_policy,
        )
        self.phrases = ShiftReduceEncoder(units, name="phrases", dtype=self.dtype_policy)

    def build(self, input_shape: list) -> None:
        self.words.build(input_shape[0])
        self.phrases.build([(*input_shape[0][:-1], self.units), input_shape[1]])

    def call(self, inputs: list, mask: Any = None, training: bool = False) -> tuple:
        features, transitions = inputs
        check_input(self, "transitions", transitions, ("batch", "steps"), dtype="integer")
        transitions = padded_transitions(transitions, mask)
        present = transitions != PAD
        words = self.words(features, mask=present, training=training)
        nodes, root = self.phrases.run(words, transitions, training)
        is_phrase = transitions == REDUCE
        phrases = nodes * tf.cast(is_phrase, nodes.dtype)[..., None]
        memory = tf.concat([words * tf.cast(present, words.dtype)[..., None], phrases], axis=1)
        return memory, tf.concat([present, is_phrase], axis=1), root

    def compute_output_shape(self, input_shape: list) -> tuple:
        batch, steps = input_shape[0][0], input_shape[0][1]
        doubled = None if steps is None else 2 * steps
        return (batch, doubled, self.units), (batch, doubled), (batch, self.units)

    def compute_mask(self, inputs: list, mask: Any = None) -> Any:
        return None

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units, "cell": self.cell}
