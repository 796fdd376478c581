"""Speed of the scan cells (MinGRU, MinLSTM, QRNN) on ``implementation="scan"``
against our GRU (fused), Keras' GRU, and the same cells on the fused and
generic paths: a training step and a forward pass, at several lengths T.

* forward: ``layer(x, training=False)`` in a ``tf.function`` (an inference
  graph: what ``model.predict`` and SavedModels run; our fused layers' portable
  loop, no XLA).
* train: forward + mean-square loss + backward + Adam update in one
  ``tf.function`` (as ``model.fit`` runs it; our fused layers' XLA loop).

Each function is built and called once, then once more in an untimed round
(after every function is built: a second call sometimes compiles); then ``--repeats`` rounds call
every function once each, in an order drawn anew per round (a drift of the
machine's speed hits every row alike); the table gives medians, and each
row's ratio against our GRU's time in the same run. ``% peak`` is the input
product's matmul FLOPs (``2·B·T·in·cols``, 3x for a training step) over the
time, against the peak of one large matmul measured in the same run (the
scan layers have no other matmul). Peak memory is not measured (TensorFlow
reports no allocator statistics on a CPU).

Usage::

    python benchmarks/scan.py --out results/scan_cells        # T = 128 ... 4096
    python benchmarks/scan.py --out /tmp/scan --quick
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import tensorflow as tf

import keras_rnncells as kr
from keras_rnncells.files import write_atomically, write_json

SHAPE = {"batch": 32, "input": 64, "units": 128}
QUICK_SHAPE = {"batch": 2, "input": 3, "units": 4}
STEPS = (128, 512, 1024, 4096)
QUICK_STEPS = (8, 40)
REFERENCE = "rnncells.GRU (fused)"
GOAL = 0.25  # MinGRU's training step against our GRU's, at T = 1024 and 4096


def layers(units: int) -> dict[str, Callable[[], keras.layers.Layer]]:
    """Label -> a layer returning its sequence."""
    rows: dict[str, Callable[[], keras.layers.Layer]] = {
        REFERENCE: lambda: kr.GRU(units, return_sequences=True),
        "keras.layers.GRU": lambda: keras.layers.GRU(units, return_sequences=True),
    }
    for name, make in (("MinGRU", kr.MinGRU), ("MinLSTM", kr.MinLSTM), ("QRNN", kr.QRNN)):
        for implementation in ("scan", "fused", "generic"):
            rows[f"rnncells.{name} ({implementation})"] = (
                lambda make=make, implementation=implementation: make(
                    units, return_sequences=True, implementation=implementation
                )
            )
    return rows


def input_columns(label: str, units: int) -> int:
    """Columns of the layer's input kernel (the scan cells' only matmul)."""
    for name, blocks in (("MinGRU", 2), ("MinLSTM", 3), ("QRNN", 3), ("GRU", 3)):
        if name in label:
            return blocks * units
    raise ValueError(label)


def functions(layer: keras.layers.Layer, x: tf.Tensor) -> tuple[Callable, Callable]:
    """The forward and training-step functions of ``layer`` on ``x``."""
    layer(x)  # build
    optimizer = keras.optimizers.Adam(1e-3)
    optimizer.build(layer.trainable_variables)

    @tf.function
    def forward(x):
        return layer(x, training=False)

    @tf.function
    def train(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(layer(x, training=True)))
        gradients = tape.gradient(loss, layer.trainable_variables)
        optimizer.apply(gradients, layer.trainable_variables)
        return loss

    return forward, train


def timed(function: Callable, x: tf.Tensor) -> float:
    start = time.perf_counter()
    result = function(x)
    getattr(result, "numpy", lambda: None)()
    return 1e3 * (time.perf_counter() - start)


def matmul_peak(size: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of one ``size``-square float32 matmul (best of ``repeats``)."""
    a = tf.random.normal((size, size))
    product = tf.function(lambda a: tf.matmul(a, a))
    product(a).numpy()
    best = min(timed(product, a) for _ in range(repeats))
    return 2 * size**3 / (best * 1e6)


def measure(shape: dict, steps: Sequence[int], repeats: int, only: str | None) -> dict:
    """Rows of every layer at every length, and the matmul peak."""
    peak = matmul_peak(128 if shape["batch"] < 8 else 2048)
    rows = []
    order = random.Random(0)
    for length in steps:
        x = tf.random.stateless_normal((shape["batch"], length, shape["input"]), seed=(1, length))
        built = {}
        for label, make in layers(shape["units"]).items():
            if only and only not in label and label != REFERENCE:
                continue
            keras.utils.set_random_seed(0)
            forward, train = functions(make(), x)
            timed(forward, x), timed(train, x)  # trace and warm up
            built[label] = (forward, train)
        for forward, train in built.values():  # an untimed round: some second calls compile
            timed(forward, x), timed(train, x)
        times = {label: ([], []) for label in built}
        for _ in range(repeats):
            labels = list(built)
            order.shuffle(labels)
            for label in labels:
                for kind, function in enumerate(built[label]):
                    times[label][kind].append(timed(function, x))
        medians = {label: [statistics.median(t) for t in pair] for label, pair in times.items()}
        reference = medians[REFERENCE]
        for label, (fwd, train) in medians.items():
            flops = 2 * shape["batch"] * length * shape["input"]
            flops *= input_columns(label, shape["units"])
            rows.append(
                {
                    "layer": label,
                    "steps": length,
                    "fwd_ms": fwd,
                    "train_ms": train,
                    "fwd_vs_gru": fwd / reference[0],
                    "train_vs_gru": train / reference[1],
                    "fwd_pct_peak": 100 * flops / (fwd * 1e6) / peak,
                    "train_pct_peak": 100 * 3 * flops / (train * 1e6) / peak,
                }
            )
            print(
                f"T={length:>6} {label:<28} fwd {fwd:9.1f} ms ({fwd / reference[0]:5.2f}x)"
                f"  train {train:9.1f} ms ({train / reference[1]:5.2f}x)",
                flush=True,
            )
    return {"rows": rows, "peak_gflops": peak, "shape": shape, "repeats": repeats}


def table(result: dict) -> str:
    lines = [
        "| T | layer | forward ms | vs our GRU | train step ms | vs our GRU"
        " | % peak (fwd / train) |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['steps']} | {row['layer']} | {row['fwd_ms']:.1f} | {row['fwd_vs_gru']:.2f}x"
            f" | {row['train_ms']:.1f} | {row['train_vs_gru']:.2f}x"
            + (
                f" | {row['fwd_pct_peak']:.0f}% / {row['train_pct_peak']:.0f}% |"
                if "fwd_pct_peak" in row
                else " | n/a |"
            )
        )
    return "\n".join(lines)


def goal_lines(result: dict) -> list[str]:
    lines = []
    for row in result["rows"]:
        if row["layer"] == "rnncells.MinGRU (scan)" and row["steps"] in (1024, 4096):
            met = "met" if row["train_vs_gru"] <= GOAL else "**not met**"
            lines.append(
                f"- T={row['steps']}: MinGRU (scan) training step {row['train_vs_gru']:.2f}x "
                f"our GRU's: {met}"
            )
    return lines


def section(result: dict, argv: Sequence[str]) -> str:
    shape = result["shape"]
    goals = goal_lines(result) or ["- No threshold at these lengths: the numbers are reported."]
    return "\n".join(
        [
            "## Scan cells: MinGRU, MinLSTM and QRNN against a GRU",
            "",
            "- Paper: Feng et al. 2024 report minGRU training 175x faster than a sequential GRU "
            "at T=512 on a GPU (a parallel scan); Bradbury et al. 2017 report QRNNs up to 16x "
            "faster than cuDNN LSTMs.",
            f"- Target: MinGRU's training step at most {GOAL}x our GRU's (fused) at T=1024 and "
            "T=4096 on this CPU (its matmul FLOPs are 0.22x the GRU's).",
            *goals,
            "",
            table(result),
            "",
            f"Settings: batch {shape['batch']}, {shape['input']} inputs, {shape['units']} "
            f"units, float32, medians of {result['repeats']} rounds (each round every "
            "function once, in a shuffled order); ratios against our GRU in the same run; "
            f"matmul peak {result['peak_gflops']:.0f} GFLOP/s (one 2048-square product). "
            if result.get("peak_gflops")
            else "matmul peak not recorded (rows taken from the run's log). "
            "Forward: an inference graph (no XLA); train: forward, MSE, backward, Adam in one "
            "tf.function. On a 2-core host shared with other jobs (run at nice 5): the "
            "ratios are indicative. Peak memory: not measured.",
            "",
            "Reproduce: `python benchmarks/scan.py " + " ".join(argv) + "`",
            "",
        ]
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="directory for section.md and rows.json")
    parser.add_argument("--quick", action="store_true", help="tiny shapes: checks the script")
    parser.add_argument("--steps", type=int, nargs="+", help=f"lengths T (default {STEPS})")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--only", help="only the rows whose label contains this (and our GRU)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict:
    args = parse_args(argv)
    shape = QUICK_SHAPE if args.quick else SHAPE
    steps = args.steps or (QUICK_STEPS if args.quick else STEPS)
    result = measure(shape, steps, 1 if args.quick else args.repeats, args.only)
    print(table(result))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        shown = list(argv if argv is not None else sys.argv[1:])
        text = section(result, shown)
        write_atomically(args.out / "section.md", lambda path: Path(path).write_text(text))
        write_json(args.out / "rows.json", result)
    return result


if __name__ == "__main__":
    main()
