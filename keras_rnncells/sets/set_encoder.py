"""Read-process-write's set encoder: an LSTM that attends to a set's
elements for a fixed number of steps (Vinyals, Bengio & Kudlur 2016)."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_rnncells.cells.registry import make_cell
from keras_rnncells.checks import check_input, check_mapping, check_positive_int, check_shape
from keras_rnncells.seq2seq.attention import Attention

Tensor = Any
ELEMENTS = ("batch", "elements", "features")


def set_mask(layer: keras.layers.Layer, elements: Tensor, mask: Tensor | None) -> Tensor:
    """``mask`` (batch, elements) as booleans, checked against ``elements``;
    all true where it is ``None``."""
    if mask is None:
        return ops.ones(ops.shape(elements)[:2], dtype="bool")
    check_shape(layer, "mask", mask, tuple(elements.shape[:2]), ELEMENTS[:2])
    return ops.cast(mask, "bool")


@keras.saving.register_keras_serializable(package="keras_rnncells")
class SetEncoder(keras.layers.Layer):
    """The read and process blocks of read-process-write: a vector for a set,
    the same for every order of its elements.

    *Read*: each element ``x_i`` becomes a memory ``m_i = φ(W x_i + b)``
    (a ``Dense`` layer of ``memory_units`` with ``read_activation``).
    *Process*: ``steps`` (K) steps of a recurrent cell (an LSTM by default)
    that attends to the memories, from ``q*_0 = 0`` and zero states::

        q_t = LSTM(q*_{t-1})           (the cell's input is q*_{t-1})
        e_{i,t} = f(m_i, q_t)          (the score of `Attention`: "dot" by default)
        a_{i,t} = softmax_i(e_{i,t})   (over the set's elements only)
        r_t = Σ_i a_{i,t} m_i
        q*_t = [q_t, r_t]

    The output is ``q*_K``, of size ``units + memory_units``. Nothing in it
    depends on the elements' order: the cell never reads the elements one by
    one, only the attention's weighted sum over them.

    The paper writes the LSTM as taking no input and evolving ``q*``; here, as
    in common implementations (e.g. "Set2Set"), ``q*_{t-1}`` is the cell's input
    and ``q_t`` its output, so any registered cell fits (``cell``,
    ``cell_options``: `keras_rnncells.get_cell`).

    ``call(elements, mask=None)``: ``elements`` (batch, elements, features)
    floats; ``mask`` (batch, elements) booleans marking the set's elements
    (padding elements get attention weight exactly 0, and their values are
    never read), or the Keras mask of the previous layer. Sets of different
    sizes share a batch. An empty set (a row without elements) reads nothing:
    every ``r_t`` is 0, so its output is the same learned vector for every
    empty set (the process block run on zero reads), never NaN.

    ``return_state=True``: also returns the process cell's final states (the
    starting state of a decoder, `PointerDecoder`) and the memories:
    ``[q*_K, memories, *states]``.

    Vinyals, Bengio & Kudlur 2016, "Order matters: sequence to sequence for
    sets" (ICLR), section 4.
    """

    def __init__(
        self,
        units: int,
        steps: int = 5,
        memory_units: int | None = None,
        read_activation: str | None = "tanh",
        score: str = "dot",
        cell: str = "lstm",
        cell_options: dict | None = None,
        return_state: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.steps = check_positive_int("steps", steps)
        self.memory_units = (
            self.units if memory_units is None else check_positive_int("memory_units", memory_units)
        )
        self.read_activation = keras.activations.serialize(keras.activations.get(read_activation))
        self.cell_name = cell
        self.cell_options = check_mapping("cell_options", cell_options)
        self.return_state = bool(return_state)
        self.read = keras.layers.Dense(
            self.memory_units, activation=read_activation, name="read", dtype=self.dtype_policy
        )
        self.attention = Attention(score, name="attention", dtype=self.dtype_policy)
        self.cell = make_cell(cell, self.units, {**self.cell_options, "dtype": self.dtype_policy})
        self.supports_masking = True

    @property
    def output_size(self) -> int:
        return self.units + self.memory_units

    def build(self, elements_shape, mask_shape=None) -> None:
        check_input(self, "elements", elements_shape, ELEMENTS)
        self.read.build(elements_shape)
        memory_shape = (*elements_shape[:2], self.memory_units)
        self.attention.build((elements_shape[0], self.units), memory_shape)
        self.cell.build((elements_shape[0], self.output_size))

    def call(self, elements, mask=None, training=False):
        check_input(self, "elements", elements, ELEMENTS, dtype="numeric")
        mask = set_mask(self, elements, mask)
        elements = ops.cast(elements, self.compute_dtype)
        elements = ops.where(mask[:, :, None], elements, ops.zeros_like(elements))
        memories = self.read(elements)
        q_star, states = self.process(memories, mask, training)
        if self.return_state:
            return [q_star, memories, *states]
        return q_star

    def process(self, memories, mask, training=False) -> tuple:
        """The process block on ``memories`` (batch, elements, memory_units):
        ``(q*_K, the cell's final states)``."""
        batch = ops.shape(memories)[0]
        states = self.cell.get_initial_state(batch)
        q_star = ops.zeros((batch, self.output_size), dtype=self.compute_dtype)
        keys = self.attention.keys(memories)
        self.cell.reset_recurrent_dropout_mask()
        for _ in range(self.steps):
            query, states = self.cell(q_star, states, training=training)
            read, _ = self.attention(query, memories, memory_mask=mask, keys=keys)
            q_star = ops.concatenate([query, read], axis=-1)
        return q_star, list(states)

    def compute_mask(self, elements, mask=None):
        return None

    def compute_output_spec(self, elements, mask=None, training=False):
        check_input(self, "elements", elements, ELEMENTS)
        batch = elements.shape[0]
        q_star = keras.KerasTensor((batch, self.output_size), dtype=self.compute_dtype)
        if not self.return_state:
            return q_star
        memories = keras.KerasTensor((*elements.shape[:2], self.memory_units), self.compute_dtype)
        sizes = self.cell.state_size
        sizes = sizes if isinstance(sizes, (list, tuple)) else [sizes]
        states = [keras.KerasTensor((batch, size), dtype=self.compute_dtype) for size in sizes]
        return [q_star, memories, *states]

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "units": self.units,
            "steps": self.steps,
            "memory_units": self.memory_units,
            "read_activation": self.read_activation,
            "score": self.attention.score,
            "cell": self.cell_name,
            "cell_options": self.cell_options,
            "return_state": self.return_state,
        }
