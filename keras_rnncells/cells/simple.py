"""Elman's simple recurrent network."""

from __future__ import annotations

from typing import Any

from keras import initializers

from keras_rnncells.cells.dense_gates import DenseGatesCell
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
    uses_combine = True
    onnx_op = "RNN"

    def __init__(self, units: int, activation: Any = "tanh", **kwargs: Any) -> None:
        super().__init__(units, activation=activation, **kwargs)

    def step(self, projected, states, context):
        (x_h,) = projected
        h_prev = self.drop_recurrent(states[0], context)
        h = self.activation(self.combine(x_h, self.recurrent_matmul(h_prev, context)))
        return h, [h]


@register_cell("irnn")
class IRNNCell(SimpleRNNCell):
    """Elman cell of rectified linear units with an identity-initialized
    recurrent kernel (Le, Jaitly & Hinton 2015, "A simple way to initialize
    recurrent networks of rectified linear units").

    .. math::

        h_t = \\max(0, W x_t + U h_{t-1} + b), \\qquad
        U_0 = s I, \\quad W_0 \\sim \\mathcal N(0, 0.001^2), \\quad b_0 = 0

    ``identity_scale`` is ``s``: 1 for long-range dependencies; a small ``s``
    (the paper's scaled identity) lets the cell forget long-range effects. The
    recurrent initializer is fixed by the definition; every other argument is
    `SimpleRNNCell`'s, only the defaults differ (``activation="relu"``,
    ``kernel_initializer`` N(0, 0.001²) as in the paper's experiments).

    Weights: exactly `SimpleRNNCell`'s, ``kernel`` (input_dim, units),
    ``recurrent_kernel`` (units, units), ``bias`` (units,): one block, ``h``.
    """

    citation = (
        "Le, Jaitly & Hinton 2015, A simple way to initialize recurrent networks "
        "of rectified linear units"
    )

    def __init__(
        self,
        units: int,
        activation: Any = "relu",
        identity_scale: float = 1.0,
        kernel_initializer: Any = None,
        **kwargs: Any,
    ) -> None:
        if "recurrent_initializer" in kwargs:
            raise ValueError(
                "Argument `recurrent_initializer` is fixed for IRNNCell (identity_scale * "
                "identity); use SimpleRNNCell for another recurrent initializer"
            )
        scale = identity_scale
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0 < scale < 1e30:
            raise ValueError(
                f"Argument `identity_scale` must be a positive float, received: {scale!r}"
            )
        if kernel_initializer is None:
            kernel_initializer = initializers.RandomNormal(stddev=0.001)
        super().__init__(
            units,
            activation=activation,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=initializers.Identity(gain=float(scale)),
            **kwargs,
        )
        self.identity_scale = float(scale)

    def get_config(self):
        config = super().get_config()
        del config["recurrent_initializer"]
        config["identity_scale"] = self.identity_scale
        return config
