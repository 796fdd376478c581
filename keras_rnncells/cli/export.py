"""``rnncells export MODEL``: a trained run or ``.keras`` model as serving
artifacts (`keras_rnncells.apps.runs.export_run`), each checked."""

from __future__ import annotations

import argparse

from keras_rnncells.cli.arguments import read_key_file, version_number
from keras_rnncells.cli.command import Command
from keras_rnncells.flags import positive_int


def export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir",
        metavar="MODEL",
        help="a run directory written by `rnncells train`, or any .keras file (a model "
        "of the applications serves text; any other model its own inputs, named after it)",
    )
    parser.add_argument("--out", default="export", help="export root (default ./export)")
    parser.add_argument(
        "--version",
        type=version_number,
        help="version number, 1 to 2**63 - 1 (default: one more than the last)",
    )
    parser.add_argument(
        "--format",
        default="savedmodel,onnx",
        help="comma-separated formats among savedmodel, onnx and litert, or all "
        "(default savedmodel,onnx)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing version")
    parser.add_argument(
        "--key-file",
        help="sign each manifest.json with HMAC-SHA256 under the key in this file "
        "(manifest.json.hmac, written before the version is published)",
    )
    parser.add_argument(
        "--streaming",
        action="store_true",
        help="also write each format's step form, for feeding a few steps at a time: "
        "the model's inputs (ids for the applications) and its states in, its outputs and "
        "new states out (SavedModel signature 'step', model_step.onnx, "
        "model_step.tflite); manifest.json lists the states",
    )
    limits = parser.add_argument_group(
        "request limits",
        "a model on text refuses a request past these (InvalidArgument, naming the limit) "
        'before tokenizing it; recorded in manifest.json under "limits". Defaults: 256 texts, '
        "16384 characters a text (name-to-color and seq2seq: 256), 1048576 in all",
    )
    limits.add_argument("--max-batch", type=positive_int, help="the most texts a request holds")
    limits.add_argument(
        "--max-chars", type=positive_int, help="the most characters (code points) in one text"
    )
    limits.add_argument(
        "--max-total-chars", type=positive_int, help="the most characters in all of a request"
    )


def export_command(args: argparse.Namespace) -> None:
    from keras_rnncells.apps.runs import export_run
    from keras_rnncells.export.command import parse_formats
    from keras_rnncells.export.limits import RequestLimits

    given = (args.max_batch, args.max_chars, args.max_total_chars)
    limits = None if given == (None, None, None) else RequestLimits(*given)
    paths = export_run(
        args.run_dir,
        args.out,
        args.version,
        parse_formats(args.format),
        args.overwrite,
        args.key,
        limits=limits,
        streaming=args.streaming,
    )
    signed = " and its signature" if args.key is not None else ""
    for fmt, path in paths.items():
        print(f"{fmt:<10} {path} (checked; manifest.json{signed} beside it)")


COMMAND = Command(
    "export a trained run or .keras model as SavedModel (TF Serving layout) and ONNX, checked",
    export_arguments,
    export_command,
    read_key_file,
    anticipated=(ValueError,),
)
