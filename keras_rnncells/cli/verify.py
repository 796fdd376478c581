"""``rnncells verify DIRECTORY...``: exported artifacts against their
``manifest.json`` (`keras_rnncells.export.manifest.verify_manifest`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from keras_rnncells.cli.arguments import read_key_file
from keras_rnncells.cli.command import Command


def verify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directories",
        nargs="+",
        help="exported version directories (EXPORT/<model>/<version>, "
        "EXPORT/onnx/<model>/<version>), each with its manifest.json",
    )
    parser.add_argument(
        "--key-file",
        help="also check each manifest's signature (manifest.json.hmac, written by "
        "`rnncells export --key-file`) under the key in this file; an unsigned one is refused",
    )


def verify_run(args: argparse.Namespace) -> None:
    from keras_rnncells.export.manifest import SIGNATURE, verify_manifest

    for directory in args.directories:
        manifest = verify_manifest(directory, args.key)
        if args.key is not None:
            signature = "; signed with the key given"
        elif Path(directory, SIGNATURE).exists():
            signature = f"; {SIGNATURE} not checked (no --key-file)"
        else:
            signature = "; not signed"
        print(f"ok  {directory}: {len(manifest['files'])} files match manifest.json{signature}")


COMMAND = Command(
    "check exported artifacts against their manifest.json (and its signature, with a key)",
    verify_arguments,
    verify_run,
    read_key_file,
    anticipated=(ValueError,),
)
