"""``rnncells inspect MODEL``: the analysis views of a run directory
(`keras_rnncells.analysis.inspect`)."""

from __future__ import annotations

import argparse

from keras_rnncells.cli.command import Command


def inspect_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir",
        metavar="MODEL",
        help="a run directory written by `rnncells train` (any application or task)",
    )
    parser.add_argument(
        "--text",
        action="append",
        help="a text to show one by one (repeat the flag for more; default: the first "
        "held-out rows); color-namer: a name of its color list, or 'name #rrggbb'",
    )


def inspect_command(args: argparse.Namespace) -> None:
    from keras_rnncells.analysis.inspect import inspect_run

    try:
        written = inspect_run(args.run_dir, args.text)
    except ValueError as error:
        raise ValueError(str(error).replace("Argument `texts`", "--text")) from None
    note = written.pop("note", None)
    print(f"Views of {args.run_dir} written:")
    for path in written.values():
        print(f"  {path}")
    if note is not None:
        print(f"No PNGs: {note}")


COMMAND = Command(
    "write the analysis views of a run directory MODEL into MODEL/inspect/: units "
    "coloured over the text, gate saturation, hidden units (sentiment and seq2seq: "
    "omission scores too)",
    inspect_arguments,
    inspect_command,
    anticipated=(ValueError,),
)
