"""Hard inputs to the exporters and the command: version numbers past TF
Serving's int64, a disk that fills up during ``rnncells export`` and
``rnncells train`` (a real, small tmpfs: mounting one needs root, as CI has),
and hostile manifests given to ``rnncells verify``. Each gives one line on
standard error, exit status 2, and leaves nothing half-written."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import keras
import pytest
import tensorflow as tf

import keras_rnncells as krc
from keras_rnncells import cli
from keras_rnncells.cli_runtime import no_space, no_space_message
from keras_rnncells.export import (
    recurrent_layer_servable,
    verify_manifest,
    write_litert,
    write_onnx,
    write_saved_model,
    write_saved_models,
)
from keras_rnncells.export.command import export_servable
from keras_rnncells.export.saved_model import MAX_VERSION, Staging

RNNCELLS = [sys.executable, "-m", "keras_rnncells.cli"]


def rnncells(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """``rnncells ARGV`` in a child process, as a user runs it."""
    return subprocess.run(
        [*RNNCELLS, *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def one_line_error(done: subprocess.CompletedProcess, command: str) -> str:
    """The one line ``rnncells COMMAND`` printed on standard error, exit 2."""
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith(f"rnncells {command}: error: "), lines[0]
    return lines[0]


# -- version numbers ------------------------------------------------------------------
BAD_VERSIONS = [0, -1, 2**63, 10**23, True, "3", 1.0]
VERSION_MESSAGE = "`version` must be a positive integer of at most 2**63 - 1"


@pytest.fixture(scope="module")
def tiny_model() -> keras.Model:
    keras.utils.set_random_seed(0)
    x = keras.Input((None, 2), name="x")
    return keras.Model(x, krc.GRU(2)(x), name="tiny")


@pytest.mark.parametrize("version", BAD_VERSIONS)
def test_every_writer_refuses_a_version_past_int64(version, tiny_model, tmp_path):
    """TF Serving reads a version directory's name as an int64: each writer
    refuses what is not 1 .. 2**63 - 1 in one line, before writing anything."""
    writers: dict[str, Callable[[], object]] = {
        "write_saved_model": lambda: write_saved_model(tiny_model, tmp_path, version=version),
        "write_saved_models": lambda: write_saved_models([tiny_model], tmp_path, version=version),
        "write_onnx": lambda: write_onnx(tiny_model, tmp_path / "m.onnx", version=version),
        "write_litert": lambda: write_litert(tiny_model, tmp_path, version=version),
        "export_servable": lambda: export_servable(tiny_model, tmp_path, version=version),
    }
    for name, write in writers.items():
        with pytest.raises(ValueError) as raised:
            write()
        message = str(raised.value)
        assert VERSION_MESSAGE in message and f"received: {version!r}" in message, name
        assert "\n" not in message, name
    assert list(tmp_path.iterdir()) == []


def test_the_largest_version_and_numbering_past_it(tmp_path):
    """2**63 - 1 is written and read back; numbering after it is refused in
    one line; a directory whose number does not fit int64 (TF Serving skips
    it) does not count when numbering."""
    servable = recurrent_layer_servable("gru", units=2, input_dim=2)
    path = write_saved_model(servable, tmp_path, version=MAX_VERSION, check=False)
    assert path == tmp_path / servable.name / str(MAX_VERSION)
    assert verify_manifest(path)["version"] == MAX_VERSION
    with pytest.raises(ValueError, match=r"the next version after 9223372036854775807"):
        write_saved_model(servable, tmp_path, check=False)
    assert sorted(p.name for p in path.parent.iterdir()) == [str(MAX_VERSION)]

    model_directory = tmp_path / "other"
    for name in ("1", "99999999999999999999999", "٣"):  # the last: a non-ASCII digit
        (model_directory / name).mkdir(parents=True)
    with Staging() as staging:
        assert staging.claim([model_directory]) == 2


@pytest.mark.parametrize("text", ["0", "-1", "9223372036854775808", "99999999999999999999999", "x"])
def test_the_command_refuses_a_version_past_int64(text, refused_in_one_line):
    refused_in_one_line(
        ["export", "no-such-model", "--version", text],
        f"argument --version: expected a positive integer of at most 2**63 - 1 (TF Serving "
        f"reads versions as int64), received {text!r}",
    )


def test_the_command_takes_the_largest_version():
    args = cli.build_parser().parse_args(["export", "m", "--version", str(MAX_VERSION)])
    assert args.version == MAX_VERSION == cli.MAX_VERSION


# -- a full disk -------------------------------------------------------------------------
@pytest.fixture
def small_disk(tmp_path) -> Iterator[Callable[[str], Path]]:
    """``small_disk(size)``: a new directory holding a tmpfs of ``size``
    (``mount -o size=``), unmounted after the test. Mounting needs root: the
    test is skipped where that is refused, except under ``CI=true`` (CI runs
    as root), where it fails."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        where = tmp_path / f"disk{len(mounted)}"
        where.mkdir()
        command = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=60)
            problem = done.stderr.strip() or f"exit status {done.returncode}"
        except OSError as error:  # no mount command
            done, problem = None, str(error)
        if done is None or done.returncode != 0:
            reason = f"cannot mount a tmpfs (needs root): {problem}"
            if os.environ.get("CI") == "true":
                pytest.fail(f"{reason}; CI runs as root and must run this test")
            pytest.skip(reason)
        mounted.append(where)
        return where

    yield mount
    for where in mounted:
        subprocess.run(["umount", str(where)], check=True, timeout=60)


def fill(disk: Path) -> None:
    """Writes ``disk/filler`` until the disk is full."""
    descriptor = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(descriptor, bytes(4096))
    except OSError as error:
        assert error.errno == errno.ENOSPC, error
    finally:
        os.close(descriptor)


def no_space_error(done: subprocess.CompletedProcess, command: str, out: Path) -> str:
    line = one_line_error(done, command)
    assert re.match(
        rf"rnncells {command}: error: --out {re.escape(str(out))}: no space left on device"
        r"( \(writing \S+\))?; free some space, or choose another --out$",
        line,
    ), line
    return line


@pytest.fixture
def model_file(tiny_model, tmp_path) -> Path:
    path = tmp_path / "tiny.keras"
    tiny_model.save(path)
    return path


def test_export_as_the_disk_fills_up(small_disk, model_file):
    """``rnncells export`` onto a disk too small for the SavedModel (TensorFlow
    fails writing it): one line naming --out and the file, the disk as it was."""
    disk = small_disk("32k")
    done = rnncells(["export", str(model_file), "--out", "export"], disk)
    line = no_space_error(done, "export", disk / "export")
    assert re.search(r"\(writing \S+saved_model\.pb\S*\)", line), line
    assert list(disk.iterdir()) == []


@pytest.mark.slow  # the full disk's path is in the default run: test_train_on_a_full_disk
def test_export_on_a_full_disk(small_disk, model_file):
    """Onto a full disk the version's claim file fails: one line, nothing left."""
    disk = small_disk("64k")
    fill(disk)
    done = rnncells(["export", str(model_file), "--out", "export"], disk)
    no_space_error(done, "export", disk / "export")
    assert [p.name for p in disk.iterdir()] == ["filler"]


def test_train_on_a_full_disk(small_disk):
    """``rnncells train`` whose run directory lies on a full disk: one line,
    and no run directory (its lock file once stayed behind)."""
    disk = small_disk("64k")
    fill(disk)
    argv = ["train", "adding", "--units", "2", "--epochs", "1", "--limit", "64", "--out", "run"]
    no_space_error(rnncells(argv, disk), "train", disk / "run")
    assert [p.name for p in disk.iterdir()] == ["filler"]


@pytest.mark.slow  # a whole (tiny) training run first (a minute on 2 cores)
def test_train_as_the_disk_fills_up(small_disk):
    """A run that trains, then finds no room for its model: one line, and a
    run directory without a model, results or half-written temporary file."""
    disk = small_disk("32k")
    argv = ["train", "adding", "--units", "2", "--epochs", "1", "--limit", "64", "--out", "run"]
    no_space_error(rnncells(argv, disk), "train", disk / "run")
    left = {p.relative_to(disk / "run").as_posix() for p in (disk / "run").rglob("*")}
    assert not {"model.keras", "results.json"} & left, left
    assert not [name for name in left if Path(name).name.startswith(".")], left


def test_what_counts_as_no_space():
    """A full disk and an exhausted quota, as Python raises them (with a
    file or without) and as TensorFlow does (its message names the file), also
    when raised from another error; other errors are not."""
    quota = OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))
    assert no_space(quota) == ("no space left under the disk quota", None)
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/x/model.keras")
    assert no_space(full) == ("no space left on device", "/x/model.keras")
    tf_error = tf.errors.ResourceExhaustedError(None, None, "/x/a.pb.tmp1; No space left on device")
    assert no_space(tf_error) == ("no space left on device", "/x/a.pb.tmp1")
    try:
        try:
            raise full
        except OSError as error:
            raise ValueError("saving failed") from error
    except ValueError as error:
        assert no_space(error) == ("no space left on device", "/x/model.keras")
    assert no_space(OSError(errno.EACCES, "Permission denied", "/x")) is None
    assert no_space(tf.errors.ResourceExhaustedError(None, None, "OOM when allocating")) is None
    assert no_space_message("no space left on device", None, None) == (
        "no space left on device; free some space and run it again"
    )


# -- hostile manifests ------------------------------------------------------------------
HOSTILE_MANIFESTS = {
    "arrays 100,000 deep": (
        "[" * 100_000 + "]" * 100_000,
        "nests JSON arrays or objects too deeply",
    ),
    "objects 100,000 deep": ('{"a":' * 100_000 + "1" + "}" * 100_000, "too deeply"),
    "files nested deep": (
        '{"files": ' + '{"a":' * 100_000 + "1" + "}" * 100_000 + "}",
        "too deeply",
    ),
    "directories not names": (
        json.dumps({"files": {}, "directories": [["a"], {"b": 1}]}),
        "`directories` must be a list of names",
    ),
    "checksums not strings": (
        json.dumps({"files": {"model.onnx": [[["0" * 64]]]}, "directories": []}),
        "`files` must map names to checksums",
    ),
}


def test_verify_refuses_hostile_manifests_in_one_line(tmp_path, capsys):
    for case, (text, expected) in HOSTILE_MANIFESTS.items():
        directory = tmp_path / re.sub(r"\W+", "-", case)
        directory.mkdir()
        (directory / "manifest.json").write_text(text, encoding="utf-8")
        (directory / "model.onnx").write_bytes(b"onnx")
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["verify", str(directory)])
        assert exit_info.value.code == 2, case
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and expected in lines[0], (case, lines)
        assert lines[0].startswith("rnncells verify: error: "), (case, lines)
    # as a user runs it: in its own process
    deep = tmp_path / "arrays-100-000-deep"
    line = one_line_error(rnncells(["verify", str(deep)], tmp_path), "verify")
    assert "too deeply" in line, line
