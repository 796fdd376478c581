"""The plan of the fused loops (`plan`): what one step of a cell does with its
recurrent products. The forward loop (`loop.run_forward`) and the backward
loop (`compiled_loop.backward`) both read it, and nothing else of the step's
graph.

A step makes its recurrent products through ``cell.recurrent_matmul``, in an
order and with columns of its own. For each, in that order, the plan holds a
`Product`:

* ``columns``: the kernel columns it multiplies by (``recurrent_matmul``'s
  argument), which a loop reads once, before it;
* ``state``: the index of the state that is its input as it is (no recurrent
  dropout in between), or None. The forward loop saves other inputs per step;
  the backward loop reads these from the saved states;
* ``parts``: the column ranges the step uses it in (`Part`), in column order
  and covering every column, each with ``added_to``: the projected input the
  step only adds it to, or None. Such a sum has one gradient for both terms,
  so the forward loop saves the sum (the replay input) in place of both, and
  the backward loop stores that gradient once;
* ``blocks``: the column widths a portable loop that runs alone with column
  blocks runs the product in (`portable_loop.ColumnBlocks`), or ``()``: whole.

Hence, per plan: which parts are saved per step (`Plan.saved`, those added
to no projected input), which projected inputs carry a part (`Plan.carried`),
and for the portable loop, which products get their added projected inputs
joined into one tensor added at once (`Plan.joins`, `portable_loop.joined_inputs`).

Where it comes from: the cell's own ``step``, traced once in a scratch graph
on placeholders shaped as one step (`plan`). The step is the only account of
its products that cannot drift from what the loops run (a loop checks that
its step makes the products its plan lists: `check_products`). The plan
reads that graph op by op (`matmul_parts`), for the forms TensorFlow makes of
``split(u)``, ``u[..., a:b]`` and ``x + u``:

* a product's parts are the pieces of one ``Split``/``SplitV`` on its last
  axis, or of ``StridedSlice`` ops taking disjoint column ranges and all of
  every other axis (`column_pieces`), found past the biases added to it
  (`past_biases`: an ``AddV2`` with an operand of lower rank, its only use);
  columns that no op reads are a part of their own; anything else, one part;
* a part (biases added) is added to projected input ``j`` where its only use
  is an ``AddV2`` whose other operand is input ``j``, of the same shape, and
  that ``AddV2`` is the only use of input ``j`` too (`added_input`).

Any other form (a layer norm, a reset gate, multiplicative integration, a
product read twice) leaves its part added to no input: the loops are then as
right, and save a little more. tests/layers/test_plan.py holds the plan of
every registered cell and checks each claimed sum numerically.
"""

from __future__ import annotations

import itertools
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf
from keras import tree
from tensorflow.python.framework.func_graph import FuncGraph  # no public name

from keras_rnncells.cells.context import RecurrentMasks
from keras_rnncells.cells.dense_gates import DenseGatesCell, steps_through_combine
from keras_rnncells.layers.portable_loop import BLOCK_ROWS, column_blocks
from keras_rnncells.layers.recorder import MatmulRecorder, traced_step


class Part(NamedTuple):
    """Columns ``start:stop`` of a recurrent product. ``added_to``: the index
    of the projected input the step adds these columns to, where that sum is
    the only use of both (their gradients are then equal), or None."""

    start: int
    stop: int
    added_to: int | None = None


class Product(NamedTuple):
    """One recurrent product of a step (see the module docstring)."""

    columns: Any
    state: int | None
    parts: tuple[Part, ...]
    input_shape: tuple  # its input's static shape, (rows, depth): what the forward loop saves
    dtype: str
    blocks: tuple[int, ...] = ()


class Plan(NamedTuple):
    """The recurrent products of one step, in the order it makes them, and how
    the step uses them; ``inputs``: how many projected inputs it reads (flat);
    ``joins``: the products whose added projected inputs the portable loop joins."""

    products: tuple[Product, ...]
    inputs: int
    joins: tuple[int, ...] = ()

    @property
    def carried(self) -> tuple:
        """For each projected input, the ``(product index, part)`` added to it, or None."""
        pairs = {part.added_to: (k, part) for k, part in self.pairs() if part.added_to is not None}
        return tuple(pairs.get(j) for j in range(self.inputs))

    @property
    def saved(self) -> tuple:
        """The ``(product index, part)`` pairs added to no projected input: the
        forward loop saves their values per step, the backward loop their gradients."""
        return tuple((k, part) for k, part in self.pairs() if part.added_to is None)

    @property
    def joined(self) -> frozenset:
        """The projected inputs that the portable loop joins (`joins`)."""
        return frozenset(
            part.added_to
            for k in self.joins
            for part in self.products[k].parts
            if part.added_to is not None
        )

    def pairs(self) -> list:
        """Every ``(product index, part)``, in order."""
        return [(k, part) for k, product in enumerate(self.products) for part in product.parts]


def plan(
    cell: Any,
    step_inputs: Any,
    states: list,
    recurrent_mask: RecurrentMasks | None = None,
    training: bool = False,
    blocked: bool = False,
) -> Plan:
    """The `Plan` of ``cell``'s step on ``step_inputs`` (one step of what
    ``cell.step_inputs`` returns, in its structure) and ``states``, with
    ``recurrent_mask`` (`RecurrentMasks` or None) in force and ``training``;
    of each, only the shapes and dtypes are read (tensors or ``TensorSpec``).
    ``blocked``: for a portable loop that runs alone with column blocks
    (`Product.blocks`). The step is traced once, in a scratch graph that
    nothing runs: it draws no random number and updates no variable."""
    flat = tree.flatten(step_inputs)
    with FuncGraph("fused_plan").as_default():
        projected = [placeholder(x) for x in flat]
        state_inputs = [placeholder(s) for s in states]
        masks = None
        if recurrent_mask is not None:
            masks = RecurrentMasks(*(None if m is None else placeholder(m) for m in recurrent_mask))
        probe = MatmulRecorder()
        inputs = tree.pack_sequence_as(step_inputs, projected)
        traced_step(cell, inputs, state_inputs, probe, masks, training)
        products = tuple(
            Product(
                columns,
                next((j for j, s in enumerate(state_inputs) if h is s), None),
                tuple(matmul_parts(output, projected)),
                tuple(h.shape.as_list()),
                output.dtype.name,
                product_blocks(h.shape, output.shape[-1]) if blocked else (),
            )
            for h, output, columns in zip(probe.inputs, probe.outputs, probe.columns)
        )
    return Plan(products, len(flat), joined_products(cell, products))


def placeholder(like: Any) -> tf.Tensor:
    """A placeholder of ``like``'s shape and dtype, in the graph being built."""
    return tf.compat.v1.placeholder(tf.as_dtype(like.dtype), like.shape)


def product_blocks(input_shape: tf.TensorShape, width: int) -> tuple[int, ...]:
    """The column blocks (`portable_loop.column_blocks`) of a product of
    ``input_shape`` and ``width`` columns where a portable loop makes it in
    blocks (at most `BLOCK_ROWS` rows, or rows known at run time only), else ``()``."""
    rows = input_shape[0]
    if rows is not None and rows > BLOCK_ROWS:
        return ()
    widths = column_blocks(input_shape[-1], width)
    return tuple(widths) if len(widths) > 1 else ()


def joined_products(cell: Any, products: tuple) -> tuple[int, ...]:
    """The products whose added projected inputs the portable loop joins: two
    or more of them, through ``combine`` as `DenseGatesCell` defines it (the
    sum is its pre-activation: `portable_loop.joined_inputs`)."""
    if not steps_through_combine(type(cell)) or type(cell).combine is not DenseGatesCell.combine:
        return ()
    return tuple(
        k
        for k, product in enumerate(products)
        if sum(part.added_to is not None for part in product.parts) >= 2
    )


def check_products(step_plan: Plan, recorder: MatmulRecorder) -> None:
    """Raises a ``RuntimeError`` where a loop's step made other products than
    its plan lists (a step whose products depend on more than the shapes its
    plan was traced on)."""
    planned = [product.columns for product in step_plan.products]
    if recorder.columns != planned:
        raise RuntimeError(
            f"A step of the fused loop made recurrent products of columns {recorder.columns}, "
            f"where its plan, traced on the same shapes, lists {planned}"
        )


def columns_of(tensor: tf.Tensor, part: Part) -> tf.Tensor:
    """The columns of ``part`` of a recurrent product (or of its gradient)."""
    if part.stop - part.start == tensor.shape[-1]:
        return tensor
    return tensor[..., part.start : part.stop]


# -- reading the traced step's graph ---------------------------------------------------


def matmul_parts(output: tf.Tensor, projected: list) -> list[Part]:
    """How the traced step uses a recurrent product's ``output``: the column
    parts it splits or slices it into (one part if it does not), in column
    order and covering every column, each with the projected input it is only
    added to (`added_input`), if any."""
    width = output.shape[-1]
    added = added_input(output, projected)
    pieces = None if added is not None else column_pieces(past_biases(output))
    if pieces is None:
        return [Part(0, width, added)]
    parts, covered = [], 0
    for start, stop, piece in pieces:
        if start > covered:  # columns no op reads: their gradient is zero, stored all the same
            parts.append(Part(covered, start))
        parts.append(Part(start, stop, added_input(piece, projected)))
        covered = stop
    return parts + ([Part(covered, width)] if covered < width else [])


def sole_consumer(tensor: tf.Tensor) -> tf.Operation | None:
    """The op that uses ``tensor``, where exactly one does."""
    consumers = tensor.consumers()
    return consumers[0] if len(consumers) == 1 else None


def other_input(op: tf.Operation, tensor: tf.Tensor) -> tf.Tensor:
    """The operand of the binary ``op`` that is not ``tensor``."""
    return op.inputs[1] if op.inputs[0] is tensor else op.inputs[0]


def past_biases(tensor: tf.Tensor) -> tf.Tensor:
    """Follows ``tensor`` through the biases added to it (a lower-rank operand
    of an ``AddV2`` that is its only use): the sum reached has the same
    gradient as ``tensor``."""
    op = sole_consumer(tensor)
    while op is not None and op.type == "AddV2":
        rank = other_input(op, tensor).shape.rank
        if rank is None or rank >= tensor.shape.rank:
            break
        tensor = op.outputs[0]
        op = sole_consumer(tensor)
    return tensor


def added_input(tensor: tf.Tensor, projected: list) -> int | None:
    """The index of the projected input that ``tensor`` (biases added) is added
    to, where that sum is the only use of both and their shapes are the same:
    then the gradient of one is the gradient of the other."""
    tensor = past_biases(tensor)
    op = sole_consumer(tensor)
    if op is None or op.type != "AddV2":
        return None
    other = other_input(op, tensor)
    same_shape = other.shape.rank == tensor.shape.rank and other.shape[-1] == tensor.shape[-1]
    matches = [j for j, x in enumerate(projected) if other is x and sole_consumer(x) is op]
    return matches[0] if matches and same_shape else None


def column_slice(op: tf.Operation, width: int) -> tuple[int, int] | None:
    """The columns ``(start, stop)`` a ``StridedSlice`` takes of a tensor of
    ``width`` columns, all of every other axis; None for any other op or slice."""
    if op.type != "StridedSlice" or any(
        op.get_attr(mask) for mask in ("ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
    ):
        return None
    begin, end, strides = (tf.get_static_value(tensor) for tensor in op.inputs[1:])
    if begin is None or end is None or strides is None or set(strides.tolist()) != {1}:
        return None
    last = 1 << (len(begin) - 1)
    whole = last - 1  # the bits of every other axis
    if op.get_attr("begin_mask") & whole != whole or op.get_attr("end_mask") & whole != whole:
        return None
    start = 0 if op.get_attr("begin_mask") & last else int(begin[-1])
    stop = width if op.get_attr("end_mask") & last else int(end[-1])
    start, stop = (min(max(i + width if i < 0 else i, 0), width) for i in (start, stop))
    return (start, stop) if start < stop else None


def column_pieces(tensor: tf.Tensor) -> list | None:
    """``tensor``'s uses when they take disjoint column ranges of it (one
    ``Split`` on the last axis, or ``StridedSlice`` ops): ``(start, stop,
    piece)`` in column order, or None."""
    width, consumers = tensor.shape[-1], tensor.consumers()
    if len(consumers) == 1 and consumers[0].type in ("Split", "SplitV"):
        op = consumers[0]
        axis = tf.get_static_value(op.inputs[0] if op.type == "Split" else op.inputs[2])
        if axis is None or int(axis) not in (-1, tensor.shape.rank - 1):
            return None
        bounds = np.cumsum([0] + [piece.shape[-1] for piece in op.outputs]).tolist()
        return list(zip(bounds, bounds[1:], op.outputs))
    ranges = [column_slice(op, width) for op in consumers]
    if not consumers or None in ranges:
        return None
    pieces = sorted(
        ((*columns, op.outputs[0]) for columns, op in zip(ranges, consumers)),
        key=lambda piece: piece[:2],
    )
    if any(after[0] < before[1] for before, after in itertools.pairwise(pieces)):
        return None  # overlapping slices
    return pieces
