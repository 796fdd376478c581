"""The ``rnncells`` command.

Each subcommand is one entry of ``COMMANDS``: its one-line help, a function
adding its arguments to its parser and the function running it. ``run``
functions import what they need themselves, so parsing stays light.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from keras_rnncells.distribute import STRATEGIES
from keras_rnncells.experiments import TASK_DEFAULTS


@dataclass(frozen=True)
class Command:
    """One subcommand: its one-line help, its arguments, what it runs."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], None]


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table: columns left-aligned, two spaces apart."""
    cells = [[str(value) for value in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(value.ljust(width) for value, width in zip(row, widths)) for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(line.rstrip() for line in lines)


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, received {text}")
    return value


# -- rnncells cells --------------------------------------------------------------
def cells_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input-dim", type=positive_int, default=64, help="input features (default 64)"
    )
    parser.add_argument("--units", type=positive_int, default=128, help="units (default 128)")


def cell_sizes(cls: type, input_dim: int, units: int) -> tuple[int, object]:
    """Parameters and state size of ``cls(units)`` built for ``input_dim`` features."""
    cell = cls(units)
    cell.build((None, input_dim))
    return sum(math.prod(w.shape) for w in cell.weights), cell.state_size


def cells_run(args: argparse.Namespace) -> None:
    from keras_rnncells import get_cell, list_cells

    rows, notes = [], []
    for name in list_cells():
        cls = get_cell(name)
        try:
            parameters, state_size = cell_sizes(cls, args.input_dim, args.units)
        except (TypeError, ValueError) as error:
            parameters, state_size = "n/a", "n/a"
            notes.append(f"{name}: {error}")
        blocks = " ".join(getattr(cls(args.units), "blocks", ())) or "-"
        rows.append((name, cls.__name__, blocks, parameters, state_size, cls.citation or "-"))
    headers = ("name", "class", "blocks", "parameters", "state size", "citation")
    print(f"Registered cells; parameters for input {args.input_dim}, units {args.units}:")
    print(format_table(headers, rows))
    if notes:
        print("\nn/a: cannot be built at this shape:")
        print("\n".join(notes))


# -- rnncells demo ---------------------------------------------------------------
def demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--units", type=positive_int, default=32, help="units (default 32)")
    parser.add_argument("--epochs", type=positive_int, default=5, help="epochs (default 5)")
    parser.add_argument(
        "--samples", type=positive_int, default=4000, help="training sequences (default 4000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")


def demo_run(args: argparse.Namespace) -> None:
    from keras_rnncells.demo import STEPS, run_demo

    results, baseline = run_demo(
        units=args.units, epochs=args.epochs, samples=args.samples, seed=args.seed
    )
    headers = ("cell", "parameters", "s/epoch", "test MSE", "baseline MSE")
    rows = [
        (r.cell, r.parameters, f"{r.seconds_per_epoch:.2f}", f"{r.test_mse:.4f}", f"{baseline:.4f}")
        for r in results
    ]
    print(f"\nAdding problem, T={STEPS}, {args.samples} training sequences, {args.epochs} epochs")
    print("(baseline: predicting the mean training target; s/epoch: median over epochs)")
    print(format_table(headers, rows))


# -- rnncells train ----------------------------------------------------------------
# What `rnncells train NAME` trains: NAME -> (module with `train_from_arguments`, help).
TRAINABLE: dict[str, tuple[str, str]] = {
    "sentiment": (
        "keras_rnncells.apps.sentiment",
        "text -> probability of positive; SST-2 (--dataset imdb: IMDB), tokenized in the model",
    ),
    "color-namer": ("keras_rnncells.apps.color_namer", "rgb -> color name, shipped XKCD list"),
    "name-to-color": ("keras_rnncells.apps.name_to_color", "color name -> rgb, shipped XKCD list"),
    "seq2seq": (
        "keras_rnncells.apps.seq2seq",
        "date normalization, 'Nov 21, 2026' -> '2026-11-21': a character-level "
        "encoder-decoder with attention",
    ),
    **{
        name: ("keras_rnncells.experiments", defaults.help)
        for name, defaults in TASK_DEFAULTS.items()
    },
}


def cell_name(text: str) -> str:
    from keras_rnncells import list_cells

    if text not in list_cells():
        raise argparse.ArgumentTypeError(
            f"unknown cell {text!r}; registered cells: {', '.join(list_cells())}"
        )
    return text


def train_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name",
        choices=sorted(TRAINABLE),
        help="; ".join(f"{name}: {help}" for name, (_, help) in sorted(TRAINABLE.items())),
    )
    parser.add_argument("--cell", type=cell_name, help="registered cell name (rnncells cells)")
    parser.add_argument("--units", type=positive_int, help="units per recurrent layer")
    parser.add_argument("--layers", type=positive_int, help="data tasks: stacked recurrent layers")
    parser.add_argument(
        "--dataset", choices=("sst2", "imdb"), help="sentiment: sst2 (default) or imdb"
    )
    run_arguments(parser)
    parser.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="none",
        help="data tasks: none (one device, default), mirrored (every local GPU, or the "
        "--cpu-devices), multiworker (one process per machine, cluster from TF_CONFIG)",
    )
    parser.add_argument(
        "--cpu-devices",
        type=positive_int,
        help="with --strategy mirrored: split the CPU into N logical devices, one replica each",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        help="with --strategy multiworker: start N worker processes on 127.0.0.1 "
        "(each its own TF_CONFIG) instead of reading TF_CONFIG",
    )


def run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every training run takes (None: the trainer's default)."""
    parser.add_argument("--out", required=True, help="run directory (created)")
    parser.add_argument("--epochs", type=positive_int, help="training epochs")
    parser.add_argument("--batch-size", type=positive_int, help="examples per batch")
    parser.add_argument("--seed", type=int, help="random seed")
    parser.add_argument(
        "--limit", type=positive_int, help="use at most this many training examples (smoke runs)"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace a finished run in --out")


def train_run(args: argparse.Namespace) -> None:
    import importlib
    from pathlib import Path

    out = Path(args.out)
    if (out / "results.json").exists() and not args.overwrite:
        raise SystemExit(
            f"rnncells train: {out} already holds a finished run (results.json); "
            "pass --overwrite to replace it, or choose another --out"
        )
    module = importlib.import_module(TRAINABLE[args.name][0])
    check_distribution(args)
    if args.workers is not None:
        from keras_rnncells.distribute import launch_local_workers, worker_command

        raise SystemExit(launch_local_workers(worker_command(args.argv), args.workers))
    if args.cpu_devices is not None:
        from keras_rnncells.distribute import split_cpu

        split_cpu(args.cpu_devices)
    module.train_from_arguments(args)


def check_distribution(args: argparse.Namespace) -> None:
    """``--strategy``, ``--cpu-devices`` and ``--workers`` go together."""
    fail = f"rnncells train {args.name}:"
    if args.strategy != "none" and args.name not in TASK_DEFAULTS:
        raise SystemExit(
            f"{fail} --strategy is supported for the data tasks ({', '.join(TASK_DEFAULTS)}), "
            "not for the applications"
        )
    if args.cpu_devices is not None and args.strategy != "mirrored":
        raise SystemExit(f"{fail} --cpu-devices needs --strategy mirrored")
    if args.workers is not None and args.strategy != "multiworker":
        raise SystemExit(f"{fail} --workers needs --strategy multiworker")
    if args.workers is not None and "TF_CONFIG" in os.environ:
        raise SystemExit(
            f"{fail} --workers starts its own cluster on 127.0.0.1, but TF_CONFIG is set: "
            "unset it, or drop --workers to join the cluster it names"
        )


# -- rnncells compare --------------------------------------------------------------
def comma_list(item: Callable[[str], object]) -> Callable[[str], list]:
    """An argparse type: comma-separated values, each parsed by ``item``."""

    def parse(text: str) -> list:
        return [item(value.strip()) for value in text.split(",") if value.strip()]

    return parse


def compare_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "task",
        choices=sorted(TASK_DEFAULTS),
        help="; ".join(f"{name}: {d.help}" for name, d in sorted(TASK_DEFAULTS.items())),
    )
    parser.add_argument(
        "--cells", type=comma_list(cell_name), default=["gru", "mgu"], help="e.g. gru,mgu,mufuru"
    )
    parser.add_argument(
        "--units",
        type=comma_list(positive_int),
        help="hidden sizes, e.g. 4,8,16 (several: also test metric against size)",
    )
    run_arguments(parser)


def compare_run(args: argparse.Namespace) -> None:
    from keras_rnncells.experiments import compare_cells

    options = ("units", "epochs", "batch_size", "seed", "limit", "overwrite")
    comparison = compare_cells(
        args.task, args.out, args.cells, **{name: getattr(args, name) for name in options}
    )
    metric = comparison["metric"]
    rows = [
        (
            r["cell"],
            r["units"],
            r["parameters"],
            f"{r[metric]:.4f}",
            f"{r['seconds_per_epoch']:.2f}",
        )
        for r in comparison["runs"]
    ]
    print(f"\n{args.task}: test {metric}; s/epoch: median over epochs")
    print(format_table(("cell", "units", "parameters", f"test {metric}", "s/epoch"), rows))
    print(f"Runs and compare.json in {args.out}")


# -- rnncells export ----------------------------------------------------------------
def export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", help="a directory written by `rnncells train`")
    parser.add_argument("--out", default="export", help="export root (default ./export)")
    parser.add_argument(
        "--version", type=positive_int, help="version number (default: one more than the last)"
    )
    parser.add_argument(
        "--format", default="savedmodel,onnx", help="savedmodel, onnx or both (default both)"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing version")


def export_command(args: argparse.Namespace) -> None:
    from keras_rnncells.export.command import export_run, parse_formats

    try:
        paths = export_run(
            args.run_dir, args.out, args.version, parse_formats(args.format), args.overwrite
        )
    except ValueError as error:
        raise SystemExit(f"rnncells export: {error}") from None
    for fmt, path in paths.items():
        print(f"{fmt:<10} {path} (checked; manifest.json beside it)")


# -- rnncells verify ----------------------------------------------------------------
def verify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directories",
        nargs="+",
        help="exported version directories (EXPORT/<model>/<version>, "
        "EXPORT/onnx/<model>/<version>), each with its manifest.json",
    )


def verify_run(args: argparse.Namespace) -> None:
    from keras_rnncells.export.manifest import verify_manifest

    for directory in args.directories:
        try:
            manifest = verify_manifest(directory)
        except ValueError as error:
            raise SystemExit(f"rnncells verify: {error}") from None
        print(f"ok  {directory}: {len(manifest['files'])} files match manifest.json")


# -- rnncells quickstart ------------------------------------------------------------
def quickstart_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="rnncells-quickstart", help="where runs and exports go")
    parser.add_argument("--epochs", type=positive_int, help="training epochs of both models")


def quickstart_run(args: argparse.Namespace) -> None:
    from keras_rnncells.apps.quickstart import quickstart

    quickstart(args.out, args.epochs)


COMMANDS: dict[str, Command] = {
    "quickstart": Command(
        "train the color namer both ways on the shipped colors, export and query it (~1 min)",
        quickstart_arguments,
        quickstart_run,
    ),
    "cells": Command("list the registered cells and their sizes", cells_arguments, cells_run),
    "demo": Command(
        "train MGU and GRU on the adding problem (no download, under a minute)",
        demo_arguments,
        demo_run,
    ),
    "train": Command(
        "train an application or task, write model, results.json and logs into --out",
        train_arguments,
        train_run,
    ),
    "export": Command(
        "export a trained run as SavedModel (TF Serving layout) and ONNX, checked",
        export_arguments,
        export_command,
    ),
    "verify": Command(
        "check exported artifacts against the checksums of their manifest.json",
        verify_arguments,
        verify_run,
    ),
    "compare": Command(
        "train several cells (and hidden sizes) on one task, write compare.json, print a table",
        compare_arguments,
        compare_run,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rnncells", description="Recurrent cells for Keras 3: tables and demos."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="command")
    for name, command in COMMANDS.items():
        subparser = subparsers.add_parser(name, help=command.help, description=command.help)
        command.add_arguments(subparser)
        subparser.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what local workers run again
    args.run(args)


if __name__ == "__main__":
    main()
