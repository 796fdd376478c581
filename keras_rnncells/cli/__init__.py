"""The ``rnncells`` command.

Each subcommand is a module of this package holding its `Command` (its
one-line help, a function adding its arguments to its parser and the
function running it): ``quickstart``, ``cells``, ``demo``, ``train``,
``export``, ``inspect``, ``verify``, ``compare``, listed in `COMMANDS`.
``run`` functions import what they need themselves, so parsing stays light:
this package imports no TensorFlow (nor does ``keras_rnncells`` in this
command, see its docstring), and ``rnncells --help`` or a mistyped argument
answers at once.

`main` runs a command under `keras_rnncells.cli_runtime`: paths made
absolute where they enter, TensorFlow's C++ log and the libraries' known noise
kept out of the output, and every anticipated error (`fail`, a missing
optional module, or a ``ValueError`` or ``OSError`` of the package naming an
argument or a path) one line on standard error with exit status 2, as
argparse's own errors, leaving no empty output directory behind.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from keras_rnncells.cli import cells, compare, demo, export, inspect, quickstart, train, verify
from keras_rnncells.cli.arguments import MAX_VERSION
from keras_rnncells.cli.command import Command, format_table
from keras_rnncells.cli.train import TRAINABLE
from keras_rnncells.cli_runtime import (
    QUIET,
    CommandExit,
    anticipated_message,
    check_out,
    fail,
    import_tensorflow_quietly,
    make_paths_absolute,
    no_new_empty_directories,
    quiet_libraries,
)

__all__ = [
    "COMMANDS",
    "MAX_VERSION",
    "TRAINABLE",
    "Command",
    "CommandExit",
    "Parser",
    "anticipated_message",
    "build_parser",
    "fail",
    "format_table",
    "main",
]

COMMANDS: dict[str, Command] = {
    "quickstart": quickstart.COMMAND,
    "cells": cells.COMMAND,
    "demo": demo.COMMAND,
    "train": train.COMMAND,
    "export": export.COMMAND,
    "inspect": inspect.COMMAND,
    "verify": verify.COMMAND,
    "compare": compare.COMMAND,
}


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, as every anticipated
    error of the command: the argument, what is wrong, where help is."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``rnncells`` and of each of its `COMMANDS`."""
    parser = Parser(
        prog="rnncells",
        description="Recurrent cells for Keras 3: train, export, serve. New here? "
        "`rnncells quickstart` runs the whole path in about a minute.",
        epilog="Environment: RNNCELLS_DATA, the folder of the benchmark data sets (nothing "
        "is downloaded); TF_CPP_MIN_LOG_LEVEL, TensorFlow's C++ log (quiet unless set, "
        "e.g. 0 to see it all).",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="command")
    for name, command in COMMANDS.items():
        subparser = subparsers.add_parser(name, help=command.help, description=command.help)
        command.add_arguments(subparser)
        subparser.set_defaults(command_to_run=command)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """``rnncells``: parses ``argv`` (default ``sys.argv[1:]``) and runs the command."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", QUIET)  # read when TensorFlow loads
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what local workers run again
    make_paths_absolute(args)
    command = args.command_to_run
    try:
        check_out(getattr(args, "out", None))
        if command.check is not None:
            command.check(args)
        with no_new_empty_directories(getattr(args, "out", None)):
            quiet_libraries()
            import_tensorflow_quietly()
            command.run(args)
    except KeyboardInterrupt:
        print(f"rnncells {args.command}: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except Exception as error:
        message = anticipated_message(error, command.anticipated, getattr(args, "out", None))
        if message is None:
            raise
        print(f"rnncells {args.command}: error: {message}", file=sys.stderr)
        raise CommandExit(message) from None
