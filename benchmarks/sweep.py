"""Shape sweep: our GRU and LSTM (implementation "auto") against Keras' own.

For every grid point (batch, sequence length T, units; the input features are
fixed) one process measures ``keras.layers.GRU``, ``keras_rnncells.GRU``,
``keras.layers.LSTM`` and ``keras_rnncells.LSTM``, forward and training step,
with ``speed.py``'s machinery: each layer's forward and training-step functions
are traced and warmed up, then ``--repeats`` round-robin rounds within the grid point time
every function once, and more rounds follow until the point's timed calls took
``--min-seconds`` (1 s) in all: a cheap shape's median, which one slow call
moves, then rests on tens of rounds. The table shows the medians, the rounds
and the ratio ours / Keras.

The goal of the Speed issue, "implementation='auto' at most 1.0x Keras' own
GRU/LSTM at every point", is printed under the table as PASS/FAIL. The rows of
a grid point print as soon as it is measured; with ``--json`` the file is
rewritten (atomically) after every point, and ``--resume`` reuses the points it
already holds, so a killed run loses only the point it was measuring.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/sweep.py --json sweep.json --plot sweep.png
    PYTHONPATH=. python benchmarks/sweep.py --json sweep.json --resume   # after a kill
    PYTHONPATH=. python benchmarks/sweep.py --batches 32 --steps 100 --units 128,256
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import tensorflow as tf

import keras_rnncells
from benchmarks.speed import (
    Bench,
    Goal,
    Row,
    int_list,
    name_list,
    output_path,
    prepare,
    row,
    save_json,
    time_round_robin,
)

GRID = {"batches": "1,8,32,128", "steps": "20,100,500", "units": "64,128,256,512"}
QUICK_GRID = {"batches": "1,2", "steps": "3,5", "units": "4"}
DEFAULTS = {"input": 64, "repeats": 5, "warmup": 1, "min_seconds": 1.0}
QUICK_DEFAULTS = {"input": 4, "repeats": 2, "warmup": 1, "min_seconds": 0.0}
# --layers name: (label, Keras' layer, ours)
PAIRS: dict[str, tuple[str, Callable, Callable]] = {
    "gru": ("GRU", keras.layers.GRU, keras_rnncells.GRU),
    "lstm": ("LSTM", keras.layers.LSTM, keras_rnncells.LSTM),
}
MODES = {"fwd": "forward", "train": "training step"}
GOAL = 1.0
GOAL_TEXT = "implementation='auto' at most 1.0x Keras at every point (forward and train)"
# What a resumed --json file must share with this run.
SAME_SETUP = ("input", "repeats", "warmup", "min_seconds")
PLOT_EXTRA = 'pip install -e ".[plot]"'


@dataclass
class Point:
    """One grid point of one layer pair: Keras' layer against ours (times in ms)."""

    layer: str  # "GRU" or "LSTM"
    batch: int
    steps: int
    units: int
    path: str  # our layer's execution path
    keras_fwd_ms: float
    ours_fwd_ms: float
    fwd_ratio: float  # ours / Keras
    keras_train_ms: float
    ours_train_ms: float
    train_ratio: float
    rounds: int = 0  # timed rounds (0: a file from before rounds were saved)

    @property
    def key(self) -> tuple[str, int, int, int]:
        return (self.layer, self.batch, self.steps, self.units)


# -- arguments ---------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", help=f"comma list (default {GRID['batches']})")
    parser.add_argument("--steps", help=f"comma list of sequence lengths (default {GRID['steps']})")
    parser.add_argument("--units", help=f"comma list (default {GRID['units']})")
    parser.add_argument("--input", type=int, help="input features (default 64)")
    parser.add_argument("--layers", default="gru,lstm", help=f"comma list of {list(PAIRS)}")
    parser.add_argument("--repeats", type=int, help="timed rounds per grid point (default 5)")
    parser.add_argument("--warmup", type=int, help="untimed calls after tracing (default 1)")
    parser.add_argument(
        "--min-seconds",
        type=float,
        help="more rounds until a point's timed calls took this long (default 1.0)",
    )
    parser.add_argument("--quick", action="store_true", help="tiny grid, 2 repeats: runs or not")
    parser.add_argument("--json", metavar="PATH", help="save config and rows, after every point")
    parser.add_argument("--resume", action="store_true", help="reuse the points --json holds")
    parser.add_argument("--plot", metavar="PATH.png", help="plot the ratios (needs [plot] extra)")
    args = parser.parse_args(argv)
    grid, defaults = (QUICK_GRID, QUICK_DEFAULTS) if args.quick else (GRID, DEFAULTS)
    for key, default in {**grid, **defaults}.items():
        if getattr(args, key) is None:
            setattr(args, key, default)
    validate(args)
    return args


def validate(args: argparse.Namespace) -> None:
    for key in GRID:
        setattr(args, key, int_list(f"--{key}", getattr(args, key)))
    for key, least in (("input", 1), ("repeats", 1), ("warmup", 0)):
        value = getattr(args, key)
        if value < least:
            raise ValueError(f"Argument `--{key}` must be an integer >= {least}, received: {value}")
    if not args.min_seconds >= 0:  # also refuses nan
        raise ValueError(
            f"Argument `--min-seconds` must be a number >= 0, received: {args.min_seconds}"
        )
    args.layers = name_list("--layers", args.layers, list(PAIRS))
    output_path("--json", args.json)
    output_path("--plot", args.plot)
    if args.resume and args.json is None:
        raise ValueError("Argument `--resume` needs `--json PATH` (the file to resume from)")
    if args.plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ImportError(
                f"Argument `--plot` needs matplotlib, from the [plot] extra: {PLOT_EXTRA}"
            ) from None


def config(args: argparse.Namespace) -> dict:
    return {
        **{key: getattr(args, key) for key in (*GRID, *SAME_SETUP, "layers", "quick")},
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
    }


# -- measuring ---------------------------------------------------------------------------
def benches(name: str, units: int) -> tuple[Bench, Bench]:
    """Keras' layer and ours (implementation "auto"), in that order."""
    label, keras_layer, our_layer = PAIRS[name]
    return (
        Bench(f"keras.layers.{label}", lambda: keras_layer(units)),
        Bench(f"rnncells.{label}", lambda: our_layer(units)),
    )


def measure_point(batch: int, steps: int, units: int, args: argparse.Namespace) -> list[Point]:
    """Every selected pair at one grid point, timed round robin; one Point per pair."""
    x = tf.random.normal((batch, steps, args.input))
    timed = []
    for name in args.layers:
        for bench in benches(name, units):
            layer = bench.build()
            layer.build(tuple(x.shape))
            timed.append(prepare(bench, layer, x, args.warmup))
    rounds = time_round_robin(timed, x, args.repeats, args.min_seconds)
    rows = {entry.bench.label: row(entry, x) for entry in timed}
    del timed
    keras.backend.clear_session()  # a grid point's layers and functions go with it
    gc.collect()
    return [pair_point(rows, PAIRS[name][0], batch, steps, units, rounds) for name in args.layers]


def pair_point(
    rows: dict[str, Row], label: str, batch: int, steps: int, units: int, rounds: int
) -> Point:
    """Keras' row and ours at one grid point, as one Point."""
    theirs, ours = rows[f"keras.layers.{label}"], rows[f"rnncells.{label}"]
    return Point(
        layer=label,
        batch=batch,
        steps=steps,
        units=units,
        path=ours.path,
        keras_fwd_ms=theirs.fwd_ms,
        ours_fwd_ms=ours.fwd_ms,
        fwd_ratio=ours.fwd_ms / theirs.fwd_ms,
        keras_train_ms=theirs.train_ms,
        ours_train_ms=ours.train_ms,
        train_ratio=ours.train_ms / theirs.train_ms,
        rounds=rounds,
    )


def not_reached(saved: dict[tuple, Point], points: list[Point]) -> list[Point]:
    """The resumed points that are not (yet) among this run's points."""
    reached = {point.key for point in points}
    return [point for key, point in saved.items() if key not in reached]


def resumed_points(args: argparse.Namespace) -> dict[tuple, Point]:
    """The points a previous run saved in ``--json``, when ``--resume`` asks for them."""
    if not (args.resume and os.path.exists(args.json)):
        return {}
    with open(args.json) as file:
        saved = json.load(file)
    mine = config(args)
    differ = {key: saved["config"].get(key) for key in SAME_SETUP}
    differ = {key: value for key, value in differ.items() if value != mine[key]}
    if differ:
        flags = ", ".join(f"--{key}" for key in differ)
        found = ", ".join(f"{key}={value}" for key, value in differ.items())
        raise ValueError(
            f"Argument `--resume` must name a file measured with the same {flags}, "
            f"received: {args.json} ({found})"
        )
    names = {field.name for field in fields(Point)}
    points = [Point(**{k: v for k, v in p.items() if k in names}) for p in saved["points"]]
    return {point.key: point for point in points}


# -- summary -----------------------------------------------------------------------------
def summary(points: list[Point], layers: Sequence[str]) -> list[str]:
    """Per pair and mode: the worst ratio and where, and how many points meet the goal."""
    lines = []
    for name, mode in itertools.product(layers, MODES):
        label = PAIRS[name][0]
        mine = [point for point in points if point.layer == label]
        if not mine:
            continue
        ratios = [getattr(point, f"{mode}_ratio") for point in mine]
        worst = max(mine, key=lambda point: getattr(point, f"{mode}_ratio"))
        met = sum(ratio <= GOAL for ratio in ratios)
        lines.append(
            f"- {label} {MODES[mode]}: worst {getattr(worst, f'{mode}_ratio'):.2f}x at "
            f"batch {worst.batch}, T {worst.steps}, units {worst.units}; "
            f"{met}/{len(ratios)} points <= {GOAL:.1f}x"
        )
    return lines


def goal(points: list[Point]) -> Goal:
    ratios = [getattr(point, f"{mode}_ratio") for point in points for mode in MODES]
    above = sum(ratio > GOAL for ratio in ratios)
    return Goal(GOAL_TEXT, f"{above} of {len(ratios)} ratios above {GOAL:.1f}x", above == 0)


# -- output ---------------------------------------------------------------------------
COLUMNS = (
    "layer",
    "batch",
    "T",
    "units",
    "Keras fwd ms",
    "ours fwd ms",
    "fwd ratio",
    "Keras train ms",
    "ours train ms",
    "train ratio",
    "rounds",
    "our path",
)


ALIGN = {"layer": "---", "our path": "---"}  # the others are numbers: right-aligned


def milliseconds(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


def duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def ratio(value: float) -> str:
    """The ratio, in bold (and flagged) when it misses the goal."""
    return f"**{value:.2f}x** ✗" if value > GOAL else f"{value:.2f}x"


def table_line(point: Point) -> str:
    cells = (
        point.layer,
        str(point.batch),
        str(point.steps),
        str(point.units),
        milliseconds(point.keras_fwd_ms),
        milliseconds(point.ours_fwd_ms),
        ratio(point.fwd_ratio),
        milliseconds(point.keras_train_ms),
        milliseconds(point.ours_train_ms),
        ratio(point.train_ratio),
        str(point.rounds),
        point.path,
    )
    return "| " + " | ".join(cells) + " |"


def header(args: argparse.Namespace) -> str:
    grid = " x ".join(
        f"{key} {','.join(map(str, getattr(args, key)))}" for key in ("batches", "steps", "units")
    )
    return "\n".join(
        [
            f"Grid: {grid}; input {args.input}; float32. Each grid point: median of "
            f"at least {args.repeats} round-robin rounds after {args.warmup} warm-up call(s), "
            f"more until the point's timed calls took {args.min_seconds:g} s. "
            f"Ratio = ours / Keras (time; lower is better); ✗ marks a ratio above {GOAL:.2f}x.",
            "",
            "| " + " | ".join(COLUMNS) + " |",
            "|" + "|".join(ALIGN.get(column, "---:") for column in COLUMNS) + "|",
        ]
    )


def footer(points: list[Point], args: argparse.Namespace, goal_: Goal) -> str:
    return "\n".join(
        [
            "",
            "Summary (ratio = ours / Keras):",
            *summary(points, args.layers),
            "",
            f"- {'PASS' if goal_.passed else 'FAIL'}: {goal_.text}: {goal_.measured}",
        ]
    )


def result(
    args: argparse.Namespace, points: list[Point], wall_s: float, kept: Sequence[Point] = ()
) -> dict:
    """What ``--json`` saves (after every grid point) and ``main`` returns: the
    summary and goal of this run's ``points``; ``kept``, the points of a resumed file
    that this run has not reached (or that are outside its grid), are saved too."""
    return {
        "config": config(args),
        "points": [asdict(point) for point in (*points, *kept)],
        "summary": summary(points, args.layers),
        "goal": asdict(goal(points)),
        "wall_s": wall_s,
    }


def plot(points: list[Point], args: argparse.Namespace) -> None:
    """Ratio ours / Keras against T, one panel per mode (rows) and pair (columns):
    one line per (batch, units), the colour telling the units, the marker the batch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    shades = [0.85 * i / max(1, len(args.units) - 1) for i in range(len(args.units))]
    colours = dict(zip(args.units, plt.cm.viridis(shades)))
    markers = dict(zip(args.batches, itertools.cycle("os^Dvp*")))
    styles = dict(zip(args.batches, itertools.cycle(["-", "--", "-.", ":"])))
    figure, axes = plt.subplots(
        len(MODES), len(args.layers), figsize=(6 * len(args.layers), 8.5), squeeze=False
    )
    for (row_, mode), (column, name) in itertools.product(enumerate(MODES), enumerate(args.layers)):
        axis, label = axes[row_][column], PAIRS[name][0]
        ratios = [getattr(p, f"{mode}_ratio") for p in points if p.layer == label]
        top = max([1.1, *(1.05 * ratio for ratio in ratios)])  # each panel its own scale
        for batch, units in itertools.product(args.batches, args.units):
            line = sorted(
                (p for p in points if (p.layer, p.batch, p.units) == (label, batch, units)),
                key=lambda p: p.steps,
            )
            axis.plot(
                [p.steps for p in line],
                [getattr(p, f"{mode}_ratio") for p in line],
                color=colours[units],
                marker=markers[batch],
                linestyle=styles[batch],
            )
        axis.axhspan(GOAL, top, color="tab:red", alpha=0.07)
        axis.axhline(GOAL, color="tab:red", linewidth=1.2)
        axis.set_xscale("log")
        axis.set_xticks(args.steps, [str(steps) for steps in args.steps])
        axis.minorticks_off()
        axis.set_ylim(0, top)
        axis.grid(alpha=0.3)
        axis.set_title(f"{label}, {MODES[mode]}")
        axis.set_xlabel("sequence length T (log scale)")
        axis.set_ylabel("time ours / Keras (goal ≤ 1.0)")
    handles = [
        *(Line2D([], [], color=colours[u], linewidth=2.5, label=f"units {u}") for u in args.units),
        *(
            Line2D([], [], color="grey", marker=markers[b], linestyle=styles[b], label=f"batch {b}")
            for b in args.batches
        ),
    ]
    figure.legend(handles=handles, loc="lower center", ncol=min(len(handles), 8), frameon=False)
    figure.suptitle(
        f"keras_rnncells (implementation='auto') against Keras' own layers; input {args.input}"
    )
    figure.tight_layout(rect=(0, 0.06, 1, 1))
    figure.savefig(args.plot, dpi=120)
    plt.close(figure)


# -- running -----------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> dict:
    """Run the sweep, print the table as it goes; returns what ``--json`` saves."""
    args = parse_args(argv)
    tf.get_logger().setLevel("ERROR")  # one tf.function pair per layer is by design
    start = time.perf_counter()
    saved = resumed_points(args)
    points: list[Point] = []
    measured = 0
    print(header(args), flush=True)
    for batch, steps, units in itertools.product(args.batches, args.steps, args.units):
        keys = [(PAIRS[name][0], batch, steps, units) for name in args.layers]
        fresh = not all(key in saved for key in keys)
        new = measure_point(batch, steps, units, args) if fresh else [saved[k] for k in keys]
        points += new
        measured += fresh
        print("\n".join(table_line(point) for point in new), flush=True)
        if fresh and args.json:  # a killed run keeps every point measured so far
            wall_s = time.perf_counter() - start
            save_json(args.json, result(args, points, wall_s, not_reached(saved, points)))
    wall_s = time.perf_counter() - start
    final = result(args, points, wall_s, not_reached(saved, points))
    print(footer(points, args, goal(points)))
    grid_points = len(points) // len(args.layers)
    print(
        f"Wall time: {duration(wall_s)} ({measured} of {grid_points} grid points "
        f"measured in this run).",
        flush=True,
    )
    if args.json:
        save_json(args.json, final)
    if args.plot:
        plot(points, args)
        print(f"Plot: {args.plot}")
    return final


if __name__ == "__main__":
    main()
