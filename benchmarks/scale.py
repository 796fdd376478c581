"""Training-step time and peak memory against the sequence length T.

The Speed issue's goals: the time and the peak memory of a training step grow
linearly from T=100 to T=2000, and our peak memory is at most 1.2x Keras' at
the same shape. Every (layer, T) is measured in fresh child processes (this
script with the hidden ``--child`` flag): the time in one that runs as users
run it, the peak memory in ``--memory-runs`` (default 3) whose allocators hand
every large buffer back to the kernel when it is freed (``MEMORY_ENVIRONMENT``:
oneDNN's pooling allocator off, glibc's mmap threshold fixed at 64 KiB); the
median of their peaks is reported, with the lowest and highest. One child's
peak is not enough: the buffers a step holds at once depend on the order in
which TensorFlow's executor threads run its ops, and Keras' LSTM read 15.7,
18.7 and 19.4 MiB at T=100 in three children. Each child:

1. builds the layer and its training step (``speed.py``'s: forward, mean-square
   loss, backward, Adam update in one ``tf.function``), runs it once (tracing,
   XLA compiling) and once more;
2. frees what can be freed (``gc.collect()``, glibc's ``malloc_trim(0)``),
   resets the kernel's peak-RSS counter (``5`` into ``/proc/self/clear_refs``)
   and reads ``VmRSS`` from ``/proc/self/status``;
3. runs the step ``--repeats`` times, each timed with ``time.perf_counter`` up
   to the loss's ``.numpy()`` (the median is reported), then reads ``VmHWM``.

Peak step memory = ``VmHWM`` - ``VmRSS`` before the timed steps: what a step
holds at its peak beyond the weights, the optimizer's slots and the compiled
functions. A child prints one JSON line; a child that crashes or times out
becomes a row that says so. Linux and glibc only (``/proc``, ``mallopt``'s
environment variables).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/scale.py
    PYTHONPATH=. python benchmarks/scale.py --steps 100,1000 --layers keras_gru,gru --json s.json
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import tensorflow as tf

import keras_rnncells
from benchmarks.speed import (
    Goal,
    int_list,
    layer_functions,
    layer_path,
    name_list,
    output_path,
    save_json,
    time_call,
)

DEFAULTS = {"steps": "100,250,500,1000,2000", "batch": 32, "input": 64, "units": 128}
DEFAULTS |= {"repeats": 3, "memory_runs": 3}
QUICK = {"steps": "5,10", "batch": 2, "input": 4, "units": 4, "repeats": 1, "memory_runs": 1}
MEMORY_GOAL = 1.2  # our peak at most this times Keras' at the same T
LINEAR_TOLERANCE = 1.3  # per-step cost at the largest T at most this times that at the middle T
CHILD_MARK = "SCALE-RESULT "  # the child's result line starts with this
# The memory child's environment. With oneDNN, TensorFlow allocates large
# buffers from a pool that keeps them between steps (and XLA's buffers too),
# so RSS does not rise when a step reuses them: our layers' peak read as 2 MiB
# at every T. Without oneDNN every buffer comes from malloc, and with a fixed
# mmap threshold glibc maps each one over 64 KiB afresh and unmaps it when it is
# freed: the peak RSS during the steps is then the peak of what they hold.
MEMORY_ENVIRONMENT = {"TF_ENABLE_ONEDNN_OPTS": "0", "MALLOC_MMAP_THRESHOLD_": "65536"}
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Layer:
    """One layer to measure; ``reference`` is the --layers name of the Keras
    layer its peak memory is compared with (None: it is a reference)."""

    label: str
    build: Callable[[int], keras.layers.Layer]
    reference: str | None


LAYERS = {
    "keras_gru": Layer("keras.layers.GRU", keras.layers.GRU, None),
    "gru": Layer("rnncells.GRU", keras_rnncells.GRU, "keras_gru"),
    "keras_lstm": Layer("keras.layers.LSTM", keras.layers.LSTM, None),
    "lstm": Layer("rnncells.LSTM", keras_rnncells.LSTM, "keras_lstm"),
    "mgu": Layer("rnncells.MGU", keras_rnncells.MGU, "keras_gru"),
}


@dataclass
class Row:
    name: str  # the --layers name
    layer: str
    steps: int
    train_ms: float = math.nan
    peak_mib: float = math.nan  # the median over the memory children
    peak_low_mib: float = math.nan  # the lowest and highest of them
    peak_high_mib: float = math.nan
    base_mib: float = math.nan  # VmRSS before the timed steps (median)
    path: str = ""
    error: str | None = None
    ms_per_step: float = math.nan
    mib_per_1000_steps: float = math.nan
    peak_vs_keras: float = math.nan


@dataclass
class Linearity:
    """How one quantity (time or memory) of one layer grows with T."""

    layer: str
    quantity: str  # "time" or "memory"
    growth: float  # value at the largest T / value at the smallest T
    steps_growth: float  # largest T / smallest T
    slope: float  # least squares: value = intercept + slope · T
    intercept: float
    per_step_ratio: float  # per-step value at the largest T / at the middle T
    middle_steps: int
    largest_steps: int
    passed: bool


# -- arguments ---------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", help=f"comma list of T (default {DEFAULTS['steps']})")
    parser.add_argument("--batch", type=int, help="batch size (default 32)")
    parser.add_argument("--input", type=int, help="input features (default 64)")
    parser.add_argument("--units", type=int, help="units (default 128)")
    parser.add_argument("--layers", default=",".join(LAYERS), help=f"comma list of {list(LAYERS)}")
    parser.add_argument("--repeats", type=int, help="timed steps per child (default 3)")
    parser.add_argument(
        "--memory-runs", type=int, help="memory children per (layer, T), median (default 3)"
    )
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per child (1800)")
    parser.add_argument("--quick", action="store_true", help="T 5,10, tiny shape, 1 repeat")
    parser.add_argument("--json", metavar="PATH", help="save config and rows, after every child")
    parser.add_argument("--child", metavar="LAYER", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for key, default in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, default)
    validate(args)
    return args


def validate(args: argparse.Namespace) -> None:
    args.steps = int_list("--steps", args.steps)
    for key in ("batch", "input", "units", "repeats", "memory_runs", "timeout"):
        value = getattr(args, key)
        if value < 1:
            flag = "--" + key.replace("_", "-")
            raise ValueError(f"Argument `{flag}` must be an integer >= 1, received: {value}")
    args.layers = with_references(name_list("--layers", args.layers, list(LAYERS)))
    output_path("--json", args.json)
    if args.child is not None and (args.child not in LAYERS or len(args.steps) != 1):
        raise ValueError(
            f"Argument `--child` must be one of {list(LAYERS)} with one --steps value, "
            f"received: {args.child!r} with --steps {args.steps}"
        )


def with_references(names: list[str]) -> list[str]:
    """The names, each reference (Keras' layer) added before the first layer needing it."""
    result: list[str] = []
    for name in names:
        reference = LAYERS[name].reference
        result += [n for n in (reference, name) if n is not None and n not in result]
    return result


# -- the child: one (layer, T) -------------------------------------------------------------
def status_kib(key: str) -> int:
    """A ``/proc/self/status`` value in KiB, e.g. ``VmRSS``."""
    with open("/proc/self/status") as file:
        for line in file:
            if line.startswith(f"{key}:"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {key}")


def release_free_memory() -> None:
    """Hand the memory freed by the warm-up calls back to the kernel."""
    gc.collect()
    libc = ctypes.util.find_library("c")
    if libc is not None and hasattr(ctypes.CDLL(libc), "malloc_trim"):  # glibc
        ctypes.CDLL(libc).malloc_trim(0)


def reset_peak_rss() -> None:
    """``VmHWM`` starts again from the current ``VmRSS`` (Linux >= 4.0)."""
    with open("/proc/self/clear_refs", "w") as file:
        file.write("5")


def measure(name: str, steps: int, args: argparse.Namespace) -> dict:
    """Train-step time (median ms) and peak step memory (MiB) of one layer at T=steps."""
    tf.get_logger().setLevel("ERROR")
    layer = LAYERS[name].build(args.units)
    x = tf.random.normal((args.batch, steps, args.input))
    layer.build(tuple(x.shape))
    train = layer_functions(layer)["train"]
    for _ in range(2):  # trace and compile, then once more
        train(x).numpy()
    release_free_memory()
    reset_peak_rss()
    before = status_kib("VmRSS")
    times = [time_call(train, x) for _ in range(args.repeats)]
    peak = status_kib("VmHWM")
    if train.experimental_get_tracing_count() != 1:
        raise RuntimeError(f"{name}: the train step retraced while being timed")
    return {
        "train_ms": statistics.median(times),
        "peak_mib": (peak - before) / 1024,
        "base_mib": before / 1024,
        "path": layer_path(layer),
    }


def child_main(args: argparse.Namespace) -> None:
    print(CHILD_MARK + json.dumps(measure(args.child, args.steps[0], args)), flush=True)


# -- the parent: one child per (layer, T) ----------------------------------------------------
def child_command(name: str, steps: int, args: argparse.Namespace) -> list[str]:
    flags = {"--steps": steps, "--batch": args.batch, "--input": args.input}
    flags |= {"--units": args.units, "--repeats": args.repeats}
    command = [sys.executable, str(Path(__file__).resolve()), "--child", name]
    return command + [str(item) for pair in flags.items() for item in pair]


def child_result(name: str, steps: int, args: argparse.Namespace, environment: dict) -> dict:
    """One fresh child's measurement, or ``{"error": why}`` for a crash or a timeout."""
    path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    try:
        done = subprocess.run(
            child_command(name, steps, args),
            capture_output=True,
            text=True,
            timeout=args.timeout,
            env={**os.environ, **environment, "PYTHONPATH": path},
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith(CHILD_MARK)]
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"child failed (exit code {done.returncode}): {last[:200]}"}
    return json.loads(lines[-1][len(CHILD_MARK) :])


def run_child(name: str, steps: int, args: argparse.Namespace) -> Row:
    """Measure one (layer, T): its time in a child as users run it, its peak
    memory in ``--memory-runs`` children under ``MEMORY_ENVIRONMENT`` (the
    median, the lowest and the highest)."""
    row = Row(name, LAYERS[name].label, steps)
    results = [child_result(name, steps, args, {})]
    for _ in range(args.memory_runs):
        if "error" in results[-1]:
            break
        results.append(child_result(name, steps, args, MEMORY_ENVIRONMENT))
    row.error = next((result["error"] for result in results if "error" in result), None)
    if row.error is None:
        timed, counted = results[0], results[1:]
        row.train_ms, row.path = timed["train_ms"], timed["path"]
        peaks = [result["peak_mib"] for result in counted]
        row.peak_mib, row.peak_low_mib, row.peak_high_mib = (
            statistics.median(peaks),
            min(peaks),
            max(peaks),
        )
        row.base_mib = statistics.median(result["base_mib"] for result in counted)
    return row


def derive(rows: list[Row]) -> None:
    """Per-step costs, and each peak against its Keras reference at the same T."""
    by_key = {(row.name, row.steps): row for row in rows}
    for row in rows:
        row.ms_per_step = row.train_ms / row.steps
        row.mib_per_1000_steps = 1000 * row.peak_mib / row.steps
        reference = by_key.get((LAYERS[row.name].reference or row.name, row.steps))
        if reference is not None and reference.peak_mib > 0:
            row.peak_vs_keras = row.peak_mib / reference.peak_mib


# -- checks ------------------------------------------------------------------------------
def middle(values: Sequence[int]) -> int:
    """The T the largest T's per-step cost is compared with: 500 in the default list."""
    return sorted(values)[(len(values) - 1) // 2]


def linearity(rows: list[Row], quantity: str) -> Linearity | None:
    """How one layer's time ("train_ms") or memory ("peak_mib") grows with T; None
    with fewer than two measured T. Memory's per-step cost is taken above the fit's
    intercept (what a step needs whatever T: gradients of the weights, Adam's update)."""
    key = {"time": "train_ms", "memory": "peak_mib"}[quantity]
    points = sorted((row.steps, getattr(row, key)) for row in rows if row.error is None)
    if len(points) < 2:
        return None
    steps, values = (np.array(column, dtype=float) for column in zip(*points))
    slope, intercept = (float(value) for value in np.polyfit(steps, values, 1))
    offset = intercept if quantity == "memory" else 0.0
    by_steps = dict(points)
    small, large, mid = min(by_steps), max(by_steps), middle(list(by_steps))
    above_mid = by_steps[mid] - offset
    per_step_ratio = (
        ((by_steps[large] - offset) / large) / (above_mid / mid) if above_mid > 0 else math.nan
    )
    return Linearity(
        rows[0].layer,
        quantity,
        by_steps[large] / by_steps[small] if by_steps[small] > 0 else math.nan,
        large / small,
        slope,
        intercept,
        per_step_ratio,
        mid,
        large,
        per_step_ratio <= LINEAR_TOLERANCE,  # False for nan
    )


def linearities(rows: list[Row], names: Sequence[str]) -> list[Linearity]:
    found = []
    for name, quantity in ((name, q) for name in names for q in ("time", "memory")):
        check = linearity([row for row in rows if row.name == name], quantity)
        if check is not None:
            found.append(check)
    return found


def memory_goal(rows: list[Row], names: Sequence[str], steps: Sequence[int]) -> list[Goal]:
    """Per layer of ours: peak memory at most MEMORY_GOAL x Keras' at every T."""
    goals = []
    for name in (name for name in names if LAYERS[name].reference is not None):
        ratios = {row.steps: row.peak_vs_keras for row in rows if row.name == name}
        missing = [t for t in steps if math.isnan(ratios.get(t, math.nan))]
        ratios = {t: ratio for t, ratio in ratios.items() if t not in missing}
        worst = max(ratios, key=ratios.get, default=None)
        measured = "" if worst is None else f"worst {ratios[worst]:.2f}x at T={worst}"
        if missing:
            measured += f"{'; ' if measured else ''}no ratio at T={','.join(map(str, missing))}"
        goals.append(
            Goal(
                f"{LAYERS[name].label}: peak memory <= {MEMORY_GOAL}x "
                f"{LAYERS[LAYERS[name].reference].label} at every T",
                measured,
                not missing and ratios[worst] <= MEMORY_GOAL,
            )
        )
    return goals


# -- output ---------------------------------------------------------------------------
COLUMNS = (
    "layer",
    "T",
    "train ms",
    "ms per step",
    "peak MiB",
    "MiB per 1000 steps",
    "peak vs Keras",
    "path",
)


def number(value: float, digits: int = 2, suffix: str = "") -> str:
    return "—" if math.isnan(value) else f"{value:,.{digits}f}{suffix}"


def peak_text(row: Row) -> str:
    """The median peak, and its range where several children measured it."""
    if row.peak_low_mib == row.peak_high_mib:
        return number(row.peak_mib, 2)
    return f"{number(row.peak_mib, 2)} ({row.peak_low_mib:.1f}-{row.peak_high_mib:.1f})"


def table_line(row: Row) -> str:
    if row.error is not None:
        cells = (row.layer, str(row.steps), *["—"] * 5, row.error)
    else:
        cells = (
            row.layer,
            str(row.steps),
            number(row.train_ms, 1),
            number(row.ms_per_step, 3),
            peak_text(row),
            number(row.mib_per_1000_steps, 1),
            number(row.peak_vs_keras, 2, "x"),
            row.path,
        )
    return "| " + " | ".join(cells) + " |"


def linearity_line(check: Linearity) -> str:
    unit = {"time": "ms", "memory": "MiB"}[check.quantity]
    per_step = (
        "per-step time" if check.quantity == "time" else "per-step memory above the intercept"
    )
    verdict = "linear" if check.passed else "NOT linear"
    compared = (
        f"{check.per_step_ratio:.2f}x that at T={check.middle_steps}"
        if not math.isnan(check.per_step_ratio)
        else f"not comparable: the value at T={check.middle_steps} is not above the intercept"
    )
    return (
        f"- {'PASS' if check.passed else 'FAIL'}: {check.layer} {check.quantity} grows "
        f"{check.growth:.1f}x for {check.steps_growth:.0f}x steps: {verdict} "
        f"(fit {check.slope:.4g} {unit}/step × T {'-' if check.intercept < 0 else '+'} "
        f"{abs(check.intercept):.4g} {unit}; {per_step} at "
        f"T={check.largest_steps} is {compared}; tolerance {LINEAR_TOLERANCE}x)"
    )


def checks_and_goals(
    args: argparse.Namespace, rows: list[Row]
) -> tuple[list[Linearity], list[Goal]]:
    return linearities(rows, args.layers), memory_goal(rows, args.layers, args.steps)


def report(args: argparse.Namespace, rows: list[Row]) -> str:
    checks, goals = checks_and_goals(args, rows)
    ordered = sorted(rows, key=lambda row: (args.layers.index(row.name), row.steps))
    return "\n".join(
        [
            f"Training step (forward, mean-square loss, backward, Adam): batch {args.batch}, "
            f"input {args.input}, units {args.units}, float32; median of {args.repeats} "
            f"step(s) per fresh process. Peak MiB: VmHWM - VmRSS around the timed steps, the "
            f"median of {args.memory_runs} process(es) (lowest-highest). "
            f"Peak vs Keras: GRU and MGU against keras.layers.GRU, LSTM against "
            f"keras.layers.LSTM, at the same T.",
            "",
            "| " + " | ".join(COLUMNS) + " |",
            "|---|" + "---:|" * (len(COLUMNS) - 2) + "---|",
            *(table_line(row) for row in ordered),
            "",
            "Linearity (PASS: the per-step cost at the largest T is at most "
            f"{LINEAR_TOLERANCE}x that at the middle T; for memory, above the fit's intercept):",
            *(linearity_line(check) for check in checks),
            "",
            f"Peak memory at most {MEMORY_GOAL}x Keras':",
            *(f"- {'PASS' if g.passed else 'FAIL'}: {g.text}: {g.measured}" for g in goals),
        ]
    )


def result(args: argparse.Namespace, rows: list[Row]) -> dict:
    """What ``--json`` saves and ``main`` returns."""
    checks, goals = checks_and_goals(args, rows)
    return {
        "config": {k: v for k, v in vars(args).items() if k not in ("json", "child")},
        "rows": [asdict(row) for row in rows],
        "linearity": [asdict(check) for check in checks],
        "goals": [asdict(goal) for goal in goals],
    }


def main(argv: Sequence[str] | None = None) -> dict:
    """Measure every (layer, T) in its own process, print the table; returns what
    ``--json`` saves (rewritten after every child, so a killed run keeps its rows)."""
    args = parse_args(argv)
    if args.child is not None:
        child_main(args)
        return {}
    start, rows = time.perf_counter(), []
    for steps in args.steps:  # every layer at one T, then the next T: drifts hit all alike
        for name in args.layers:
            rows.append(run_child(name, steps, args))
            derive(rows)
            print(f"measured {table_line(rows[-1])}", file=sys.stderr, flush=True)
            if args.json:
                save_json(args.json, result(args, rows))
    derive(rows)
    final = result(args, rows)
    print(report(args, rows))
    print(f"Wall time: {time.perf_counter() - start:.0f} s ({len(rows)} child processes).")
    if args.json:
        save_json(args.json, final)
    return final


if __name__ == "__main__":
    main()
