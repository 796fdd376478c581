"""Speed and memory of the scan cells (MinGRU, MinLSTM, QRNN) on
``implementation="scan"`` against our GRU (fused), Keras' GRU, and the same
cells on the fused and generic paths: a training step and a forward pass, at
several lengths T.

* forward: ``layer(x, training=False)`` in a ``tf.function`` (an inference
  graph: what ``model.predict`` and SavedModels run; our fused layers' portable
  loop, no XLA).
* train: forward + mean-square loss + backward + Adam update in one
  ``tf.function`` (as ``model.fit`` runs it; our fused layers' XLA loop).

Timing: at each T every function is built and called once, then once more
in an untimed round (a second call sometimes compiles); then timed rounds
call every function once each, in an order drawn anew per round, so the cases
interleave and a drift of the shared machine's speed hits every row alike.
The tables give medians and each row's ratio against our GRU's time in the
same run. At T=4096 and above there are fewer rounds (``--long-repeats``). A
row whose training step, extrapolated linearly from the previous length,
would take more than ``--max-step-s`` seconds is skipped, and the skip
printed with its reason.

``% peak``: the layer's matmul FLOPs (the input product ``2·B·T·in·cols``;
for a GRU also the recurrent products ``2·B·T·units·3·units``; 3x that for a
training step) over its median time, against the float32 matmul peak: one
2048-square ``tf.matmul`` under XLA timed in the same rounds (its median), so
both see the same load. The input product alone is timed
as the cell computes it (``cell.project_inputs`` on the whole time-major
sequence, under XLA), interleaved with the rest.

Peak memory: one child process per (layer, T) (``--memory-case``) builds the
layer, resets the kernel's peak-RSS mark (``/proc/self/clear_refs``), calls
each function twice (tracing, compiling, running), and reports the
peak resident set (VmHWM) over the two calls less the RSS before them
(TensorFlow reports no allocator statistics on a CPU). What does not grow
with T (tracing, compiling) cancels in the slope between two lengths, MB per
1000 steps, which is constant where memory is linear in T. The child's glibc
malloc returns freed blocks over 64 KiB to the system
(``MALLOC_MMAP_THRESHOLD_``), so memory freed by the forward calls is not
reused unseen by the training step.

Usage::

    python benchmarks/scan.py --out results/scan_cells        # T = 128 ... 16384
    python benchmarks/scan.py --out /tmp/scan --quick
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import statistics
import subprocess
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
STEPS = (128, 512, 1024, 4096, 16384)
QUICK_STEPS = (8, 40)
LONG = 4096  # from this length on, --long-repeats rounds
REFERENCE = "rnncells.GRU (fused)"
GOAL = 0.25  # MinGRU's training step against our GRU's, at T = 1024 and 4096
GOAL_STEPS = (1024, 4096)
MEMORY_STEPS = (1024, 4096, 16384)  # a child process per row and length: ~30 s each
PRODUCT_GOAL = 60.0  # MinGRU's input product, % of the matmul peak
SCAN_CELLS = ("MinGRU", "MinLSTM", "QRNN")
MEMORY_ROWS = (
    REFERENCE,
    "rnncells.MinGRU (scan)",
    "rnncells.MinLSTM (scan)",
    "rnncells.QRNN (scan)",
)
# Input-kernel column blocks per layer family (our GRU and Keras' have 3).
BLOCKS = {"MinGRU": 2, "MinLSTM": 3, "QRNN": 3, "GRU": 3}


def layers(units: int) -> dict[str, Callable[[], keras.layers.Layer]]:
    """Label -> a function making the layer (returning its sequence)."""
    rows: dict[str, Callable[[], keras.layers.Layer]] = {
        REFERENCE: lambda: kr.GRU(units, return_sequences=True),
        "keras.layers.GRU": lambda: keras.layers.GRU(units, return_sequences=True),
    }
    for name in SCAN_CELLS:
        make = getattr(kr, name)
        for implementation in ("scan", "fused", "generic"):
            rows[f"rnncells.{name} ({implementation})"] = (
                lambda make=make, implementation=implementation: make(
                    units, return_sequences=True, implementation=implementation
                )
            )
    return rows


def family(label: str) -> str:
    """The layer family of a row's label: MinGRU, MinLSTM, QRNN or GRU."""
    return next(name for name in (*SCAN_CELLS, "GRU") if name in label)


def matmul_flops(label: str, shape: dict, steps: int) -> int:
    """The forward pass's matmul FLOPs: the input product, and for a GRU the
    recurrent products too."""
    batch, units = shape["batch"], shape["units"]
    columns = BLOCKS[family(label)] * units
    flops = 2 * batch * steps * shape["input"] * columns
    if family(label) == "GRU":
        flops += 2 * batch * steps * units * 3 * units
    return flops


def functions(layer: keras.layers.Layer, x: tf.Tensor) -> tuple[Callable, Callable]:
    """The forward and training-step functions of ``layer`` on ``x``."""
    layer(x[:, :2])  # build (an eager call on two steps: nothing of T's size kept)
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


def input_product(name: str, shape: dict) -> Callable:
    """The input product of cell ``name`` as the cell computes it
    (``project_inputs`` on a time-major sequence), XLA-compiled."""
    cell = getattr(kr.cells, f"{name}Cell")(shape["units"])
    cell.build((None, shape["input"]))

    @tf.function(jit_compile=True)
    def product(x):
        return cell.project_inputs(tf.transpose(x, (1, 0, 2)))

    return product


def timed(function: Callable, x: tf.Tensor) -> float:
    """Milliseconds of one call, its result fetched."""
    start = time.perf_counter()
    result = function(x)
    for value in tf.nest.flatten(result):
        getattr(value, "numpy", lambda: None)()
    return 1e3 * (time.perf_counter() - start)


PEAK = "matmul peak"


def matmul_peak(size: int) -> tuple[Callable, int]:
    """One ``size``-square float32 matmul under XLA, as a function of the
    (ignored) sequence so it is timed in the rounds beside the layers, and
    its FLOPs."""
    a = tf.random.normal((size, size))
    product = tf.function(lambda a: tf.matmul(a, a), jit_compile=True)
    return (lambda x: product(a)), 2 * size**3


def skip_reason(label: str, length: int, previous: dict, max_step_s: float) -> str | None:
    """Why ``label`` is not run at ``length``: its training step extrapolated
    linearly in T from the previous length would exceed ``max_step_s``."""
    if label not in previous or label == REFERENCE:
        return None
    steps, train_ms = previous[label]
    predicted = train_ms * length / steps / 1e3
    if predicted <= max_step_s:
        return None
    return (
        f"skipped at T={length}: its training step would take about {predicted:.0f} s "
        f"({train_ms / 1e3:.1f} s at T={steps}, linear in T), over --max-step-s {max_step_s:g}"
    )


def measure(
    shape: dict, steps: Sequence[int], args: argparse.Namespace, memory: list[dict]
) -> dict:
    """Rows of every layer at every length, input products, matmul peaks;
    with ``args.out``, what is measured so far is written to ``partial.json``
    after each length (``--from-json`` makes a section of it)."""
    load = [os.getloadavg()]
    rows, products, skipped, peaks = [], [], [], []
    previous: dict[str, tuple[int, float]] = {}
    order = random.Random(0)
    for length in steps:
        peak_function, peak_flops = matmul_peak(128 if shape["batch"] < 8 else 2048)
        x = tf.random.stateless_normal((shape["batch"], length, shape["input"]), seed=(1, length))
        built: dict[str, tuple[Callable, ...]] = {}
        for label, make in layers(shape["units"]).items():
            if args.only and args.only not in label and label != REFERENCE:
                continue
            reason = skip_reason(label, length, previous, args.max_step_s)
            if reason:
                print(f"{label}: {reason}", flush=True)
                skipped.append(f"{label}: {reason}")
                continue
            keras.utils.set_random_seed(0)
            built[label] = functions(make(), x)
        for name in (*SCAN_CELLS, "GRU"):
            built[f"input product ({name})"] = (input_product(name, shape),)
        built[PEAK] = (peak_function,)
        for _ in range(2):  # trace, then an untimed round: some second calls compile
            for pair in built.values():
                for function in pair:
                    timed(function, x)
        times = {label: [[] for _ in pair] for label, pair in built.items()}
        repeats = args.long_repeats if length >= LONG else args.repeats
        for _ in range(repeats):
            labels = list(built)
            order.shuffle(labels)
            for label in labels:
                for kind, function in enumerate(built[label]):
                    times[label][kind].append(timed(function, x))
        medians = {label: [statistics.median(t) for t in kinds] for label, kinds in times.items()}
        reference = medians[REFERENCE]
        peak = peak_flops / (medians.pop(PEAK)[0] * 1e6)
        peaks.append(peak)
        for label, values in medians.items():
            if label.startswith("input product"):
                name = label[len("input product (") : -1]
                flops = 2 * shape["batch"] * length * shape["input"] * BLOCKS[name] * shape["units"]
                products.append(
                    {
                        "cell": name,
                        "steps": length,
                        "columns": BLOCKS[name] * shape["units"],
                        "ms": values[0],
                        "gflops": flops / (values[0] * 1e6),
                        "pct_peak": 100 * flops / (values[0] * 1e6) / peak,
                    }
                )
                continue
            fwd, train = values
            previous[label] = (length, train)
            flops = matmul_flops(label, shape, length)
            rows.append(
                {
                    "layer": label,
                    "steps": length,
                    "fwd_ms": fwd,
                    "train_ms": train,
                    "fwd_vs_gru": fwd / reference[0],
                    "train_vs_gru": train / reference[1],
                    "fwd_gflops": flops / (fwd * 1e6),
                    "train_gflops": 3 * flops / (train * 1e6),
                    "fwd_pct_peak": 100 * flops / (fwd * 1e6) / peak,
                    "train_pct_peak": 100 * 3 * flops / (train * 1e6) / peak,
                }
            )
            print(
                f"T={length:>6} {label:<28} fwd {fwd:9.1f} ms ({fwd / reference[0]:5.2f}x)"
                f"  train {train:9.1f} ms ({train / reference[1]:5.2f}x)",
                flush=True,
            )
        load.append(os.getloadavg())
        result = {
            "rows": rows,
            "products": products,
            "skipped": skipped,
            "peak_gflops": max(peaks),
            "peaks_gflops": peaks,
            "loadavg": load,
            "shape": shape,
            "repeats": [args.repeats, args.long_repeats],
            "memory": memory,
        }
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            write_json(args.out / "partial.json", result)
    return result


# -- peak memory: a child process per case ---------------------------------------------


def resident_kb(field: str) -> int:
    """``VmRSS`` or ``VmHWM`` (peak) of this process, in kB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def memory_case(label: str, length: int, shape: dict) -> dict:
    """In this (child) process: the peak RSS of ``label``'s forward and
    training step at ``length``, above the RSS before the first call (MB)."""
    x = tf.random.stateless_normal((shape["batch"], length, shape["input"]), seed=(1, length))
    keras.utils.set_random_seed(0)
    forward, train = functions(layers(shape["units"])[label](), x)
    start = resident_kb("VmRSS")
    result = {"layer": label, "steps": length, "start_mb": start / 1024}
    for kind, function in (("fwd", forward), ("train", train)):
        with open("/proc/self/clear_refs", "w") as marks:
            marks.write("5")  # reset VmHWM to the current RSS
        timed(function, x)  # trace and compile
        timed(function, x)
        result[f"{kind}_mb"] = (resident_kb("VmHWM") - start) / 1024
    return result


# glibc's malloc then maps every block over 64 KiB on its own and unmaps it when
# freed (no dynamic threshold, no retained heap), so the RSS follows what is live.
MALLOC_RETURNS = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0"}


def measure_memory(shape: dict, steps: Sequence[int], quick: bool) -> list[dict]:
    """`memory_case` of each of ``MEMORY_ROWS`` at each length, each in a
    fresh child process."""
    results = []
    for length in steps:
        for label in MEMORY_ROWS:
            command = [sys.executable, __file__, "--memory-case", label, "--memory-steps"]
            command += [str(length)] + (["--quick"] if quick else [])
            done = subprocess.run(
                command, capture_output=True, text=True, check=False, env=MALLOC_RETURNS
            )
            if done.returncode != 0:
                raise RuntimeError(f"memory case {label} T={length} failed:\n{done.stderr[-2000:]}")
            row = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"T={length:>6} {label:<28} memory: forward +{row['fwd_mb']:.0f} MB, "
                f"train +{row['train_mb']:.0f} MB (RSS at the start {row['start_mb']:.0f} MB)",
                flush=True,
            )
            results.append(row)
    return results


def memory_slopes(memory: list[dict], label: str) -> list[tuple[int, int, float]]:
    """``label``'s training-step peak memory between consecutive lengths:
    (T from, T to, MB per 1000 steps). Linear in T: equal slopes."""
    own = sorted((r["steps"], r["train_mb"]) for r in memory if r["layer"] == label)
    pairs = itertools.pairwise(own)
    return [(t0, t1, 1000 * (m1 - m0) / (t1 - t0)) for (t0, m0), (t1, m1) in pairs]


# -- the tables and the section ----------------------------------------------------------


def table(result: dict) -> str:
    lines = [
        "| T | layer | forward ms | vs our GRU | train step ms | vs our GRU"
        " | % matmul peak (fwd / train) |",
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


def product_table(result: dict) -> str:
    lines = [
        "| T | cell | input product (B·T x in) @ (in x cols) | ms | GFLOP/s | % matmul peak |",
        "|---:|---|---|---:|---:|---:|",
    ]
    shape = result["shape"]
    for row in result["products"]:
        rows = shape["batch"] * row["steps"]
        size = f"({rows} x {shape['input']}) @ ({shape['input']} x {row['columns']})"
        lines.append(
            f"| {row['steps']} | {row['cell']} | {size} | {row['ms']:.2f} | {row['gflops']:.0f}"
            f" | {row['pct_peak']:.0f}% |"
        )
    return "\n".join(lines)


def memory_table(memory: list[dict]) -> str:
    lines = [
        "| T | layer | forward: peak RSS, MB above the start | train step: peak RSS, MB above"
        " the start | train: MB per 1k steps since the previous T |",
        "|---:|---|---:|---:|---:|",
    ]
    slopes = {
        (label, t1): slope for label in MEMORY_ROWS for _, t1, slope in memory_slopes(memory, label)
    }
    for row in memory:
        slope = slopes.get((row["layer"], row["steps"]))
        lines.append(
            f"| {row['steps']} | {row['layer']} | {row['fwd_mb']:.0f} | {row['train_mb']:.0f}"
            f" | {'' if slope is None else f'{slope:.0f}'} |"
        )
    return "\n".join(lines)


def auto_rows(result: dict) -> list[dict]:
    """Per scan cell and T: scan's time over the fused loop's, forward and training."""
    times = {(r["layer"], r["steps"]): r for r in result["rows"]}
    found = []
    for name in SCAN_CELLS:
        for length in sorted({r["steps"] for r in result["rows"]}):
            scan = times.get((f"rnncells.{name} (scan)", length))
            fused = times.get((f"rnncells.{name} (fused)", length))
            if scan and fused:
                found.append(
                    {
                        "cell": name,
                        "steps": length,
                        "fwd": scan["fwd_ms"] / fused["fwd_ms"],
                        "train": scan["train_ms"] / fused["train_ms"],
                    }
                )
    return found


def auto_table(result: dict) -> str:
    lines = [
        "| T | cell | forward: scan / fused | faster | training: scan / fused | faster |",
        "|---:|---|---:|---|---:|---|",
    ]
    for row in auto_rows(result):
        fwd, train = row["fwd"], row["train"]
        lines.append(
            f"| {row['steps']} | {row['cell']} | {fwd:.2f} | {'scan' if fwd < 1 else 'fused'}"
            f" | {train:.2f} | {'scan' if train < 1 else 'fused'} |"
        )
    return "\n".join(lines)


def scan_from(rows: list[dict], kind: str) -> int | None:
    """The smallest length from which scan beat the fused loop at every
    measured length (``kind``: "fwd" or "train"); None where it did not at
    the largest."""
    lengths = sorted(row["steps"] for row in rows)
    faster = {row["steps"]: row[kind] < 1 for row in rows}
    found = None
    for length in reversed(lengths):
        if not faster[length]:
            break
        found = length
    return found


def auto_rule(result: dict) -> str:
    """The rule the measurement supports: per cell and pass, the lengths
    from which scan beat the fused loop."""
    rows = auto_rows(result)
    parts = []
    for name in SCAN_CELLS:
        own = [row for row in rows if row["cell"] == name]
        if not own:
            continue
        said = []
        for kind, what in (("fwd", "forward"), ("train", "training")):
            start = scan_from(own, kind)
            wins = sum(row[kind] < 1 for row in own)
            where = "fused at the largest T" if start is None else f"scan from T={start}"
            said.append(f"{what} {where} ({wins} of {len(own)} lengths scan)")
        parts.append(f"{name}: " + ", ".join(said))
    return (
        "- `auto` as measured (scan against the fused loop): "
        + "; ".join(parts)
        + ". `auto` today takes scan in inference graphs at a known length and the XLA "
        "fused loop in training steps (`RNN.path`)."
    )


def goal_lines(result: dict, memory: list[dict]) -> list[str]:
    lines = []
    for row in result["rows"]:
        if row["layer"] == "rnncells.MinGRU (scan)" and row["steps"] in GOAL_STEPS:
            met = "met" if row["train_vs_gru"] <= GOAL else "**not met**"
            lines.append(
                f"- T={row['steps']}: MinGRU (scan) training step {row['train_vs_gru']:.2f}x "
                f"our GRU's (goal ≤ {GOAL}x): {met}"
            )
    for row in result["products"]:
        if row["cell"] == "MinGRU" and row["steps"] in GOAL_STEPS:
            met = "met" if row["pct_peak"] >= PRODUCT_GOAL else "**not met**"
            lines.append(
                f"- T={row['steps']}: MinGRU's input product at {row['pct_peak']:.0f}% of the "
                f"matmul peak (goal ≥ {PRODUCT_GOAL:.0f}%): {met}"
            )
    for label in MEMORY_ROWS:
        slopes = memory_slopes(memory, label)
        if "scan" in label and len(slopes) >= 2:
            first, last = slopes[0][2], slopes[-1][2]
            met = "met" if 0 < last <= 1.25 * first else "**not met**"
            lines.append(
                f"- Memory of {label}'s training step: {first:.0f} MB per 1000 steps from "
                f"T={slopes[0][0]} to {slopes[0][1]}, {last:.0f} from T={slopes[-1][0]} to "
                f"{slopes[-1][1]} (linear in T: the later slope at most 1.25x the first): {met}"
            )
    return lines


def section(result: dict, memory: list[dict], argv: Sequence[str]) -> str:
    shape = result["shape"]
    goals = goal_lines(result, memory) or [
        "- No threshold at these lengths: the numbers are reported."
    ]
    loads = ", ".join("/".join(f"{v:.1f}" for v in load) for load in result["loadavg"])
    skipped = [f"- {line}" for line in result["skipped"]] or ["- none"]
    return "\n".join(
        [
            "## Scan cells: MinGRU, MinLSTM and QRNN against a GRU",
            "",
            "- Paper: Feng et al. 2024 report minGRU training 175x faster than a sequential GRU "
            "at T=512 on a GPU (a parallel scan); Bradbury et al. 2017 report QRNNs up to 16x "
            "faster than cuDNN LSTMs.",
            f"- Target: MinGRU's training step at most {GOAL}x our GRU's (fused) at T=1024 and "
            f"T=4096 on this CPU (its matmul FLOPs are 0.22x the GRU's); its input product at "
            f"≥ {PRODUCT_GOAL:.0f}% of the matmul peak; memory linear in T.",
            *goals,
            auto_rule(result),
            "",
            "### Speed",
            "",
            table(result),
            "",
            "Skipped rows:",
            *skipped,
            "",
            "### The input product alone",
            "",
            product_table(result),
            "",
            "### Scan against the fused loop (what `auto` chooses between)",
            "",
            auto_table(result),
            "",
            "### Peak memory",
            "",
            memory_table(memory) if memory else "Not measured in this run (--no-memory).",
            "",
            f"Settings: batch {shape['batch']}, {shape['input']} inputs, {shape['units']} "
            f"units, float32; medians of {result['repeats'][0]} rounds below T={LONG} and "
            f"{result['repeats'][1]} from T={LONG} on (each round every function once, in a "
            "shuffled order, after a tracing call and an untimed round); ratios against our "
            "GRU in the same run. Matmul peak: one 2048-square float32 tf.matmul under XLA, "
            "timed in the same rounds (its median) at each T, GFLOP/s: "
            + ", ".join(f"{p:.0f}" for p in result["peaks_gflops"])
            + "; each % is against its own T's. % matmul peak counts the input product's "
            "FLOPs (and a GRU's recurrent "
            "ones), 3x for a training step. Forward: an inference graph (no XLA); train: "
            "forward, MSE, backward, Adam in one tf.function. Peak memory: a child process "
            "per case (glibc malloc returning freed blocks over 64 KiB), its peak RSS (VmHWM) "
            "over two calls (the first traces and compiles) less its RSS after building; "
            "the slope between lengths cancels what does not grow with T. Load average "
            "(1/5/15 min) at the start and "
            f"after each T: {loads}, on a 2-core host shared with other jobs (this run at "
            "nice 5): the ratios are indicative.",
            "",
            "Reproduce: `nice -n 5 python benchmarks/scan.py " + " ".join(argv) + "`",
            "",
        ]
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="directory for section.md and rows.json")
    parser.add_argument("--quick", action="store_true", help="tiny shapes: checks the script")
    parser.add_argument("--steps", type=int, nargs="+", help=f"lengths T (default {STEPS})")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds below T=4096")
    parser.add_argument("--long-repeats", type=int, default=2, help="timed rounds from T=4096")
    parser.add_argument(
        "--max-step-s",
        type=float,
        default=60.0,
        help="skip a row whose training step would take longer (extrapolated)",
    )
    parser.add_argument("--only", help="only the rows whose label contains this (and our GRU)")
    parser.add_argument(
        "--memory-lengths",
        type=int,
        nargs="+",
        default=MEMORY_STEPS,
        help=f"lengths T of the memory children (default {MEMORY_STEPS}; --quick: all)",
    )
    parser.add_argument("--no-memory", action="store_true", help="skip the memory children")
    parser.add_argument("--from-json", type=Path, help="write the section of a saved run")
    parser.add_argument("--memory-case", help=argparse.SUPPRESS)
    parser.add_argument("--memory-steps", type=int, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict:
    args = parse_args(argv)
    shape = QUICK_SHAPE if args.quick else SHAPE
    if args.memory_case:  # a child of measure_memory
        print(json.dumps(memory_case(args.memory_case, args.memory_steps, shape)))
        return {}
    steps = args.steps or (QUICK_STEPS if args.quick else STEPS)
    if args.quick:
        args.repeats = args.long_repeats = 1
    if args.from_json:  # the section again from a run's rows.json (or partial.json)
        result = json.loads(args.from_json.read_text())
    else:
        lengths = steps if args.quick else [t for t in steps if t in args.memory_lengths]
        memory = [] if args.no_memory else measure_memory(shape, lengths, args.quick)
        result = measure(shape, steps, args, memory)
    memory = result["memory"]
    print(table(result), product_table(result), auto_table(result), sep="\n\n")
    if memory:
        print(memory_table(memory))
    print("\n".join(goal_lines(result, memory)))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        shown = result.setdefault("argv", list(argv if argv is not None else sys.argv[1:]))
        text = section(result, memory, shown)
        write_atomically(args.out / "section.md", lambda path: Path(path).write_text(text))
        write_json(args.out / "rows.json", result)
    return result


if __name__ == "__main__":
    main()
