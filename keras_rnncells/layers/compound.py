"""A cell made of several cells of one registered kind, each of ``units``:
what `ClockworkCell` (modules) and `GatedFeedbackCell` (layers) share. The
compound's state is its parts' states in order, flattened; each part's
output must be its first state (every registered cell but SCRN), so that a
part's last output can be read from the state."""

from __future__ import annotations

from typing import Any

import keras

from keras_rnncells.cells.base import as_state_list
from keras_rnncells.cells.registry import make_cell
from keras_rnncells.checks import check_positive_int

Tensor = Any


class CompoundCell(keras.layers.Layer):
    """``count`` cells ``cell`` (a registered name) of ``units`` each, with
    ``cell_options``; run it with `keras_rnncells.RNN` or ``keras.layers.RNN``
    (Keras' loop)."""

    def __init__(
        self,
        cell: str,
        units: int,
        count: int,
        cell_options: dict | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.cell = cell
        self.units = check_positive_int("units", units)
        self.cell_options = dict(cell_options or {})
        self.parts = [
            make_cell(cell, units, self.cell_options | {"dtype": self.dtype_policy})
            for _ in range(check_positive_int("count", count))
        ]
        part = self.parts[0]
        if part.output_size != as_state_list(part.state_size)[0]:
            raise ValueError(
                f"Argument `cell` must name a cell whose output is its first state, "
                f"received: {cell!r} (output {part.output_size}, states {part.state_size})"
            )
        self.part_sizes = [as_state_list(p.state_size) for p in self.parts]

    @property
    def state_size(self) -> list[int]:
        return [size for sizes in self.part_sizes for size in sizes]

    def split_states(self, states: Any) -> list[list[Tensor]]:
        """The flat ``states`` as one list per part."""
        states, parts = list(states), []
        for sizes in self.part_sizes:
            parts.append(states[: len(sizes)])
            states = states[len(sizes) :]
        return parts

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "cell": self.cell,
            "units": self.units,
            "cell_options": self.cell_options,
        }
