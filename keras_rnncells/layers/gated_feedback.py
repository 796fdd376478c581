"""The gated-feedback RNN (Chung, Gulcehre, Cho & Bengio 2015, "Gated
Feedback Recurrent Neural Networks") over any registered cell.

L stacked layers of ``units`` each, where every layer also reads every other
layer's previous state through a global reset gate. With ``x^1_t = x_t``,
``x^j_t = h^(j-1)_t`` and ``h*_(t-1) = [h^1_(t-1); ...; h^L_(t-1)]``:

    g^(i→j) = σ(w_g^(i→j) · x^j_t + u_g^(i→j) · h*_(t-1) + b_g^(i→j))      (scalars)
    h^j_t = cell_j([x^j_t; g^(1→j) h^1_(t-1); ...; g^(L→j) h^L_(t-1)]  (i ≠ j),
                   state^j_(t-1))

The cell's input kernel then holds the paper's ``U^(i→j)``, so its
pre-activations get ``Σ_(i≠j) g^(i→j) U^(i→j) h^i_(t-1)`` (for the tanh cell
this is the paper's eq. 5); a layer's own previous state goes through its
cell's recurrence, ungated (the paper gates ``i = j`` too). The output is the
top layer's ``h^L_t``.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_rnncells.cells.base import as_state_list
from keras_rnncells.checks import check_positive_int
from keras_rnncells.layers.compound import CompoundCell


@keras.saving.register_keras_serializable(package="keras_rnncells")
class GatedFeedbackCell(CompoundCell):
    """``layers`` gated-feedback layers of ``cell`` (see the module)."""

    def __init__(
        self,
        cell: str,
        units: int,
        layers: int = 3,
        cell_options: dict | None = None,
        **kwargs: Any,
    ) -> None:
        layers = check_positive_int("layers", layers)
        super().__init__(cell, units, layers, cell_options, **kwargs)
        self.depth = len(self.parts)
        self.output_size = units

    def build(self, input_shape: tuple) -> None:
        others = self.units * (self.depth - 1)
        widths = [input_shape[-1]] + [self.units] * (self.depth - 1)
        for part, width in zip(self.parts, widths):
            part.build((None, width + others))
        # One gate per (source layer i, target layer j): row j's weights.
        self.gate_kernels = [
            self.add_weight((width, self.depth), "glorot_uniform", name=f"gate_kernel_{j + 1}")
            for j, width in enumerate(widths)
        ]
        self.gate_recurrent_kernel = self.add_weight(
            (self.depth, self.units * self.depth, self.depth),
            "glorot_uniform",
            name="gate_recurrent_kernel",
        )
        self.gate_bias = self.add_weight((self.depth, self.depth), "zeros", name="gate_bias")

    def call(self, inputs: Any, states: Any, training: bool = False) -> tuple:
        parts = self.split_states(states)
        previous = [state[0] for state in parts]
        everything = ops.concatenate(previous, axis=-1)
        x, new_states = inputs, []
        for j, (part, old) in enumerate(zip(self.parts, parts)):
            gates = ops.sigmoid(
                ops.matmul(x, self.gate_kernels[j])
                + ops.matmul(everything, self.gate_recurrent_kernel[j])
                + self.gate_bias[j]
            )
            fed = [gates[:, i : i + 1] * previous[i] for i in range(self.depth) if i != j]
            x, new = part.call(ops.concatenate([x, *fed], axis=-1), old, training)
            new_states += as_state_list(new)
        return x, new_states

    def get_config(self) -> dict:
        return {**super().get_config(), "layers": self.depth}
