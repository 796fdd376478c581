"""Loss terms on recurrent activations: the norm-stabilizer and temporal coherence.

Both penalize the change between consecutive hidden states of a sequence
(batch, time, units), averaged over its pairs of consecutive steps (with a
mask, over the pairs whose two steps are unmasked): ``norm_stabilizer`` the
change of the L2 norm, ``temporal_coherence`` the squared distance. Each comes
as a function and as a layer that adds it to the model's losses
(``NormStabilizer``, ``TemporalCoherence``).

The other regularizers of recurrent cells are cell options or wrappers:
``recurrent_dropout`` and ``recurrent_dropconnect`` (every cell),
``layer_norm`` (dense-gate cells) and ``keras_rnncells.layers.wrappers.Zoneout``;
``keras_rnncells.layers.word_dropout.WordDropout`` drops whole input tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
from keras import ops

__all__ = ["NormStabilizer", "TemporalCoherence", "norm_stabilizer", "temporal_coherence"]

Tensor = Any


def check_beta(beta: Any, name: str = "beta") -> float:
    """``beta`` as a float, or a ValueError naming argument ``name``."""
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not beta >= 0:
        raise ValueError(f"Argument `{name}` must be a float >= 0, received: {beta!r}")
    return float(beta)


def l2_norms(x: Tensor) -> Tensor:
    """Euclidean norms over the last axis, with a zero (not NaN) gradient at 0."""
    squares = ops.sum(ops.square(x), axis=-1)
    positive = squares > 0
    return ops.where(positive, ops.sqrt(ops.where(positive, squares, 1.0)), 0.0)


def float_sequence(hidden_sequence: Tensor) -> Tensor:
    """``hidden_sequence`` (batch, time, units) as a tensor of at least float32."""
    hidden = ops.convert_to_tensor(hidden_sequence)
    if len(hidden.shape) != 3:
        raise ValueError(
            "Argument `hidden_sequence` must be of rank 3 (batch, time, units), "
            f"received shape {tuple(hidden.shape)}"
        )
    return ops.cast(hidden, keras.backend.result_type(hidden.dtype, "float32"))


def mean_over_pairs(per_pair: Tensor, mask: Tensor | None) -> Tensor:
    """The mean of ``per_pair`` (batch, time - 1), one value per pair of
    consecutive steps; with ``mask`` (batch, time), over the pairs whose two
    steps are unmasked. 0 when there is none (a sequence of one step)."""
    if mask is None:
        pairs = ops.ones_like(per_pair)
    else:
        mask = ops.cast(mask, "bool")
        pairs = ops.cast(ops.logical_and(mask[:, 1:], mask[:, :-1]), per_pair.dtype)
    return ops.sum(pairs * per_pair) / ops.maximum(ops.sum(pairs), 1.0)


def norm_stabilizer(hidden_sequence: Tensor, beta: float, mask: Tensor | None = None) -> Tensor:
    """The norm-stabilizer penalty (Krueger & Memisevic 2016, "Regularizing RNNs
    by stabilizing activations"):

    .. math::

        \\beta \\cdot \\frac{1}{T} \\sum_t (\\lVert h_t \\rVert_2 - \\lVert h_{t-1} \\rVert_2)^2

    averaged over the pairs of consecutive steps of ``hidden_sequence``
    (batch, time, units) and over the batch; with ``mask`` (batch, time), over
    the pairs whose two steps are unmasked (0 when there is none). Computed in
    at least float32.
    """
    beta = check_beta(beta)
    norms = l2_norms(float_sequence(hidden_sequence))
    return beta * mean_over_pairs(ops.square(norms[:, 1:] - norms[:, :-1]), mask)


def temporal_coherence(hidden_sequence: Tensor, beta: float, mask: Tensor | None = None) -> Tensor:
    """The temporal-coherence (slowness) penalty (Jonschkowski & Brock 2015,
    "Learning state representations with robotic priors"):

    .. math::

        \\beta \\cdot \\frac{1}{T} \\sum_t \\lVert h_t - h_{t-1} \\rVert_2^2

    averaged over the pairs of consecutive steps of ``hidden_sequence``
    (batch, time, units) and over the batch; with ``mask`` (batch, time), over
    the pairs whose two steps are unmasked (0 when there is none). Computed in
    at least float32.
    """
    beta = check_beta(beta)
    hidden = float_sequence(hidden_sequence)
    squared_steps = ops.sum(ops.square(hidden[:, 1:] - hidden[:, :-1]), axis=-1)
    return beta * mean_over_pairs(squared_steps, mask)


class PenaltyLayer(keras.layers.Layer):
    """Adds ``penalty(inputs, beta, mask)`` to the model's losses
    (``self.add_loss``) and returns its input (and mask) unchanged. Subclasses
    name their ``penalty``."""

    penalty: Callable[[Tensor, float, Tensor | None], Tensor]

    def __init__(self, beta: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.beta = check_beta(beta)
        self.supports_masking = True

    def call(self, inputs: Tensor, mask: Tensor | None = None) -> Tensor:
        self.add_loss(self.penalty(inputs, self.beta, mask))
        return inputs

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return input_shape

    def get_config(self) -> dict:
        config = super().get_config()
        config["beta"] = self.beta
        return config


@keras.saving.register_keras_serializable(package="keras_rnncells")
class NormStabilizer(PenaltyLayer):
    """Adds ``norm_stabilizer(inputs, beta, mask)`` to the model's losses
    (``self.add_loss``) and returns its input (and mask) unchanged. Use it after
    a recurrent layer with ``return_sequences=True``::

        x = keras_rnncells.LSTM(64, return_sequences=True)(x)
        x = NormStabilizer(beta=50.0)(x)
    """

    penalty = staticmethod(norm_stabilizer)


@keras.saving.register_keras_serializable(package="keras_rnncells")
class TemporalCoherence(PenaltyLayer):
    """Adds ``temporal_coherence(inputs, beta, mask)``, the penalty
    β · mean_t ‖h_t − h_{t−1}‖² of Jonschkowski & Brock 2015 ("Learning state
    representations with robotic priors"), to the model's losses
    (``self.add_loss``) and returns its input (and mask) unchanged. Use it after
    a recurrent layer with ``return_sequences=True``::

        x = keras_rnncells.GRU(64, return_sequences=True)(x)
        x = TemporalCoherence(beta=0.1)(x)
    """

    penalty = staticmethod(temporal_coherence)
