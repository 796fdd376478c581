"""Wrapper cells: a cell around another cell, usable on every path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
from keras import ops

from keras_rnncells.cells.base import AbstractRNNCell, States, as_state_list
from keras_rnncells.cells.context import RecurrentMasks, StepContext, Tensor
from keras_rnncells.cells.projection import Columns
from keras_rnncells.checks import check_rate

__all__ = ["CellWrapper", "Zoneout"]


def delegated(name: str) -> property:
    """A read-only property: the wrapped cell's attribute ``name``."""
    return property(lambda self: getattr(self.cell, name), doc=f"The wrapped cell's `{name}`.")


class CellWrapper(AbstractRNNCell):
    """An ``AbstractRNNCell`` around ``cell``, with no weights, dropout or masks
    of its own: state and output sizes, input projection, step, dropout and the
    recurrent masks are ``cell``'s: ``step`` is ``cell.advance`` (so that
    what the cell adds around its step, such as the batch-norm step index,
    runs). Subclasses change ``step_inputs`` and ``step``. The dtype policy
    defaults to ``cell``'s."""

    def __init__(self, cell: AbstractRNNCell, **kwargs: Any) -> None:
        if not isinstance(cell, AbstractRNNCell):
            raise ValueError(
                f"Argument `cell` of {type(self).__name__} must be a "
                f"keras_rnncells.AbstractRNNCell, received: {cell!r}"
            )
        kwargs.setdefault("dtype", cell.dtype_policy)
        # Skips AbstractRNNCell.__init__: dropout and its masks are `cell`'s.
        super(AbstractRNNCell, self).__init__(**kwargs)
        self.cell = cell

    # -- delegated to the wrapped cell ------------------------------------------
    state_size = delegated("state_size")
    output_size = delegated("output_size")
    dropout = delegated("dropout")
    recurrent_dropout = delegated("recurrent_dropout")
    recurrent_dropconnect = delegated("recurrent_dropconnect")

    def build(self, input_shape: Sequence[int | None]) -> None:
        if not self.cell.built:
            self.cell.build(input_shape)
        self.built = True

    def get_initial_state(self, batch_size: int | None = None) -> list:
        return self.cell.get_initial_state(batch_size)

    def project_inputs(self, inputs: Tensor) -> tuple:
        return self.cell.project_inputs(inputs)

    def step_inputs(self, inputs: Tensor, training: bool = False) -> tuple:
        return self.cell.step_inputs(inputs, training)

    def step(self, projected: tuple, states: States, context: StepContext) -> tuple:
        return self.cell.advance(projected, states, context)

    def recurrent_kernel_columns(
        self, columns: Columns = None, masks: RecurrentMasks | None = None
    ) -> Tensor:
        return self.cell.recurrent_kernel_columns(columns, masks)

    def get_dropout_mask(self, step_input: Tensor) -> Tensor | None:
        return self.cell.get_dropout_mask(step_input)

    def get_recurrent_dropout_mask(self, step_input: Tensor) -> RecurrentMasks | None:
        return self.cell.get_recurrent_dropout_mask(step_input)

    def reset_dropout_mask(self) -> None:
        self.cell.reset_dropout_mask()

    def reset_recurrent_dropout_mask(self) -> None:
        self.cell.reset_recurrent_dropout_mask()

    def get_config(self) -> dict:
        config = super(AbstractRNNCell, self).get_config()
        config["cell"] = keras.saving.serialize_keras_object(self.cell)
        return config

    @classmethod
    def from_config(cls, config: dict) -> CellWrapper:
        config = dict(config)
        config["cell"] = keras.saving.deserialize_keras_object(config["cell"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="keras_rnncells")
class Zoneout(CellWrapper):
    """Zoneout (Krueger et al. 2016, "Zoneout: Regularizing RNNs by randomly
    preserving hidden activations") around any cell: each unit of each state
    keeps its previous value with probability ``rate``.

    .. math::

        s_t &= d_t \\odot s_{t-1} + (1 - d_t) \\odot \\tilde s_t,
            \\quad d_t \\sim \\mathrm{Bernoulli}(\\mathrm{rate})
            \\quad\\text{(training)} \\\\
        s_t &= \\mathrm{rate} \\cdot s_{t-1} + (1 - \\mathrm{rate}) \\cdot \\tilde s_t
            \\quad\\text{(inference: the expectation)}

    with :math:`\\tilde s_t` the wrapped cell's new state; one draw per step,
    unit and state. ``rate`` is one float for every state, or one per state
    (LSTM: ``(rate_h, rate_c)``; the paper used e.g. 0.05 on h and 0.5 on c).
    The output is the zoned first state when the wrapped cell outputs its
    first state (every registered cell but SCRN, whose output ``[h, s]`` stays
    the cell's own).

    The noise of the whole sequence is drawn by ``step_inputs`` in training
    (on the fused path one draw before the loop, which its gradient replays;
    on the generic path one per step). Weights: the wrapped cell's.
    """

    citation = (
        "Krueger et al. 2016, Zoneout: Regularizing RNNs by randomly preserving hidden activations"
    )

    def __init__(
        self,
        cell: AbstractRNNCell,
        rate: float | Sequence[float],
        seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        if getattr(cell, "batch_norm", False):
            raise ValueError(
                "Argument `cell` must not have batch_norm=True in Zoneout (its last state "
                "is the step index, which zoneout would mix), received: "
                f"{type(cell).__name__} with batch_norm=True"
            )
        super().__init__(cell, **kwargs)
        sizes = as_state_list(cell.state_size)
        if isinstance(rate, (list, tuple)):
            if len(rate) != len(sizes):
                raise ValueError(
                    f"Argument `rate` must be a float or {len(sizes)} floats (one per "
                    f"state of {type(cell).__name__}), received: {rate!r}"
                )
            self.rates = tuple(check_rate("rate", r) for r in rate)
            self.rate = list(self.rates)
        else:
            self.rate = check_rate("rate", rate)
            self.rates = (self.rate,) * len(sizes)
        self.state_sizes = tuple(sizes)
        self.zoned = tuple(i for i, r in enumerate(self.rates) if r > 0)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def step_inputs(self, inputs: Tensor, training: bool = False) -> tuple:
        """The wrapped cell's, then in training one uniform noise tensor
        ``(..., state_size)`` per zoned state (``inputs`` without its last axis
        gives the leading axes)."""
        projected = super().step_inputs(inputs, training)
        if not training:
            return projected
        leading = tuple(ops.shape(inputs)[:-1])
        noise = tuple(
            keras.random.uniform(
                (*leading, self.state_sizes[i]), dtype=self.compute_dtype, seed=self.seed_generator
            )
            for i in self.zoned
        )
        return (*projected, *noise)

    def step(self, projected: tuple, states: States, context: StepContext) -> tuple:
        """One step; in training ``projected`` ends with the noise of
        ``step_inputs(..., training=True)`` (loops that call ``advance``
        themselves must feed it that)."""
        training = context.training
        count = len(self.zoned) if training else 0
        inner, noise = projected[: len(projected) - count], projected[len(projected) - count :]
        output, new_states = self.cell.advance(inner, states, context)
        zoned = list(new_states)
        for i, draw in zip(self.zoned, noise if training else [None] * len(self.zoned)):
            old, new, rate = states[i], new_states[i], self.rates[i]
            if draw is None:
                zoned[i] = rate * old + (1.0 - rate) * new
            else:
                zoned[i] = ops.where(draw < rate, old, new)
        if output is new_states[0]:
            output = zoned[0]
        return output, zoned

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(rate=self.rate, seed=self.seed)
        return config
