"""A step's recurrent products, recorded as the step makes them
(`MatmulRecorder`) by the maker of each loop (probed, made in the forward
loop, replayed in the backward loop), and the one place where the fused loops
run a cell's step (`traced_step`) or read its recurrent kernel
(`masked_kernel`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import tensorflow as tf
from keras import tree
from keras.src.backend import AutocastScope

from keras_rnncells.cells.context import StepContext


class MatmulRecorder:
    """Bound to a cell while one step is traced (`traced_step`): each recurrent
    product the step makes through ``cell.recurrent_matmul`` is made by
    ``make(k, h, read_kernel, columns)``, ``k`` its index in the step, and its
    input ``h``, output and ``columns`` are recorded in call order
    (``inputs``, ``outputs``, ``columns``). ``read_kernel()`` reads those
    columns of the kernel (times the DropConnect mask in force).

    Each loop gives the maker of its job: `plain_products` (the plan's probe
    step, and reading a kernel), `loop_products` (the forward loop: kernel
    slices read before the loop) and `replayed_products` (the backward loop:
    each product's saved value)."""

    def __init__(self, make: Callable | None = None) -> None:
        self.make = plain_products if make is None else make
        self.inputs: list = []
        self.outputs: list = []
        self.columns: list = []

    def __call__(self, h, read_kernel, columns):
        output = self.make(len(self.outputs), h, read_kernel, columns)
        self.inputs.append(h)
        self.outputs.append(output)
        self.columns.append(columns)
        return output


def plain_products(k, h, read_kernel, columns) -> tf.Tensor:
    """``h @ kernel[:, columns]``, the kernel read where the product is made."""
    return tf.matmul(h, tf.convert_to_tensor(read_kernel()))


def loop_products(kernels: dict, blocks: Any = None, addends: dict | None = None) -> Callable:
    """The forward loop's products: ``h @ kernels[columns]`` with ``kernels``
    read once before the loop (XLA would otherwise copy the slices at every
    step, and a portable loop would read a variable in each); ``blocks``
    (the portable loop's `portable_loop.ColumnBlocks`, else None) runs
    products of few rows in column blocks; ``addends`` (the portable loop's
    `portable_loop.joined_inputs` at this step) maps a product's index to the
    projected inputs added to it here, in one op."""
    addends = addends or {}

    def make(k, h, read_kernel, columns):
        kernel = kernels[columns]
        output = tf.matmul(h, kernel) if blocks is None else blocks.product(h, kernel, columns)
        return output + addends[k] if k in addends else output

    return make


def replayed_products(transposed: dict, saved: list, tape: tf.GradientTape) -> Callable:
    """The backward loop's products: each one's value saved by the forward
    pass (``saved``, by index), watched on ``tape``, with the gradient of
    ``h`` through ``transposed``: the kernel slices transposed before the loop
    (XLA's CPU dot with a transposed operand ran a 32x512 @ (128x512)ᵀ product
    1.35x slower than with the transpose taken once)."""

    def make(k, h, read_kernel, columns):
        output = replayed_matmul(h, transposed[columns], saved[k])
        tape.watch(output)
        return output

    return make


@tf.custom_gradient
def replayed_matmul(h, kernel_transposed, saved):
    """``h @ kernel`` whose value was saved by the forward pass; its gradient
    with respect to ``h`` (the kernel's is taken after the loop)."""

    def grad(upstream):
        return tf.matmul(upstream, kernel_transposed), None, None

    return tf.identity(saved), grad


def compute_dtype_scope(cell):
    """The scope in which ``cell``'s variables read in its compute dtype, as a
    Keras layer call would (the backward pass is traced outside any layer
    call)."""
    mixed = cell.compute_dtype != cell.variable_dtype
    return AutocastScope(cell.compute_dtype) if mixed else contextlib.nullcontext()


def traced_step(cell, projected, states, recorder, recurrent_mask, training) -> tuple:
    """``cell.advance(projected, states, context)``, the context holding
    ``training``, this call's recurrent masks (``RecurrentMasks`` or None) and
    ``recorder``, which makes the step's recurrent products."""
    context = StepContext(training=bool(training), masks=recurrent_mask, recorder=recorder)
    with compute_dtype_scope(cell):
        return cell.advance(projected, list(states), context)


def masked_kernel(cell, columns, recurrent_mask) -> tf.Tensor:
    """The ``columns`` of ``cell``'s recurrent kernel, times this call's
    DropConnect mask if any, in the cell's compute dtype: a tensor read within
    the scope (the whole kernel unmasked is the variable itself, which would
    read in its own dtype outside it)."""
    with compute_dtype_scope(cell):
        return tf.convert_to_tensor(cell.recurrent_kernel_columns(columns, recurrent_mask))


def packed(template, tensors):
    """``tensors`` (flat) in the structure ``project_inputs`` returned, given
    as ``template``: that structure with leaf indices for leaves."""
    return tree.map_structure(lambda i: tensors[i], template)


def loop_kernels(cell, columns: list, recurrent_mask) -> dict:
    """Each of ``columns`` of ``cell``'s recurrent kernel as `masked_kernel`
    reads it (a tensor in the cell's compute dtype, as a product made in a
    step reads it): what a loop reads once, before it."""
    return {c: masked_kernel(cell, c, recurrent_mask) for c in columns}
