"""The gated recurrent unit."""

from __future__ import annotations

from typing import Any

from keras import ops

from keras_rnncells.cells.dense_gates import GatedCell
from keras_rnncells.cells.registry import register_cell

# Keras 1 and 2's kernel choices, which keras.layers.GRUCell and LSTMCell
# accept (and ignore): so do ours.
LEGACY_IMPLEMENTATIONS = (0, 1, 2)


def pop_legacy_implementation(kwargs: dict) -> None:
    """Remove Keras' ``implementation`` from a cell's ``kwargs``: a
    ``ValueError`` unless it is one of `LEGACY_IMPLEMENTATIONS`."""
    implementation = kwargs.pop("implementation", 2)
    if implementation not in LEGACY_IMPLEMENTATIONS or isinstance(implementation, bool):
        raise ValueError(
            "Argument `implementation` of a cell is Keras' legacy kernel choice, one of "
            f"{LEGACY_IMPLEMENTATIONS} (ignored), received: {implementation!r}"
        )


@register_cell("gru")
class GRUCell(GatedCell):
    """Gated recurrent unit (Cho et al. 2014, "Learning phrase representations
    using RNN encoder-decoder for statistical machine translation").

    .. math::

        z_t &= \\sigma(W_z x_t + U_z h_{t-1} + b_z) \\\\
        r_t &= \\sigma(W_r x_t + U_r h_{t-1} + b_r) \\\\
        \\tilde h_t &= \\tanh(W_h x_t + r_t \\odot (U_h h_{t-1} + b'_h))
            \\quad\\text{(reset\\_after=True)} \\\\
        \\tilde h_t &= \\tanh(W_h x_t + U_h (r_t \\odot h_{t-1}) + b_h)
            \\quad\\text{(reset\\_after=False)} \\\\
        h_t &= z_t \\odot h_{t-1} + (1 - z_t) \\odot \\tilde h_t

    Weights: ``kernel`` (input_dim, 3 units), ``recurrent_kernel``
    (units, 3 units), column blocks ``z, r, h``; ``bias`` is (3 units,) for
    ``reset_after=False`` and (2, 3 units) for ``reset_after=True`` (row 0 input
    bias, row 1 recurrent bias ``b'``). Identical to ``keras.layers.GRUCell``.
    ``reset_after=True`` is the cuDNN form.
    """

    blocks = ("z", "r", "h")
    citation = "Cho et al. 2014, Learning phrase representations using RNN encoder-decoder"
    uses_combine = True
    cudnn_kernel = True
    onnx_op = "GRU"

    def __init__(self, units: int, reset_after: bool = True, **kwargs: Any) -> None:
        pop_legacy_implementation(kwargs)
        super().__init__(units, **kwargs)
        self.reset_after = bool(reset_after)

    def bias_shape(self):
        return (2, self.width) if self.reset_after else (self.width,)

    @property
    def input_bias(self):
        if self.bias is None or not self.reset_after:
            return self.bias
        return self.bias[0]

    def step(self, projected, states, context):
        x_z, x_r, x_h = projected
        h_prev = states[0]
        h_in = self.drop_recurrent(h_prev, context)
        if self.reset_after:
            inner = self.recurrent_matmul(h_in, context)
            if self.bias is not None:
                inner = inner + self.bias[1]
            u_z, u_r, u_h = ops.split(inner, 3, axis=-1)
            z = self.recurrent_activation(self.combine(x_z, u_z))
            r = self.recurrent_activation(self.combine(x_r, u_r))
            h_tilde = self.activation(self.combine(x_h, r * u_h))
        else:
            inner = self.recurrent_matmul(h_in, context, (0, 2 * self.units))
            u_z, u_r = ops.split(inner, 2, axis=-1)
            z = self.recurrent_activation(self.combine(x_z, u_z))
            r = self.recurrent_activation(self.combine(x_r, u_r))
            u_h = self.recurrent_matmul(r * h_in, context, (2 * self.units, 3 * self.units))
            h_tilde = self.activation(self.combine(x_h, u_h))
        h = z * h_prev + (1.0 - z) * h_tilde
        return h, [h]

    def cudnn_conflicts(self) -> list[str]:
        reset_before = [] if self.reset_after else ["reset_after=False"]
        return reset_before + super().cudnn_conflicts()

    def cudnn_loop(self, sequences, initial_state, mask, go_backwards, return_sequences):
        return self.keras_cudnn(
            "gru",
            sequences,
            initial_state[:1],
            mask,
            go_backwards,
            return_sequences,
            reset_after=True,
        )

    def get_config(self):
        config = super().get_config()
        config["reset_after"] = self.reset_after
        return config
