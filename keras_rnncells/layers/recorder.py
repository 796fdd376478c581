"""A step's recurrent products, made, recorded or replayed (`MatmulRecorder`),
and the one place where the fused loops run a cell's step (`traced_step`) or
read its recurrent kernel (`masked_kernel`)."""

from __future__ import annotations

import contextlib

import tensorflow as tf
from keras import tree
from keras.src.backend import AutocastScope

from keras_rnncells.cells.context import StepContext


class MatmulRecorder:
    """The recorder of a step's context (`StepContext`) while one step is
    traced: records or replays the recurrent matmuls the step makes through
    ``cell.recurrent_matmul``.

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
