"""``rnncells quickstart``: the color namer both ways, trained, exported and
queried (`keras_rnncells.apps.quickstart`)."""

from __future__ import annotations

import argparse

from keras_rnncells.cli.command import Command
from keras_rnncells.flags import positive_int


def quickstart_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="rnncells-quickstart", help="where runs and exports go")
    parser.add_argument("--epochs", type=positive_int, help="training epochs of both models")


def quickstart_run(args: argparse.Namespace) -> None:
    from keras_rnncells.apps.quickstart import quickstart

    quickstart(args.out, args.epochs)


COMMAND = Command(
    "train the color namer both ways on the shipped colors, export and query it (~1 min)",
    quickstart_arguments,
    quickstart_run,
)
