"""What the application models share."""

from __future__ import annotations

import keras


class TokenizerModel(keras.Model):
    """Base of the models that carry their tokenizer (sentiment, colors): their
    config holds it, serialized, and ``from_config`` rebuilds it first."""

    @classmethod
    def from_config(cls, config: dict) -> TokenizerModel:
        config = dict(config)
        config["tokenizer"] = keras.saving.deserialize_keras_object(config["tokenizer"])
        return cls(**config)
