"""What one iteration of a ``tf.while_loop`` costs TensorFlow's executor
(no XLA: the portable loop of inference graphs and SavedModels), beside the
ops of its body: the measurement behind ``fused.PORTABLE_UNROLL``.

A loop of ``--steps`` iterations over a (1, 128) tensor runs a body of
``ops`` ops (``tanh(h + x)``: pairs that Grappler cannot fold into one op)
and carries ``extra`` loop variables it does not touch, in a ``tf.function``
with Grappler's default optimizations; ``--repeats`` round-robin rounds call
every variant once. The table shows the median microseconds per iteration.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/loop_overhead.py
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable, Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf

from benchmarks.speed import round_robin

VARIANTS = [(2, 0), (2, 10), (2, 20), (10, 0), (20, 0), (40, 0), (80, 0)]  # (ops, extra)


def loop(steps: int, ops: int, extra: int) -> Callable:
    """A traced function running ``steps`` iterations of an ``ops``-op body
    with ``extra`` untouched loop variables."""

    @tf.function
    def run(x):
        def body(t, h, *untouched):
            for _ in range(ops // 2):
                h = tf.tanh(h + x)
            return (t + 1, h, *untouched)

        carried = tuple(x + float(i) for i in range(extra))
        return tf.while_loop(lambda t, *_: t < steps, body, (tf.constant(0), x, *carried))[1]

    return run


def main(argv: Sequence[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100, help="iterations (default 100)")
    parser.add_argument("--repeats", type=int, default=31, help="rounds (default 31)")
    args = parser.parse_args(argv)
    tf.get_logger().setLevel("ERROR")  # one tf.function a variant is by design: no retracing
    x = tf.zeros((1, 128))
    functions = {variant: loop(args.steps, *variant) for variant in VARIANTS}
    times = round_robin(functions, x, args.repeats)
    rows = [
        {"ops": ops, "extra": extra, "us": statistics.median(times[ops, extra]) * 1e3 / args.steps}
        for ops, extra in VARIANTS
    ]
    print(f"{args.steps} iterations, (1, 128) float32, median of {args.repeats} rounds\n")
    print("| body ops | extra loop variables | µs an iteration |\n|---:|---:|---:|")
    for row in rows:
        print(f"| {row['ops']} | {row['extra']} | {row['us']:.2f} |")
    return rows


if __name__ == "__main__":
    main()
