"""Attention over encoder outputs, honoring the source padding mask."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_rnncells.checks import check_choice, check_input, check_positive_int, check_shape

SCORES = ("dot", "general", "concat")
QUERY = ("batch", "features")
QUERY_SEQUENCE = ("batch", "steps", "features")
MEMORY = ("batch", "source_steps", "features")


@keras.saving.register_keras_serializable(package="keras_rnncells")
class Attention(keras.layers.Layer):
    """Global attention of a query over a memory (the encoder outputs).

    For a query ``h`` (a decoder output) and memory vectors ``m_s``:

    * ``"dot"`` (Luong et al. 2015): score(h, m_s) = hᵀ m_s, query and memory
      of the same size;
    * ``"general"`` (Luong et al. 2015): score(h, m_s) = hᵀ W m_s;
    * ``"concat"`` (Bahdanau et al. 2015, additive; Luong's "concat"):
      score(h, m_s) = vᵀ tanh(W_q h + W_m m_s), with ``units`` hidden units.

    a_s = softmax_s(score(h, m_s)) over the positions where ``memory_mask`` is
    true, exactly 0 on padding; context c = Σ_s a_s m_s. A fully masked row
    (an empty source) gets all-zero weights and a zero context.

    ``call(query, memory, memory_mask=None)`` takes a query of shape
    ``(B, q)`` or ``(B, T, q)`` (every decoder step at once), memory
    ``(B, S, d)`` and a boolean mask ``(B, S)``; it returns
    ``(context, weights)`` of shapes ``(B, [T,] d)`` and ``(B, [T,] S)``.
    ``keys(memory)`` computes the query-independent part once, for decoding
    loops that attend to the same memory at every step (``call`` accepts it
    through ``keys=``).

    Luong, Pham & Manning 2015, "Effective approaches to attention-based neural
    machine translation"; Bahdanau, Cho & Bengio 2015, "Neural machine
    translation by jointly learning to align and translate".
    """

    def __init__(self, score: str = "general", units: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.score = check_choice("score", score, SCORES)
        self.units = None if units is None else check_positive_int("units", units)

    def build(self, query_shape, memory_shape, memory_mask_shape=None) -> None:
        query_dim, memory_dim = query_shape[-1], memory_shape[-1]
        self.query_dim, self.memory_dim = query_dim, memory_dim
        if self.score == "dot" and query_dim != memory_dim:
            raise ValueError(
                f"Attention score 'dot' needs the query size ({query_dim}) to equal the memory "
                f"size ({memory_dim}); use score='general' or 'concat'"
            )
        if self.score == "general":
            self.kernel = self.add_weight(name="kernel", shape=(query_dim, memory_dim))
        elif self.score == "concat":
            units = self.units or query_dim
            self.query_kernel = self.add_weight(name="query_kernel", shape=(query_dim, units))
            self.memory_kernel = self.add_weight(name="memory_kernel", shape=(memory_dim, units))
            self.score_vector = self.add_weight(name="score_vector", shape=(units,))

    def keys(self, memory):
        """The memory as the scores read it: ``memory W_m`` for concat."""
        if self.score == "concat":
            return ops.matmul(memory, self.memory_kernel)
        return memory

    def scores(self, query, keys):
        single = len(query.shape) == 2
        if single:
            query = query[:, None, :]
        if self.score == "concat":
            hidden = ops.tanh(ops.matmul(query, self.query_kernel)[:, :, None, :] + keys[:, None])
            scores = ops.sum(hidden * self.score_vector, axis=-1)
        else:
            if self.score == "general":
                query = ops.matmul(query, self.kernel)
            scores = ops.einsum("btd,bsd->bts", query, keys)
        return scores[:, 0] if single else scores

    def check_inputs(self, query, memory, memory_mask) -> None:
        """Ranks, feature sizes (as built) and the mask's shape ``(B, S)``."""
        check_input(
            self, "query", query, QUERY, QUERY_SEQUENCE, features=getattr(self, "query_dim", None)
        )
        shape = check_input(
            self, "memory", memory, MEMORY, features=getattr(self, "memory_dim", None)
        )
        if memory_mask is not None:
            check_shape(self, "memory_mask", memory_mask, shape[:2], MEMORY[:2])

    def call(self, query, memory, memory_mask=None, keys=None):
        self.check_inputs(query, memory, memory_mask)
        scores = self.scores(query, self.keys(memory) if keys is None else keys)
        if memory_mask is not None:
            mask = ops.cast(memory_mask, "bool")
            if len(scores.shape) == 3:
                mask = mask[:, None, :]
            half = keras.backend.standardize_dtype(scores.dtype) == "float16"
            lowest = ops.cast(-3e4 if half else -1e9, scores.dtype)
            weights = ops.softmax(ops.where(mask, scores, lowest), axis=-1)
            weights = ops.where(mask, weights, ops.zeros_like(weights))
        else:
            weights = ops.softmax(scores, axis=-1)
        if len(weights.shape) == 2:
            context = ops.einsum("bs,bsd->bd", weights, memory)
        else:
            context = ops.einsum("bts,bsd->btd", weights, memory)
        return context, weights

    def compute_output_spec(self, query, memory, memory_mask=None, keys=None):
        self.check_inputs(query, memory, memory_mask)
        batch_and_steps = tuple(query.shape[:-1])
        return (
            keras.KerasTensor((*batch_and_steps, memory.shape[-1]), dtype=self.compute_dtype),
            keras.KerasTensor((*batch_and_steps, memory.shape[1]), dtype=self.compute_dtype),
        )

    def get_config(self) -> dict:
        return {**super().get_config(), "score": self.score, "units": self.units}
