"""Argument types and arguments that several subcommands share (the value
types of the training flags are in `keras_rnncells.flags`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from keras_rnncells.cli_runtime import fail
from keras_rnncells.defaults import TREE_MODELS
from keras_rnncells.flags import BATCH_SIZE, EPOCHS, LIMIT, SEED, cell_name, value_type

# The largest version number (keras_rnncells.export.saved_model.MAX_VERSION, not
# imported here: that module needs TensorFlow): TF Serving reads versions as int64.
MAX_VERSION = 2**63 - 1


# An argparse type: an export's version, 1 to `MAX_VERSION`.
version_number = value_type(
    int,
    lambda value: 1 <= value <= MAX_VERSION,
    "a positive integer of at most 2**63 - 1 (TF Serving reads versions as int64)",
)


def comma_list(item: Callable[[str], object]) -> Callable[[str], list]:
    """An argparse type: comma-separated values, each parsed by ``item``."""

    def parse(text: str) -> list:
        values = [item(value.strip()) for value in text.split(",") if value.strip()]
        if not values:
            raise argparse.ArgumentTypeError(f"expected comma-separated values, received {text!r}")
        return values

    return parse


def cell_or_tree_model(text: str) -> str:
    """A registered cell's name, or a tree model of `TREE_MODELS` (``rnncells compare``)."""
    return text if text in TREE_MODELS else cell_name(text)


def out_argument(parser: argparse.ArgumentParser) -> None:
    """``--out``, the run directory of a training command."""
    parser.add_argument("--out", required=True, help="run directory (created)")


def overwrite_argument(parser: argparse.ArgumentParser) -> None:
    """``--overwrite``, of a training command."""
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a finished run in --out, or an interrupted one started with other "
        "arguments (the same arguments resume it)",
    )


def run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a training run, ``--out`` to ``--overwrite`` (None:
    the trainer's default), as ``rnncells compare`` takes them."""
    out_argument(parser)
    for flag in (EPOCHS, BATCH_SIZE, SEED, LIMIT):
        flag.add_to(parser)
    overwrite_argument(parser)


# The fewest bytes a key may hold (keras_rnncells.export.manifest.MIN_KEY_BYTES,
# not imported here: that module needs TensorFlow).
MIN_KEY_BYTES = 16


def read_key_file(args: argparse.Namespace) -> None:
    """``--key-file`` (of ``rnncells export`` and ``verify``): the key into
    ``args.key`` (None without the flag), read before TensorFlow is imported.
    The key is the file's bytes without their trailing line breaks (as
    ``$(cat FILE)`` gives them to ``openssl``)."""
    args.key = None
    if args.key_file is None:
        return
    try:
        key = Path(args.key_file).read_bytes().rstrip(b"\r\n")
    except OSError as error:
        fail(f"--key-file {args.key_file}: {error.strerror or error}; give the file of the key")
    if len(key) < MIN_KEY_BYTES:
        fail(
            f"--key-file {args.key_file} holds {len(key)} bytes; a key needs at least "
            f"{MIN_KEY_BYTES} (make one with `openssl rand -hex 32 > FILE`)"
        )
    args.key = key
