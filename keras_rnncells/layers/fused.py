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

The modules, by job: `plan` (what a traced step's recurrent products are and
how the step uses them), `recorder` (products made, recorded or replayed;
the one call of a cell's step), `loop` (the forward loop both forms run),
`compiled_loop` (XLA forward and backward), `portable_loop` (what the loop
without XLA adds); this module joins them and splits a batch into row parts.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from keras import tree

from keras_rnncells.layers.compiled_loop import differentiable_recurrence
from keras_rnncells.layers.loop import recurrence_flags, run_forward
from keras_rnncells.layers.portable_loop import PORTABLE_UNROLL


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
