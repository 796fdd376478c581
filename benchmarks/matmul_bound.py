"""How fast a forward pass of TensorFlow ops could be at best: a loop that runs
only a cell's recurrent matmuls, against Keras' GRU and our layers' forward
passes, in one run. The bound behind the MGU forward floor.

A forward pass without XLA (the portable loop of inference graphs and
SavedModels) runs, per step, TensorFlow's ``MatMul`` op on the state, then the
gate math. Here a loop keeps only the matmuls, chained as the step chains
them, with orthogonal kernels (the state's norm stays put):

* ``MGU`` (Zhou et al., 2016): ``f = σ(… + h U_f)``, then ``(f ⊙ h) U_h``: two
  units x units products, the second waiting on the first;
* ``MGU(reset_after=True)``: one units x 2·units product, ``h [U_f U_h]``;
* ``GRU``: one units x 3·units product (Keras' ``reset_after=True`` form).

Each bound loop is shaped as the portable loop is (``layers/fused.py``):
``PORTABLE_UNROLL`` steps an iteration and the batch split into
``fused.loop_count`` loops over their own rows, run at once by the executor.
Beside them, an MGU forward pass written as plainly as TensorFlow ops allow,
shaped the same way: what it takes beyond the matmuls is the step's gate math,
its reads and writes and the loop, which any loop of TensorFlow ops pays.

A second table times each op of a step alone in a loop, at one row (a batch of
1, as served), at a loop's rows, at the batch, at ``portable_loop.BLOCK_ROWS``
rows and twice that: among them the GRU's units x 3·units recurrent product
whole and in the column blocks that a portable loop with column blocks runs a
product of at most ``BLOCK_ROWS`` rows as (``portable_loop.column_blocks``).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/matmul_bound.py      # B=32, T=100, input 64, units 128
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable, Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import tensorflow as tf

import keras_rnncells
from benchmarks.speed import MGU_FWD_VS_GRU, layer_functions, round_robin
from keras_rnncells.layers.fused import loop_count, row_counts
from keras_rnncells.layers.portable_loop import BLOCK_ROWS, PORTABLE_UNROLL, column_blocks

# The recurrent products of one step, in order: each takes the previous one's
# first `units` columns. The multiple of `units` is each product's width.
BOUND_CHAINS = {"MGU": (1, 1), "MGU(reset_after=True)": (2,), "GRU": (3,)}
LAYERS = {
    "keras.layers.GRU": lambda units: keras.layers.GRU(units, return_sequences=True),
    "rnncells.GRU": lambda units: keras_rnncells.GRU(units, return_sequences=True),
    "rnncells.MGU": lambda units: keras_rnncells.MGU(units, return_sequences=True),
    "rnncells.MGU(reset_after=True)": lambda units: keras_rnncells.MGU(
        units, return_sequences=True, reset_after=True
    ),
}
REFERENCE = "keras.layers.GRU"
# The ops of a step timed alone (`op_costs`), each applied to the (rows, units)
# state ``h`` with ``kernels``: "units" (units, units), "wide" (units, 3·units, the
# GRU's recurrent kernel) and "blocks" (the wide kernel's column blocks, as
# `portable_loop.column_blocks` splits it), ``gain`` (rows, units, values near 1) and
# ``sequence`` (steps, rows, units) at step ``t``.
STEP_OPS = {
    "MatMul (units x units)": lambda h, kernels, gain, sequence, t: tf.matmul(h, kernels["units"]),
    "MatMul (units x 3·units)": lambda h, kernels, gain, sequence, t: tf.matmul(h, kernels["wide"])[
        :, : h.shape[1]
    ],
    "the same in column blocks": lambda h, kernels, gain, sequence, t: tf.concat(
        [tf.matmul(h, block) for block in kernels["blocks"]], axis=1
    )[:, : h.shape[1]],
    "Sigmoid": lambda h, kernels, gain, sequence, t: tf.sigmoid(h),
    "Tanh": lambda h, kernels, gain, sequence, t: tf.tanh(h),
    "Mul": lambda h, kernels, gain, sequence, t: h * gain,
    "GatherV2 (a step's input)": lambda h, kernels, gain, sequence, t: tf.gather(sequence, t),
}
OPS_AN_ITERATION, ITERATIONS = 20, 200


def orthogonal(units: int, width: int) -> tf.Tensor:
    """A (units, width) kernel whose units-column blocks are orthogonal."""
    blocks = [tf.linalg.qr(tf.random.normal((units, units)))[0] for _ in range(width)]
    return tf.concat(blocks, axis=1)


def portable_loops(batch: int, steps: int) -> int:
    """How many loops an inference graph traced for this shape runs (`loop_count`)."""
    with tf.Graph().as_default():  # as traced in a function, not eagerly
        return loop_count(batch, steps, compiled=False)


def bound_loop(chain: Sequence[int], batch: int, steps: int, units: int) -> Callable:
    """A traced function running ``steps`` steps of ``chain``'s products over
    (batch, units) states, shaped as the portable loop (see the module
    docstring); it returns the final states."""
    kernels = [orthogonal(units, width) for width in chain]
    loops = portable_loops(batch, steps)
    rows = row_counts(batch, loops)

    def step(h):
        for kernel in kernels:
            h = tf.matmul(h, kernel)
            h = h if kernel.shape[1] == units else h[:, :units]
        return h

    def one_loop(h):
        def iteration(i, h):
            for _ in range(PORTABLE_UNROLL):
                h = step(h)
            return i + 1, h

        blocks = steps // PORTABLE_UNROLL
        _, h = tf.while_loop(lambda i, h: i < blocks, iteration, (tf.constant(0), h))
        for _ in range(steps - blocks * PORTABLE_UNROLL):
            h = step(h)
        return h

    start = tf.linalg.l2_normalize(tf.random.normal((batch, units)), axis=1)

    @tf.function
    def run(x):  # ``x``: the layers' input, not read
        states = tf.split(start, rows, axis=0) if loops > 1 else [start]
        return tf.concat([one_loop(h) for h in states], axis=0)

    return run


def bare_mgu(batch: int, steps: int, inputs: int, units: int) -> Callable:
    """A traced MGU forward pass written as plainly as TensorFlow ops allow,
    shaped as the portable loop (see the module docstring): the input
    projection of both gates in one matmul before the loop, then per step
    ``f = σ(x_f + h U_f)``, ``h̃ = tanh(x_h + (f ⊙ h) U_h)``,
    ``h = h + f ⊙ (h̃ - h)``, each step's output written to a list."""
    kernel = tf.random.normal((inputs, 2 * units)) / inputs**0.5
    recurrent_f, recurrent_h = orthogonal(units, 1), orthogonal(units, 1)
    loops = portable_loops(batch, steps)

    def one_loop(x):
        rows = tf.shape(x)[0]
        projected = tf.reshape(tf.matmul(tf.reshape(x, (-1, inputs)), kernel), (rows, steps, -1))
        projected_f, projected_h = tf.split(tf.transpose(projected, (1, 0, 2)), 2, axis=2)

        def step(t, h):
            f = tf.sigmoid(tf.gather(projected_f, t) + tf.matmul(h, recurrent_f))
            candidate = tf.tanh(tf.gather(projected_h, t) + tf.matmul(f * h, recurrent_h))
            return h + f * (candidate - h)

        def iteration(i, h, outputs):
            written = []
            for k in range(PORTABLE_UNROLL):
                h = step(i * PORTABLE_UNROLL + k, h)
                written.append(h)
            return i + 1, h, outputs.write(i, tf.stack(written))

        blocks = steps // PORTABLE_UNROLL
        outputs = tf.TensorArray(tf.float32, size=blocks)
        h = tf.zeros((rows, units))
        _, h, outputs = tf.while_loop(
            lambda i, *_: i < blocks, iteration, (tf.constant(0), h, outputs)
        )
        written = [tf.reshape(outputs.stack(), (-1, rows, units))]
        for t in range(blocks * PORTABLE_UNROLL, steps):
            h = step(t, h)
            written.append(h[None])
        return tf.transpose(tf.concat(written, axis=0), (1, 0, 2))

    @tf.function
    def run(x):
        parts = tf.split(x, row_counts(batch, loops), axis=0) if loops > 1 else [x]
        return tf.concat([one_loop(part) for part in parts], axis=0)

    return run


def op_loop(op: Callable | None, rows: int, units: int) -> Callable:
    """A traced loop of ``ITERATIONS`` iterations, each applying ``op``
    ``OPS_AN_ITERATION`` times (none: an empty loop)."""
    wide = orthogonal(units, 3)
    kernels = {
        "units": orthogonal(units, 1),
        "wide": wide,
        "blocks": tf.split(wide, column_blocks(*wide.shape), axis=1),
    }
    gain = tf.random.uniform((rows, units), 0.999, 1.001)
    sequence = tf.random.uniform((ITERATIONS * OPS_AN_ITERATION, rows, units), -1, 1)

    @tf.function
    def run(h):
        def iteration(i, h):
            for k in range(OPS_AN_ITERATION if op else 0):
                h = op(h, kernels, gain, sequence, i * OPS_AN_ITERATION + k)
            return i + 1, h

        return tf.while_loop(lambda i, h: i < ITERATIONS, iteration, (tf.constant(0), h))[1]

    return run


def op_costs(row_sizes: Sequence[int], units: int, repeats: int) -> dict:
    """Microseconds an op of `STEP_OPS` takes inside a loop, for each number
    of rows: a loop of such ops less an empty loop, over the ops it ran."""
    costs = {}
    for rows in row_sizes:
        h = tf.linalg.l2_normalize(tf.random.normal((rows, units)), axis=1)
        loops = {name: op_loop(op, rows, units) for name, op in [("", None), *STEP_OPS.items()]}
        times = round_robin(loops, h, repeats, warmup=1)
        empty = statistics.median(times.pop(""))
        for name, t in times.items():
            us = (statistics.median(t) - empty) * 1e3 / (ITERATIONS * OPS_AN_ITERATION)
            costs[name, rows] = us
    return costs


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=32, help="batch size (default 32)")
    parser.add_argument("--steps", type=int, default=100, help="time steps (default 100)")
    parser.add_argument("--input", type=int, default=64, help="input features (default 64)")
    parser.add_argument("--units", type=int, default=128, help="units (default 128)")
    parser.add_argument("--repeats", type=int, default=15, help="rounds (default 15)")
    args = parser.parse_args(argv)
    for flag in ("batch", "steps", "input", "units", "repeats"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag} must be at least 1, got {getattr(args, flag)}")
    x = tf.random.normal((args.batch, args.steps, args.input))
    functions = {}
    for label, build in LAYERS.items():
        layer = build(args.units)
        layer.build(x.shape)
        functions[label] = layer_functions(layer)["fwd"]
    for name, chain in BOUND_CHAINS.items():
        functions[f"{name}: recurrent matmuls only"] = bound_loop(
            chain, args.batch, args.steps, args.units
        )
    functions["MGU written plainly in TensorFlow ops"] = bare_mgu(
        args.batch, args.steps, args.input, args.units
    )
    times = round_robin(functions, x, args.repeats)
    reference = statistics.median(times[REFERENCE])
    rows = [
        {"forward": label, "ms": statistics.median(t), "vs": statistics.median(t) / reference}
        for label, t in times.items()
    ]
    loops = portable_loops(args.batch, args.steps)
    print(
        f"batch {args.batch}, T {args.steps}, input {args.input}, units {args.units}, float32; "
        f"bound loops: {PORTABLE_UNROLL} steps an iteration, {loops} loop(s) over the rows; "
        f"median of {args.repeats} round-robin rounds\n"
    )
    print(f"| forward pass | ms | vs {REFERENCE} |\n|---|---:|---:|")
    for row in rows:
        print(f"| {row['forward']} | {row['ms']:.2f} | {row['vs']:.2f}x |")
    ratio = {row["forward"]: row["vs"] for row in rows}
    ours, plain = ratio["rnncells.MGU"], ratio["MGU written plainly in TensorFlow ops"]
    matmuls = ratio["MGU: recurrent matmuls only"]
    print(
        f"\nMGU forward floor {MGU_FWD_VS_GRU}x {REFERENCE}: rnncells.MGU {ours:.2f}x, MGU "
        f"written plainly {plain:.2f}x, of which its recurrent matmuls {matmuls:.2f}x and the "
        f"rest of its step (gate math, reads, writes, the loop) {plain - matmuls:.2f}x."
    )
    loop_rows = row_counts(args.batch, loops)[0]
    row_sizes = sorted({1, loop_rows, args.batch, BLOCK_ROWS, 2 * BLOCK_ROWS})
    costs = op_costs(row_sizes, args.units, args.repeats)
    print(
        f"\nEach op alone in a loop ({ITERATIONS} iterations of {OPS_AN_ITERATION}), less an "
        f"empty loop, {args.units} units; µs an op:\n"
    )
    print("| op | " + " | ".join(f"{rows} rows" for rows in row_sizes) + " |")
    print("|---|" + "---:|" * len(row_sizes))
    for name in STEP_OPS:
        print(f"| {name} | " + " | ".join(f"{costs[name, r]:.2f}" for r in row_sizes) + " |")
    ops = [{"op": name, "rows": r, "us": us} for (name, r), us in costs.items()]
    return {"forward": rows, "ops": ops}


if __name__ == "__main__":
    main()
