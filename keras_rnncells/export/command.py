"""``rnncells export``: a run directory's model to serving artifacts.

``EXPORT_DIR/<model>/<version>/`` holds the SavedModel (TF Serving's layout,
``serving_default`` on strings where the application reads text) and
``EXPORT_DIR/onnx/<model>/<version>/model.onnx`` the ONNX model (token ids or
numbers in); each directory has its ``manifest.json``. Both are checked at
export time: the SavedModel in a fresh process, the ONNX model in onnxruntime.
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import keras

from keras_rnncells.export.onnx import onnx_path, write_onnx
from keras_rnncells.export.saved_model import publish, write_saved_model
from keras_rnncells.export.servable import Servable

FORMATS = ("savedmodel", "onnx")
# The modules defining the application models, imported before a model.keras
# is loaded so that Keras finds their (registered) classes.
APP_MODULES = ("color_namer", "name_to_color", "sentiment", "seq2seq")


def parse_formats(text: str) -> tuple[str, ...]:
    formats = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ValueError(
            f"Argument `format` must be a comma-separated list of {FORMATS}, received: {text!r}"
        )
    return formats


def next_version(*model_directories: Path) -> int:
    """One more than the largest numeric version under any of the directories."""
    versions = [
        int(entry.name)
        for directory in model_directories
        if directory.is_dir()
        for entry in directory.iterdir()
        if entry.name.isdigit()
    ]
    return max(versions, default=0) + 1


def load_run_model(run_dir: str | os.PathLike) -> Any:
    """``RUN_DIR/model.keras``, loaded with Keras' ``safe_mode`` (no code from the file)."""
    path = Path(os.path.abspath(run_dir)) / "model.keras"
    if not path.is_file():
        raise ValueError(
            f"Argument `run_dir`: {path} does not exist; expected a directory written by "
            "`rnncells train`"
        )
    for name in APP_MODULES:
        importlib.import_module(f"keras_rnncells.apps.{name}")
    return keras.saving.load_model(path, safe_mode=True)


def export_servable(
    servable: Servable,
    export_dir: str | os.PathLike,
    version: int | None = None,
    formats: tuple[str, ...] = FORMATS,
    overwrite: bool = False,
) -> dict[str, Path]:
    """Writes and checks each format; returns the artifact paths by format.
    Both formats get the same version number."""
    export_dir = Path(os.path.abspath(export_dir))
    if version is None:
        version = next_version(export_dir / servable.name, export_dir / "onnx" / servable.name)
    paths: dict[str, Path] = {}
    if "savedmodel" in formats:
        paths["savedmodel"] = write_saved_model(servable, export_dir, version, overwrite)
    if "onnx" in formats:
        path = onnx_path(export_dir, servable.name, version)
        if path.exists() and not overwrite:
            raise ValueError(
                f"Argument `version`: {path} exists; pass overwrite=True (--overwrite) "
                "to replace it"
            )
        write_onnx_version(servable, path, version)
        paths["onnx"] = path
    return paths


def write_onnx_version(servable: Servable, path: Path, version: int) -> None:
    """`write_onnx` into a hidden sibling of the version directory, renamed into
    place once complete (as the SavedModel is): a kill leaves no partial version."""
    path.parent.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix=f".{path.parent.name}.", dir=path.parent.parent))
    try:
        write_onnx(servable, staged / path.name, version=version)
        publish(staged, path.parent)
    finally:
        shutil.rmtree(staged, ignore_errors=True)  # left only on failure


def export_run(
    run_dir: str | os.PathLike,
    export_dir: str | os.PathLike,
    version: int | None = None,
    formats: tuple[str, ...] = FORMATS,
    overwrite: bool = False,
) -> dict[str, Path]:
    """The model of ``run_dir`` as serving artifacts under ``export_dir``."""
    from keras_rnncells.apps import servable_for

    return export_servable(
        servable_for(load_run_model(run_dir)), export_dir, version, formats, overwrite
    )
