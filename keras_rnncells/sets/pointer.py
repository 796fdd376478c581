"""The pointer decoder: an LSTM whose output at each step is an attention
distribution over the input elements (Vinyals, Fortunato & Jaitly 2015)."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from keras import ops

from keras_rnncells.cells.registry import make_cell
from keras_rnncells.checks import (
    check_bool,
    check_input,
    check_mapping,
    check_optional_positive_int,
    check_positive_int,
    check_shape,
)
from keras_rnncells.seq2seq.attention import Attention
from keras_rnncells.sets.set_encoder import ELEMENTS, set_mask

Tensor = Any


@keras.saving.register_keras_serializable(package="keras_rnncells")
class PointerDecoder(keras.layers.Layer):
    """A decoder that points at the elements of its input (the write block of
    read-process-write; Pointer Networks).

    Over memories ``m_1..m_n`` (one per input element), from the states ``s_0``
    given (an encoder's final states) and a first input ``x_1`` (given, else a
    learned vector), step ``t`` runs::

        d_t, s_t = cell(x_t, s_{t-1})
        u_{t,j} = vᵀ tanh(W_1 m_j + W_2 d_t)      (`Attention`'s score, "concat")
        p(y_t = j) = softmax_j(u_{t,j})           (over the allowed elements)
        x_{t+1} = m_{y_t}                         (the element pointed at)

    The allowed elements are those of the set (``mask``), and with
    ``exclude_chosen`` only those not pointed at before, so that the output is
    a permutation. That constraint is not the papers' (their decoders may
    point twice), and it makes sorting 1-D numbers trivial: a fixed score
    monotone in the number, picking the smallest one left, sorts without
    tracking anything. It is off by default.

    ``learned_first_input=False``: no learned first input; ``call`` is then
    given ``first_input`` (a `SetEncoder`'s last read, say).

    ``call(memories, states, mask=None, targets=None, first_input=None)``:

    * with ``targets`` (batch, steps) indices, teacher forcing: ``y_t`` is the
      target, and the result is the logits ``u`` (batch, steps, elements),
      ``-1e9`` where an element is not allowed (train with a sparse
      cross-entropy from logits). A target ``-1`` (padding) reads nothing.
    * without, greedy decoding of as many steps as the set has elements
      (the memories' static length): ``y_t = argmax_j u_{t,j}``; the result
      is ``[pointers, logits]``, pointers (batch, elements) int32, ``-1`` at
      the steps past the set's size.

    Vinyals, Fortunato & Jaitly 2015, "Pointer networks" (NeurIPS);
    Vinyals, Bengio & Kudlur 2016, "Order matters: sequence to sequence for
    sets" (ICLR).
    """

    def __init__(
        self,
        units: int,
        score: str = "concat",
        attention_units: int | None = None,
        cell: str = "lstm",
        cell_options: dict | None = None,
        exclude_chosen: bool = False,
        learned_first_input: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.attention_units = check_optional_positive_int("attention_units", attention_units)
        self.cell_name = cell
        self.cell_options = check_mapping("cell_options", cell_options)
        self.exclude_chosen = check_bool("exclude_chosen", exclude_chosen)
        self.learned_first_input = check_bool("learned_first_input", learned_first_input)
        self.attention = Attention(score, attention_units, name="pointer", dtype=self.dtype_policy)
        self.cell = make_cell(cell, self.units, {**self.cell_options, "dtype": self.dtype_policy})
        self.supports_masking = True

    def build(self, memories_shape, *args, **kwargs) -> None:
        check_input(self, "memories", memories_shape, ELEMENTS)
        self.memory_dim = memories_shape[-1]
        self.cell.build((memories_shape[0], self.memory_dim))
        self.attention.build((memories_shape[0], self.units), memories_shape)
        if self.learned_first_input:
            self.first_input = self.add_weight(
                name="first_input", shape=(self.memory_dim,), initializer="zeros"
            )

    def call(self, memories, states, mask=None, targets=None, first_input=None, training=False):
        check_input(self, "memories", memories, ELEMENTS, dtype="float", features=self.memory_dim)
        mask = set_mask(self, memories, mask)
        batch, elements = ops.shape(memories)[0], memories.shape[1]
        if targets is not None:
            check_shape(self, "targets", targets, (memories.shape[0], None), ("batch", "steps"))
            steps = targets.shape[1]
        else:
            steps = elements
        if steps is None:
            raise ValueError(
                f"Layer {self.name!r} decodes one step per element: `memories` needs a static "
                f"number of elements, or `targets` a static number of steps, received memories "
                f"of shape {tuple(memories.shape)}"
            )
        if first_input is None:
            if not self.learned_first_input:
                raise ValueError(
                    f"Layer {self.name!r} has no learned first input "
                    "(learned_first_input=False): `first_input` must be given"
                )
            first_input = ops.broadcast_to(self.first_input, (batch, self.memory_dim))
        keys = self.attention.keys(memories)
        allowed = mask
        sizes = ops.sum(ops.cast(mask, "int32"), axis=-1)
        step_input, states = first_input, list(states)
        lowest = ops.cast(-1e9, self.compute_dtype)
        self.cell.reset_recurrent_dropout_mask()
        logits, pointers = [], []
        for t in range(steps):
            output, states = self.cell(step_input, states, training=training)
            scores = ops.where(allowed, self.attention.scores(output, keys), lowest)
            logits.append(scores)
            if targets is not None:
                pointer = ops.cast(targets[:, t], "int32")
            else:
                within = ops.logical_and(t < sizes, ops.any(allowed, axis=-1))
                # tf.argmax: Keras' argmax bitcasts floats, which ONNX lacks
                pointer = ops.where(within, tf.argmax(scores, axis=-1, output_type="int32"), -1)
                pointers.append(pointer)
            chosen = ops.one_hot(pointer, ops.shape(memories)[1], dtype=self.compute_dtype)
            step_input = ops.einsum("bn,bnd->bd", chosen, memories)
            if self.exclude_chosen:
                allowed = ops.logical_and(allowed, chosen < 0.5)
        logits = ops.stack(logits, axis=1)
        if targets is not None:
            return logits
        return [ops.stack(pointers, axis=1), logits]

    def compute_mask(self, memories, *args, **kwargs):
        return None

    def compute_output_spec(self, memories, states, mask=None, targets=None, **kwargs):
        batch, elements = memories.shape[0], memories.shape[1]
        steps = elements if targets is None else targets.shape[1]
        logits = keras.KerasTensor((batch, steps, elements), dtype=self.compute_dtype)
        if targets is not None:
            return logits
        return [keras.KerasTensor((batch, steps), dtype="int32"), logits]

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "units": self.units,
            "score": self.attention.score,
            "attention_units": self.attention_units,
            "cell": self.cell_name,
            "cell_options": self.cell_options,
            "exclude_chosen": self.exclude_chosen,
            "learned_first_input": self.learned_first_input,
        }
