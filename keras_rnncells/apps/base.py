"""What the application models share."""

from __future__ import annotations

from typing import Any

import keras

from keras_rnncells.text import Tokenizer


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
