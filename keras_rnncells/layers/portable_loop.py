"""What the portable loop (no XLA: TF Serving's default, tf2onnx, LiteRT)
does that the compiled one does not: `PORTABLE_UNROLL` steps an iteration,
recurrent products of few rows in column blocks (`ColumnBlocks`), projected
inputs joined per product (`joined_inputs`), and for LiteRT outputs written
in place of a TensorList (`scattered_outputs`)."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import time
from typing import Any, NamedTuple

import tensorflow as tf

from keras_rnncells.cells.dense_gates import DenseGatesCell, steps_through_combine

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


def scattering() -> bool:
    """Whether loops are being traced under `scattered_outputs`."""
    return _scattered_outputs.get()


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
    if scattering():
        return [window[k] for k in range(count)]
    return tf.unstack(window, count)
