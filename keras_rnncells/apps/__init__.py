"""The applications: sentiment classifier, color namers (both directions) and
the date-normalizing encoder-decoder, each trained by ``rnncells train`` and
exported by ``rnncells export`` through ``servable_for``."""

from __future__ import annotations

from typing import Any

from keras_rnncells.export.servable import Servable


def servable_for(model: Any) -> Servable:
    """The ``Servable`` of a trained application model (as ``model.keras`` loads)."""
    from keras_rnncells.apps.color_namer import ColorNamer, color_namer_servable
    from keras_rnncells.apps.name_to_color import NameToColor, name_to_color_servable
    from keras_rnncells.apps.sentiment import SentimentClassifier, sentiment_servable
    from keras_rnncells.apps.seq2seq import seq2seq_servable
    from keras_rnncells.seq2seq.text import TextSeq2Seq

    if isinstance(model, SentimentClassifier):
        return sentiment_servable(model)
    if isinstance(model, ColorNamer):
        return color_namer_servable(model)
    if isinstance(model, NameToColor):
        return name_to_color_servable(model)
    if isinstance(model, TextSeq2Seq):
        return seq2seq_servable(model)
    raise ValueError(
        f"Argument `model`: no application serves a {type(model).__name__}; expected a model "
        "written by `rnncells train` (sentiment, color-namer, name-to-color, seq2seq)"
    )
