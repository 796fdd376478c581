"""What the portable loop (no XLA: TF Serving's default, tf2onnx, LiteRT)
does that the compiled one does not: `PORTABLE_UNROLL` steps an iteration,
recurrent products of few rows in column blocks where the layer asks for
them (`ColumnBlocks`), projected inputs joined per product (`joined_inputs`),
and for LiteRT outputs written in place of a TensorList (`scattered_outputs`)."""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, NamedTuple

import tensorflow as tf

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


# Column blocks (`ColumnBlocks`), taken only where a layer asks for them
# (``keras_rnncells.RNN(column_blocks=True)``; off by default). On a 2-core
# host with AVX2, TensorFlow's CPU MatMul ran a one-row product (a batch of 1,
# as served) of at most 16,384 multiply-adds in 2 to 4 µs, and one of 32,768
# to 65,536 in 16 to 25 µs: from there it hands the product to its intra-op
# threads, and the GRU's and LSTM's products at 128 units ran 1.4x to 1.8x
# faster in blocks of that size. On the 2-core hosts with AVX-512 (and AMX)
# that these tests and benchmarks run on, whole products were 1.03x to 1.26x
# faster at every shape measured (benchmarks/README.md, "Column blocks as an
# option"), whence the default.
# So a portable loop that runs alone (one loop for the batch) and whose layer
# asks for them runs a product of at most `BLOCK_ROWS` rows in column blocks
# where 2 to `MAX_BLOCKS` blocks of at most `BLOCK_MACS` one-row multiply-adds
# do. Where a loop per core runs, each core is busy with a loop of its own,
# and the blocks' extra ops cost more than the handoff: our LSTM's inference
# graph at batch 8 to 32 and 100 steps ran 1.1x to 1.25x faster without them
# (benchmarks/README.md, "Column blocks only in a loop alone").
BLOCK_MACS = 16384
MAX_BLOCKS = 4
BLOCK_ROWS = 64


def column_blocks(depth: int, width: int) -> list[int]:
    """The column widths of the blocks that a portable loop with column blocks
    runs a product of ``depth`` rows by ``width`` columns (a kernel's shape)
    as: one block, or at most `MAX_BLOCKS` of at most `BLOCK_MACS` one-row
    multiply-adds each."""
    block = max(1, BLOCK_MACS // depth)
    count = -(-width // block)
    if count == 1 or count > MAX_BLOCKS:
        return [width]
    return [block] * (count - 1) + [width - block * (count - 1)]


class ColumnBlocks:
    """A portable loop's recurrent products in the column blocks its plan
    gives them (`plan.Product.blocks`), each kernel slice split once, before
    the loop. Where the batch size is known only at run time, a ``tf.cond`` in
    each step picks the blocks (at most `BLOCK_ROWS` rows, a predicate taken
    before the loop from ``batch``) or one product."""

    def __init__(self, step_plan: Any, kernels: dict, batch: tf.Tensor) -> None:
        blocked = [product for product in step_plan.products if product.blocks]
        self.kernels = {
            product.columns: tf.split(kernels[product.columns], list(product.blocks), axis=1)
            for product in blocked
        }
        rows_unknown = any(product.input_shape[0] is None for product in blocked)
        self.few_rows = batch <= BLOCK_ROWS if rows_unknown else None

    def product(self, h: tf.Tensor, kernel: tf.Tensor, columns: Any) -> tf.Tensor:
        """``h @ kernel``, ``kernel`` the ``columns`` of the recurrent kernel."""
        blocks = self.kernels.get(columns)
        if blocks is None:
            return tf.matmul(h, kernel)

        def in_blocks():
            return tf.concat([tf.matmul(h, block) for block in blocks], axis=1)

        if h.shape[0] is not None:  # at most BLOCK_ROWS: the plan takes no blocks above
            return in_blocks()
        return tf.cond(self.few_rows, in_blocks, lambda: tf.matmul(h, kernel))


def joined_inputs(step_plan: Any, projected: list) -> dict:
    """The portable loop's projected inputs joined per recurrent product: for
    each product of ``step_plan.joins`` (two or more of its parts only added
    to projected inputs, through the cell's ``combine``: `plan.joined_products`),
    one time-major tensor as wide as the product holds those inputs in its
    column order (zeros in the columns of the other parts). A step gathers it
    and adds it to the product (one op each) and hands the cell None for those
    blocks (``combine`` then takes the sum as the pre-activation): a gather and
    an add a step in place of one of each a block (the LSTM's step: 8 ops to
    2). The sum is the same but for the order of a bias added between (the
    GRU's: one rounding). Blocks the input projection made (`affine_blocks`)
    are joined as one product of their kernels side by side (`joined_product`),
    not copied. Returns ``{product index: joined tensor}``; the inputs joined
    are ``step_plan.joined``."""
    joins = {}
    for k in step_plan.joins:
        parts = step_plan.products[k].parts
        widths = [part.stop - part.start for part in parts]
        blocks = [None if part.added_to is None else projected[part.added_to] for part in parts]
        joins[k] = joined_product(blocks, widths)
        if joins[k] is None:  # blocks made otherwise: copied side by side
            like = next(block for block in blocks if block is not None)
            leading = tf.shape(like)[:-1]
            joins[k] = side_by_side(
                blocks,
                widths,
                lambda width, leading=leading, like=like: tf.zeros(
                    tf.concat([leading, [width]], axis=0), like.dtype
                ),
            )
    return joins


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
