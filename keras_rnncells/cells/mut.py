"""The three mutated units MUT1, MUT2 and MUT3 found by architecture search."""

from __future__ import annotations

from collections.abc import Sequence

from keras import activations, ops

from keras_rnncells.cells.context import StepContext, Tensor
from keras_rnncells.cells.dense_gates import GatedCell
from keras_rnncells.cells.projection import input_product
from keras_rnncells.cells.registry import register_cell


class MutatedUnitCell(GatedCell):
    """The shared shape of MUT1-3 (not registered; use the three cells below).

    Every MUT has an update gate ``z``, a reset gate ``r`` and a candidate
    ``h~ = tanh(W_hh (r ⊙ h) + <input term> + b_h)``, mixed as
    ``h' = h~ ⊙ z + h ⊙ (1 − z)``. The three differ in which input and
    recurrent matmuls feed the gates, so each lists its own column blocks:

    * ``kernel_blocks``: the blocks of ``kernel`` (input_dim, len · units),
      one per ``W_x·``;
    * ``recurrent_blocks``: the blocks of ``recurrent_kernel``
      (units, len · units), one per ``W_h·``, ``h`` (``W_hh``) always last;
    * ``blocks = (z, r, h)``: the blocks of ``bias`` (3 units,);
    * ``raw_input``: ``(block, activation)`` where the input itself (through
      that activation) is the block's input term instead of a matmul, which
      needs ``input_dim == units`` (``input_dim_must_equal_units``; a
      ``ValueError`` at build otherwise).

    ``activation`` (tanh) is the candidate's outer tanh and
    ``recurrent_activation`` (sigmoid) the gates' σ; the inner ``tanh(x)``
    (MUT1) and ``tanh(h)`` (MUT3) are part of the architecture and fixed.
    """

    blocks = ("z", "r", "h")
    kernel_blocks: tuple[str, ...] = ("z", "r", "h")
    recurrent_blocks: tuple[str, ...] = ("z", "r", "h")
    raw_input: tuple[str, str] | None = None

    def kernel_shape(self, input_dim: int) -> tuple[int, ...]:
        return (input_dim, len(self.kernel_blocks) * self.units)

    def recurrent_kernel_shape(self) -> tuple[int, ...]:
        return (self.units, len(self.recurrent_blocks) * self.units)

    @property
    def input_dim_must_equal_units(self) -> bool:
        """Whether the input itself enters a units-sized pre-activation."""
        return self.raw_input is not None

    def build(self, input_shape: Sequence[int | None]) -> None:
        input_dim = input_shape[-1]
        if self.input_dim_must_equal_units and input_dim not in (None, self.units):
            block, activation = self.raw_input
            term = "x" if activation == "linear" else f"{activation}(x)"
            raise ValueError(
                f"{type(self).__name__} adds {term} to the units-sized "
                f"pre-activation of its {block!r} block, so its input feature size "
                f"(last axis) must equal `units`; received input feature size "
                f"{input_dim} and units={self.units}"
            )
        super().build(input_shape)

    def project_inputs(self, inputs: Tensor) -> tuple:
        matmuls = ops.split(input_product(inputs, self.kernel), len(self.kernel_blocks), axis=-1)
        terms = dict(zip(self.kernel_blocks, matmuls))
        if self.raw_input is not None:
            block, activation = self.raw_input
            terms[block] = activations.get(activation)(inputs)
        projected = [terms[block] for block in self.blocks]
        if self.bias is not None:
            biases = ops.split(self.bias, len(self.blocks))
            projected = [term + bias for term, bias in zip(projected, biases)]
        return tuple(projected)

    def columns(self, block: str) -> tuple[int, int]:
        """The columns ``start, stop`` of ``block`` in ``recurrent_kernel``."""
        start = self.recurrent_blocks.index(block) * self.units
        return start, start + self.units

    def gate_terms(self, h: Tensor, context: StepContext) -> tuple:
        """The recurrent terms of the ``z`` and ``r`` pre-activations."""
        raise NotImplementedError

    def step(self, projected, states, context):
        x_z, x_r, x_h = projected
        h_prev = states[0]
        h_in = self.drop_recurrent(h_prev, context)
        u_z, u_r = self.gate_terms(h_in, context)
        z = self.recurrent_activation(x_z + u_z)
        r = self.recurrent_activation(x_r + u_r)
        h_tilde = self.activation(self.recurrent_matmul(r * h_in, context, self.columns("h")) + x_h)
        h = h_prev + z * (h_tilde - h_prev)
        return h, [h]


@register_cell("mut1")
class MUT1Cell(MutatedUnitCell):
    """MUT1 (Jozefowicz, Zaremba & Sutskever 2015, "An empirical exploration of
    recurrent network architectures"): its update gate sees only the input.

    .. math::

        z &= \\sigma(W_{xz} x_t + b_z) \\\\
        r &= \\sigma(W_{xr} x_t + W_{hr} h_t + b_r) \\\\
        h_{t+1} &= \\tanh(W_{hh} (r \\odot h_t) + \\tanh(x_t) + b_h) \\odot z
            + h_t \\odot (1 - z)

    ``tanh(x_t)`` is added to a units-sized pre-activation, so the input
    feature size must equal ``units`` (``ValueError`` at build otherwise).

    Weights: ``kernel`` (input_dim, 2 units), column blocks ``z, r``
    (``W_xz, W_xr``); ``recurrent_kernel`` (units, 2 units), blocks ``r, h``
    (``W_hr, W_hh``); ``bias`` (3 units,), blocks ``z, r, h``.
    """

    citation = "Jozefowicz et al. 2015, An empirical exploration of recurrent network architectures"
    kernel_blocks = ("z", "r")
    recurrent_blocks = ("r", "h")
    raw_input = ("h", "tanh")

    def gate_terms(self, h, context):
        return 0.0, self.recurrent_matmul(h, context, self.columns("r"))


@register_cell("mut2")
class MUT2Cell(MutatedUnitCell):
    """MUT2 (Jozefowicz, Zaremba & Sutskever 2015, "An empirical exploration of
    recurrent network architectures"): its reset gate takes the input itself.

    .. math::

        z &= \\sigma(W_{xz} x_t + W_{hz} h_t + b_z) \\\\
        r &= \\sigma(x_t + W_{hr} h_t + b_r) \\\\
        h_{t+1} &= \\tanh(W_{hh} (r \\odot h_t) + W_{xh} x_t + b_h) \\odot z
            + h_t \\odot (1 - z)

    ``x_t`` is added to a units-sized pre-activation, so the input feature
    size must equal ``units`` (``ValueError`` at build otherwise).

    Weights: ``kernel`` (input_dim, 2 units), column blocks ``z, h``
    (``W_xz, W_xh``); ``recurrent_kernel`` (units, 3 units), blocks
    ``z, r, h`` (``W_hz, W_hr, W_hh``); ``bias`` (3 units,), blocks ``z, r, h``.
    """

    citation = "Jozefowicz et al. 2015, An empirical exploration of recurrent network architectures"
    kernel_blocks = ("z", "h")
    recurrent_blocks = ("z", "r", "h")
    raw_input = ("r", "linear")

    def gate_terms(self, h, context):
        gates = self.recurrent_matmul(h, context, (0, 2 * self.units))
        return tuple(ops.split(gates, 2, axis=-1))


@register_cell("mut3")
class MUT3Cell(MutatedUnitCell):
    """MUT3 (Jozefowicz, Zaremba & Sutskever 2015, "An empirical exploration of
    recurrent network architectures"): its update gate sees ``tanh(h)``.

    .. math::

        z &= \\sigma(W_{xz} x_t + W_{hz} \\tanh(h_t) + b_z) \\\\
        r &= \\sigma(W_{xr} x_t + W_{hr} h_t + b_r) \\\\
        h_{t+1} &= \\tanh(W_{hh} (r \\odot h_t) + W_{xh} x_t + b_h) \\odot z
            + h_t \\odot (1 - z)

    Weights: ``kernel`` (input_dim, 3 units), ``recurrent_kernel``
    (units, 3 units), ``bias`` (3 units,), column blocks ``z, r, h``
    (``W_x·`` in ``kernel``, ``W_h·`` in ``recurrent_kernel``).
    """

    citation = "Jozefowicz et al. 2015, An empirical exploration of recurrent network architectures"

    def gate_terms(self, h, context):
        return (
            self.recurrent_matmul(ops.tanh(h), context, self.columns("z")),
            self.recurrent_matmul(h, context, self.columns("r")),
        )
