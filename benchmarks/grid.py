"""MNIST from the 28×28 grid: the multi-dimensional RNN (Graves et al. 2007) and
PixelRNN's row LSTM (van den Oord et al. 2016) against the row-by-row LSTM
(each row a time step) at about equal parameters: test accuracy and seconds
per epoch, ratios against the row LSTM of the same run.

Each model is one ``rnncells train mnist_rows`` run (``--model rnn --cell
lstm``, ``--model mdrnn --cell CELL``, ``--model rowlstm --cell lstm``), its
units chosen so that its parameter count is the nearest to the row LSTM's;
a finished run with the same settings is reused. Writes ``OUT/section.md``.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/grid.py --out results/mnist_2d
    PYTHONPATH=. python benchmarks/grid.py --out /tmp/grid --quick   # seconds: 300 images
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from keras_rnncells.files import write_atomically

PIXELS = 28  # features per row, and rows
CLASSES = 10
KERNEL = 3  # RowLSTM's kernel_size in `keras_rnncells.layers.grid_encoders`

# Trainable parameters of each model of `rnncells train mnist_rows` with
# ``units`` (checked against each run's own count, `check_counts`).
PARAMETERS: dict[str, Callable[[int], int]] = {
    # LSTM over rows of 28 pixels, Dense(10) on its last state.
    "rnn": lambda u: 4 * (u * (PIXELS + u) + u) + CLASSES * u + CLASSES,
    # four GRU sweeps reading [pixel; s_up] (reset_after: two biases), corners concatenated.
    "mdrnn": lambda u: 4 * (3 * u * (1 + u) + 3 * u * u + 6 * u) + 4 * u * CLASSES + CLASSES,
    # 1×3 convolutions pixel→4u and state→4u, bias; the last row (28 × u) flattened.
    "rowlstm": lambda u: (
        KERNEL * 4 * u + KERNEL * u * 4 * u + 4 * u + PIXELS * u * CLASSES + CLASSES
    ),
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="runs and section.md go here")
    parser.add_argument("--quick", action="store_true", help="300 images, 1 epoch, tiny models")
    parser.add_argument("--limit", type=int, default=3000, help="images per split")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--units", type=int, default=32, help="the row LSTM's units")
    parser.add_argument("--md-cell", default="gru", help="the MD-RNN's cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=7, help="round-robin rounds of steps")
    args = parser.parse_args(argv)
    if args.quick:
        args.limit, args.epochs, args.units, args.rounds = 300, 1, 8, 2
    return args


def matched_units(model: str, target: int) -> int:
    """The units whose `PARAMETERS` count for ``model`` is the nearest to ``target``."""
    return min(range(1, 4 * target), key=lambda u: abs(PARAMETERS[model](u) - target))


def runs(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """label -> the ``rnncells train`` options of each compared model."""
    target = PARAMETERS["rnn"](args.units)
    return {
        "row-by-row LSTM": {"model": "rnn", "cell": "lstm", "units": args.units},
        f"MD-RNN ({args.md_cell}, 4 directions)": {
            "model": "mdrnn",
            "cell": args.md_cell,
            "units": matched_units("mdrnn", target),
        },
        "RowLSTM (PixelRNN)": {
            "model": "rowlstm",
            "cell": "lstm",
            "units": matched_units("rowlstm", target),
        },
    }


def train_command(options: dict[str, Any], args: argparse.Namespace, run_dir: Path) -> list[str]:
    flags = {**options, "epochs": args.epochs, "limit": args.limit, "seed": args.seed}
    flags["batch-size"] = 100
    command = ["rnncells", "train", "mnist_rows"]
    for name, value in flags.items():
        command += [f"--{name}", str(value)]
    return [*command, "--out", str(run_dir)]


def finished(run_dir: Path, options: dict[str, Any], args: argparse.Namespace) -> dict | None:
    """The run's results.json if it finished with these settings."""
    path = run_dir / "results.json"
    if not path.exists():
        return None
    results = json.loads(path.read_text(encoding="utf-8"))
    settings = results["settings"]
    wanted = {**options, "epochs": args.epochs, "limit": args.limit, "seed": args.seed}
    return results if all(settings.get(k) == v for k, v in wanted.items()) else None


def run_dir_of(options: dict[str, Any], args: argparse.Namespace) -> Path:
    return args.out / "runs" / f"{options['model']}_{options['cell']}"


def train(label: str, options: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    run_dir = run_dir_of(options, args)
    results = finished(run_dir, options, args)
    if results is None:
        command = train_command(options, args, run_dir)
        print(f"== {label}: {' '.join(command)}", flush=True)
        python = [sys.executable, "-m", "keras_rnncells.cli", *command[1:]]
        subprocess.run(python, check=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        results = finished(run_dir, options, args)
    return results


def epoch_seconds(results: dict[str, Any]) -> float:
    """The median seconds of the epochs after the first (which traces the
    graphs), or the first's when there is one."""
    seconds = results["seconds_per_epoch"]
    return statistics.median(seconds[1:] if len(seconds) > 1 else seconds)


def step_seconds(options: dict[str, dict[str, Any]], rounds: int) -> dict[str, float]:
    """label -> the median seconds of one training step (a batch of 100 MNIST
    images) of a fresh model of each run's settings, in this process, the
    models taking turns (each round in another order), after two warm-up
    steps each: a drift of the machine's load then slows every model alike."""
    from keras_rnncells.data import load_task
    from keras_rnncells.experiments import build_model

    task = load_task("mnist_rows", batch_size=100, limit=100)
    x, y = next(iter(task.train))
    models = {
        label: build_model(task, run["cell"], run["units"], model=run["model"])
        for label, run in options.items()
    }
    for model in models.values():
        for _ in range(2):
            model.train_on_batch(x, y)
    times: dict[str, list[float]] = {label: [] for label in models}
    labels = list(models)
    for index in range(rounds):
        for label in labels[index % len(labels) :] + labels[: index % len(labels)]:
            start = time.perf_counter()
            models[label].train_on_batch(x, y)
            times[label].append(time.perf_counter() - start)
    return {label: statistics.median(spent) for label, spent in times.items()}


def check_counts(table: dict[str, dict[str, Any]], options: dict[str, dict[str, Any]]) -> None:
    for label, results in table.items():
        expected = PARAMETERS[options[label]["model"]](options[label]["units"])
        if results["parameters"] != expected:
            raise RuntimeError(f"{label}: {results['parameters']} parameters, {expected} expected")


def section(
    table: dict[str, dict],
    options: dict[str, dict],
    steps: dict[str, float],
    args: argparse.Namespace,
) -> str:
    reference, reference_step = table["row-by-row LSTM"], steps["row-by-row LSTM"]
    lines = [
        "## MNIST from the 28×28 grid: MD-RNN and RowLSTM against the row-by-row LSTM",
        "",
        "- Paper: Graves, Fernández & Schmidhuber 2007 (multi-dimensional RNNs) and van den "
        "Oord et al. 2016 (PixelRNN's row LSTM) give every position a context from the "
        "whole grid (the MD-RNN's four sweeps) or a triangle above it (the row LSTM); "
        "neither reports MNIST classification against a row-by-row LSTM.",
        "- Target: No threshold: the numbers are reported (accuracy and seconds per epoch at "
        "about equal parameters, ratios against the row-by-row LSTM of this run).",
        "",
        "| model | units | parameters | test accuracy | accuracy ratio | s/epoch | epoch ratio "
        "| s/step | step ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, results in table.items():
        accuracy, seconds = results["test_metric"], epoch_seconds(results)
        lines.append(
            f"| {label} | {options[label]['units']} | {results['parameters']:,} | "
            f"{accuracy:.4f} | {accuracy / reference['test_metric']:.2f}× | {seconds:.1f} | "
            f"{seconds / epoch_seconds(reference):.1f}× | {steps[label]:.3f} | "
            f"{steps[label] / reference_step:.1f}× |"
        )
    lines += [
        "",
        f"Scale: {args.limit} training images (and at most {args.limit} validation and test "
        f"images: the first {args.limit} of a fixed random order of each split), "
        f"{args.epochs} epoch(s), batch 100, Adam 1e-3, seed {args.seed}, one run per model, "
        "on the 2 shared CPU cores of this machine (other jobs ran beside it: times are "
        "indicative, their ratios come from the same run). s/epoch: the median over the "
        "epochs after the first (which traces the graphs), validation included; s/step: the "
        f"median of {args.rounds} training steps of a batch of 100 per model, the three "
        "fresh models taking turns in one process (the steadier measure of speed under a "
        "varying load). The MD-RNN "
        "reads one pixel per position, sweeps the grid's anti-diagonals in four directions "
        "and concatenates each sweep's state at its last corner; the RowLSTM (1×3 "
        "convolutions) ends in its last row flattened.",
        "",
        "Reproduce:",
        "",
        "```",
        f"PYTHONPATH=. python benchmarks/grid.py --out {args.out}"
        + ("" if not args.quick else " --quick")
        + (f" --limit {args.limit} --epochs {args.epochs}" if not args.quick else ""),
    ]
    for label in table:
        command = train_command(options[label], args, run_dir_of(options[label], args))
        lines.append(" ".join(command))
    lines += ["```", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> Path:
    args = parse_args(argv)
    options = runs(args)
    table = {label: train(label, run, args) for label, run in options.items()}
    check_counts(table, options)
    text = section(table, options, step_seconds(options, args.rounds), args)
    print(text)
    path = args.out / "section.md"
    write_atomically(path, lambda temporary: Path(temporary).write_text(text, encoding="utf-8"))
    return path


if __name__ == "__main__":
    main()
