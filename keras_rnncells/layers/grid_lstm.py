"""A 2-D Grid LSTM along time and depth (Kalchbrenner, Danihelka & Graves
2015, "Grid Long Short-Term Memory", §3).

Each block (layer d, step t) has two LSTM transforms, one per axis, that
read the same ``H = [h^time_d; h^depth_(d-1)]``: the layer's hidden vector
from step t-1 and the one coming up from the block below at step t. For each
axis a with memory ``m^a``:

    [i; f; o; g] = W^a_d H + b^a_d
    m'^a = σ(f) ⊙ m^a + σ(i) ⊙ tanh(g),    h'^a = σ(o) ⊙ tanh(m'^a)

The time axis's ``(h', m')`` is layer d's state for step t+1; the depth
axis's goes up to layer d+1 (with a memory of its own, so depth gets the
LSTM's gating as time does). At the bottom, ``h^depth_0 = W_in x_t`` and
``m^depth_0 = 0``. The output is the top block's depth ``h'``.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_rnncells.cells.projection import forget_bias_initializer
from keras_rnncells.checks import check_positive_int

AXES = ("time", "depth")


def lstm_transform(gates: Any, memory: Any) -> tuple[Any, Any]:
    """The LSTM of one axis on its pre-activations (blocks i, f, o, g)."""
    i, f, o, g = ops.split(gates, 4, axis=-1)
    memory = ops.sigmoid(f) * memory + ops.sigmoid(i) * ops.tanh(g)
    return ops.sigmoid(o) * ops.tanh(memory), memory


@keras.saving.register_keras_serializable(package="keras_rnncells")
class GridLSTMCell(keras.layers.Layer):
    """``layers`` blocks of ``units`` on the depth axis of a 2-D Grid LSTM
    (see the module); run it with `keras_rnncells.RNN` (Keras' loop).
    State: per layer its time axis's ``[h, m]``."""

    def __init__(self, units: int, layers: int = 2, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.depth = check_positive_int("layers", layers)
        self.state_size = [self.units] * (2 * self.depth)
        self.output_size = self.units

    def build(self, input_shape: tuple) -> None:
        self.input_kernel = self.add_weight(
            (input_shape[-1], self.units), "glorot_uniform", name="input_kernel"
        )
        bias = forget_bias_initializer(self.units, 4, (1,))
        self.kernels = {
            axis: self.add_weight(
                (self.depth, 2 * self.units, 4 * self.units),
                "glorot_uniform",
                name=f"{axis}_kernel",
            )
            for axis in AXES
        }
        self.biases = {
            axis: self.add_weight(
                (self.depth, 4 * self.units),
                lambda shape, dtype=None: ops.tile(bias((shape[1],), dtype)[None], (shape[0], 1)),
                name=f"{axis}_bias",
            )
            for axis in AXES
        }

    def call(self, inputs: Any, states: Any, training: bool = False) -> tuple:
        up = ops.matmul(inputs, self.input_kernel)
        up_memory = ops.zeros_like(up)
        new_states = []
        for d in range(self.depth):
            h_time, m_time = states[2 * d], states[2 * d + 1]
            grid_input = ops.concatenate([h_time, up], axis=-1)
            pre = {
                axis: ops.matmul(grid_input, self.kernels[axis][d]) + self.biases[axis][d]
                for axis in AXES
            }
            new_states += list(lstm_transform(pre["time"], m_time))
            up, up_memory = lstm_transform(pre["depth"], up_memory)
        return up, new_states

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units, "layers": self.depth}
