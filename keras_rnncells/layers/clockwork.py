"""The Clockwork RNN (Koutník, Greff, Gomez & Schmidhuber 2014, "A Clockwork
RNN") over any registered cell.

The hidden state is split into modules i = 1..k of ``units`` each, module i
with period ``T_i`` (default 1, 2, 4, ..., 2^(k-1)). At step t (from 0; a
masked step is not counted), module i is active when ``t mod T_i = 0``:

    h^i_t = cell_i([x_t; h^(i+1)_(t-1); ...; h^k_(t-1)], state^i_(t-1))   if active
    state^i_t = state^i_(t-1)                                            otherwise

so a module reads the input and the slower modules only (the paper's block
upper-triangular W_H, periods ascending), and its own state through its
cell's recurrence. The output is ``[h^1_t; ...; h^k_t]``. With
``cell="simple"`` (tanh) this is the paper's CW-RNN,
``h^i_t = tanh(W_I^i x_t + Σ_(j ≥ i) W_H^(i,j) h^j_(t-1) + b^i)``. The step
count is carried as one more state, the last.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
from keras import ops

from keras_rnncells.cells.base import as_state_list
from keras_rnncells.checks import check_positive_int
from keras_rnncells.layers.compound import CompoundCell


@keras.saving.register_keras_serializable(package="keras_rnncells")
class ClockworkCell(CompoundCell):
    """Clockwork modules of ``cell`` (see the module); ``periods``: one
    positive period per module, ascending (default 1, 2, 4, 8)."""

    def __init__(
        self,
        cell: str,
        units: int,
        periods: Sequence[int] = (1, 2, 4, 8),
        cell_options: dict | None = None,
        **kwargs: Any,
    ) -> None:
        periods = [check_positive_int("periods", p) for p in periods]
        if not periods or periods != sorted(periods):
            raise ValueError(
                f"Argument `periods` must be one or more periods, ascending, received: {periods}"
            )
        super().__init__(cell, units, len(periods), cell_options, **kwargs)
        self.periods = periods
        self.output_size = units * len(periods)

    @property
    def state_size(self) -> list[int]:
        return [*super().state_size, 1]

    def build(self, input_shape: tuple) -> None:
        slower = len(self.parts) - 1
        for index, part in enumerate(self.parts):
            part.build((None, input_shape[-1] + self.units * (slower - index)))

    def call(self, inputs: Any, states: Any, training: bool = False) -> tuple:
        *states, step = states
        parts = self.split_states(states)
        new_states, outputs = [], []
        for index, (part, old) in enumerate(zip(self.parts, parts)):
            slower = [state[0] for state in parts[index + 1 :]]
            _, new = part.call(ops.concatenate([inputs, *slower], axis=-1), old, training)
            new = as_state_list(new)
            active = ops.equal(ops.mod(step, self.periods[index]), 0)
            kept = [ops.where(active, n, o) for n, o in zip(new, old)]
            new_states += kept
            outputs.append(kept[0])
        return ops.concatenate(outputs, axis=-1), [*new_states, step + 1]

    def get_config(self) -> dict:
        return {**super().get_config(), "periods": self.periods}
