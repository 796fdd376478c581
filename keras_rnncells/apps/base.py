"""What the application models share."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import keras

from keras_rnncells.cells.registry import list_cells
from keras_rnncells.checks import (
    check_choice,
    check_float,
    check_mapping,
    check_optional_positive_int,
    check_positive_int,
    check_rate,
    check_seed,
)
from keras_rnncells.text import Tokenizer

# The checks of the settings fields, by name, shared by the applications' runs.
SETTING_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    **dict.fromkeys(
        (
            "units",
            "epochs",
            "batch_size",
            "embedding_dim",
            "beam_width",
            "bins",
            "vocabulary_size",
            "max_tokens",
            "validation_size",
            "test_size",
        ),
        check_positive_int,
    ),
    "train_size": check_optional_positive_int,
    "seed": check_seed,
    "cell": lambda name, value: check_choice(name, value, list_cells()),
    "cell_options": check_mapping,
    "dropout": check_rate,
    "word_dropout": check_rate,
    "learning_rate": lambda name, value: check_float(name, value, "(0, inf)"),
    "test_fraction": lambda name, value: check_float(name, value, "(0, 1)"),
}


def check_settings(settings: Any, **choices: Sequence[Any]) -> None:
    """Checks every field of a settings dataclass that ``SETTING_CHECKS``
    knows, and those named in ``choices`` against their allowed values."""
    for field in dataclasses.fields(settings):
        value = getattr(settings, field.name)
        if field.name in choices:
            check_choice(field.name, value, choices[field.name])
        elif field.name in SETTING_CHECKS:
            SETTING_CHECKS[field.name](field.name, value)


class TokenizerModel(keras.Model):
    """Base of the models that carry their tokenizer (sentiment, colors): the
    first argument, checked against ``tokenizer_class``; their config holds it,
    serialized, and ``from_config`` rebuilds it first."""

    tokenizer_class: type[Tokenizer] = Tokenizer

    def __init__(self, tokenizer: Tokenizer, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(tokenizer, self.tokenizer_class):
            raise ValueError(
                f"Argument `tokenizer` must be a {self.tokenizer_class.__name__}, "
                f"received: {tokenizer!r}"
            )
        self.tokenizer = tokenizer

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "tokenizer": keras.saving.serialize_keras_object(self.tokenizer),
        }

    @classmethod
    def from_config(cls, config: dict) -> TokenizerModel:
        config = dict(config)
        config["tokenizer"] = keras.saving.deserialize_keras_object(config["tokenizer"])
        return cls(**config)
