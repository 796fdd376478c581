"""Word dropout: whole tokens of a sequence dropped in training."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_rnncells.checks import (
    check_choice,
    check_input,
    check_positive_int,
    check_rate,
    check_seed,
)

__all__ = ["WordDropout"]

Tensor = Any

MODES = ("unknown", "zero", "mean")
# What each mode reads: the kind of dtype, its test, the layout of the input.
TOKEN_IDS = ("batch", "time")
TOKEN_VECTORS = ("batch", "time", "features")
INPUTS = {
    "unknown": ("integer token ids", keras.backend.is_int_dtype, TOKEN_IDS),
    "zero": ("float token vectors", keras.backend.is_float_dtype, TOKEN_VECTORS),
    "mean": ("float token vectors", keras.backend.is_float_dtype, TOKEN_VECTORS),
}


def check_unknown_id(mode: str, unknown_id: Any) -> int | None:
    """The [UNK] id: a positive integer in mode ``"unknown"``, ``None`` in the others."""
    if mode != "unknown":
        if unknown_id is not None:
            raise ValueError(
                f"Argument `unknown_id` must be None in mode {mode!r} (only mode 'unknown' "
                f"uses it), received: {unknown_id!r}"
            )
        return None
    if unknown_id is None:
        raise ValueError(
            "Argument `unknown_id` is required in mode 'unknown': the id of the [UNK] token, "
            "a positive integer; received: None"
        )
    return check_positive_int("unknown_id", unknown_id)


@keras.saving.register_keras_serializable(package="keras_rnncells")
class WordDropout(keras.layers.Layer):
    """Word dropout (Iyyer et al. 2015, "Deep unordered composition rivals
    syntactic methods for text classification"; Dai & Le 2015, "Semi-supervised
    sequence learning"; Bowman et al. 2016, "Generating sentences from a
    continuous space"): in training, each token ``x[b, t]`` of a sequence is
    dropped with probability ``rate``, independently of the others
    (``d[b, t] ~ Bernoulli(rate)``), and replaced whole:

    .. math::

        y_{b,t} = \\begin{cases} r_b & \\text{if } d_{b,t} \\text{ and } m_{b,t} \\\\
                                 x_{b,t} & \\text{otherwise} \\end{cases}

    where ``m[b, t]`` says the token is there (not padding) and the replacement
    ``r[b]`` depends on ``mode``:

    - ``"unknown"``, over integer token ids (batch, time), before the
      embedding: ``r = unknown_id``, the id of the [UNK] token (required).
      ``m[b, t]``: the id is not the padding id 0 (and the step is unmasked,
      where a Keras mask comes in), so padding stays 0.
    - ``"zero"``, over float token vectors (batch, time, features), after the
      embedding: ``r = 0``, the whole vector.
    - ``"mean"``, over float token vectors: ``r[b]`` is the mean vector of
      sequence ``b`` before any drop, ``sum_t m[b, t] x[b, t] / max(1, sum_t
      m[b, t])``, taken in at least float32 (gradients flow through it).

    Over vectors, ``m[b, t]`` is the incoming Keras mask (every step where
    none comes in). The drop decision is one per token: a dropped token's
    whole vector is replaced, never single features. Tokens are replaced, not
    scaled: unlike ``keras.layers.Dropout``, the kept ones are not multiplied
    by ``1 / (1 - rate)``. At inference (``training=False``) the layer is the
    identity. The mask, if any, passes through unchanged.

    The draws come from a ``keras.random.SeedGenerator(seed)``: a layer built
    with the same ``seed`` drops the same tokens. Use it on token ids, or after
    an ``Embedding(mask_zero=True)``::

        ids = WordDropout(0.1, mode="unknown", unknown_id=1)(ids)
        vectors = WordDropout(0.1, mode="mean")(keras.layers.Embedding(...)(ids))
    """

    def __init__(
        self,
        rate: float,
        mode: str = "zero",
        unknown_id: int | None = None,
        seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.rate = check_rate("rate", rate)
        self.mode = check_choice("mode", mode, MODES)
        self.unknown_id = check_unknown_id(mode, unknown_id)
        self.seed = None if seed is None else check_seed("seed", seed)
        self.seed_generator = keras.random.SeedGenerator(self.seed)
        self.supports_masking = True

    def check_inputs(self, inputs: Tensor) -> None:
        """Raises a ``ValueError`` unless ``inputs`` are what ``mode`` reads."""
        expected, test, layout = INPUTS[self.mode]
        dtype = keras.backend.standardize_dtype(inputs.dtype)
        if not test(dtype):
            raise ValueError(
                f"Argument `mode` of layer {self.name!r} is {self.mode!r}, which reads "
                f"{expected} ({', '.join(layout)}), received dtype {dtype}"
            )
        check_input(self, "inputs", inputs, layout)

    def call(self, inputs: Tensor, training: bool = False, mask: Tensor | None = None) -> Tensor:
        self.check_inputs(inputs)
        if not training or self.rate == 0:
            return inputs
        present = (
            ops.ones(ops.shape(inputs)[:2], "bool") if mask is None else ops.cast(mask, "bool")
        )
        if self.mode == "unknown":
            present = ops.logical_and(present, ops.not_equal(inputs, 0))
        draws = keras.random.uniform(ops.shape(inputs)[:2], seed=self.seed_generator)
        dropped = ops.logical_and(draws < self.rate, present)
        if self.mode == "unknown":
            return ops.where(dropped, ops.cast(self.unknown_id, inputs.dtype), inputs)
        if self.mode == "zero":
            replacement = ops.zeros_like(inputs)
        else:
            replacement = self.sequence_means(inputs, present)
        return ops.where(ops.expand_dims(dropped, -1), replacement, inputs)

    @staticmethod
    def sequence_means(vectors: Tensor, present: Tensor) -> Tensor:
        """The mean of ``vectors`` (batch, time, features) over the steps of
        each sequence where ``present`` (batch, time), as (batch, 1, features)
        of ``vectors``' dtype; 0 for a sequence with none."""
        dtype = keras.backend.result_type(vectors.dtype, "float32")
        weights = ops.expand_dims(ops.cast(present, dtype), -1)
        total = ops.sum(ops.cast(vectors, dtype) * weights, axis=1, keepdims=True)
        count = ops.maximum(ops.sum(weights, axis=1, keepdims=True), 1.0)
        return ops.cast(total / count, vectors.dtype)

    def compute_mask(self, inputs: Tensor, mask: Tensor | None = None) -> Tensor | None:
        return mask

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(rate=self.rate, mode=self.mode, unknown_id=self.unknown_id, seed=self.seed)
        return config
