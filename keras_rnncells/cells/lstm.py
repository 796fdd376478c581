"""Long short-term memory."""

from __future__ import annotations

from typing import Any

from keras import ops

from keras_rnncells.cells.dense_gates import GatedCell
from keras_rnncells.cells.gru import pop_legacy_implementation
from keras_rnncells.cells.registry import register_cell


@register_cell("lstm")
class LSTMCell(GatedCell):
    """Long short-term memory with a forget gate (Hochreiter & Schmidhuber 1997,
    "Long short-term memory"; forget gate: Gers et al. 2000).

    .. math::

        i_t &= \\sigma(W_i x_t + U_i h_{t-1} + b_i) \\\\
        f_t &= \\sigma(W_f x_t + U_f h_{t-1} + b_f) \\\\
        \\tilde c_t &= \\tanh(W_c x_t + U_c h_{t-1} + b_c) \\\\
        o_t &= \\sigma(W_o x_t + U_o h_{t-1} + b_o) \\\\
        c_t &= f_t \\odot c_{t-1} + i_t \\odot \\tilde c_t \\\\
        h_t &= o_t \\odot \\tanh(c_t)

    States ``[h, c]``, output ``h``. Weights: ``kernel`` (input_dim, 4 units),
    ``recurrent_kernel`` (units, 4 units), ``bias`` (4 units,), column blocks
    ``i, f, c, o``: identical to ``keras.layers.LSTMCell``.
    ``unit_forget_bias=True`` initializes ``b_f`` to 1 (Jozefowicz et al. 2015).
    ``batch_norm=True``: recurrent batch normalization, ``tanh(BN(c_t))`` in
    ``h_t`` (`DenseGatesCell`; the step index is then a third state).
    """

    blocks = ("i", "f", "c", "o")
    citation = "Hochreiter & Schmidhuber 1997, Long short-term memory; Gers et al. 2000"
    uses_combine = True
    normalizes_cell_state = True
    cudnn_kernel = True
    onnx_op = "LSTM"

    def __init__(self, units: int, unit_forget_bias: bool = True, **kwargs: Any) -> None:
        pop_legacy_implementation(kwargs)
        super().__init__(units, **kwargs)
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def step_state_size(self):
        return [self.units, self.units]

    def bias_init(self, shape, dtype=None):
        if not self.unit_forget_bias:
            return super().bias_init(shape, dtype)
        n = self.units
        return ops.concatenate(
            [
                self.bias_initializer((n,), dtype=dtype),
                ops.ones((n,), dtype=dtype),
                self.bias_initializer((2 * n,), dtype=dtype),
            ]
        )

    def step(self, projected, states, context):
        h_prev, c_prev = states[0], states[1]
        inner = self.recurrent_matmul(self.drop_recurrent(h_prev, context), context)
        u_i, u_f, u_c, u_o = ops.split(inner, 4, axis=-1)
        x_i, x_f, x_c, x_o = projected
        i = self.recurrent_activation(self.combine(x_i, u_i))
        f = self.recurrent_activation(self.combine(x_f, u_f))
        o = self.recurrent_activation(self.combine(x_o, u_o))
        c = f * c_prev + i * self.activation(self.combine(x_c, u_c))
        h = o * self.activation(self.normalize_cell_state(c, context))
        return h, [h, c]

    def cudnn_loop(self, sequences, initial_state, mask, go_backwards, return_sequences):
        return self.keras_cudnn(
            "lstm", sequences, initial_state[:2], mask, go_backwards, return_sequences
        )

    def get_config(self):
        config = super().get_config()
        config["unit_forget_bias"] = self.unit_forget_bias
        return config
