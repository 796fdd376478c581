"""The manifest of an exported artifact: what it is, what it takes, its checksums.

Every export directory holds ``manifest.json``: the model, cell and version;
the format (``savedmodel`` or ``onnx``); inputs and outputs with dtypes and
shapes; vocabulary files; the parity error measured against the Keras model
at export time; the versions of the packages that wrote it; the SHA-256 of
every file and the list of every directory.

``verify_manifest`` checks a version directory against its manifest: nothing
in it but regular files and directories (a symbolic link, FIFO, device or
socket is refused, never followed or opened), every entry listed, every
listed entry present, every checksum recomputed. Given a key, it first checks
the manifest's HMAC-SHA256 signature (``manifest.json.hmac``, written by
``sign_manifest``), which is what tells a manifest its holder wrote from one
rewritten, checksums and all, by whoever could write the directory.

An export with a step form (``streaming=True``, `keras_rnncells.export.streaming`)
describes it under ``"streaming"``: the SavedModel signature or file holding it,
its inputs and outputs, which inputs hold the new steps (``sequence_inputs``),
which outputs hold one entry per new step (``step_outputs``) and which are on
the sequence so far (``current_outputs``), its parity, and every state
(``states``, `state_spec`): its name (``state_i``, an input), the output that
holds its new value (``next_state_i``, the next call's ``state_i``), dtype and
shape (batch ``None``), the recurrent layer it belongs to and which of that
layer's states it is. Zero states start a sequence.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import importlib.metadata
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from keras_rnncells.files import write_atomically, write_json

MANIFEST = "manifest.json"
SIGNATURE = MANIFEST + ".hmac"
# The two files beside the entries a manifest lists.
NOT_LISTED = (MANIFEST, SIGNATURE)
SIGNATURE_ALGORITHM = "hmac-sha256"
MIN_KEY_BYTES = 16
PACKAGES = (
    "keras-rnncells",
    "tensorflow",
    "keras",
    "tensorflow-text",
    "tf2onnx",
    "onnx",
    "onnxruntime",
    "numpy",
)
# What each kind of file that is neither regular nor a directory is called.
SPECIAL_FILES = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


@contextlib.contextmanager
def open_regular_file(path: Path) -> Iterator[BinaryIO]:
    """``path`` opened for reading, once known to be a regular file: opened
    without following a symbolic link and without blocking on a FIFO, then
    checked with ``fstat`` (so nothing can be swapped in between); a
    ``ValueError`` naming what it is otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags | getattr(os, "O_BINARY", 0))
    except OSError:
        if path.is_symlink():
            raise ValueError(f"{path} is a symbolic link (refused, not followed)") from None
        raise
    with open(descriptor, "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"{path} is {kind_of(mode)} (refused)")
        yield handle


def kind_of(mode: int) -> str:
    return SPECIAL_FILES.get(stat.S_IFMT(mode), "not a regular file")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open_regular_file(path) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def scan(directory: str | os.PathLike) -> tuple[list[str], list[str], list[str]]:
    """What ``directory`` holds, by relative POSIX path, each list sorted:
    its regular files (the manifest and its signature excluded), its
    directories, and a sentence for each entry that is neither (a symbolic
    link, FIFO, device or socket, read with ``lstat``: never followed)."""
    root = Path(directory)
    files, directories, refused = [], [], []
    pending = [root]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                name = Path(entry.path).relative_to(root).as_posix()
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    directories.append(name)
                    pending.append(Path(entry.path))
                elif stat.S_ISREG(mode):
                    if name not in NOT_LISTED:
                        files.append(name)
                else:
                    refused.append(
                        f"{name} is {kind_of(mode)}: an export holds only files and directories"
                    )
    return sorted(files), sorted(directories), sorted(refused)


def file_checksums(directory: str | os.PathLike) -> dict[str, str]:
    """SHA-256 of every file under ``directory`` but the manifest and its
    signature, by relative path; ``ValueError`` naming any entry that is
    neither a regular file nor a directory."""
    files, _, refused = scan(directory)
    if refused:
        raise ValueError(f"{directory}: {refused[0]}")
    return {name: sha256(Path(directory, name)) for name in files}


def package_versions() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def tensor_spec(name: str, dtype: str, shape: list[int | None]) -> dict[str, Any]:
    """One input or output as the manifest lists it (``None`` = any size)."""
    return {"name": name, "dtype": dtype, "shape": list(shape)}


def state_spec(
    name: str, dtype: str, shape: list[int | None], layer: str, state: int | str
) -> dict[str, Any]:
    """One state of a step form as the manifest lists it: a `tensor_spec` of
    the input ``name``; ``next``, the output holding its new value
    (``next_<name>``); the name of the recurrent layer it belongs to; and
    which of its states it is (``state``: an index into the cell's flat
    ``state_size``, or ``"last_output"``: the layer's last output, carried
    where a masked chunk would otherwise lose it)."""
    return {
        **tensor_spec(name, dtype, shape),
        "next": f"next_{name}",
        "layer": layer,
        "state": state,
    }


def write_manifest(
    directory: str | os.PathLike,
    *,
    model: str,
    cell: str | None,
    version: int | None,
    format: str,
    inputs: list[dict[str, Any]],
    outputs: list[dict[str, Any]],
    parity: dict[str, Any] | None = None,
    vocabulary_files: list[str] = (),
    extra: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
) -> Path:
    """Writes ``directory/manifest.json`` (atomically), checksums last.
    ``limits``: the request limits of a model on strings
    (`keras_rnncells.export.limits.RequestLimits.manifest`), under ``"limits"``."""
    directory = Path(directory)
    checksums = file_checksums(directory)  # refuses links and special files
    manifest = {
        "model": model,
        "cell": cell,
        "version": version,
        "format": format,
        "inputs": inputs,
        "outputs": outputs,
        "vocabulary_files": list(vocabulary_files),
        "parity": parity or {},
        **({} if limits is None else {"limits": limits}),
        "packages": package_versions(),
        **(extra or {}),
        "directories": scan(directory)[1],
        "files": checksums,
    }
    write_json(directory / MANIFEST, manifest)
    return directory / MANIFEST


def check_key(key: Any) -> bytes:
    """``key`` if it is bytes of at least `MIN_KEY_BYTES`; ``ValueError`` otherwise."""
    if not isinstance(key, bytes | bytearray) or len(key) < MIN_KEY_BYTES:
        size = f"{len(key)} bytes" if isinstance(key, bytes | bytearray) else type(key).__name__
        raise ValueError(
            f"Argument `key` must be at least {MIN_KEY_BYTES} bytes (e.g. 32 random bytes, "
            f"`openssl rand -hex 32`), received: {size}"
        )
    return bytes(key)


def signature_of(manifest: bytes, key: bytes) -> str:
    """The line ``manifest.json.hmac`` holds: the algorithm, then the
    HMAC-SHA256 of the manifest's bytes in hexadecimal."""
    return f"{SIGNATURE_ALGORITHM} {hmac.new(key, manifest, hashlib.sha256).hexdigest()}\n"


def sign_manifest(directory: str | os.PathLike, key: bytes) -> Path:
    """Writes ``directory/manifest.json.hmac`` (atomically): the HMAC-SHA256
    under ``key`` of ``manifest.json`` as it is on disk. Sign a version
    before publishing it (``rnncells export --key-file`` signs each staged
    version directory)."""
    key = check_key(key)
    directory = Path(directory)
    with open_regular_file(directory / MANIFEST) as handle:
        line = signature_of(handle.read(), key)
    write_atomically(directory / SIGNATURE, lambda path: Path(path).write_text(line, "ascii"))
    return directory / SIGNATURE


def check_signature(directory: Path, manifest: bytes, key: bytes) -> None:
    """``ValueError`` unless ``manifest.json.hmac`` holds the signature of
    ``manifest`` under ``key``."""
    path = directory / SIGNATURE
    if not path.exists() and not path.is_symlink():
        raise ValueError(
            f"{directory}: {MANIFEST} is not signed (no {SIGNATURE}); a key was given, "
            "so an unsigned manifest is refused"
        )
    with open_regular_file(path) as handle:
        found = handle.read(1024).decode("ascii", errors="replace").split()
    expected = signature_of(manifest, key).split()
    if len(found) != 2 or found[0] != SIGNATURE_ALGORITHM:
        raise ValueError(
            f"{directory}: {SIGNATURE} must hold '{SIGNATURE_ALGORITHM} <hexadecimal digest>' "
            "(altered)"
        )
    if not hmac.compare_digest(found[1].lower().encode(), expected[1].encode()):
        raise ValueError(
            f"{directory}: {SIGNATURE} does not match {MANIFEST} under this key: the manifest "
            "was altered, or signed with another key"
        )


def verify_manifest(directory: str | os.PathLike, key: bytes | None = None) -> dict[str, Any]:
    """The manifest of ``directory`` once the directory checks against it.

    With ``key`` (bytes), first the manifest's signature (`sign_manifest`).
    Then: no symbolic link, FIFO, device or socket anywhere in the directory;
    every file and directory listed; every listed one present; every
    checksum recomputed. Raises ``ValueError`` naming what differs.

    Without a key this shows that the files are those the manifest lists,
    unchanged since it was written; not who wrote it: anyone able to alter a
    file could rewrite the manifest's checksums too. With a key it also shows
    that the manifest was written by a holder of the key."""
    directory = Path(directory)
    key = None if key is None else check_key(key)
    path = directory / MANIFEST
    if not path.exists() and not path.is_symlink():
        raise ValueError(
            f"Argument `directory`: {directory} holds no {MANIFEST}: "
            "not an export of keras_rnncells"
        )
    with open_regular_file(path) as handle:
        content = handle.read()
    if key is not None:
        check_signature(directory, content, key)
    try:
        manifest = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not valid JSON (truncated or altered): {error}") from None
    except RecursionError:  # a hostile file: arrays or objects nested thousands deep
        raise ValueError(
            f"{path} nests JSON arrays or objects too deeply to read (altered: no manifest "
            "of keras_rnncells does)"
        ) from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise ValueError(
            f"{path} must be a JSON object with a `files` object (truncated or altered)"
        )
    problems = directory_problems(directory, manifest)
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise ValueError(f"{directory}: {'; '.join(problems[:5])}{more}")
    return manifest


def directory_problems(directory: Path, manifest: dict[str, Any]) -> list[str]:
    """Each way ``directory`` differs from ``manifest``, as a sentence."""
    files, directories, problems = scan(directory)
    expected_files = manifest["files"]
    listed = manifest.get("directories")
    if listed is not None and not (
        isinstance(listed, list) and all(isinstance(name, str) for name in listed)
    ):
        return [f"{MANIFEST}: `directories` must be a list of names (truncated or altered)"]
    if not all(isinstance(checksum, str) for checksum in expected_files.values()):
        return [f"{MANIFEST}: `files` must map names to checksums (truncated or altered)"]
    if listed is None:  # written before manifests listed directories
        expected_directories = {
            "/".join(name.split("/")[:end])
            for name in expected_files
            for end in range(1, name.count("/") + 1)
        }
        note = f" ({MANIFEST} lists no directories: written by an older keras_rnncells)"
    else:
        expected_directories, note = set(listed), ""
    for name in sorted(set(expected_files) - set(files)):
        problems.append(f"{name} is listed in {MANIFEST} but missing")
    for name in sorted(set(expected_directories) - set(directories)):
        problems.append(f"directory {name}/ is listed in {MANIFEST} but missing")
    for name in sorted(set(files) - set(expected_files)):
        problems.append(f"{name} is not listed in {MANIFEST}")
    for name in sorted(set(directories) - set(expected_directories)):
        problems.append(f"directory {name}/ is not listed in {MANIFEST}{note}")
    for name in sorted(set(files) & set(expected_files)):
        try:
            matches = sha256(directory / name) == expected_files[name]
        except ValueError as error:  # replaced by a special file meanwhile
            problems.append(str(error))
            continue
        if not matches:
            problems.append(
                f"{name} does not match its checksum in {MANIFEST} (truncated or altered)"
            )
    return problems
