"""Loss terms on recurrent activations: the norm-stabilizer.

The other regularizers of recurrent cells are cell options or wrappers:
``recurrent_dropout`` and ``recurrent_dropconnect`` (every cell),
``layer_norm`` (dense-gate cells) and ``keras_rnncells.layers.wrappers.Zoneout``.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

__all__ = ["NormStabilizer", "norm_stabilizer"]

Tensor = Any


def check_beta(beta: Any) -> float:
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not beta >= 0:
        raise ValueError(f"Argument `beta` must be a float >= 0, received: {beta!r}")
    return float(beta)


def l2_norms(x: Tensor) -> Tensor:
    """Euclidean norms over the last axis, with a zero (not NaN) gradient at 0."""
    squares = ops.sum(ops.square(x), axis=-1)
    positive = squares > 0
    return ops.where(positive, ops.sqrt(ops.where(positive, squares, 1.0)), 0.0)


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
    hidden = ops.convert_to_tensor(hidden_sequence)
    if len(hidden.shape) != 3:
        raise ValueError(
            "Argument `hidden_sequence` must be of rank 3 (batch, time, units), "
            f"received shape {tuple(hidden.shape)}"
        )
    dtype = keras.backend.result_type(hidden.dtype, "float32")
    norms = l2_norms(ops.cast(hidden, dtype))
    squared_changes = ops.square(norms[:, 1:] - norms[:, :-1])
    if mask is None:
        return beta * ops.mean(squared_changes)
    mask = ops.cast(mask, "bool")
    pairs = ops.cast(ops.logical_and(mask[:, 1:], mask[:, :-1]), dtype)
    return beta * ops.sum(pairs * squared_changes) / ops.maximum(ops.sum(pairs), 1.0)


@keras.saving.register_keras_serializable(package="keras_rnncells")
class NormStabilizer(keras.layers.Layer):
    """Adds ``norm_stabilizer(inputs, beta, mask)`` to the model's losses
    (``self.add_loss``) and returns its input (and mask) unchanged. Use it after
    a recurrent layer with ``return_sequences=True``::

        x = keras_rnncells.LSTM(64, return_sequences=True)(x)
        x = NormStabilizer(beta=50.0)(x)
    """

    def __init__(self, beta: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.beta = check_beta(beta)
        self.supports_masking = True

    def call(self, inputs: Tensor, mask: Tensor | None = None) -> Tensor:
        self.add_loss(norm_stabilizer(inputs, self.beta, mask))
        return inputs

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return input_shape

    def get_config(self) -> dict:
        config = super().get_config()
        config["beta"] = self.beta
        return config
