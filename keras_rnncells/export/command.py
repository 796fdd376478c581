"""``rnncells export``: a `Servable` or a Keras model to serving artifacts.

A model whose class has its own servable (the applications' models, see
``keras_rnncells.export.servable.register_model_servable``) is served through
it (text in and out), every other model through
``keras_rnncells.export.servable_from_model`` (the model's own inputs and
outputs, named after ``model.name``). A run directory written by ``rnncells
train``, or a ``.keras`` file, is read by ``keras_rnncells.apps.runs``, which
knows the applications.

``EXPORT_DIR/<model>/<version>/`` holds the SavedModel (TF Serving's layout,
``serving_default`` on strings where the application reads text) and
``EXPORT_DIR/onnx/<model>/<version>/model.onnx`` the ONNX model (token ids or
numbers in) and, with ``litert`` among the formats,
``EXPORT_DIR/litert/<model>/<version>/model.tflite`` the LiteRT model (the
same inputs); each directory has its ``manifest.json``. Each is checked at
export time: the SavedModel in a fresh process, the ONNX model in onnxruntime,
the LiteRT model in ``ai_edge_litert``'s interpreter without TensorFlow.
A version is published with every requested format or not at all: each
format is written into a hidden directory, every check runs, and only then
are the version directories renamed into place (`export_servable`). The
version number is claimed before anything is written
(``saved_model.Staging.claim``): two exports into one ``EXPORT_DIR`` at once
get two numbers, and neither replaces the other's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import keras

from keras_rnncells.checks import check_float
from keras_rnncells.export import litert, onnx, saved_model
from keras_rnncells.export.litert import stage_litert
from keras_rnncells.export.manifest import check_key, sign_manifest
from keras_rnncells.export.onnx import MODEL_FILE, write_onnx
from keras_rnncells.export.saved_model import Staging, check_version, stage_saved_models
from keras_rnncells.export.servable import Servable, as_servable

FORMATS = ("savedmodel", "onnx", "litert")
DEFAULT_FORMATS = ("savedmodel", "onnx")  # what `rnncells export` writes unless told
TOLERANCES = {
    "savedmodel": saved_model.TOLERANCE,
    "onnx": onnx.TOLERANCE,
    "litert": litert.TOLERANCE,
}


def parse_formats(text: str) -> tuple[str, ...]:
    """``--format``: comma-separated formats, or ``all`` for every one of `FORMATS`."""
    if text.strip() == "all":
        return FORMATS
    formats = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    return check_formats("format", formats, text)


def check_formats(name: str, formats: tuple[str, ...], received: object) -> tuple[str, ...]:
    """``formats`` if it names one or more of `FORMATS` and nothing else."""
    if not formats or any(f not in FORMATS for f in formats):
        raise ValueError(
            f"Argument `{name}` must name one or more of {FORMATS}, received: {received!r}"
        )
    return formats


def export_servable(
    servable: Servable | keras.Model,
    export_dir: str | os.PathLike,
    version: int | None = None,
    formats: tuple[str, ...] = DEFAULT_FORMATS,
    overwrite: bool = False,
    tolerances: Mapping[str, float] | None = None,
    key: bytes | None = None,
    streaming: bool = False,
) -> dict[str, Path]:
    """Writes and checks each format of ``servable`` (a `Servable` or any
    Keras model, see `as_servable`) under ``export_dir``; returns the artifact
    paths by format (the SavedModel's version directory, the ONNX and LiteRT
    files).

    Every format gets the same version (``None``: one more than the largest of
    either, or than the versions other exports are writing meanwhile; a given
    version another export is writing is refused). All formats are staged in
    hidden directories and checked before any is published: a failed check
    leaves ``export_dir`` as it was, nothing claimed.
    ``tolerances``: the largest absolute float error allowed per format
    (default `TOLERANCES`). ``key``: each manifest is signed under it
    (`manifest.sign_manifest`) before the version is published.
    ``streaming``: each format also gets the step form
    (`keras_rnncells.export.streaming`): the SavedModel's ``"step"``
    signature, ``model_step.onnx``, ``model_step.tflite``."""
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
    models = {
        "savedmodel": export_dir / servable.name,
        "onnx": export_dir / "onnx" / servable.name,
        "litert": export_dir / "litert" / servable.name,
    }
    paths: dict[str, Path] = {}
    with Staging() as staging:
        claimed = [models[fmt] for fmt in formats]
        version = staging.claim(claimed, version, overwrite, numbered_with=list(models.values()))
        targets = {fmt: models[fmt] / str(version) for fmt in formats}
        if "savedmodel" in targets:
            stage_saved_models(
                [servable],
                [targets["savedmodel"]],
                staging,
                tolerance=tolerances["savedmodel"],
                streaming=streaming,
            )
            paths["savedmodel"] = targets["savedmodel"]
        if "onnx" in targets:
            staged = staging.directory(targets["onnx"])
            write_onnx(
                servable,
                staged / MODEL_FILE,
                version=version,
                tolerance=tolerances["onnx"],
                streaming=streaming,
            )
            paths["onnx"] = targets["onnx"] / MODEL_FILE
        if "litert" in targets:
            staged = staging.directory(targets["litert"])
            stage_litert(
                servable, staged, version, tolerance=tolerances["litert"], streaming=streaming
            )
            paths["litert"] = targets["litert"] / litert.MODEL_FILE
        if key is not None:
            for directory, _ in staging.staged:
                sign_manifest(directory, key)
        staging.publish()
    return paths
