"""Run directories become artifacts: the model of a run directory written by
``rnncells train`` (its ``model.keras``), or of any ``.keras`` file, loaded
with every application registered (`keras_rnncells.apps.registry.load_apps`),
and exported (``rnncells export``): an application model through its
application (text in and out), every other model through
`keras_rnncells.export.servable_from_model`."""

from __future__ import annotations

import os
from pathlib import Path

import keras

# The task models' classes besides cells and layers: a penalty layer, the
# language models' metric (registered with Keras as their modules load).
from keras_rnncells import metrics, regularizers  # noqa: F401
from keras_rnncells.apps.registry import load_apps
from keras_rnncells.export.command import DEFAULT_FORMATS, export_servable
from keras_rnncells.export.limits import RequestLimits
from keras_rnncells.export.servable import model_servable

MODEL_FILE_NAME = "model.keras"  # what `rnncells train` writes into a run directory


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
    load_apps()  # Keras finds the applications' (registered) classes
    try:
        return keras.saving.load_model(path, safe_mode=True)
    except (TypeError, ValueError) as error:  # unknown classes, code refused by safe_mode
        reason = " ".join(str(error).split())
        raise ValueError(f"Argument `model`: {path} does not load: {reason}") from None


def export_run(
    model: str | os.PathLike,
    export_dir: str | os.PathLike,
    version: int | None = None,
    formats: tuple[str, ...] = DEFAULT_FORMATS,
    overwrite: bool = False,
    key: bytes | None = None,
    limits: RequestLimits | None = None,
    streaming: bool = False,
) -> dict[str, Path]:
    """The model of ``model`` (a run directory or a ``.keras`` file) as
    serving artifacts under ``export_dir`` (see
    `keras_rnncells.export.command.export_servable`). ``limits``: the
    request limits of a model on text (`keras_rnncells.export.servable.model_servable`).
    ``streaming``: each format with its step form too."""
    servable = model_servable(read_model(model), limits=limits)
    return export_servable(
        servable, export_dir, version, formats, overwrite, key=key, streaming=streaming
    )
