"""Registry of the cells by name, used by the CLI and the applications."""

from __future__ import annotations

from typing import Any, TypeVar

import keras

from keras_rnncells.cells.base import AbstractRNNCell
from keras_rnncells.checks import check_choice, check_mapping

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


def make_cell(name: str, units: int, options: dict[str, Any] | None = None) -> AbstractRNNCell:
    """``get_cell(name)(units, **options)``, the errors naming the arguments as
    the applications and seq2seq layers take them (``cell``, ``cell_options``)."""
    cell_class = get_cell(check_choice("cell", name, list_cells()))
    return cell_class(units, **check_mapping("cell_options", options))
