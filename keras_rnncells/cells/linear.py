"""Cells whose recurrence is linear in the state, with coefficients from the
inputs only: `LinearRecurrenceCell`, the base of the scan cells (MinGRU,
MinLSTM, QRNN).

Such a cell carries one state ``c`` that advances as

    c_t = a_t ⊙ c_{t-1} + b_t,    a_t, b_t functions of x_t (and x_{t-1})

and emits ``y_t``, a function of ``c_t`` and its inputs. ``step`` is that
equation, one step at a time (Keras' loop, the fused loop, streaming); the
layer's ``implementation="scan"`` computes every ``c_t`` of a sequence at once
from ``a`` and ``b`` (`keras_rnncells.layers.scan`). Both read the same three
methods of the cell, so they compute one set of equations:

* ``window_inputs(projected, carried)``: the step's projected inputs with
  the part of the previous input a window of two steps reads (QRNN's k = 2);
* ``coefficients(projected)``: ``(a, b)``;
* ``emitted(projected, c)``: ``y``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from keras import ops

from keras_rnncells.cells.context import StepContext, Tensor
from keras_rnncells.cells.dense_weights import DenseWeightsCell
from keras_rnncells.cells.projection import project_blocks


class LinearRecurrenceCell(DenseWeightsCell):
    """A cell whose state advances as ``c_t = a_t ⊙ c_{t-1} + b_t`` with
    ``a_t``, ``b_t`` from the inputs only (module docstring).

    ``activation`` is the candidate's (the block added to the state: MinGRU's
    and MinLSTM's ``h~``, QRNN's ``z``); each class sets its default.

    Weights: ``kernel`` (input_dim, len(blocks) units) and ``bias``
    (len(blocks) units,) in column blocks ``blocks``, with
    `DenseWeightsCell`'s options; no recurrent kernel.
    ``recurrent_dropout`` and ``recurrent_dropconnect`` are refused: the state
    enters the recurrence through no weight, and dropping it would make the
    coefficients depend on it.

    ``scan_ineligibility()`` answers, as ``cudnn_ineligibility()`` does for
    cuDNN, why ``implementation="scan"`` cannot run the cell (``None``: it
    can); every cell of this class can.
    """

    # Kernel rows read by the step before (a window of two steps): 0 or 1.
    window_rows: ClassVar[int] = 0
    default_activation: ClassVar[str] = "linear"

    def __init__(self, units: int, activation: Any = None, **kwargs: Any) -> None:
        super().__init__(units, activation=activation or self.default_activation, **kwargs)
        for name in ("recurrent_dropout", "recurrent_dropconnect"):
            if getattr(self, name) > 0:
                raise ValueError(
                    f"Argument `{name}` must be 0 for {type(self).__name__} (its state "
                    "enters the recurrence linearly, through no weight), received: "
                    f"{getattr(self, name)}"
                )

    # -- the contract ------------------------------------------------------------
    @property
    def state_size(self) -> int | list[int]:
        """``units`` (the linear state ``c``), then, for a window of two steps,
        the previous input's product with the window's older kernel rows."""
        return [self.units, self.width] if self.window_rows else self.units

    def build(self, input_shape: Sequence[int | None]) -> None:
        self.input_dim = input_dim = self.known_input_dim(input_shape)
        self.kernel = self.add_weight_like(
            "kernel", "kernel", ((1 + self.window_rows) * input_dim, self.width)
        )
        self.bias = self.add_weight_like("bias", "bias", (self.width,)) if self.use_bias else None
        self.built = True

    def project_inputs(self, inputs: Tensor) -> tuple:
        """``W x + b`` per block (the kernel's rows of the current step); for a
        window of two steps also ``W_prev x`` (the older rows, no bias), which
        the next step adds."""
        count = len(self.blocks)
        if not self.window_rows:
            return project_blocks(inputs, self.kernel, self.bias, count)
        older, current = self.kernel[: self.input_dim], self.kernel[self.input_dim :]
        blocks = project_blocks(inputs, current, self.bias, count)
        return (*blocks, *project_blocks(inputs, older, None, 1))

    # -- the equations -----------------------------------------------------------
    def window_inputs(self, projected: Sequence[Tensor], carried: Tensor | None) -> tuple:
        """The blocks a step's equations read: ``projected``'s, plus (for a
        window of two steps) ``carried``, the previous input's ``W_prev x``."""
        if not self.window_rows:
            return tuple(projected)
        blocks = projected[: len(self.blocks)]
        older = ops.split(carried, len(self.blocks), axis=-1)
        return tuple(x + p for x, p in zip(blocks, older))

    def coefficients(self, blocks: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
        """``(a, b)`` of ``c_t = a ⊙ c_{t-1} + b`` from a step's (or a
        sequence's) blocks (`window_inputs`)."""
        raise NotImplementedError

    def emitted(self, blocks: Sequence[Tensor], c: Tensor) -> Tensor:
        """The output ``y`` given the blocks and the new state ``c``: ``c``."""
        return c

    def step(self, projected: tuple, states: list, context: StepContext) -> tuple:
        carried = states[1] if self.window_rows else None
        blocks = self.window_inputs(projected, carried)
        a, b = self.coefficients(blocks)
        c = a * states[0] + b
        new_states = [c, projected[len(self.blocks)]] if self.window_rows else [c]
        return self.emitted(blocks, c), new_states

    # -- eligibility ----------------------------------------------------------------
    def scan_ineligibility(self) -> str | None:
        """Why ``implementation="scan"`` cannot run this cell; ``None``: it can."""
        return None
