"""The minimal gated unit."""

from __future__ import annotations

from typing import Any

from keras import ops

from keras_rnncells.cells.dense_gates import GatedCell
from keras_rnncells.cells.registry import register_cell


@register_cell("mgu")
class MGUCell(GatedCell):
    """Minimal gated unit (Zhou, Wu, Zhang & Zhou 2016, "Minimal gated unit for
    recurrent neural networks"): a GRU whose update and reset gates are one
    forget gate.

    .. math::

        f_t &= \\sigma(W_f x_t + U_f h_{t-1} + b_f) \\\\
        \\tilde h_t &= \\tanh(W_h x_t + U_h (f_t \\odot h_{t-1}) + b_h) \\\\
        h_t &= (1 - f_t) \\odot h_{t-1} + f_t \\odot \\tilde h_t

    ``reset_after=True`` uses ``f_t ⊙ (U_h h_{t-1})`` in place of
    ``U_h (f_t ⊙ h_{t-1})`` (as the GRU's reset-after form), so both recurrent
    matmuls fuse into one per step; the published form is the default.

    Weights: ``kernel`` (input_dim, 2 units), ``recurrent_kernel``
    (units, 2 units), ``bias`` (2 units,), column blocks ``f, h``: 2/3 of a
    GRU's (``reset_after=False``) parameters.
    """

    blocks = ("f", "h")
    citation = "Zhou et al. 2016, Minimal gated unit for recurrent neural networks"

    def __init__(self, units: int, reset_after: bool = False, **kwargs: Any) -> None:
        super().__init__(units, **kwargs)
        self.reset_after = bool(reset_after)

    def step(self, projected, states, context):
        x_f, x_h = projected
        h_prev = states[0]
        h_in = self.drop_recurrent(h_prev, context)
        if self.reset_after:
            u_f, u_h = ops.split(self.recurrent_matmul(h_in, context), 2, axis=-1)
            f = self.recurrent_activation(x_f + u_f)
            h_tilde = self.activation(x_h + f * u_h)
        else:
            u_f = self.recurrent_matmul(h_in, context, (0, self.units))
            f = self.recurrent_activation(x_f + u_f)
            u_h = self.recurrent_matmul(f * h_in, context, (self.units, 2 * self.units))
            h_tilde = self.activation(x_h + u_h)
        h = h_prev + f * (h_tilde - h_prev)
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config["reset_after"] = self.reset_after
        return config
