"""The simple gated unit and the deep simple gated unit."""

from __future__ import annotations

from typing import Any

from keras import activations

from keras_rnncells.cells.context import StepContext, Tensor
from keras_rnncells.cells.dense_gates import GatedCell
from keras_rnncells.cells.registry import register_cell
from keras_rnncells.checks import check_keras_object


@register_cell("sgu")
class SGUCell(GatedCell):
    """Simple gated unit (Gao & Glowacka 2016, "Deep gate recurrent neural
    network"): one multiplicative gate, one update gate.

    .. math::

        x_g &= W_{xh} x_t + b_g \\\\
        z_g &= \\sigma_1(W_{zxh} (x_g \\odot h_{t-1})) \\\\
        z_{out} &= \\sigma_2(z_g \\odot h_{t-1}) \\\\
        z_t &= \\sigma_3(W_{xz} x_t + b_z + W_{hz} h_{t-1}) \\\\
        h_t &= (1 - z_t) \\odot h_{t-1} + z_t \\odot z_{out}

    with ``σ1 = activation`` (tanh), ``σ2 = output_activation`` (softplus) and
    ``σ3 = recurrent_activation`` (hard sigmoid). The equations are the
    paper's; these defaults for σ1-σ3 are those of the public SGU/DSGU
    implementations (Chainer's, among others), the paper's own text on them
    not having been checked here. Keras 3's hard sigmoid is
    ``clip(x / 6 + 1/2, 0, 1)``; Theano's of 2016 was ``clip(0.2 x + 1/2, 0, 1)``
    (pass a callable for it). Recurrent dropout drops ``h_{t-1}`` where it
    enters ``z_g``, ``z_{out}`` and ``z_t``, never in the carried
    ``(1 - z_t) ⊙ h_{t-1}``.

    Weights: ``kernel`` (input_dim, 2 units), column blocks ``g, z``
    (``W_xh, W_xz``); ``recurrent_kernel`` (units, 2 units), blocks ``g, z``
    (``W_zxh, W_hz``); ``bias`` (2 units,), blocks ``g, z`` (``b_g, b_z``).
    """

    blocks = ("g", "z")
    citation = "Gao & Glowacka 2016, Deep gate recurrent neural network"

    def __init__(
        self,
        units: int,
        output_activation: Any = "softplus",
        recurrent_activation: Any = "hard_sigmoid",
        **kwargs: Any,
    ) -> None:
        super().__init__(units, recurrent_activation=recurrent_activation, **kwargs)
        self.output_activation = check_keras_object(
            "output_activation", output_activation, activations.get
        )

    def output_preactivation(self, gated: Tensor, context: StepContext) -> Tensor:
        """What ``σ2`` receives, given ``z_g ⊙ h_{t-1}``."""
        return gated

    def step(self, projected, states, context):
        x_g, x_z = projected
        h_prev = states[0]
        h_in = self.drop_recurrent(h_prev, context)
        units = self.units
        z_g = self.activation(self.recurrent_matmul(x_g * h_in, context, (0, units)))
        z_out = self.output_activation(self.output_preactivation(z_g * h_in, context))
        u_z = self.recurrent_matmul(h_in, context, (units, 2 * units))
        z = self.recurrent_activation(x_z + u_z)
        h = h_prev + z * (z_out - h_prev)
        return h, [h]

    def get_config(self) -> dict:
        config = super().get_config()
        config["output_activation"] = activations.serialize(self.output_activation)
        return config


@register_cell("dsgu")
class DSGUCell(SGUCell):
    """Deep simple gated unit (Gao & Glowacka 2016, "Deep gate recurrent neural
    network"): the SGU with a matmul ``W_go`` before its output activation.

    .. math::

        x_g &= W_{xh} x_t + b_g \\\\
        z_g &= \\sigma_1(W_{zxh} (x_g \\odot h_{t-1})) \\\\
        z_{out} &= \\sigma_2(W_{go} (z_g \\odot h_{t-1})) \\\\
        z_t &= \\sigma_3(W_{xz} x_t + b_z + W_{hz} h_{t-1}) \\\\
        h_t &= (1 - z_t) \\odot h_{t-1} + z_t \\odot z_{out}

    with ``σ1 = activation`` (tanh), ``σ2 = output_activation`` (sigmoid) and
    ``σ3 = recurrent_activation`` (hard sigmoid; see ``SGUCell`` on its slope
    and on recurrent dropout).

    Weights: ``kernel`` (input_dim, 2 units), column blocks ``g, z``
    (``W_xh, W_xz``); ``recurrent_kernel`` (units, 3 units), blocks ``g, z, o``
    (``W_zxh, W_hz, W_go``); ``bias`` (2 units,), blocks ``g, z`` (``b_g, b_z``).
    """

    def __init__(self, units: int, output_activation: Any = "sigmoid", **kwargs: Any) -> None:
        super().__init__(units, output_activation=output_activation, **kwargs)

    def recurrent_kernel_shape(self) -> tuple[int, ...]:
        return (self.units, (len(self.blocks) + 1) * self.units)

    def output_preactivation(self, gated, context):
        return self.recurrent_matmul(gated, context, (2 * self.units, 3 * self.units))
