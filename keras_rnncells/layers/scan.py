"""The scan path (``implementation="scan"``): a whole sequence of a cell whose
state advances as ``c_t = a_t ⊙ c_{t-1} + b_t``, with ``a_t`` and ``b_t``
from the inputs only (`keras_rnncells.cells.linear.LinearRecurrenceCell`).

`scan_recurrence` projects the sequence once, computes every step's ``a``
and ``b`` at once (a masked step: ``a = 1``, ``b = 0``, so it keeps the
state), runs `linear_scan`, and computes the outputs from the states.

`linear_scan` is a chunked scan, the form measured fastest on CPUs
(benchmarks/scan.py): the steps are cut into chunks of `CHUNK`; one
sequential pass over the positions of a chunk, run on every chunk at once
(each op on a tensor of all chunks), gives each chunk's scan from a zero
state and the cumulative products of its ``a``; the states at the chunks'
ends are themselves a linear recurrence, scanned the same way (recursively,
down to one chunk; a sequence whose length the graph does not know scans its
chunks' ends with ``tf.scan``); each step's state is its chunk's scan plus
the cumulative product times the state before the chunk. The products are
in linear space and nothing divides by them: a product of gates in (0, 1)
can only underflow to 0, its value, so a sequence of any length is stable
(tested at 100,000 steps). The operations are those of the sequential
recurrence, regrouped: equal up to rounding (float64: within 1e-12 of the
step form in the tests). A graph of known length holds no loop at all.

The gradient is written by hand (`linear_scan`'s): the adjoint of
``c_t = a_t c_{t-1} + b_t`` is the linear recurrence
``g_t = dc_t + a_{t+1} g_{t+1}``, backwards in time, run by the same scan;
then ``db_t = g_t``, ``da_t = g_t c_{t-1}`` and ``dc_0 = a_0 g_0``. It keeps
the states and ``a`` only, not the scan's intermediate chunks.
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

# Steps per chunk (benchmarks/scan.py's `--chunks` measured 8, 16, 32, 64).
CHUNK = 16


def chunked_scan(a: tf.Tensor, b: tf.Tensor, c0: tf.Tensor, chunk: int = CHUNK) -> tf.Tensor:
    """Every ``c_t = a_t * c_{t-1} + b_t`` of time-major ``a``, ``b``
    (T, ...) from ``c0`` (...): (T, ...). See the module docstring."""
    steps = a.shape[0]
    if steps is not None and steps <= chunk:
        states, c = [], c0
        for t in range(steps):
            c = a[t] * c + b[t]
            states.append(c)
        return tf.stack(states)
    total = tf.shape(a)[0] if steps is None else steps
    chunks = (total + chunk - 1) // chunk  # a Python int where the graph knows T
    if steps is None:  # at least one chunk: a graph for any length may get 0 steps
        chunks = tf.maximum(chunks, 1)
    padding = [[0, chunks * chunk - total]] + [[0, 0]] * (len(a.shape) - 1)
    # padded steps keep the state (a = 1, b = 0); they come after every real one
    a = tf.pad(a, padding, constant_values=1)
    b = tf.pad(b, padding)
    shape = tf.concat([[chunks, chunk], tf.shape(a)[1:]], axis=0)
    static = (chunks if steps is not None else None, chunk, *a.shape[1:])
    a, b = (
        tf.ensure_shape(tf.reshape(a, shape), static),
        tf.ensure_shape(tf.reshape(b, shape), static),
    )
    local, product = [b[:, 0]], [a[:, 0]]
    for j in range(1, chunk):
        local.append(a[:, j] * local[-1] + b[:, j])
        product.append(a[:, j] * product[-1])
    # the states at the chunks' ends: a recurrence over chunks
    if steps is not None:
        ends = chunked_scan(product[-1], local[-1], c0, chunk)
    else:
        ends = tf.scan(lambda c, ab: ab[0] * c + ab[1], (product[-1], local[-1]), c0)
    before = tf.concat([c0[None], ends[:-1]], axis=0)[:, None]  # each chunk's start
    states = tf.stack(local, axis=1) + tf.stack(product, axis=1) * before
    states = tf.reshape(states, tf.concat([[chunks * chunk], tf.shape(a)[2:]], axis=0))[:total]
    return tf.ensure_shape(states, (steps, *c0.shape))


def scan_gradient(a, upstream, states, c0):
    """The gradients of ``(a, b, c0)`` given those of the states (``upstream``)."""
    # g_t = upstream_t + a_{t+1} g_{t+1}: a forward scan of the reversed sequences
    following = tf.concat([a[1:], tf.ones_like(a[:1])], axis=0)
    reversed_g = chunked_scan(
        tf.reverse(following, [0]), tf.reverse(upstream, [0]), tf.zeros_like(c0)
    )
    g = tf.reverse(reversed_g, [0])
    previous = tf.concat([c0[None], states[:-1]], axis=0)
    return g * previous, g, a[0] * g[0]


def differentiable(forward, backward):
    """`forward` (a, b, c0) -> states with the gradient `backward`."""

    @tf.custom_gradient
    def scan(a, b, c0):
        states = forward(a, b, c0)
        return states, lambda upstream: backward(a, upstream, states, c0)

    return scan


linear_scan = differentiable(chunked_scan, scan_gradient)
linear_scan.__doc__ = """`chunked_scan` with its hand-written gradient (the module docstring)."""
# XLA-compiled (never in a graph that may be saved: TF Serving runs without XLA)
compiled_linear_scan = differentiable(
    tf.function(chunked_scan, jit_compile=True), tf.function(scan_gradient, jit_compile=True)
)


def last_unmasked(keep: tf.Tensor) -> tf.Tensor:
    """For a time-major mask ``keep`` (T, B): the index of the last unmasked
    step at or before each step, -1 where there is none (T, B, int32). It is
    the recurrence ``l_t = t`` where unmasked, else ``l_{t-1}``: a linear scan
    in float32, exact for integers below 2**24 steps."""
    keep = tf.cast(keep, "float32")
    steps = tf.cast(tf.range(tf.shape(keep)[0]), "float32")[:, None]
    start = -tf.ones(tf.shape(keep)[1:], "float32")
    return tf.cast(chunked_scan(1.0 - keep, keep * steps, start), "int32")


def final(sequence: tf.Tensor, before: tf.Tensor) -> tf.Tensor:
    """The last element of time-major ``sequence``, or ``before`` where it has
    no step (a graph traced for any length answers 0 steps as fully masked)."""
    return tf.concat([before[None], sequence], axis=0)[-1]


def gathered(sequence: tf.Tensor, index: tf.Tensor) -> tf.Tensor:
    """``sequence[index[t, b], b]`` for time-major ``sequence`` (T', B, ...)
    and ``index`` (T, B): (T, B, ...)."""
    batch_major = tf.gather(tf.transpose(sequence, [1, 0, 2]), tf.transpose(index), batch_dims=1)
    return tf.transpose(batch_major, [1, 0, 2])


def scan_recurrence(
    cell,
    sequences: tf.Tensor,
    states: Sequence[tf.Tensor],
    mask: tf.Tensor | None,
    training: bool,
    go_backwards: bool,
    zero_output_for_mask: bool,
    return_sequences: bool,
    compiled: bool = False,
) -> tuple:
    """The recurrence of ``cell`` (a `LinearRecurrenceCell`) over batch-major
    ``sequences`` (input dropout already applied) from ``states``, with
    ``keras.layers.RNN``'s semantics: ``(last_output, outputs, states)``,
    ``outputs`` batch-major (T steps with ``return_sequences``, else the last).
    A masked step keeps the states and emits the previous output (zeros
    before a row's first unmasked step, and with ``zero_output_for_mask``).
    ``compiled``: the scan and its gradient XLA-compiled (where the graph is
    never saved: training steps, eager calls)."""
    inputs = tf.transpose(sequences, [1, 0, 2])
    keep = None if mask is None else tf.transpose(tf.cast(mask, "bool"))
    if go_backwards:
        inputs = tf.reverse(inputs, [0])
        keep = None if keep is None else tf.reverse(keep, [0])
    projected = tuple(cell.step_inputs(inputs, training))
    seen = None if keep is None else last_unmasked(keep)
    new_states = []
    if cell.window_rows:
        # the older rows' product of the last unmasked input before each step
        older = projected[len(cell.blocks)]
        history = tf.concat([tf.cast(states[1], older.dtype)[None], older], axis=0)
        if seen is None:
            carried, last_carried = history[:-1], history[-1]
        else:
            before = tf.concat([-tf.ones_like(seen[:1]), seen[:-1]], axis=0)
            carried = gathered(history, before + 1)
            row_last = final(seen, -tf.ones(tf.shape(seen)[1:], seen.dtype))
            last_carried = gathered(history, row_last[None] + 1)[0]
        blocks = cell.window_inputs(projected, carried)
        new_states.append(last_carried)
    else:
        blocks = projected
    a, b = cell.coefficients(blocks)
    if keep is not None:
        kept = keep[:, :, None]
        a = tf.where(kept, a, tf.ones_like(a))
        b = tf.where(kept, b, tf.zeros_like(b))
    c0 = tf.cast(states[0], a.dtype)
    c = (compiled_linear_scan if compiled else linear_scan)(a, b, c0)
    outputs = cell.emitted(blocks, c)
    if keep is not None:
        if zero_output_for_mask:
            outputs = tf.where(keep[:, :, None], outputs, tf.zeros_like(outputs))
        else:
            with_zeros = tf.concat([tf.zeros_like(outputs[:1]), outputs], axis=0)
            outputs = gathered(with_zeros, seen + 1)
    last_output = final(outputs, tf.zeros_like(c0))
    outputs = tf.transpose(outputs, [1, 0, 2]) if return_sequences else last_output[:, None]
    return last_output, outputs, [final(c, c0), *new_states]
