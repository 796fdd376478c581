"""The manifest of an exported artifact: what it is, what it takes, its checksums.

Every export directory holds ``manifest.json``: the model, cell and version;
the format (``savedmodel`` or ``onnx``); inputs and outputs with dtypes and
shapes; vocabulary files; the parity error measured against the Keras model
at export time; the versions of the packages that wrote it; and the SHA-256 of
every file. ``verify_manifest`` recomputes the checksums, so a truncated or
altered artifact is reported before it is served.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
from pathlib import Path
from typing import Any

from keras_rnncells.training import write_json

MANIFEST = "manifest.json"
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


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_checksums(directory: str | os.PathLike) -> dict[str, str]:
    """SHA-256 of every file under ``directory`` but the manifest, by relative path."""
    root = Path(directory)
    return {
        path.relative_to(root).as_posix(): sha256(path)
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.relative_to(root).as_posix() != MANIFEST
    }


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
) -> Path:
    """Writes ``directory/manifest.json`` (atomically), checksums last."""
    directory = Path(directory)
    manifest = {
        "model": model,
        "cell": cell,
        "version": version,
        "format": format,
        "inputs": inputs,
        "outputs": outputs,
        "vocabulary_files": list(vocabulary_files),
        "parity": parity or {},
        "packages": package_versions(),
        **(extra or {}),
        "files": file_checksums(directory),
    }
    write_json(directory / MANIFEST, manifest)
    return directory / MANIFEST


def verify_manifest(directory: str | os.PathLike) -> dict[str, Any]:
    """The manifest of ``directory`` once every file checks against it.

    Raises ``ValueError`` naming the first missing, altered or unlisted file."""
    directory = Path(directory)
    path = directory / MANIFEST
    if not path.is_file():
        raise ValueError(
            f"Argument `directory`: {directory} holds no {MANIFEST}: "
            "not an export of keras_rnncells"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not valid JSON (truncated or altered): {error}") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise ValueError(
            f"{path} must be a JSON object with a `files` object (truncated or altered)"
        )
    expected, found = manifest["files"], file_checksums(directory)
    for name, checksum in expected.items():
        if name not in found:
            raise ValueError(f"{directory}: {name} is listed in {MANIFEST} but missing")
        if found[name] != checksum:
            raise ValueError(
                f"{directory}: {name} does not match its checksum in {MANIFEST} "
                "(truncated or altered)"
            )
    unlisted = sorted(set(found) - set(expected))
    if unlisted:
        raise ValueError(f"{directory}: {unlisted[0]} is not listed in {MANIFEST}")
    return manifest
