"""The fused recurrence: an XLA-compiled loop over ``cell.step`` with a
cuDNN-style gradient, or the same loop traced into the caller's graph without
XLA (``fused_recurrence(..., compiled=False)``), for graphs that must run
where XLA JIT is disabled (TF Serving's default) or be converted (tf2onnx).

Forward: ``cell.step`` runs in a ``tf.while_loop`` compiled by XLA over
inputs already projected by ``cell.project_inputs``. In training it also
saves, per step, the states it started from, the inputs of the recurrent
matmuls the cell makes through ``cell.recurrent_matmul`` (unless they are
those states) and what the step is replayed from: each projected input plus
the matmul part the step only adds to it (`matmul_parts`), and the matmul
parts added to no projected input.

Backward (back-propagation through time), also one XLA function: a reverse
loop replays each step from the saved tensors, with the added matmul parts
zero (their sum is in the replay input), so no recurrent matmul is
recomputed and the projected sequence is not kept for the gradient. It
back-propagates through the step and stores the gradient of each projected
input and of each matmul part not added to one: for an added part the two
gradients are the same, so it is stored once. The recurrent-kernel gradient
is then one large matmul per part over all time steps at once, instead of one
small matmul per step. Other weights a step reads (biases, peepholes, kernels
a cell multiplies itself) are differentiated per step.

For an LSTM step this keeps 2 states and 4 replay blocks per step from the
forward pass and 4 gradient blocks in the backward pass (batch x units
each), against 4 projected, 2 state, 4 matmul-output and 8 gradient blocks
when every tensor was saved as it is (benchmarks/README.md: peak memory).

Why not plain autodiff: TensorFlow cannot pass a while loop's saved
activations (TensorLists) out of an XLA function, so the gradient of an
XLA-compiled loop must be computed by a function of our own.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
import math
import time
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf
from keras import tree
from keras.src.backend import AutocastScope

from keras_rnncells.cells.base import DenseGatesCell, steps_through_combine

# Steps per iteration of the portable loop (no XLA): TensorFlow's executor
# spends 9 to 20 µs on an iteration of a `tf.while_loop` beside its body's
# ops (0.27 to 0.55 µs each), whatever its loop variables, on a 2-core CPU
# (benchmarks/loop_overhead.py). XLA's loops keep one step an iteration: there
# unrolling measured no faster (benchmarks/README.md, "Unrolling the portable
# loop").
PORTABLE_UNROLL = 4

# Whether portable loops are traced for LiteRT (`scattered_outputs`).
_scattered_outputs = contextvars.ContextVar("keras_rnncells_scattered_outputs", default=False)


@contextlib.contextmanager
def scattered_outputs() -> Any:
    """Within this context a portable loop keeps its outputs in one tensor of
    all its steps, each iteration's written in place (``TensorScatterUpdate``),
    not in a TensorList (`written_at`), and makes its recurrent products whole: LiteRT's
    converter lowers a TensorList to builtin ops only where its element shape is
    static, so a model whose batch is known only at run time needs this form
    (`keras_rnncells.export.litert`). The outputs and states are the same."""
    token = _scattered_outputs.set(True)
    try:
        yield
    finally:
        _scattered_outputs.reset(token)


# TensorFlow's CPU MatMul ran a one-row product (a batch of 1, as served) of at
# most 16,384 multiply-adds in 2 to 4 µs on this 2-core host, and one of 32,768
# to 65,536 in 16 to 25 µs: from there it hands the product to its intra-op
# threads. At 128 units the GRU's and LSTM's recurrent products in column
# blocks of that size took 0.4x to 1.06x the time of one product from 8 to 64
# rows, and 1.25x to 1.34x at 128 (benchmarks/matmul_bound.py; benchmarks/
# README.md, "Recurrent products in column blocks"). So a portable loop that runs
# alone (one loop for the batch) runs a product of at most `BLOCK_ROWS` rows in
# column blocks where 2 to `MAX_BLOCKS` blocks of at most `BLOCK_MACS` one-row
# multiply-adds do. Where a loop per core runs, each core is busy with a loop of
# its own, and the blocks' extra ops cost more than the handoff: our LSTM's
# inference graph at batch 8 to 32 and 100 steps ran 1.1x to 1.25x faster
# without them (benchmarks/README.md, "Column blocks only in a loop alone").
BLOCK_MACS = 16384
MAX_BLOCKS = 4
BLOCK_ROWS = 64
# Whether the blocks pay is the host's: on a second 2-core host (AVX-512) the
# one-row 128 x 384 product took 4.4 µs whole and 6.5 µs in blocks, and the
# blocks ran our LSTM's served graph 1.1x to 1.2x slower. So the first portable
# loop to make a product of a shape times both forms once in the process
# (`blocks_pay`), and keeps the blocks where they take at most `BLOCKS_MARGIN`
# of the whole product's time.
BLOCKS_MARGIN = 0.9
BLOCKS_TIMED_PRODUCTS = 200


def column_blocks(kernel: tf.Tensor) -> list[int]:
    """The column widths of the blocks that the portable loop runs a product
    with ``kernel`` as: one block, or at most `MAX_BLOCKS` of at most
    `BLOCK_MACS` one-row multiply-adds each."""
    depth, columns = kernel.shape
    width = max(1, BLOCK_MACS // depth)
    count = -(-columns // width)
    if count == 1 or count > MAX_BLOCKS:
        return [columns]
    return [width] * (count - 1) + [columns - width * (count - 1)]


@functools.cache
def blocks_pay(depth: int, widths: tuple[int, ...]) -> bool:
    """Whether, on this host, a one-row product with a kernel of ``depth``
    rows runs in column blocks of ``widths`` in at most `BLOCKS_MARGIN` of the
    time of one product: `BLOCKS_TIMED_PRODUCTS` chained products of each form
    in a graph loop, the best of 3 alternating rounds after a warm-up. Run
    eagerly (out of any graph being traced) once per shape and process; it
    draws no random number. In a TensorFlow 1 graph, where nothing runs
    eagerly, the blocks are not taken."""
    with tf.init_scope():
        if not tf.executing_eagerly():
            return False
        h0 = tf.zeros((1, depth))
        kernel = tf.zeros((depth, sum(widths)))
        blocks = tf.split(kernel, list(widths), axis=1)

        def chained(product):
            def run(h):
                return tf.while_loop(
                    lambda i, h: i < BLOCKS_TIMED_PRODUCTS,
                    lambda i, h: (i + 1, product(h)[:, :depth]),
                    (tf.constant(0), h),
                )[1]

            return tf.function(run, autograph=False)

        forms = [
            chained(lambda h: tf.matmul(h, kernel)),
            chained(lambda h: tf.concat([tf.matmul(h, b) for b in blocks], axis=1)),
        ]
        best = [math.inf, math.inf]
        for form in forms:
            form(h0).numpy()
        for _ in range(3):
            for k, form in enumerate(forms):
                start = time.perf_counter()
                form(h0).numpy()
                best[k] = min(best[k], time.perf_counter() - start)
    return best[1] <= BLOCKS_MARGIN * best[0]


class MatmulRecorder:
    """Bound to a cell while one step is traced: records or replays the
    recurrent matmuls the step makes through ``cell.recurrent_matmul``.

    ``kernels`` maps column ranges to kernel slices taken once, before the
    loop (XLA would otherwise copy the slices at every step); a replaying
    recorder also takes ``transposed``, the same slices transposed before the
    loop: XLA's CPU dot with a transposed operand ran a 32x512 @ (128x512)ᵀ
    product 1.35x slower than with the transpose taken once.

    ``blocks`` (the portable loop's `ColumnBlocks`, none elsewhere) runs
    products of few rows in column blocks. ``addends`` (the portable loop's
    `joined_inputs` at this step, none elsewhere) maps a matmul's index to
    the projected inputs added to its product here, in one op."""

    def __init__(
        self,
        saved_outputs=None,
        tape=None,
        kernels=None,
        transposed=None,
        blocks=None,
        addends=None,
    ):
        self.saved_outputs = saved_outputs
        self.tape = tape
        self.kernels = {} if kernels is None else kernels
        self.transposed = transposed
        self.blocks = blocks
        self.addends = {} if addends is None else addends
        self.inputs, self.outputs, self.columns = [], [], []

    def __call__(self, h, read_kernel, columns):
        if columns not in self.kernels:  # read once: no variable read in a step
            self.kernels[columns] = tf.convert_to_tensor(read_kernel())
        kernel = self.kernels[columns]
        self.columns.append(columns)
        if self.saved_outputs is None:
            if self.blocks is None:
                output = tf.matmul(h, kernel)
            else:
                output = self.blocks.product(h, kernel, columns)
            if len(self.outputs) in self.addends:
                output = output + self.addends[len(self.outputs)]
        else:
            saved = self.saved_outputs[len(self.outputs)]
            output = replayed_matmul(h, self.transposed[columns], saved)
            self.tape.watch(output)
        self.inputs.append(h)
        self.outputs.append(output)
        return output


class ColumnBlocks:
    """The portable loop's recurrent products of at most `BLOCK_ROWS` rows,
    each in the column blocks of `column_blocks` where they pay on this host
    (`blocks_pay`): the blocks of each kernel
    slice and, where the batch size is known only at run time, whether it is
    at most that, taken where first seen (the probe step, before the loop).
    There a ``tf.cond`` in each step picks the blocks or one product."""

    def __init__(self) -> None:
        self.kernels: dict = {}  # column range -> its kernel slice's blocks, or None
        self.few_rows: tf.Tensor | None = None

    def product(self, h: tf.Tensor, kernel: tf.Tensor, columns: Any) -> tf.Tensor:
        if h.shape[0] is not None and h.shape[0] > BLOCK_ROWS:
            return tf.matmul(h, kernel)
        if columns not in self.kernels:
            widths = column_blocks(kernel)
            paying = len(widths) > 1 and blocks_pay(kernel.shape[0], tuple(widths))
            self.kernels[columns] = tf.split(kernel, widths, axis=1) if paying else None
        blocks = self.kernels[columns]
        if blocks is None:
            return tf.matmul(h, kernel)

        def in_blocks():
            return tf.concat([tf.matmul(h, block) for block in blocks], axis=1)

        if h.shape[0] is not None:
            return in_blocks()
        if self.few_rows is None:
            self.few_rows = tf.shape(h)[0] <= BLOCK_ROWS
        return tf.cond(self.few_rows, in_blocks, lambda: tf.matmul(h, kernel))


@tf.custom_gradient
def replayed_matmul(h, kernel_transposed, saved):
    """``h @ kernel`` whose value was saved by the forward pass; its gradient
    with respect to ``h`` (the kernel's is taken after the loop)."""

    def grad(upstream):
        return tf.matmul(upstream, kernel_transposed), None, None

    return tf.identity(saved), grad


@contextlib.contextmanager
def bound(cell, recorder, recurrent_mask):
    """Bind a matmul recorder and this call's recurrent masks (``RecurrentMasks``
    or None, see ``cell.recurrent_masks_bound``) to the cell, and cast its
    variables to its compute dtype as a Keras layer call would (the backward
    pass is traced outside any layer call)."""
    mixed = cell.compute_dtype != cell.variable_dtype
    with (
        cell.matmuls_recorded(recorder),
        cell.recurrent_masks_bound(recurrent_mask),
        AutocastScope(cell.compute_dtype) if mixed else contextlib.nullcontext(),
    ):
        yield recorder


def packed(template, tensors):
    """``tensors`` (flat) in the structure ``project_inputs`` returned, given
    as ``template``: that structure with leaf indices for leaves."""
    return tree.map_structure(lambda i: tensors[i], template)


def stacked(outputs: tf.TensorArray, zeros: tf.Tensor) -> tf.Tensor:
    """``outputs.stack()``, also for 0 steps: ``TensorArray.stack`` cannot stack
    an empty list whose element shape has an unknown batch size, so the shape
    is given as a tensor (``zeros``: one element). No ``tf.cond``: tf2onnx
    converts a TensorList stack only as a while loop's output."""
    if tf.executing_eagerly():  # a list of tensors (`portable()` called eagerly): size known
        return outputs.stack() if int(outputs.size()) else tf.zeros_like(zeros)[None][:0]
    stack = tf.raw_ops.TensorListStack(
        input_handle=outputs.flow, element_shape=tf.shape(zeros), element_dtype=zeros.dtype
    )
    return tf.ensure_shape(stack, (None, *zeros.shape))


def stacked_steps(outputs: tf.TensorArray, zeros: tf.Tensor, count: int) -> tf.Tensor:
    """`stacked` outputs of steps written ``count`` steps an element (stacked:
    ``stepped_loop``), as one tensor of shape (steps, *zeros.shape); ``outputs``
    is that tensor already (one step an element) or its blocks of ``count``
    steps under `scattered_outputs`."""
    if isinstance(outputs, tf.Tensor):
        if count == 1:
            return outputs
        sizes = tf.concat([[tf.shape(outputs)[0] * count], tf.shape(zeros)], axis=0)
        return tf.ensure_shape(tf.reshape(outputs, sizes), (None, *zeros.shape))
    if count == 1:
        return stacked(outputs, zeros)
    blocks = stacked(outputs, tf.stack([zeros] * count))
    # (blocks, count, *zeros.shape) to (blocks * count, 1, *zeros.shape): a 0 in
    # the target (no block, an empty batch) is on an axis whose size is 0 too, so
    # ONNX's Reshape, which (as tf2onnx writes it) reads a 0 as "the input's size
    # on that axis", reads the same shape. The sizes are zeros', not the blocks':
    # tf2onnx's stack of an empty list has a batch of 0.
    sizes = [tf.shape(blocks)[0] * count, 1]
    steps = tf.reshape(blocks, tf.concat([sizes, tf.shape(zeros)], axis=0))
    return tf.ensure_shape(tf.squeeze(steps, 1), (None, *zeros.shape))


def state_aliases(matmul_inputs: list, states: list) -> list:
    """For each recurrent matmul's input, the index of the state it is (the
    same tensor: no recurrent dropout in between), or None. The forward pass
    does not save those inputs a second time; the backward pass reads them
    from the saved states."""
    return [next((j for j, s in enumerate(states) if h is s), None) for h in matmul_inputs]


class Part(NamedTuple):
    """Columns ``start:stop`` of a recurrent matmul's output. ``shared``: the
    index of the projected input the step adds these columns to, where that
    sum is the only use of both (their gradients are then equal), or None."""

    start: int
    stop: int
    shared: int | None


def sole_consumer(tensor: tf.Tensor) -> tf.Operation | None:
    consumers = tensor.consumers()
    return consumers[0] if len(consumers) == 1 else None


def other_input(op: tf.Operation, tensor: tf.Tensor) -> tf.Tensor:
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


def added_to(tensor: tf.Tensor, projected: list) -> int | None:
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
    pieces = sorted((*columns, op.outputs[0]) for columns, op in zip(ranges, consumers))
    if any(after[0] < before[1] for before, after in itertools.pairwise(pieces)):
        return None  # overlapping slices
    return pieces


def matmul_parts(output: tf.Tensor, projected: list) -> list[Part]:
    """How the step uses a recurrent matmul's ``output`` (traced in a graph):
    the column parts it splits or slices it into (one part if it does not),
    in column order and covering every column, each with the projected input
    it is only added to, if any. The backward pass stores no gradient for such
    a part: it is that input's."""
    width = output.shape[-1]
    shared = added_to(output, projected)
    pieces = None if shared is not None else column_pieces(past_biases(output))
    if pieces is None:
        return [Part(0, width, shared)]
    parts, covered = [], 0
    for start, stop, piece in pieces:
        if start > covered:  # columns no op reads: their gradient is zero, stored all the same
            parts.append(Part(covered, start, None))
        parts.append(Part(start, stop, added_to(piece, projected)))
        covered = stop
    return parts + ([Part(covered, width, None)] if covered < width else [])


def columns_of(tensor: tf.Tensor, part: Part) -> tf.Tensor:
    """The columns of ``part`` of a recurrent matmul's output (or gradient)."""
    if part.stop - part.start == tensor.shape[-1]:
        return tensor
    return tensor[..., part.start : part.stop]


def probe_step(cell, template, px, states, recurrent_mask, training, parts, blocked=False):
    """One step traced on ``px`` and ``states`` (zeros shaped as one step) to
    find its recurrent matmuls: returns the recorder that saw them and, if
    ``parts``, each one's `matmul_parts` (a graph is needed: the portable loop
    also runs eagerly, without them). ``blocked``: products of few rows in
    column blocks (the portable loop: `ColumnBlocks`)."""
    blocked = blocked and not _scattered_outputs.get()
    probe = MatmulRecorder(blocks=ColumnBlocks() if blocked else None)
    with bound(cell, probe, recurrent_mask):
        cell.step(packed(template, px), list(states), training)
    return probe, [matmul_parts(output, px) for output in probe.outputs] if parts else []


def sharing(parts: list, count: int) -> list:
    """For each of the ``count`` projected inputs, the (matmul, part) added to
    it, or None."""
    pairs = [(k, part) for k, each in enumerate(parts) for part in each]
    shared = {part.shared: (k, part) for k, part in pairs if part.shared is not None}
    return [shared.get(j) for j in range(count)]


def unshared(parts: list) -> list:
    """The (matmul, part) pairs not added to a projected input: their outputs
    and gradients are saved per step."""
    return [(k, part) for k, each in enumerate(parts) for part in each if part.shared is None]


def joined_inputs(cell, parts: list, projected: list) -> tuple[dict, set]:
    """The portable loop's projected inputs joined per recurrent matmul: where
    two or more of them are only added to parts of one matmul's product
    (`matmul_parts`), through the cell's ``combine``, one time-major tensor as
    wide as the product holds them in its column order (zeros in the columns
    of the other parts). A step gathers it and adds it to the product (one
    op each) and hands the cell None for those blocks (``combine`` then takes
    the sum as the pre-activation): a gather and an add a step in place of
    one of each a block (the LSTM's step: 8 ops to 2). The sum is the same
    but for the order of a bias added between (the GRU's: one rounding).
    Blocks the input projection made (`affine_blocks`) are joined as one
    product of their kernels side by side (`joined_product`), not copied.
    Returns ``({matmul index: joined tensor}, indices of the inputs joined)``."""
    if not steps_through_combine(type(cell)) or type(cell).combine is not DenseGatesCell.combine:
        return {}, set()
    joins, joined = {}, set()
    for k, each in enumerate(parts):
        shared = [part.shared for part in each if part.shared is not None]
        if len(shared) < 2:
            continue
        widths = [part.stop - part.start for part in each]
        blocks = [None if part.shared is None else projected[part.shared] for part in each]
        joins[k] = joined_product(blocks, widths)
        if joins[k] is None:  # blocks made otherwise: copied side by side
            like = projected[shared[0]]
            leading = tf.shape(like)[:-1]
            joins[k] = side_by_side(
                blocks,
                widths,
                lambda width, leading=leading, like=like: tf.zeros(
                    tf.concat([leading, [width]], axis=0), like.dtype
                ),
            )
        joined.update(shared)
    return joins, joined


def side_by_side(pieces: list, widths: list, zeros) -> tf.Tensor:
    """``pieces`` joined on the last axis, ``zeros(width)`` for each None."""
    return tf.concat(
        [zeros(width) if piece is None else piece for piece, width in zip(pieces, widths)],
        axis=-1,
    )


class Affine(NamedTuple):
    """A block `affine_blocks` made: ``Reshape(BiasAdd(MatMul(flat, kernel),
    bias), shape)`` (``bias`` None without the ``BiasAdd``)."""

    flat: tf.Tensor
    kernel: tf.Tensor
    bias: tf.Tensor | None
    shape: tf.Tensor


def affine_operands(block: tf.Tensor) -> Affine | None:
    """The operands of ``block`` if `affine_blocks` made it, else None."""
    if block.op.type != "Reshape":
        return None
    product, shape = block.op.inputs
    bias = None
    if product.op.type == "BiasAdd":
        product, bias = product.op.inputs
    op = product.op
    if op.type != "MatMul" or op.get_attr("transpose_a") or op.get_attr("transpose_b"):
        return None
    return Affine(op.inputs[0], op.inputs[1], bias, shape)


def joined_product(blocks: list, widths: list) -> tf.Tensor | None:
    """``blocks`` (None: zeros ``width`` wide) side by side as one product of
    the rows they were projected from with their kernels (and biases) side by
    side, where all of them are `affine_blocks` of the same rows; else None.
    The kernels' join is a copy of weights, not of the sequence."""
    operands = [None if x is None else affine_operands(x) for x in blocks]
    if any(x is not None and each is None for x, each in zip(blocks, operands)):
        return None
    first = next(each for each in operands if each is not None)
    if any(
        each is not None
        and (each.flat is not first.flat or (each.bias is None) != (first.bias is None))
        for each in operands
    ):
        return None
    dtype, rows = first.flat.dtype, first.flat.shape[-1]
    kernels = [None if each is None else each.kernel for each in operands]
    product = tf.matmul(
        first.flat, side_by_side(kernels, widths, lambda width: tf.zeros((rows, width), dtype))
    )
    if first.bias is not None:
        biases = [None if each is None else each.bias for each in operands]
        bias = side_by_side(biases, widths, lambda width: tf.zeros((width,), dtype))
        product = tf.nn.bias_add(product, bias)
    joined = tf.reshape(product, tf.concat([first.shape[:-1], [sum(widths)]], axis=0))
    like = next(x for x in blocks if x is not None)
    joined.set_shape((*like.shape[:-1], sum(widths)))
    return joined


def at(tensor: tf.Tensor, t: tf.Tensor) -> tf.Tensor:
    """``tensor[t]`` as one op (``GatherV2``): with a tensor index, ``tensor[t]``
    is a ``StridedSlice`` with three ``Pack`` and an ``AddV2`` for its bounds,
    each an op of every step in TensorFlow's executor (the portable loop)."""
    return tf.gather(tensor, t)


def first_step(tensor):
    """Zeros shaped like one step of time-major ``tensor``: what a probe step
    is traced on (it only finds the recurrent matmuls), valid for 0 steps too."""
    return tf.ensure_shape(tf.zeros(tf.shape(tensor)[1:], tensor.dtype), tensor.shape[1:])


def masked_step(cell, px, states, prev_output, keep, zero_output_for_mask, training):
    """One step with ``keras.layers.RNN``'s mask semantics: a masked step keeps
    the states and emits the previous output (zeros with zero_output_for_mask)."""
    output, new_states = cell.step(px, list(states), training)
    if keep is not None:
        new_states = [tf.where(keep, n, s) for n, s in zip(new_states, states)]
        fill = tf.zeros_like(output) if zero_output_for_mask else prev_output
        output = tf.where(keep, output, fill)
    return output, list(new_states)


def written_at(outputs: tf.Tensor, value: tf.Tensor, index: tf.Tensor) -> tf.Tensor:
    """``outputs`` with ``value`` in place of its element ``index`` (axis 0):
    XLA's ``DynamicUpdateSlice``, which LiteRT runs as its builtin
    ``DYNAMIC_UPDATE_SLICE`` in place (a ``TensorScatterUpdate`` became a
    scatter into a new tensor and a select, a copy of every step's outputs at
    each step). TensorFlow has no kernel for the op outside XLA: a graph traced
    under `scattered_outputs` is for LiteRT's converter, not to be run."""
    from tensorflow.compiler.tf2xla.python import xla  # no public name

    start = tf.concat([index[None], tf.zeros([tf.rank(value)], index.dtype)], axis=0)
    return xla.dynamic_update_slice(outputs, value[None], start)


def written_part(outputs: Any, size: Any) -> Any:
    """The first ``size`` elements of a `scattered_outputs` tensor (made with
    room for one element at least); a TensorList (or ``()``) as it is."""
    return outputs[:size] if isinstance(outputs, tf.Tensor) else outputs


def steps_of(window: tf.Tensor, count: int) -> list[tf.Tensor]:
    """The ``count`` steps of a window of a time-major sequence: an unstack, or
    under `scattered_outputs` one slice each (LiteRT's ``UNPACK`` refuses a
    tensor of no elements, an empty batch)."""
    if _scattered_outputs.get():
        return [window[k] for k in range(count)]
    return tf.unstack(window, count)


def stepped_loop(
    body,
    output_list,
    carry: tuple,
    steps,
    unroll: int,
    known_steps: int | None = None,
    sequences: list | tuple = (),
) -> tuple:
    """Run ``steps`` steps of ``body``, ``(t, xs, *carry) -> (output,
    *carry)``, with ``xs`` the step's slices of the time-major ``sequences``
    and ``t`` its index (None in a loop of ``unroll`` steps an iteration,
    whose body writes no list at it); ``output_list(size, count)`` makes a
    list of ``size`` elements, each the outputs of ``count`` steps stacked, or
    ``()`` where the outputs are not kept. ``unroll`` > 1 runs a loop of
    ``unroll`` steps an iteration (``unrolled_steps``), then one of the
    remaining steps (``steps``). An iteration of ``unroll`` steps reads them
    from each sequence with one gather and one unstack, and advances the step
    index once, in place of a gather and an add a step. Where the graph knows
    the steps (``known_steps``), a loop that would run no iteration is left
    out: a multiple of ``unroll`` steps runs the first loop alone, fewer than
    ``unroll`` the second alone, and neither pays for a second loop's start,
    list and join.

    For tf2onnx, whose ONNX ``Loop`` makes every write to a list one element an
    iteration: an iteration writes one element (its steps' outputs stacked) and
    each loop writes a list of its own (one passed from loop to loop converts to
    a tensor of no type, which onnxruntime refuses).

    Returns ``(list, count)`` for each loop, in order, and the final ``carry``."""

    def stepping(count):
        def iteration(i, t, outputs, *carry):
            if count == 1:
                rows, times = [[at(x, t) for x in sequences]], [t]
            else:
                window = t + tf.constant(list(range(count)))
                read = [steps_of(tf.gather(x, window), count) for x in sequences]
                rows, times = list(zip(*read)) if read else [()] * count, [None] * count
            written = []
            for xs, now in zip(rows, times):
                output, *carry = body(now, list(xs), *carry)
                written.append(output)
            value = tf.stack(written) if count > 1 else output
            if isinstance(outputs, tf.TensorArray):
                outputs = outputs.write(i, value)
            elif isinstance(outputs, tf.Tensor):  # `scattered_outputs`
                outputs = written_at(outputs, value, i)
            return (i + 1, t + count, outputs, *carry)

        return iteration

    t, stacks, blocks = tf.constant(0), [], 0
    if unroll > 1 and (known_steps is None or known_steps >= unroll):
        blocks = steps // unroll
        # `maximum_iterations` alone bounds it: with `blocks` also captured by
        # the condition, tf2onnx fed the condition its int64 copy of a known
        # trip count where the loop body expects int32, and onnxruntime
        # refused the model (Keras' own ONNX export at a fixed length).
        _, t, outputs, *carry = tf.while_loop(
            lambda *_: tf.constant(True),
            stepping(unroll),
            (tf.constant(0), t, output_list(blocks, unroll), *carry),
            maximum_iterations=blocks,
            name="unrolled_steps",
        )
        stacks.append((written_part(outputs, blocks), unroll))
        if known_steps is not None and known_steps % unroll == 0:
            return stacks, tuple(carry)
    rest = steps - blocks * unroll
    _, t, outputs, *carry = tf.while_loop(
        lambda i, t, *_: t < steps,
        stepping(1),
        (tf.constant(0), t, output_list(rest, 1), *carry),
        maximum_iterations=rest,
        name="steps",
    )
    return [*stacks, (written_part(outputs, rest), 1)], tuple(carry)


def run_forward(
    cell,
    projected,
    states,
    mask,
    recurrent_mask,
    flags,
    record,
    unroll=1,
    blocked=False,
    output=None,
):
    """The forward loop; returns (last_output, outputs, states) and, if
    ``record``, the per-step tensors the backward loop needs. ``unroll`` > 1
    (the portable loop): a loop of ``unroll`` steps an iteration, then one of
    the remaining steps. ``blocked`` (the portable loop, alone): recurrent
    products of few rows in column blocks (`ColumnBlocks`). ``output``: the
    output before the first step, which a masked step emits again (zeros
    where None)."""
    training, zero_output_for_mask, return_sequences, template = flags
    steps = tf.shape(projected[0])[0]
    batch = tf.shape(states[0])[0]
    zeros = tf.zeros((batch, cell.output_size), states[0].dtype)
    carries_output = mask is not None and not zero_output_for_mask

    def step_arrays(tensors):
        return [tf.TensorArray(x.dtype, size=steps, element_shape=x.shape) for x in tensors]

    probe_px = [first_step(p) for p in projected]
    joining = unroll > 1 and not tf.executing_eagerly()  # a portable loop in a graph
    probe, parts = probe_step(
        cell, template, probe_px, states, recurrent_mask, training, record or joining, blocked
    )
    joins, joined = joined_inputs(cell, parts, projected) if joining else ({}, set())
    aliases = state_aliases(probe.inputs, list(states))
    shared, saved_parts = sharing(parts, len(projected)), unshared(parts)

    def not_states(matmul_inputs):
        return [h for h, alias in zip(matmul_inputs, aliases) if alias is None]

    def replay_inputs(px, matmul_outputs):
        """What the backward loop replays the step from in place of ``px``: a
        projected input plus the matmul part added to it (the pre-activation
        less any bias between), or the projected input."""
        return [
            x if share is None else x + columns_of(matmul_outputs[share[0]], share[1])
            for x, share in zip(px, shared)
        ]

    def parts_saved(matmul_outputs):
        return [columns_of(matmul_outputs[k], part) for k, part in saved_parts]

    # states before each step, previous outputs, matmul inputs not states,
    # replay inputs, matmul output parts not added to a projected input
    saved = ([], [], [], [], [])
    if record:
        saved = (
            step_arrays(states),
            step_arrays([zeros] if carries_output else []),
            step_arrays(not_states(probe.inputs)),
            step_arrays(probe_px),
            step_arrays(parts_saved(probe.outputs)),
        )

    # what a step reads: the mask, the joined inputs, the other projected inputs
    unjoined = [p for j, p in enumerate(projected) if j not in joined]
    sequences = ([] if mask is None else [mask]) + list(joins.values()) + unjoined

    def body(t, xs, prev_output, states, saved):
        xs = iter(xs)
        keep = None if mask is None else next(xs)[:, None]
        addends = {k: next(xs) for k in joins}
        recorder = MatmulRecorder(kernels=probe.kernels, blocks=probe.blocks, addends=addends)
        with bound(cell, recorder, recurrent_mask):
            px = [None if j in joined else next(xs) for j in range(len(projected))]
            output, new_states = masked_step(
                cell,
                packed(template, px),
                states,
                prev_output,
                keep,
                zero_output_for_mask,
                training,
            )
        if record:
            now = (list(states), [prev_output] if carries_output else [])
            now += (not_states(recorder.inputs), replay_inputs(px, recorder.outputs))
            now += (parts_saved(recorder.outputs),)
            saved = tuple(
                [ta.write(t, x) for ta, x in zip(arrays, values)]
                for arrays, values in zip(saved, now)
            )
        return output, output, tuple(new_states), saved

    def output_list(size, count):
        # No TensorArray is carried that is never written: tf2onnx cannot convert one.
        if not return_sequences:
            return ()
        if _scattered_outputs.get():
            # one element at least: LiteRT checks a loop body's shapes before it
            # runs, and a slice of one step does not fit in a tensor of none
            room = tf.maximum(size, 1)
            leading = tf.stack([room] if count == 1 else [room, count])
            return tf.zeros(tf.concat([leading, tf.shape(zeros)], 0), zeros.dtype)
        shape = zeros.shape if count == 1 else (count, *zeros.shape)
        return tf.TensorArray(zeros.dtype, size=size, element_shape=shape)

    lists, (last_output, states, saved) = stepped_loop(
        body,
        output_list,
        (zeros if output is None else output, tuple(states), saved),
        steps,
        unroll,
        projected[0].shape[0],
        sequences,
    )
    if return_sequences:
        stacks = [stacked_steps(outputs, zeros, count) for outputs, count in lists]
        all_outputs = stacks[0] if len(stacks) == 1 else tf.concat(stacks, axis=0)
    else:
        all_outputs = last_output[None]
    result = (last_output, all_outputs, tuple(states))
    return result, tuple(tuple(ta.stack() for ta in arrays) for arrays in saved)


@tf.function(jit_compile=True, autograph=False)
def forward(cell, projected, states, mask, recurrent_mask, flags, record, output):
    return run_forward(cell, projected, states, mask, recurrent_mask, flags, record, output=output)


@tf.function(jit_compile=True, autograph=False)
def backward(
    cell, projected, states0, saved, upstream, variables, mask, recurrent_mask, flags, output
):
    """The gradients of the projected inputs, the initial states,
    ``variables`` and the output before the first step (``output``, zeros
    where None). ``projected`` is read only if ``saved`` is None (the forward
    ran without recording): the loop replays each step from the saved replay
    inputs (`run_forward`), so the projected sequence need not be kept for it."""
    training, zero_output_for_mask, return_sequences, template = flags
    if saved is None:  # the forward ran without recording (training=False)
        _, saved = run_forward(
            cell, projected, states0, mask, recurrent_mask, flags, True, output=output
        )
    saved_states, saved_prev_outputs, matmul_inputs, replay_inputs, saved_parts = saved
    d_last, d_outputs, d_states = upstream[0], upstream[1], list(upstream[2:])
    steps = tf.shape(replay_inputs[0])[0]
    carries_output = bool(saved_prev_outputs)
    g_carry = d_last if return_sequences else d_last + d_outputs[0]

    def arrays(tensors):
        return [tf.TensorArray(x.dtype, size=steps, element_shape=x.shape[1:]) for x in tensors]

    probe_states = [first_step(s) for s in saved_states]
    probe_px = [first_step(r) for r in replay_inputs]
    probe, parts = probe_step(
        cell, template, probe_px, probe_states, recurrent_mask, training, True
    )
    stored = unshared(parts)  # the loop stores these parts' gradients
    unaliased = iter(matmul_inputs)
    matmul_inputs = [
        next(unaliased) if j is None else saved_states[j]
        for j in state_aliases(probe.inputs, probe_states)
    ]
    transposed = {
        columns: tf.transpose(tf.cast(kernel, cell.compute_dtype))
        for columns, kernel in probe.kernels.items()
    }

    def replayed_outputs(px, t):
        """The recurrent matmuls' outputs to replay at step ``t``: a part added
        to a projected input is zeros (the replay input ``px`` holds it),
        another part is read back."""
        read = iter([p[t] for p in saved_parts])
        outputs = []
        for each in parts:
            pieces = [
                next(read) if part.shared is None else tf.zeros_like(px[part.shared])
                for part in each
            ]
            outputs.append(pieces[0] if len(pieces) == 1 else tf.concat(pieces, axis=-1))
        return outputs

    def body(i, g_states, g_carry, g_vars, d_projected, d_parts):
        t = steps - 1 - i
        px = [r[t] for r in replay_inputs]
        states = [s[t] for s in saved_states]
        prev = [saved_prev_outputs[0][t]] if carries_output else []
        keep = None if mask is None else mask[t][:, None]
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch([px, states, prev, variables])
            recorder = MatmulRecorder(replayed_outputs(px, t), tape, probe.kernels, transposed)
            with bound(cell, recorder, recurrent_mask):
                output, new_states = masked_step(
                    cell,
                    packed(template, px),
                    states,
                    (prev or [None])[0],
                    keep,
                    zero_output_for_mask,
                    training,
                )
        g_output = g_carry + d_outputs[t] if return_sequences else g_carry
        g_px, g_states, g_prev, g_matmuls, g_step_vars = tape.gradient(
            [output, *new_states],
            [px, states, prev, recorder.outputs, variables],
            output_gradients=[g_output, *g_states],
            unconnected_gradients=tf.UnconnectedGradients.ZERO,
        )
        g_carry = g_prev[0] if carries_output else tf.zeros_like(g_carry)
        return (
            i + 1,
            tuple(g_states),
            g_carry,
            tuple(a + b for a, b in zip(g_vars, g_step_vars)),
            [ta.write(t, g) for ta, g in zip(d_projected, g_px)],
            [ta.write(t, columns_of(g_matmuls[k], part)) for ta, (k, part) in zip(d_parts, stored)],
        )

    g_vars0 = tuple(tf.zeros_like(v) for v in variables)
    _, g_states, g_output, g_vars, d_projected, d_parts = tf.while_loop(
        lambda i, *_: i < steps,
        body,
        (
            tf.constant(0),
            tuple(d_states),
            g_carry,
            g_vars0,
            arrays(replay_inputs),
            arrays(saved_parts),
        ),
        maximum_iterations=steps,
    )
    d_projected = [d.stack() for d in d_projected]
    d_parts = iter([d.stack() for d in d_parts])
    # The recurrent matmuls' weight gradient: one matmul over all steps per part.
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(variables)
        products, d_products = [], []
        with bound(cell, MatmulRecorder(), recurrent_mask):
            for h, columns, each in zip(matmul_inputs, probe.columns, parts):
                flat = tf.reshape(h, (-1, h.shape[-1]))
                kernel = cell.recurrent_kernel_columns(columns)
                for part in each:
                    block = kernel if len(each) == 1 else kernel[:, part.start : part.stop]
                    products.append(tf.matmul(flat, block))
                    d = next(d_parts) if part.shared is None else d_projected[part.shared]
                    d_products.append(tf.reshape(d, tf.shape(products[-1])))
    g_kernel = tape.gradient(
        products,
        variables,
        output_gradients=d_products,
        unconnected_gradients=tf.UnconnectedGradients.ZERO,
    )
    g_vars = [a + b for a, b in zip(g_vars, g_kernel)]
    return d_projected, list(g_states), g_vars, g_output


def recurrence_flags(projected: tuple, training, zero_output_for_mask, return_sequences):
    """``projected`` flattened, and the static flags ``run_forward`` takes."""
    flat = tuple(tree.flatten(projected))
    template = tree.pack_sequence_as(projected, list(range(len(flat))))
    return flat, (bool(training), bool(zero_output_for_mask), bool(return_sequences), template)


def fused_recurrence(
    cell: Any,
    projected: tuple,
    states: list,
    mask: Any,
    recurrent_mask: Any,
    training: bool,
    zero_output_for_mask: bool,
    return_sequences: bool,
    compiled: bool = True,
    blocked: bool = False,
    initial_output: Any = None,
) -> tuple:
    """Run ``cell`` over time-major projected inputs (the structure
    ``cell.step_inputs`` returned: a tuple of tensors, possibly nested);
    differentiable. ``initial_output``: the output before the first step,
    which a masked step emits again without ``zero_output_for_mask`` (zeros
    where None; a loop that continues another's passes that one's last
    output).

    ``compiled``: the XLA-compiled loop with its own gradient; else the same
    loop traced into the caller's graph, with no XLA function and no custom
    gradient (TensorFlow differentiates the loop), so that the graph runs with
    XLA JIT disabled and converts with tf2onnx; it runs `PORTABLE_UNROLL`
    steps an iteration and, if ``blocked`` (a loop that runs alone), its
    recurrent products of few rows in column blocks (`ColumnBlocks`).

    Returns ``(last_output, outputs, final_states)`` with ``outputs`` of shape
    (T, B, output_size), or (1, B, output_size) without ``return_sequences``.
    """
    flat, flags = recurrence_flags(projected, training, zero_output_for_mask, return_sequences)
    states = tuple(states)
    if compiled:
        result = differentiable_recurrence(
            cell, flat, states, mask, recurrent_mask, flags, initial_output
        )
    else:
        result, _ = run_forward(
            cell,
            flat,
            states,
            mask,
            recurrent_mask,
            flags,
            False,
            PORTABLE_UNROLL,
            blocked,
            initial_output,
        )
    last_output, outputs, *final_states = tree.flatten(result)
    return last_output, outputs, final_states


def row_counts(batch: int | tf.Tensor, loops: int) -> list:
    """The rows of each of ``loops`` parts of a batch of ``batch`` rows (an int,
    or a scalar tensor where the batch size is known only at run time): as
    equal as can be, the first parts one row more."""
    return [(batch + loops - 1 - part) // loops for part in range(loops)]


def row_parts(
    loops: int, sequences: tf.Tensor, states: list, mask: Any, recurrent_mask: Any
) -> list[tuple]:
    """``(sequences, states, mask, recurrent_mask)`` of each of ``loops`` parts
    of the batch rows (`row_counts`), every tensor split on its first axis (the
    batch-major sequences and mask, the states, the recurrent-dropout mask of
    the states; a DropConnect mask, shaped as the recurrent kernel, is every
    part's). One part is the batch itself. A step treats the rows of a batch
    independently (a cell whose step mixes them, as batch statistics do,
    trains on the generic path: ``fused_training_conflicts``), so the parts
    change no number. Split before the input projection, each part is a
    contiguous block of the batch-major inputs (TensorFlow shares the input's
    buffer where a row's bytes are aligned); the time-major projected sequence
    split on its batch axis was a strided copy."""
    if loops == 1:
        return [(sequences, states, mask, recurrent_mask)]
    batch = sequences.shape[0]
    counts = row_counts(tf.shape(sequences)[0] if batch is None else batch, loops)
    sizes = counts if all(isinstance(c, int) for c in counts) else tf.stack(counts)

    def split(tensor):
        return tf.split(tensor, sizes, axis=0)

    return list(
        zip(
            split(sequences),
            zip(*(split(s) for s in states)),
            [None] * loops if mask is None else split(mask),
            [recurrent_mask] * loops
            if recurrent_mask is None or recurrent_mask.state is None
            else [recurrent_mask._replace(state=s) for s in split(recurrent_mask.state)],
        )
    )


@contextlib.contextmanager
def forward_replica(replica, variables):
    """Under a `tf.distribute` strategy, the gradient is traced outside the
    replica context of the forward pass, where a mirrored variable reads as
    its first replica's copy: re-enter that context (``replica``; None without
    a strategy) on the device of this replica's copies (``variables``), which
    also gives each replica its own trace of ``backward``."""
    if replica is None or not variables:
        yield
        return
    with replica, tf.device(variables[0].device):
        yield


@tf.function(autograph=False)
def differentiable_recurrence(cell, projected, states, mask, recurrent_mask, flags, output=None):
    # A graph function even when called eagerly: an XLA function called
    # eagerly under a GradientTape would be asked for its TensorLists.
    n, record = len(projected), flags[0]
    given = [] if output is None else [output]  # differentiated where given
    stop = n + len(states)
    replica = tf.distribute.get_replica_context() if tf.distribute.has_strategy() else None

    @tf.custom_gradient
    def recurrence(*inputs):
        before = inputs[stop] if given else None
        result, saved = forward(
            cell, inputs[:n], inputs[n:stop], mask, recurrent_mask, flags, record, before
        )

        def grad(*upstream, variables=()):
            upstream = [
                tf.zeros_like(r) if u is None else u
                for u, r in zip(tree.flatten(upstream), tree.flatten(result))
            ]
            with forward_replica(replica, variables):
                d_projected, d_states, d_vars, d_output = backward(
                    cell,
                    None if record else inputs[:n],
                    inputs[n:stop],
                    saved if record else None,
                    upstream,
                    list(variables),
                    mask,
                    recurrent_mask,
                    flags,
                    before,
                )
            return d_projected + d_states + [d_output] * len(given), d_vars

        return result, grad

    return recurrence(*projected, *states, *given)
