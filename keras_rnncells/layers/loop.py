"""The forward loop of the fused recurrence (`run_forward`), which both the
compiled loop (XLA, with its own gradient: `compiled_loop`) and the portable
loop (traced into the caller's graph: `fused_recurrence(compiled=False)`)
run: ``cell.advance`` over inputs already projected, with keras.layers.RNN's
mask semantics, saving in training what the backward loop replays."""

from __future__ import annotations

import tensorflow as tf
from keras import tree

from keras_rnncells.layers.plan import Plan, check_products, columns_of, plan
from keras_rnncells.layers.portable_loop import (
    ColumnBlocks,
    joined_inputs,
    scattering,
    steps_of,
    written_at,
    written_part,
)
from keras_rnncells.layers.recorder import (
    MatmulRecorder,
    loop_kernels,
    loop_products,
    packed,
    traced_step,
)


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


def at(tensor: tf.Tensor, t: tf.Tensor) -> tf.Tensor:
    """``tensor[t]`` as one op (``GatherV2``): with a tensor index, ``tensor[t]``
    is a ``StridedSlice`` with three ``Pack`` and an ``AddV2`` for its bounds,
    each an op of every step in TensorFlow's executor (the portable loop)."""
    return tf.gather(tensor, t)


def masked(output, new_states, states, prev_output, keep, zero_output_for_mask) -> tuple:
    """A step's ``output`` and ``new_states`` with ``keras.layers.RNN``'s mask
    semantics: where ``keep`` is false a masked step keeps the ``states`` and
    emits the previous output (zeros with ``zero_output_for_mask``)."""
    if keep is not None:
        new_states = [tf.where(keep, n, s) for n, s in zip(new_states, states)]
        fill = tf.zeros_like(output) if zero_output_for_mask else prev_output
        output = tf.where(keep, output, fill)
    return output, list(new_states)


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


def loop_plan(cell, projected, states, recurrent_mask, flags, blocked=False) -> Plan:
    """The `plan.plan` of a loop over time-major ``projected`` (flat) from
    ``states``, with the static ``flags`` of `recurrence_flags`; ``blocked``:
    a portable loop that runs alone with column blocks."""
    template, training = flags[3], flags[0]
    step_inputs = [tf.TensorSpec(x.shape[1:], x.dtype) for x in projected]
    state_specs = [tf.TensorSpec(s.shape, s.dtype) for s in states]
    return plan(cell, packed(template, step_inputs), state_specs, recurrent_mask, training, blocked)


def run_forward(
    cell,
    step_plan,
    projected,
    states,
    mask,
    recurrent_mask,
    flags,
    record,
    unroll=1,
    output=None,
):
    """The forward loop of ``cell``'s step, as ``step_plan`` (`loop_plan`)
    lists its products; returns (last_output, outputs, states) and, if
    ``record``, the per-step tensors the backward loop needs. ``unroll`` > 1
    (the portable loop): a loop of ``unroll`` steps an iteration, then one of
    the remaining steps. ``output``: the output before the first step, which a
    masked step emits again (zeros where None)."""
    training, zero_output_for_mask, return_sequences, template = flags
    steps = tf.shape(projected[0])[0]
    batch = tf.shape(states[0])[0]
    zeros = tf.zeros((batch, cell.output_size), states[0].dtype)
    carries_output = mask is not None and not zero_output_for_mask
    products = step_plan.products

    def step_arrays(tensors):
        return [tf.TensorArray(x.dtype, size=steps, element_shape=x.shape) for x in tensors]

    def arrays_of(specs):
        return [tf.TensorArray(dtype, size=steps, element_shape=shape) for shape, dtype in specs]

    joining = unroll > 1 and not tf.executing_eagerly()  # a portable loop in a graph
    joins, joined = (joined_inputs(step_plan, projected), step_plan.joined) if joining else ({}, ())
    kernels = loop_kernels(cell, [product.columns for product in products], recurrent_mask)
    blocks = ColumnBlocks(step_plan, kernels, batch) if any(p.blocks for p in products) else None

    def not_states(matmul_inputs):
        return [h for h, product in zip(matmul_inputs, products) if product.state is None]

    def replay_inputs(px, matmul_outputs):
        """What the backward loop replays the step from in place of ``px``: a
        projected input plus the product part added to it (the pre-activation
        less any bias between), or the projected input."""
        return [
            x if carried is None else x + columns_of(matmul_outputs[carried[0]], carried[1])
            for x, carried in zip(px, step_plan.carried)
        ]

    def parts_saved(matmul_outputs):
        return [columns_of(matmul_outputs[k], part) for k, part in step_plan.saved]

    # states before each step, previous outputs, matmul inputs not states,
    # replay inputs, matmul output parts not added to a projected input
    saved = ([], [], [], [], [])
    if record:
        saved = (
            step_arrays(states),
            step_arrays([zeros] if carries_output else []),
            arrays_of([(p.input_shape, p.dtype) for p in products if p.state is None]),
            arrays_of([(x.shape[1:], x.dtype) for x in projected]),
            arrays_of(
                [
                    ((*products[k].input_shape[:-1], part.stop - part.start), products[k].dtype)
                    for k, part in step_plan.saved
                ]
            ),
        )

    # what a step reads: the mask, the joined inputs, the other projected inputs
    unjoined = [p for j, p in enumerate(projected) if j not in joined]
    sequences = ([] if mask is None else [mask]) + list(joins.values()) + unjoined

    def body(t, xs, prev_output, states, saved):
        xs = iter(xs)
        keep = None if mask is None else next(xs)[:, None]
        addends = {k: next(xs) for k in joins}
        recorder = MatmulRecorder(loop_products(kernels, blocks, addends))
        px = [None if j in joined else next(xs) for j in range(len(projected))]
        output, new_states = traced_step(
            cell, packed(template, px), states, recorder, recurrent_mask, training
        )
        check_products(step_plan, recorder)
        output, new_states = masked(
            output, new_states, states, prev_output, keep, zero_output_for_mask
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
        if scattering():
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


def recurrence_flags(projected: tuple, training, zero_output_for_mask, return_sequences):
    """``projected`` flattened, and the static flags ``run_forward`` takes."""
    flat = tuple(tree.flatten(projected))
    template = tree.pack_sequence_as(projected, list(range(len(flat))))
    return flat, (bool(training), bool(zero_output_for_mask), bool(return_sequences), template)
