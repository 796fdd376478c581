"""``rnncells export``: a trained model to serving artifacts.

The model is a run directory written by ``rnncells train`` (its
``model.keras``) or any ``.keras`` file: an application model is served
through its application (``keras_rnncells.apps.servable_for``: text in and
out), every other model through ``keras_rnncells.export.servable_from_model``
(the model's own inputs and outputs, named after ``model.name``).

``EXPORT_DIR/<model>/<version>/`` holds the SavedModel (TF Serving's layout,
``serving_default`` on strings where the application reads text) and
``EXPORT_DIR/onnx/<model>/<version>/model.onnx`` the ONNX model (token ids or
numbers in); each directory has its ``manifest.json``. Both are checked at
export time: the SavedModel in a fresh process, the ONNX model in onnxruntime.
A version is published with every requested format or not at all: each
format is written into a hidden directory, every check runs, and only then
are the version directories renamed into place (`export_servable`). The
version number is claimed before anything is written
(``saved_model.Staging.claim``): two exports into one ``EXPORT_DIR`` at once
get two numbers, and neither replaces the other's.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path

import keras

from keras_rnncells.checks import check_float
from keras_rnncells.export import onnx, saved_model
from keras_rnncells.export.manifest import check_key, sign_manifest
from keras_rnncells.export.onnx import MODEL_FILE, write_onnx
from keras_rnncells.export.saved_model import Staging, check_version, stage_saved_models
from keras_rnncells.export.servable import Servable, as_servable

FORMATS = ("savedmodel", "onnx")
TOLERANCES = {"savedmodel": saved_model.TOLERANCE, "onnx": onnx.TOLERANCE}
MODEL_FILE_NAME = "model.keras"  # what `rnncells train` writes into a run directory
# The modules defining the application models, imported before a .keras file
# is loaded so that Keras finds their (registered) classes.
APP_MODULES = ("color_namer", "name_to_color", "sentiment", "seq2seq")


def parse_formats(text: str) -> tuple[str, ...]:
    """``--format``: comma-separated formats."""
    formats = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    return check_formats("format", formats, text)


def check_formats(name: str, formats: tuple[str, ...], received: object) -> tuple[str, ...]:
    """``formats`` if it names one or more of `FORMATS` and nothing else."""
    if not formats or any(f not in FORMATS for f in formats):
        raise ValueError(
            f"Argument `{name}` must name one or more of {FORMATS}, received: {received!r}"
        )
    return formats


def read_model(path: str | os.PathLike) -> keras.Model:
    """The model of ``path``, a run directory (its ``model.keras``) or a
    ``.keras`` file, loaded with Keras' ``safe_mode`` (no code from the file)."""
    path = Path(os.path.abspath(path))
    if path.is_dir():
        path = path / MODEL_FILE_NAME
        if not path.is_file():
            raise ValueError(
                f"Argument `model`: {path} does not exist; expected a run directory written "
                "by `rnncells train`, or a .keras file"
            )
    elif path.suffix != ".keras" or not path.is_file():
        raise ValueError(f"Argument `model`: {path} is neither a run directory nor a .keras file")
    for name in APP_MODULES:
        importlib.import_module(f"keras_rnncells.apps.{name}")
    try:
        return keras.saving.load_model(path, safe_mode=True)
    except (TypeError, ValueError) as error:  # unknown classes, code refused by safe_mode
        reason = " ".join(str(error).split())
        raise ValueError(f"Argument `model`: {path} does not load: {reason}") from None


def export_servable(
    servable: Servable | keras.Model,
    export_dir: str | os.PathLike,
    version: int | None = None,
    formats: tuple[str, ...] = FORMATS,
    overwrite: bool = False,
    tolerances: Mapping[str, float] | None = None,
    key: bytes | None = None,
) -> dict[str, Path]:
    """Writes and checks each format of ``servable`` (a `Servable` or any
    Keras model, see `as_servable`) under ``export_dir``; returns the artifact
    paths by format (the SavedModel's version directory, the ONNX file).

    Every format gets the same version (``None``: one more than the largest of
    either, or than the versions other exports are writing meanwhile; a given
    version another export is writing is refused). All formats are staged in
    hidden directories and checked before any is published: a failed check
    leaves ``export_dir`` as it was, nothing claimed.
    ``tolerances``: the largest absolute float error allowed per format
    (default `TOLERANCES`). ``key``: each manifest is signed under it
    (`manifest.sign_manifest`) before the version is published."""
    check_version(version)
    check_formats("formats", formats, formats)
    if key is not None:
        check_key(key)
    tolerances = {**TOLERANCES, **(tolerances or {})}
    if set(tolerances) != set(FORMATS):
        raise ValueError(
            f"Argument `tolerances` must have keys among {FORMATS}, got {sorted(tolerances)}"
        )
    for fmt, tolerance in tolerances.items():
        check_float(f"tolerances[{fmt!r}]", tolerance, "(0, inf)")
    servable = as_servable("servable", servable)
    export_dir = Path(os.path.abspath(export_dir))
    models = {"savedmodel": export_dir / servable.name, "onnx": export_dir / "onnx" / servable.name}
    paths: dict[str, Path] = {}
    with Staging() as staging:
        claimed = [models[fmt] for fmt in formats]
        version = staging.claim(claimed, version, overwrite, numbered_with=list(models.values()))
        targets = {fmt: models[fmt] / str(version) for fmt in formats}
        if "savedmodel" in targets:
            stage_saved_models(
                [servable], [targets["savedmodel"]], staging, tolerance=tolerances["savedmodel"]
            )
            paths["savedmodel"] = targets["savedmodel"]
        if "onnx" in targets:
            staged = staging.directory(targets["onnx"])
            write_onnx(servable, staged / MODEL_FILE, version=version, tolerance=tolerances["onnx"])
            paths["onnx"] = targets["onnx"] / MODEL_FILE
        if key is not None:
            for directory, _ in staging.staged:
                sign_manifest(directory, key)
        staging.publish()
    return paths


def export_run(
    model: str | os.PathLike,
    export_dir: str | os.PathLike,
    version: int | None = None,
    formats: tuple[str, ...] = FORMATS,
    overwrite: bool = False,
    key: bytes | None = None,
) -> dict[str, Path]:
    """The model of ``model`` (a run directory or a ``.keras`` file) as
    serving artifacts under ``export_dir`` (see `export_servable`)."""
    return export_servable(read_model(model), export_dir, version, formats, overwrite, key=key)
