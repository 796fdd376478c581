"""``rnncells demo``: MGU and GRU on the adding problem, in under a minute."""

from __future__ import annotations

import argparse

from keras_rnncells.cli.command import Command, format_table
from keras_rnncells.flags import integer, positive_int


def demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--units", type=positive_int, default=32, help="units (default 32)")
    parser.add_argument("--epochs", type=positive_int, default=5, help="epochs (default 5)")
    parser.add_argument(
        "--samples", type=positive_int, default=4000, help="training sequences (default 4000)"
    )
    parser.add_argument("--seed", type=integer, default=0, help="random seed (default 0)")


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


COMMAND = Command(
    "train MGU and GRU on the adding problem (no download, under a minute)",
    demo_arguments,
    demo_run,
)
