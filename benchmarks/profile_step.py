"""Where a training step's time goes: one layer's step under the TensorFlow profiler.

Builds the training step of ``speed.py`` (forward, mean-square loss, backward
and an Adam update in one ``tf.function``) for one layer, warms it up, records
``--steps-profiled`` calls with ``tf.profiler``, and sums the recorded events
per call into the parts of a step:

* per-time-step recurrent matmuls (the XLA loops' ``dot`` kernels, forward and
  backward), the recurrent-kernel gradient after the loop (one ``dot``),
  elementwise kernels of the loops (gate math, its gradient), saving and
  reading per-step tensors (dynamic-update-slice kernels) and the zero-filling
  of those buffers (broadcast kernels);
* TensorFlow ops outside the loops: input projection and its gradient
  (matmuls and bias ops), the optimizer (``adam/`` ops), and the rest
  (transposes, loss, casts);
* what is left of the step's wall time: the executors' own overhead (function
  calls, scheduling, waiting between kernels).

The profiler adds its own cost to every event, so the parts are shares of a
profiled step, not of an unprofiled one; the unprofiled median is printed
next to it. XLA kernels are named by HLO instruction (``MatMul.8``,
``add_divide_fusion``); a kernel that runs once per time step is told apart
from one that runs once per call by its count.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/profile_step.py --layer lstm
    PYTHONPATH=. python benchmarks/profile_step.py --layer keras_gru --batch 1 --steps 20
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import tempfile
import time
from collections.abc import Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

import keras_rnncells
from benchmarks.speed import layer_functions, layer_path, median_time

KERAS_LAYERS = {"keras_gru": keras.layers.GRU, "keras_lstm": keras.layers.LSTM}
PARTS = (
    "matmuls per time step (recurrent; Keras' loop: also the input's)",
    "recurrent-kernel gradient, after the loop",
    "elementwise kernels of the loops",
    "saving and reading per-step tensors",
    "zero-filling the per-step buffers",
    "loop control (TF executor: Enter, Merge, Switch, NextIteration)",
    "other XLA kernels",
    "input projection and its gradient (TF ops)",
    "optimizer (TF ops)",
    "other TF ops (transposes, loss, casts)",
    "executor overhead (the rest of the wall time)",
)
LOOP_CONTROL = {"Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond", "Identity"}
# Events that contain other events, or the framework's bookkeeping (left in
# "executor overhead"): not counted. C++-scoped names ("SlinkyThreadPool::Await",
# a thread waiting on XLA's pool) are never ops: an op is "scope/name:OpType".
CONTAINERS = re.compile(
    r"Execute|Process|BlockUntilReady|KernelAndDevice|FunctionRun|ParallelFor|^train_step$"
    r"|^while(\.\d+)?$|^TFE_|^Eager|^\$|^python|Memory(De)?[Aa]llocation|DoneCallback"
    r"|ValidateInput|::"
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    choices = [*KERAS_LAYERS, *keras_rnncells.list_cells()]
    parser.add_argument("--layer", default="lstm", help=f"one of {choices}")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=100, help="sequence length T")
    parser.add_argument("--input", type=int, default=64)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--calls", type=int, default=10, help="profiled calls (default 10)")
    args = parser.parse_args(argv)
    if args.layer not in choices:
        raise ValueError(f"Argument `--layer` must be one of {choices}, received: {args.layer!r}")
    for key in ("batch", "steps", "input", "units", "calls"):
        if getattr(args, key) < 1:
            raise ValueError(
                f"Argument `--{key}` must be an integer >= 1, received: {getattr(args, key)}"
            )
    return args


def build_layer(args: argparse.Namespace) -> keras.layers.Layer:
    if args.layer in KERAS_LAYERS:
        return KERAS_LAYERS[args.layer](args.units)
    return keras_rnncells.RNN(keras_rnncells.get_cell(args.layer)(args.units))


def event_totals(logdir: str) -> tuple[dict[str, float], dict[str, int]]:
    """Total duration (ms) and count of every event name in the profile."""
    path = glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)[0]
    space = xplane_pb2.XSpace()
    with open(path, "rb") as file:
        space.ParseFromString(file.read())
    totals, counts = collections.Counter(), collections.Counter()
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                totals[name] += event.duration_ps / 1e9
                counts[name] += 1
    return totals, counts


def part_of(name: str, count: int, time_steps: int) -> str | None:
    """The part of the step an event belongs to (None: a container, not counted).
    TensorFlow ops are named "scope/name:OpType"; XLA kernels by HLO instruction."""
    if CONTAINERS.search(name):
        return None
    if ":" in name:
        scope, op_type = name.rsplit(":", 1)
        if "adam/" in scope.lower():
            return PARTS[8]
        if "while" in scope.split("/"):  # an op of a TensorFlow while loop (Keras' loop)
            if op_type in LOOP_CONTROL:
                return PARTS[5]
            if "MatMul" in op_type:
                return PARTS[0]
            if op_type.startswith("TensorList"):
                return PARTS[3]
            return PARTS[2]
        if "MatMul" in op_type or "BiasAdd" in op_type:
            return PARTS[7]
        return PARTS[9]
    per_step = count >= time_steps
    if re.match(r"^(MatMul|dot)[\w.]*$", name):
        return PARTS[0] if per_step else PARTS[1]
    if "dynamic-update-slice" in name or "dynamic-slice" in name:
        return PARTS[3]
    if "broadcast" in name and not per_step:
        return PARTS[4]
    if per_step and ("fusion" in name or name.startswith(("copy", "concat", "wrapped_"))):
        return PARTS[2]
    return PARTS[6]


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    args = parse_args(argv)
    tf.get_logger().setLevel("ERROR")
    x = tf.random.normal((args.batch, args.steps, args.input))
    layer = build_layer(args)
    layer.build(tuple(x.shape))
    train = layer_functions(layer)["train"]
    unprofiled = median_time(train, x, warmup=3, repeats=args.calls)
    with tempfile.TemporaryDirectory() as logdir:
        tf.profiler.experimental.start(logdir)
        start = time.perf_counter()
        for _ in range(args.calls):
            train(x).numpy()
        wall = 1e3 * (time.perf_counter() - start) / args.calls
        tf.profiler.experimental.stop()
        totals, counts = event_totals(logdir)
    parts = dict.fromkeys(PARTS, 0.0)
    for name, total in totals.items():
        part = part_of(name, counts[name] // args.calls, args.steps)
        if part is not None:
            parts[part] += total / args.calls
    # Kernels of two threads can overlap (the shares can sum past 100%):
    # the rest is never below zero.
    parts[PARTS[-1]] = max(0.0, wall - sum(parts.values()))
    print(
        f"{args.layer} ({layer_path(layer)}): batch {args.batch}, T {args.steps}, "
        f"input {args.input}, units {args.units}; training step {unprofiled:.2f} ms unprofiled "
        f"(median of {args.calls}), {wall:.2f} ms profiled (mean of {args.calls})."
    )
    print("\n| part | ms per step (profiled) | share |\n|---|---:|---:|")
    for part, value in parts.items():
        print(f"| {part} | {value:.2f} | {100 * value / wall:.0f}% |")
    return parts


if __name__ == "__main__":
    main()
