"""``rnncells compare TASK``: several cells (and hidden sizes) trained on one
task, ``compare.json`` and a table (`keras_rnncells.experiments.compare_cells`)."""

from __future__ import annotations

import argparse

from keras_rnncells.cli.arguments import cell_or_tree_model, comma_list, run_arguments
from keras_rnncells.cli.command import Command, format_table
from keras_rnncells.defaults import SHAPE, TASK_DEFAULTS
from keras_rnncells.flags import positive_int


def compare_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "task",
        choices=sorted(TASK_DEFAULTS),
        help="; ".join(f"{name}: {d.help}" for name, d in sorted(TASK_DEFAULTS.items())),
    )
    parser.add_argument(
        "--cells",
        type=comma_list(cell_or_tree_model),
        default=["gru", "mgu"],
        help="e.g. gru,mgu,mufuru; on logic also the tree models treelstm and spinn",
    )
    SHAPE.add_to(parser)
    parser.add_argument(
        "--units",
        type=comma_list(positive_int),
        help="hidden sizes, e.g. 4,8,16 (several: also test metric against size)",
    )
    run_arguments(parser)


def compare_run(args: argparse.Namespace) -> None:
    from keras_rnncells.experiments import compare_cells

    options = ("units", "epochs", "batch_size", "seed", "limit", "overwrite", "shape")
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


COMMAND = Command(
    "train several cells (and hidden sizes) on one task, write compare.json, print a table",
    compare_arguments,
    compare_run,
)
