"""tensorflow-text, imported where it is used: ``import keras_rnncells`` does not
need it (it is the ``text`` extra), only the WordPiece tokenizer and its
vocabulary learner do."""

from __future__ import annotations

import importlib
from types import ModuleType

EXTRA = "keras-rnncells[text]"


def tensorflow_text(user: str, module: str = "tensorflow_text") -> ModuleType:
    """``module`` (tensorflow_text or one of its submodules), imported for
    ``user``; a missing tensorflow-text raises a one-line ``ModuleNotFoundError``
    naming ``user`` and the extra to install."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] != "tensorflow_text":
            raise  # tensorflow-text is there, something it imports is not
        raise ModuleNotFoundError(
            f"{user} needs tensorflow-text: pip install '{EXTRA}'", name="tensorflow_text"
        ) from None
