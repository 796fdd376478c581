"""Input-side products of the dense-gate cells, column selections and the
initializers their weights share.

The projection of a whole sequence is written with TensorFlow ops where the
form matters: one ``MatMul`` and ``BiasAdd`` per block over the flattened
rows (TensorFlow differentiates ``BiasAdd`` with its fused ``BiasAddGrad``),
and reshape targets that mean the same in ONNX (`unflattened_sizes`). The rest
is ``keras.ops``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf
from keras import ops

from keras_rnncells.cells.context import Tensor

Columns = Any  # None, a range ``(start, stop)``, or a tuple of ranges joined in order

LAYER_NORM_EPSILON = 1e-3


def select_columns(tensor: Tensor, columns: Columns = None) -> Tensor:
    """The last-axis ``columns`` of ``tensor`` (all of it for ``None``)."""
    if columns is None:
        return tensor
    if isinstance(columns[0], tuple):
        return ops.concatenate([select_columns(tensor, c) for c in columns], axis=-1)
    return tensor[..., columns[0] : columns[1]]


def placed_columns(tensor: Tensor, columns: Columns, width: int) -> Tensor:
    """``tensor``, the last-axis ``columns`` (see `select_columns`) of a
    ``width``-column tensor, put back in place: zeros in the other columns."""
    if columns is None:
        return tensor
    ranges = columns if isinstance(columns[0], tuple) else (columns,)
    placed, offset = 0, 0
    for start, stop in ranges:
        piece = tensor[..., offset : offset + stop - start]
        padding = [[0, 0]] * (len(tensor.shape) - 1) + [[start, width - stop]]
        placed = placed + ops.pad(piece, padding)
        offset += stop - start
    return placed


def in_float32(initializer: Any) -> Any:
    """``initializer`` computed in float32, then cast to the dtype asked for:
    for bfloat16 weights, which Keras' orthogonal initializer (a QR
    decomposition, without a bfloat16 kernel) cannot make directly."""

    def initialize(shape: Any, dtype: Any = None) -> Tensor:
        return ops.cast(initializer(shape, dtype="float32"), dtype)

    return initialize


def forget_bias_initializer(units: int, blocks: int, forget: tuple[int, ...]) -> Any:
    """Zeros over ``blocks`` blocks of ``units``, ones in the ``forget`` blocks."""

    def initialize(shape: tuple, dtype: Any = None) -> Tensor:
        ones = [1.0 if block in forget else 0.0 for block in range(blocks)]
        return ops.cast(ops.repeat(ops.convert_to_tensor(ones), units), dtype or "float32")

    return initialize


def affine_blocks(inputs: Tensor, kernels: Sequence, biases: Sequence) -> tuple:
    """``inputs @ kernel + bias`` for each kernel (and bias, or None) over the last
    axis of ``inputs`` (any rank): the inputs flattened to 2-D once, then one
    matmul and one ``BiasAdd`` per block, whose gradient is TensorFlow's fused
    ``BiasAddGrad`` (a broadcasting add over a 3-D product is differentiated by
    a slower ``Sum`` over two axes; a 3-D ``einsum`` ran 1.1x to 1.3x slower)."""
    flat = tf.reshape(inputs, (-1, inputs.shape[-1]))
    leading = unflattened_sizes(inputs)
    blocks = []
    for kernel, bias in zip(kernels, biases):
        product = tf.matmul(flat, kernel)
        if bias is not None:
            product = tf.nn.bias_add(product, bias)
        width = kernel.shape[-1]
        block = tf.reshape(product, tf.concat([leading, [width]], axis=0))
        block.set_shape((*inputs.shape[:-1], width))
        blocks.append(block)
    return tuple(blocks)


def input_product(inputs: Tensor, kernel: Tensor) -> Tensor:
    """``inputs @ kernel`` over the last axis of a step (2-D) or a sequence
    (`affine_blocks`: Keras' ``ops.matmul`` of a sequence is a ``tensordot``,
    whose ONNX form fails on an empty batch)."""
    if len(inputs.shape) == 2:
        return ops.matmul(inputs, kernel)
    (product,) = affine_blocks(inputs, [kernel], [None])
    return product


def unflattened_sizes(inputs: Tensor) -> Tensor:
    """The sizes of all but the last axis of ``inputs``, as the target of a
    ``Reshape`` of their flattened rows that means the same in TensorFlow and
    in ONNX. tf2onnx leaves ONNX's ``allowzero`` off, so a 0 in the target reads
    as "the input's size on that axis": a 0 first size copies the flat rows'
    0, but an empty batch (a 0 second size) would copy the width. So that 0 is
    given as -1 (inferred as 0) where the first size is not 0 (TensorFlow
    infers no size beside another 0). A batch of 0 rows in 0 steps is empty
    in both, with the width as its batch in ONNX."""
    sizes = tf.shape(inputs)[:-1]
    if len(inputs.shape) < 3 or inputs.shape[1]:  # no batch axis, or its size known
        return sizes
    empty_batch = tf.logical_and(tf.equal(sizes[1], 0), tf.not_equal(sizes[0], 0))
    batch = tf.where(empty_batch, -1, sizes[1])
    return tf.concat([sizes[:1], batch[None], sizes[2:]], axis=0)


def project_blocks(
    inputs: Tensor, kernel: Tensor, bias: Tensor | None, splits: int | Sequence[int]
) -> tuple:
    """``inputs @ kernel + bias`` split into column blocks at ``splits`` (a
    count of equal blocks, or the columns to split at, as ``ops.split``). A single
    step (Keras' loop, ONNX's ``Loop``) takes one matmul and a split of its
    small product: fewer ops per step. A sequence takes one matmul per block
    (`affine_blocks`): splitting one product would copy the whole projected
    sequence, and its gradient would concatenate it again."""
    if len(inputs.shape) == 2:
        projected = ops.matmul(inputs, kernel)
        if bias is not None:
            projected = projected + bias
        return (projected,) if splits == 1 else tuple(ops.split(projected, splits, axis=-1))
    kernels = ops.split(kernel, splits, axis=-1)
    biases = [None] * len(kernels) if bias is None else ops.split(bias, splits)
    return affine_blocks(inputs, kernels, biases)


def layer_normalize(x: Tensor, gain: Tensor, bias: Tensor) -> Tensor:
    """Layer normalization over the last axis (Ba, Kiros & Hinton 2016):
    ``gain * (x - mean) / sqrt(var + 1e-3) + bias``."""
    mean = ops.mean(x, axis=-1, keepdims=True)
    variance = ops.var(x, axis=-1, keepdims=True)
    return (x - mean) * ops.rsqrt(variance + LAYER_NORM_EPSILON) * gain + bias
