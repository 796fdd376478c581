"""The multi-function recurrent unit and its registry of composition operations."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any

from keras import ops

from keras_rnncells.cells.base import as_state_list
from keras_rnncells.cells.context import StepContext, Tensor
from keras_rnncells.cells.dense_gates import GatedCell
from keras_rnncells.cells.projection import project_blocks
from keras_rnncells.cells.registry import register_cell
from keras_rnncells.checks import check_positive_int

Operation = Callable[[Tensor, Tensor], Tensor]

_OPERATIONS: dict[str, Operation] = {}


def register_operation(name: str, fn: Operation) -> None:
    """Register ``fn(s, v) -> tensor`` as the composition operation ``name``.

    ``fn`` takes the previous state ``s`` and the candidate ``v`` (both
    ``(batch, units)``) and returns a ``(batch, units)`` tensor; it must be
    differentiable (written with ``keras.ops``). A saved model stores operation
    names only, so register custom operations before ``keras.saving.load_model``
    (e.g. at import time of the module that defines them).
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"Argument `name` must be a non-empty string, received: {name!r}")
    if name in _OPERATIONS:
        raise ValueError(
            f"Argument `name`: an operation named {name!r} is already registered; "
            f"registered operations: {list_operations()}"
        )
    if not callable(fn):
        raise ValueError(f"Argument `fn` must be callable as fn(s, v), received: {fn!r}")
    _OPERATIONS[name] = fn


def list_operations() -> list[str]:
    """Names of the registered operations, in registration order."""
    return list(_OPERATIONS)


def _keep(s: Tensor, v: Tensor) -> Tensor:
    return s


def _replace(s: Tensor, v: Tensor) -> Tensor:
    return v


def _diff(s: Tensor, v: Tensor) -> Tensor:
    return 0.5 * ops.abs(s - v)


def _forget(s: Tensor, v: Tensor) -> Tensor:
    return ops.zeros_like(s)


for _name, _fn in (
    ("keep", _keep),
    ("replace", _replace),
    ("max", ops.maximum),
    ("min", ops.minimum),
    ("mul", ops.multiply),
    ("diff", _diff),
    ("forget", _forget),
):
    register_operation(_name, _fn)

DEFAULT_OPERATIONS = ("keep", "replace", "max", "min", "mul", "diff", "forget")


def check_operations(operations: Any) -> tuple[str, ...]:
    """``operations`` as a tuple of distinct registered names, or a ValueError."""
    if isinstance(operations, str) or not isinstance(operations, Sequence):
        raise ValueError(
            "Argument `operations` must be a list of operation names, e.g. "
            f"['keep', 'replace'], received: {operations!r}"
        )
    names = tuple(operations)
    if not names:
        raise ValueError(
            f"Argument `operations` must name at least one operation of {list_operations()}, "
            "received an empty list"
        )
    for name in names:
        if name not in _OPERATIONS:
            raise ValueError(
                f"Argument `operations`: unknown operation {name!r}; registered operations: "
                f"{list_operations()} (register custom ones with "
                "keras_rnncells.cells.mufuru.register_operation before building or loading)"
            )
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(
            f"Argument `operations` must not repeat an operation, received {list(names)} "
            f"(repeated: {duplicates})"
        )
    return names


@register_cell("mufuru")
class MuFuRUCell(GatedCell):
    """Multi-function recurrent unit (Weissenborn & Rocktäschel 2016, "MuFuRU:
    The multi-function recurrent unit"): the new state is a per-dimension
    softmax mixture of ``l`` composition operations of the state and a
    candidate.

    .. math::

        k &= [x_t; s_{t-1}] \\\\
        r &= \\sigma(W_r k + b_r) \\\\
        v &= \\tanh(W_v [x_t; r \\odot s_{t-1}] + b_v) \\\\
        \\hat p^j &= W_{p^j} k + b_{p^j}, \\quad j = 1..l \\\\
        p^j_i &= \\exp(\\hat p^j_i) / \\textstyle\\sum_{j'} \\exp(\\hat p^{j'}_i) \\\\
        s_t &= h_t = \\textstyle\\sum_j p^j \\odot \\mathrm{op}^j(s_{t-1}, v)

    ``operations`` (default all seven, in this order): keep ``s``, replace
    ``v``, max ``max(s, v)``, min ``min(s, v)``, mul ``s ⊙ v``, diff
    ``0.5 |s − v|``, forget ``0``. ``register_operation(name, fn)`` adds
    custom ones; configs store names, so register them before loading a model.
    ``activation`` (tanh) and ``recurrent_activation`` (σ) are configurable.

    ``controller_units=m`` is the paper's footnote option: the operation
    weights read a lower-dimensional controller in place of ``k``,

    .. math::

        c = \\tanh(W_c k + b_c), \\qquad \\hat p^j = W_{p^j} c + b_{p^j}

    Weights: ``kernel`` (input_dim, 2 units + S) holds the part of each ``W``
    acting on ``x``, ``recurrent_kernel`` (units, 2 units + S) the part acting
    on the state, and ``bias`` (2 units + S,) the ``b``; column blocks
    ``r, v, p_1..p_l`` (``S = l units``, blocks of ``units`` in the order of
    ``operations``); with
    ``controller_units=m`` the blocks are ``r, v, c`` (``S = m``), followed by
    ``operation_kernel`` (m, l units) and ``operation_bias`` (l units,) with
    blocks ``p_1..p_l``. ``blocks`` lists the block names.

    ``operation_weights(inputs)`` returns every step's ``p`` (for analysis).
    """

    citation = "Weissenborn & Rocktäschel 2016, MuFuRU: The Multi-Function Recurrent Unit"

    def __init__(
        self,
        units: int,
        operations: Sequence[str] = DEFAULT_OPERATIONS,
        controller_units: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(units, **kwargs)
        self.operations = check_operations(operations)
        self.operation_fns = tuple(_OPERATIONS[name] for name in self.operations)
        self.controller_units = (
            None
            if controller_units is None
            else check_positive_int("controller_units", controller_units)
        )
        selector = ("c",) if self.controller_units else tuple(f"p_{n}" for n in self.operations)
        self.blocks = ("r", "v", *selector)

    @property
    def width(self) -> int:
        selector = self.controller_units or len(self.operations) * self.units
        return 2 * self.units + selector

    def build(self, input_shape: Sequence[int | None]) -> None:
        super().build(input_shape)
        self.operation_kernel = self.operation_bias = None
        if self.controller_units:
            width = len(self.operations) * self.units
            self.operation_kernel = self.add_weight_like(
                "kernel", "operation_kernel", (self.controller_units, width)
            )
            if self.use_bias:
                self.operation_bias = self.add_weight_like("bias", "operation_bias", (width,))

    def project_inputs(self, inputs: Tensor) -> tuple:
        """``(x_r, x_v, x_s)``: the input parts of r, v and the selector (the
        ``p`` blocks, or ``c`` with a controller)."""
        return project_blocks(inputs, self.kernel, self.bias, [self.units, 2 * self.units])

    def step(self, projected, states, context):
        h, _ = self.mixed_step(projected, states[0], context)
        return h, [h]

    def mixed_step(self, projected: tuple, s: Tensor, context: StepContext) -> tuple:
        """One step from state ``s``: ``(new_state, p)`` with ``p`` the
        operation weights, ``(batch, l, units)``."""
        x_r, x_v, x_s = projected
        units = self.units
        s_in = self.drop_recurrent(s, context)
        # r and the selector read s, v reads r ⊙ s: one recurrent matmul each.
        gates = self.recurrent_matmul(s_in, context, ((0, units), (2 * units, self.width)))
        r = self.recurrent_activation(x_r + gates[:, :units])
        v = self.activation(x_v + self.recurrent_matmul(r * s_in, context, (units, 2 * units)))
        logits = x_s + gates[:, units:]
        if self.controller_units:
            logits = ops.matmul(ops.tanh(logits), self.operation_kernel)
            if self.operation_bias is not None:
                logits = logits + self.operation_bias
        count = len(self.operations)
        logits = ops.reshape(logits, (-1, count, units))
        # The softmax over axis 1, written out: TensorFlow's softmax on a
        # middle axis transposes twice. The shift gets no gradient (the
        # softmax does not depend on it); its `initial` lets a batch of 0 rows
        # through (Keras refuses the max of an empty tensor when eager).
        shift = ops.max(logits, axis=1, keepdims=True, initial=float("-inf"))
        e = ops.exp(logits - ops.stop_gradient(shift))
        p = e / ops.sum(e, axis=1, keepdims=True)
        # The mixture as a sum of (batch, units) products: summing a stack of
        # the operations' results over its middle axis was the step's slowest
        # kernel under XLA. The products' weights are the column blocks of p
        # flattened, not p unstacked: LiteRT's UNPACK refuses a batch of 0 rows.
        weights = ops.split(ops.reshape(p, (-1, count * units)), count, axis=1)
        terms = [w * fn(s, v) for w, fn in zip(weights, self.operation_fns)]
        # `+`, not ops.add: Keras' TensorFlow add takes a (0, units) term for
        # a bias and fails (BiasAdd) on a batch known to hold 0 rows.
        return functools.reduce(operator.add, terms), p

    def operation_weights(
        self,
        inputs: Tensor,
        mask: Tensor | None = None,
        initial_state: Tensor | None = None,
        return_states: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """The operation weights ``p`` of every step, ``(batch, time, l, units)``.

        Runs the cell (its own weights, no dropout) over ``inputs``
        ``(batch, time, input_dim)`` in the given order (reverse them yourself
        for a ``go_backwards`` layer), from ``initial_state`` (zeros by
        default). ``mask`` ``(batch, time)``: masked steps keep the state, as
        in the layer, and their weights are zeros (no operation applied).
        Axis 2 follows ``operations``; e.g. the paper's Figure 1b (average
        weight per input symbol) averages the result over the steps of each
        symbol. With ``return_states=True`` returns ``(p, states)``, the
        states ``(batch, time, units)`` equal to the layer's
        ``return_sequences`` outputs.
        """
        inputs = ops.convert_to_tensor(inputs, dtype=self.compute_dtype)
        if not self.built:
            self.build(inputs.shape)
        batch, steps = ops.shape(inputs)[0], ops.shape(inputs)[1]
        if initial_state is None:
            state = ops.zeros((batch, self.units), dtype=inputs.dtype)
        else:
            state = ops.convert_to_tensor(as_state_list(initial_state)[0], dtype=inputs.dtype)
        keep = ops.ones((batch, steps), "bool") if mask is None else ops.cast(mask, "bool")
        projected = self.project_inputs(ops.transpose(inputs, (1, 0, 2)))

        def body(carry, elems):
            s, _ = carry
            *x, keep_t = elems
            h, p = self.mixed_step(tuple(x), s, StepContext())
            keep_t = keep_t[:, None]
            carry = ops.where(keep_t, h, s), ops.where(keep_t[:, None], p, ops.zeros_like(p))
            return carry, carry

        no_weights = ops.zeros((batch, len(self.operations), self.units), dtype=inputs.dtype)
        _, (states, p) = ops.scan(
            body, (state, no_weights), (*projected, ops.transpose(keep, (1, 0)))
        )
        p = ops.transpose(p, (1, 0, 2, 3))
        return (p, ops.transpose(states, (1, 0, 2))) if return_states else p

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(operations=list(self.operations), controller_units=self.controller_units)
        return config
