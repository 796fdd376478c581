"""The depth-gated LSTM (Yao, Cohn, Vylomova, Duh & Dyer 2015, "Depth-Gated
LSTM"; the highway LSTM of Zhang et al. 2016, "Highway Long Short-Term Memory
RNNs for Distant Speech Recognition", has the same connection): stacked LSTM
layers whose memory cells are joined across depth by a gate.

With ``x^1_t = x_t``, ``x^(j+1)_t = h^j_t`` and the LSTM gates of layer j
(``i, f, o`` sigmoid, ``g`` tanh, from ``x^j_t`` and ``h^j_(t-1)``):

    d^j_t = σ(b_d + W_d x^j_t + w_cd ⊙ c^j_(t-1) + w_ld ⊙ c^(j-1)_t)     (j ≥ 2)
    c^j_t = f ⊙ c^j_(t-1) + i ⊙ g + d^j_t ⊙ c^(j-1)_t
    h^j_t = o ⊙ tanh(c^j_t)

The first layer is a plain LSTM (no layer below). The output is the top
layer's ``h``. Each layer's weights are a `keras_rnncells.LSTMCell`'s
(``kernel``, ``recurrent_kernel``, ``bias`` in blocks i, f, c, o).
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_rnncells.checks import check_positive_int
from keras_rnncells.layers.compound import CompoundCell


@keras.saving.register_keras_serializable(package="keras_rnncells")
class DepthGatedLSTMCell(CompoundCell):
    """``layers`` depth-gated LSTM layers of ``units`` (see the module)."""

    def __init__(self, units: int, layers: int = 2, **kwargs: Any) -> None:
        layers = check_positive_int("layers", layers)
        kwargs.pop("cell", None)  # a config's: always "lstm"
        kwargs.pop("cell_options", None)
        super().__init__("lstm", units, layers, **kwargs)
        self.depth = layers
        self.output_size = units

    def build(self, input_shape: tuple) -> None:
        widths = [input_shape[-1]] + [self.units] * (self.depth - 1)
        for part, width in zip(self.parts, widths):
            part.build((None, width))
        self.depth_kernels = [
            self.add_weight((width, self.units), "glorot_uniform", name=f"depth_kernel_{j + 1}")
            for j, width in enumerate(widths[1:], 1)
        ]
        self.depth_weights = self.add_weight(
            (max(self.depth - 1, 1), 3, self.units), "zeros", name="depth_weights"
        )  # per gated layer: w_cd, w_ld, b_d

    def call(self, inputs: Any, states: Any, training: bool = False) -> tuple:
        x, below, new_states = inputs, None, []
        for j, (part, (h_prev, c_prev)) in enumerate(zip(self.parts, self.split_states(states))):
            z = ops.matmul(x, part.kernel) + ops.matmul(h_prev, part.recurrent_kernel) + part.bias
            i, f, g, o = ops.split(z, 4, axis=-1)
            c = ops.sigmoid(f) * c_prev + ops.sigmoid(i) * ops.tanh(g)
            if below is not None:
                w_cd, w_ld, b_d = (self.depth_weights[j - 1, k] for k in range(3))
                d = ops.sigmoid(
                    b_d + ops.matmul(x, self.depth_kernels[j - 1]) + w_cd * c_prev + w_ld * below
                )
                c = c + d * below
            x, below = ops.sigmoid(o) * ops.tanh(c), c
            new_states += [x, c]
        return x, new_states

    def get_config(self) -> dict:
        config = super().get_config()
        for key in ("cell", "cell_options"):
            config.pop(key)
        return {**config, "layers": self.depth}
