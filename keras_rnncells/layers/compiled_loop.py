"""The compiled loop: the forward loop (`loop.run_forward`) as one XLA
function, and its gradient, back-propagation through time, as another
(`backward`), joined by a custom gradient (`differentiable_recurrence`).

Why not plain autodiff: TensorFlow cannot pass a while loop's saved
activations (TensorLists) out of an XLA function, so the gradient of an
XLA-compiled loop must be computed by a function of our own."""

from __future__ import annotations

import contextlib

import tensorflow as tf
from keras import tree

from keras_rnncells.layers.loop import loop_plan, masked, run_forward
from keras_rnncells.layers.plan import check_products, columns_of
from keras_rnncells.layers.recorder import (
    MatmulRecorder,
    loop_kernels,
    packed,
    replayed_products,
    traced_step,
)


@tf.function(jit_compile=True, autograph=False)
def forward(cell, step_plan, projected, states, mask, recurrent_mask, flags, record, output):
    return run_forward(
        cell, step_plan, projected, states, mask, recurrent_mask, flags, record, output=output
    )


@tf.function(jit_compile=True, autograph=False)
def backward(
    cell,
    step_plan,
    projected,
    states0,
    saved,
    upstream,
    variables,
    mask,
    recurrent_mask,
    flags,
    output,
):
    """The gradients of the projected inputs, the initial states,
    ``variables`` and the output before the first step (``output``, zeros
    where None), for the step of ``step_plan`` (the forward's). ``projected``
    is read only if ``saved`` is None (the forward ran without recording): the
    loop replays each step from the saved replay inputs (`run_forward`), so
    the projected sequence need not be kept for it."""
    training, zero_output_for_mask, return_sequences, template = flags
    if saved is None:  # the forward ran without recording (training=False)
        _, saved = run_forward(
            cell, step_plan, projected, states0, mask, recurrent_mask, flags, True, output=output
        )
    saved_states, saved_prev_outputs, matmul_inputs, replay_inputs, saved_parts = saved
    d_last, d_outputs, d_states = upstream[0], upstream[1], list(upstream[2:])
    steps = tf.shape(replay_inputs[0])[0]
    carries_output = bool(saved_prev_outputs)
    g_carry = d_last if return_sequences else d_last + d_outputs[0]

    def arrays(tensors):
        return [tf.TensorArray(x.dtype, size=steps, element_shape=x.shape[1:]) for x in tensors]

    stored = step_plan.saved  # the loop stores these parts' gradients
    unaliased = iter(matmul_inputs)
    matmul_inputs = [
        next(unaliased) if product.state is None else saved_states[product.state]
        for product in step_plan.products
    ]
    kernels = loop_kernels(cell, [p.columns for p in step_plan.products], recurrent_mask)
    transposed = {
        columns: tf.transpose(tf.cast(kernel, cell.compute_dtype))
        for columns, kernel in kernels.items()
    }

    def replayed_outputs(px, t):
        """The recurrent matmuls' outputs to replay at step ``t``: a part added
        to a projected input is zeros (the replay input ``px`` holds it),
        another part is read back."""
        read = iter([p[t] for p in saved_parts])
        outputs = []
        for product in step_plan.products:
            pieces = [
                next(read) if part.added_to is None else tf.zeros_like(px[part.added_to])
                for part in product.parts
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
            replayed = replayed_products(transposed, replayed_outputs(px, t), tape)
            recorder = MatmulRecorder(replayed)
            output, new_states = traced_step(
                cell, packed(template, px), states, recorder, recurrent_mask, training
            )
            check_products(step_plan, recorder)
            output, new_states = masked(
                output, new_states, states, (prev or [None])[0], keep, zero_output_for_mask
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
    # The recurrent matmuls' weight gradient: one matmul over all steps per part,
    # the kernel read again on the tape (in the compute dtype: `loop_kernels`).
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(variables)
        products, d_products = [], []
        kernels = loop_kernels(cell, [p.columns for p in step_plan.products], recurrent_mask)
        for h, product in zip(matmul_inputs, step_plan.products):
            flat = tf.reshape(h, (-1, h.shape[-1]))
            kernel = kernels[product.columns]
            for part in product.parts:
                block = kernel if len(product.parts) == 1 else kernel[:, part.start : part.stop]
                products.append(tf.matmul(flat, block))
                d = next(d_parts) if part.added_to is None else d_projected[part.added_to]
                d_products.append(tf.reshape(d, tf.shape(products[-1])))
    g_kernel = tape.gradient(
        products,
        variables,
        output_gradients=d_products,
        unconnected_gradients=tf.UnconnectedGradients.ZERO,
    )
    g_vars = [a + b for a, b in zip(g_vars, g_kernel)]
    return d_projected, list(g_states), g_vars, g_output


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
    step_plan = loop_plan(cell, projected, states, recurrent_mask, flags)  # read by both loops
    given = [] if output is None else [output]  # differentiated where given
    stop = n + len(states)
    replica = tf.distribute.get_replica_context() if tf.distribute.has_strategy() else None

    @tf.custom_gradient
    def recurrence(*inputs):
        before = inputs[stop] if given else None
        result, saved = forward(
            cell,
            step_plan,
            inputs[:n],
            inputs[n:stop],
            mask,
            recurrent_mask,
            flags,
            record,
            before,
        )

        def grad(*upstream, variables=()):
            upstream = [
                tf.zeros_like(r) if u is None else u
                for u, r in zip(tree.flatten(upstream), tree.flatten(result))
            ]
            with forward_replica(replica, variables):
                d_projected, d_states, d_vars, d_output = backward(
                    cell,
                    step_plan,
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
