"""Metrics of sequence models that Keras lacks."""

from __future__ import annotations

from typing import Any

import keras

__all__ = ["TokenCrossEntropy", "TokenLossMean"]


@keras.saving.register_keras_serializable(package="keras_rnncells")
class TokenLossMean(keras.metrics.Mean):
    """The mean of per-token losses (a model's output, as
    `keras_rnncells.VocabularySoftmax` gives them with its targets) over the
    non-padding targets: that model's cross-entropy without the penalties."""

    def __init__(self, name: str = "cross_entropy", **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        weights = keras.ops.cast(keras.ops.not_equal(y_true, 0), y_pred.dtype)
        if sample_weight is not None:
            weights = weights * keras.ops.cast(sample_weight, y_pred.dtype)
        super().update_state(y_pred, sample_weight=weights)


@keras.saving.register_keras_serializable(package="keras_rnncells")
class TokenCrossEntropy(TokenLossMean):
    """The mean cross-entropy per target token (logits in, padding targets 0
    left out): the language model's loss without the penalties a model adds."""

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        losses = keras.losses.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True)
        super().update_state(y_true, losses, sample_weight)
