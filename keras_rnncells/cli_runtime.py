"""What every ``rnncells`` command runs under (`keras_rnncells.cli.main`):
paths made absolute where they enter, TensorFlow's C++ log and the libraries'
known noise kept out of the output, and every anticipated error (`fail`, a
missing optional module, a full disk, or a ``ValueError`` or ``OSError`` of
the package naming an argument or a path) turned into one line worded with
the command's flags, exit status 2, with no empty output directory left
behind. Like the command's parser, it imports no TensorFlow.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import logging
import os
import re
import sys
import tempfile
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

PACKAGE = Path(__file__).resolve().parent


class CommandError(Exception):
    """An anticipated error of a command: `main` prints its message on one
    line, naming the argument or path and what to do, and exits with 2."""


class CommandExit(SystemExit):
    """What `main` raises after printing an anticipated error: exit status 2,
    and the message as ``str()`` for callers of `main`."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message

    def __str__(self) -> str:
        return self.message


def fail(message: str) -> NoReturn:
    """Stops the command with ``message`` (see `CommandError`)."""
    raise CommandError(message)


# The arguments holding paths: made absolute where they enter, since the export
# checks run child processes in other directories.
PATH_ARGUMENTS = ("out", "run_dir", "key_file")

# How the package's messages name, as Python arguments, what the command line
# calls by its flags.
# Settings of `rnncells train` whose Python errors name the argument: the
# command's message names the flag.
SETTING_WORDS = ("dropout", "word_dropout", "norm_stabilizer", "temporal_coherence")
CLI_WORDING = {
    "overwrite=True (--overwrite)": "--overwrite",
    "overwrite=True": "--overwrite",
    "Pass `root=` or set": "Set",
    "Argument `model`": "MODEL",  # rnncells export's run directory or .keras file
    "Argument `run_dir`": "MODEL",
    "Argument `export_dir`": "--out",
    "Argument `version`": "--version",
    "or another version": "or another --version",
    "or pass another version": "or pass another --version",
    "choose another run directory": "choose another --out",
    "Argument `format`": "--format",
    "Argument `key`": "--key-file",
    "Argument `directory`: ": "",  # rnncells verify: the message names the directory
    **{f"Argument `{name}`": "--" + name.replace("_", "-") for name in SETTING_WORDS},
    "Argument `batch_norm=True`": "--batch-norm",
}

# The extra (setup.py) that installs each optional module a command may import:
# missing, the command says which to install (`anticipated_message`).
EXTRAS = {
    "tensorflow_text": "text",
    "tf2onnx": "export",
    "onnx": "export",
    "onnxruntime": "export",
    "onnxruntime_extensions": "export",
    "tensorboard": "apps",
}

# TensorFlow's C++ log level where the user set none: errors neither (they
# surface as Python exceptions; what TensorFlow logs at that level on a machine
# without a GPU is noise, such as the failed cuInit).
QUIET = "3"

# Log messages of libraries that tell a user of the command nothing, by logger.
HARMLESS_LOG_MESSAGES = {
    # tf.saved_model.save of a graph holding lookup tables; TensorFlow's own
    # text calls it "a warning and probably safe to ignore".
    "tensorflow": ("Issue encountered when serializing table_initializer",),
}


class DropMessages(logging.Filter):
    """Drops the records whose message starts with one of ``starts``."""

    def __init__(self, starts: tuple[str, ...]) -> None:
        super().__init__()
        self.starts = starts

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.starts)


def quiet_libraries() -> None:
    """Filters `HARMLESS_LOG_MESSAGES` at their loggers."""
    for name, starts in HARMLESS_LOG_MESSAGES.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, DropMessages) and f.starts == starts for f in logger.filters):
            logger.addFilter(DropMessages(starts))


def import_tensorflow_quietly() -> None:
    """Imports TensorFlow, with file descriptor 2 captured where its C++ log
    is to be quiet (``TF_CPP_MIN_LOG_LEVEL`` 3, `main`'s default): its
    libraries print start-up lines (oneDNN, CUDA, CPU features) before that
    level applies. They are shown if the import fails."""
    if "tensorflow" in sys.modules:
        return
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL") != QUIET:
        importlib.import_module("tensorflow")
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as captured:
            os.dup2(captured.fileno(), 2)
            try:
                importlib.import_module("tensorflow")
            except BaseException:
                os.dup2(saved, 2)
                captured.seek(0)
                os.write(2, captured.read())
                raise
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def make_paths_absolute(args: argparse.Namespace) -> None:
    for name in PATH_ARGUMENTS:
        if getattr(args, name, None) is not None:
            setattr(args, name, os.path.abspath(getattr(args, name)))
    if getattr(args, "directories", None) is not None:
        args.directories = [os.path.abspath(directory) for directory in args.directories]


def check_out(out: str | None) -> None:
    """``--out`` is a directory, or can be made one: no file in its way."""
    if out is None:
        return
    existing = Path(out)
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        where = f"--out {out}" if str(existing) == out else f"--out {out}: {existing}"
        fail(f"{where} is a file, not a directory; choose another --out")


@contextlib.contextmanager
def no_new_empty_directories(path: str | None) -> Iterator[None]:
    """When the block fails, removes the empty directories it created at or
    under ``path`` (and the parents of ``path`` it created); directories that
    hold something, such as the backup a run resumes from, stay."""
    if path is None:
        yield
        return
    top = Path(path)
    while not top.parent.exists():
        top = top.parent
    before = set(directories_under(top))
    try:
        yield
    except BaseException:
        for directory in directories_under(top):  # the deepest first
            if directory not in before:
                with contextlib.suppress(OSError):  # not empty
                    directory.rmdir()
        raise


def directories_under(top: Path) -> list[Path]:
    """``top`` and every directory under it, each after the ones it holds."""
    return [Path(root) for root, _, _ in os.walk(top, topdown=False)]


# A full disk, and a user's exhausted quota, by errno: what the message says.
NO_SPACE = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "no space left under the disk quota",
}


def no_space(error: BaseException | None) -> tuple[str, str | None] | None:
    """``(what ran out, the file being written or None)`` where ``error``, or
    an error it was raised from or while handling, is a full disk or quota
    (`NO_SPACE`): an ``OSError`` of that errno, or TensorFlow's error for one
    (a message ``<file>; No space left on device``); else None."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        for number, words in NO_SPACE.items():
            if isinstance(error, OSError) and error.errno == number:
                return words, error.filename
            if type(error).__module__.startswith("tensorflow"):
                text = str(getattr(error, "message", error))
                found = re.search(rf"^(?:(.*?); )?{re.escape(os.strerror(number))}", text, re.M)
                if found:
                    return words, found.group(1) or None
        error = error.__cause__ or error.__context__
    return None


def no_space_message(words: str, file: str | None, out: str | None) -> str:
    """The one line of a full disk (`no_space`): the output directory
    ``out`` (``--out``) or else the file, what ran out, what to do."""
    if out is None:
        return f"{file + ': ' if file else ''}{words}; free some space and run it again"
    writing = f" (writing {file})" if file else ""
    return f"--out {out}: {words}{writing}; free some space, or choose another --out"


def anticipated_message(
    error: Exception, anticipated: tuple[type[Exception], ...] = (), out: str | None = None
) -> str | None:
    """The one-line message of an anticipated error, None for any other: a
    `CommandError`; a full disk (`no_space`), naming ``out`` (the command's
    ``--out``, where it has one); a missing optional module, with its extra
    (`EXTRAS`); an ``OSError`` naming a file; a ``ValueError`` or
    ``OSError`` raised by the package (its argument and input checks) or one
    of ``anticipated`` (a command's: `keras_rnncells.cli.Command`), worded with
    the command's flags."""
    full = no_space(error)
    if isinstance(error, CommandError):
        message = str(error)
    elif full is not None:
        message = no_space_message(*full, out)
    elif isinstance(error, ModuleNotFoundError) and (error.name or "").split(".")[0] in EXTRAS:
        module = error.name.split(".")[0]
        install = f"pip install 'keras-rnncells[{EXTRAS[module]}]'"
        message = str(error) if install in str(error) else f"{module} is missing: {install}"
    elif isinstance(error, OSError) and error.filename is not None:
        message = f"{error.filename}: {error.strerror or error}"
    elif isinstance(error, anticipated) or (
        isinstance(error, ValueError | OSError) and raised_in_package(error)
    ):
        message = str(error)
        for python, flag in CLI_WORDING.items():
            message = message.replace(python, flag)
    else:
        return None
    return " ".join(message.split())


def raised_in_package(error: BaseException) -> bool:
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and Path(frames[-1].filename).resolve().is_relative_to(PACKAGE)
