"""Registry of the cells by name, used by the CLI and the applications."""

from __future__ import annotations

from typing import TypeVar

import keras

from keras_rnncells.cells.base import AbstractRNNCell

_CELLS: dict[str, type[AbstractRNNCell]] = {}

CellType = TypeVar("CellType", bound=type)


def register_cell(name: str):
    """Class decorator: register a cell under ``name`` and for Keras saving."""

    def decorate(cls: CellType) -> CellType:
        if name in _CELLS:
            raise ValueError(f"A cell named {name!r} is already registered")
        _CELLS[name] = cls
        return keras.saving.register_keras_serializable(package="keras_rnncells")(cls)

    return decorate


def list_cells() -> list[str]:
    """Names of every registered cell, sorted."""
    return sorted(_CELLS)


def get_cell(name: str) -> type[AbstractRNNCell]:
    """The cell class registered under ``name``."""
    try:
        return _CELLS[name]
    except KeyError:
        raise ValueError(
            f"Argument `name` must be one of {list_cells()}, received: {name!r}"
        ) from None
