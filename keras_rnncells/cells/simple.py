"""Elman's simple recurrent network."""

from __future__ import annotations

from typing import Any

from keras import ops

from keras_rnncells.cells.base import DenseGatesCell
from keras_rnncells.cells.registry import register_cell


@register_cell("simple")
class SimpleRNNCell(DenseGatesCell):
    """Elman recurrent cell (Elman 1990, "Finding structure in time").

    .. math::

        h_t = \\phi(W x_t + U h_{t-1} + b)

    with ``phi = activation`` (tanh by default, any Keras activation).

    Weights: ``kernel`` (input_dim, units), ``recurrent_kernel`` (units, units),
    ``bias`` (units,): one block, ``h``. Identical to ``keras.layers.SimpleRNNCell``,
    so its weights load unchanged.
    """

    blocks = ("h",)
    citation = "Elman 1990, Finding structure in time"

    def __init__(self, units: int, activation: Any = "tanh", **kwargs: Any) -> None:
        kwargs.pop("recurrent_activation", None)
        super().__init__(units, activation=activation, **kwargs)

    def step(self, projected, states, training=False):
        (x_h,) = projected
        h_prev = self.drop_recurrent(states[0], training)
        h = self.activation(x_h + ops.matmul(h_prev, self.recurrent_kernel))
        return h, [h]

    def get_config(self):
        config = super().get_config()
        del config["recurrent_activation"]
        return config
