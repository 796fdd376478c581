"""The fused recurrence: an XLA-compiled loop over ``cell.advance`` (the
cell's step) with a cuDNN-style gradient, or the same loop traced into the
caller's graph without XLA (``fused_recurrence(..., compiled=False)``), for
graphs that must run where XLA JIT is disabled (TF Serving's default) or be
converted (tf2onnx).

Forward: ``cell.advance`` runs in a ``tf.while_loop`` compiled by XLA over
inputs already projected by ``cell.project_inputs``. In training it also
saves, per step, the states it started from, the inputs of the recurrent
matmuls the cell makes through ``cell.recurrent_matmul`` (unless they are
those states) and what the step is replayed from: each projected input plus
the matmul part the step only adds to it (`plan.Plan`), and the matmul
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

The modules, by job: `plan` (the step's recurrent products and how the
step uses them, read once from a traced step: the `Plan` both loops read),
`recorder` (products recorded as the step makes them; the one call of a
cell's step), `loop` (the forward loop both forms run), `compiled_loop` (XLA
forward and backward), `portable_loop` (what the loop without XLA adds).
This module is the entry, and the rules of how a layer's call runs as loops:
how many over the batch's rows (`loop_count`, `row_parts`) and in how many
parts of the sequence (`time_halves`).
"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf
from keras import tree
from tensorflow.python.ops import control_flow_util  # no public name for the XLA context

from keras_rnncells.layers.compiled_loop import differentiable_recurrence
from keras_rnncells.layers.loop import loop_plan, recurrence_flags, run_forward
from keras_rnncells.layers.portable_loop import PORTABLE_UNROLL, scattering

# The fewest rows of a batch that the fused path runs as a loop of their own (`loop_count`).
LOOP_MIN_ROWS = 4
# The fewest rows times time steps (where the graph knows its steps) that a portable loop
# of their own runs (`loop_count`).
PORTABLE_MIN_ROW_STEPS = 160
# The fewest time steps that a training step's compiled loop runs as two halves (`time_halves`).
HALVES_MIN_STEPS = 64


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
    steps an iteration and, if ``blocked`` (a loop that runs alone, of a layer
    made with ``column_blocks=True``), its recurrent products of few rows in
    column blocks (`portable_loop.ColumnBlocks`).

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
        blocked = blocked and not scattering()  # LiteRT's form makes its products whole
        step_plan = loop_plan(cell, flat, states, recurrent_mask, flags, blocked)
        result, _ = run_forward(
            cell,
            step_plan,
            flat,
            states,
            mask,
            recurrent_mask,
            flags,
            False,
            PORTABLE_UNROLL,
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


def gpu_available() -> bool:
    """Whether TensorFlow sees a GPU (the fused path then runs one loop)."""
    return bool(tf.config.list_logical_devices("GPU"))


def executor_cores() -> int:
    """The cores TensorFlow's executor runs independent ops on: its inter-op
    threads where set, else the CPUs this process may use."""
    if hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0))
    else:
        cores = os.cpu_count() or 1
    threads = tf.config.threading.get_inter_op_parallelism_threads()
    return min(threads, cores) if threads else cores


def in_xla_function() -> bool:
    """Whether the graph being traced is compiled whole by XLA
    (``tf.function(jit_compile=True)``, or inside one)."""
    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def loop_count(batch: int | None, steps: int | None, compiled: bool) -> int:
    """How many loops the fused path runs a batch of ``batch`` rows of ``steps``
    time steps (None: known only at run time) as, each over its own rows
    (`row_parts`): one per core, each of at least ``LOOP_MIN_ROWS`` rows,
    and a portable loop of at least ``PORTABLE_MIN_ROW_STEPS`` rows times steps
    where the steps are known (the second loop's fixed costs lost to one loop
    at batch 8 and 20 steps, and won at 100 steps, and at batch 16 and 20
    steps: benchmarks/README.md, "One loop per core"). XLA's CPU loop, and the
    portable loop's chain of small ops, run a step on one core; TensorFlow's
    executor runs independent loops on separate cores. On 2 cores,
    two loops trained our GRU, LSTM and MGU 1.2x to 1.6x faster from batch 16
    up, and ran their portable loops 1.2x to 1.5x faster at batch 64 and 128;
    two loops of 4 rows trained them 1.06x to 1.15x faster at batch 8 (1.18x
    to 1.41x at batch 12), with their forward passes 0.92x to 1.10x
    (benchmarks/loops.py; benchmarks/README.md, "One loop per core").

    A batch known only at run time gets one loop per core in a compiled loop
    (a training step) and one portable loop: an inference graph traced for any
    batch may be exported, and served one row at a time. One loop on a GPU;
    eagerly, where no executor runs the loops at once; and inside a function
    compiled whole by XLA (``model.compile(jit_compile=True)``), where XLA,
    not the executor, schedules the loops, and where TensorFlow 2.21
    crashed (a segmentation fault) on several of them in one ``model.fit``."""
    if tf.executing_eagerly() or gpu_available() or in_xla_function():
        return 1
    cores = executor_cores()
    if batch is None:
        return cores if compiled else 1
    loops = min(cores, batch // LOOP_MIN_ROWS)
    if not compiled and steps is not None:
        loops = min(loops, batch * steps // PORTABLE_MIN_ROW_STEPS)
    return max(1, loops)


def time_halves(steps: int | None, recording: bool) -> list[int]:
    """The lengths of the consecutive parts of a sequence of ``steps`` time
    steps (None: known only at run time) that the fused path runs one after
    the other, each a loop of its own with its own input projection: two
    halves in a training step's compiled loop (``recording``) of at least
    `HALVES_MIN_STEPS` known steps, else the whole sequence. (An odd number
    of steps compiles the loop for both lengths.)

    A recording loop keeps, per step, what its backward loop replays, and the
    backward loop returns the projected inputs' gradients: for an LSTM 6 and
    4 blocks of batch x units a step, all held at the end of the backward
    pass, as the projected inputs and the saved blocks are at the end of the
    forward pass. Run as halves, the first half's projected inputs are freed
    after its forward loop, and the second half's gradients once the
    projection's gradient has taken them, while the first half's backward
    loop runs: 8 blocks a step at the peak. On a 2-core host that took our
    LSTM's peak step memory from 1.24x to 1.03x Keras' at 100 steps (0.93x
    at 1,000), for a median of 1.03x of the training step's time (0.96x to
    1.21x; benchmarks/README.md, "A training step's loop in two halves")."""
    if not recording or steps is None or steps < HALVES_MIN_STEPS:
        return [steps]
    return [steps - steps // 2, steps // 2]


def time_pieces(inputs: tf.Tensor, mask: Any, recording: bool) -> list[tuple]:
    """``(inputs, mask)`` pieces of time-major ``inputs`` and ``mask`` (or
    None) that the fused path runs one after the other (`time_halves`), split
    on the time axis: TensorFlow shares aligned slices' buffers."""
    lengths = time_halves(inputs.shape[0], recording)
    if len(lengths) == 1:
        return [(inputs, mask)]
    masks = [None] * len(lengths) if mask is None else tf.split(mask, lengths)
    return list(zip(tf.split(inputs, lengths), masks))
