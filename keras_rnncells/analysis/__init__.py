"""Analyses of trained recurrent encoders.

`omission_scores` (Kádár, Chrupała & Alishahi 2016): how much a sentence's
final hidden state changes when one token is left out,
``1 - cos(h_end(S), h_end(S without w_i))``, for any encoder;
`sentiment_encoder` and `sentiment_token_ids` apply it to the sentiment
classifier, `seq2seq_encoder` and `seq2seq_token_ids` to the date normalizer's
encoder, `mean_by_token` averages it per token type, and `omission_html`
and `omission_png` show it.
"""

from keras_rnncells.analysis.omission import (
    mean_by_token,
    omission_scores,
    sentiment_encoder,
    sentiment_token_ids,
    seq2seq_encoder,
    seq2seq_token_ids,
)
from keras_rnncells.analysis.render import omission_html, omission_png

__all__ = [
    "mean_by_token",
    "omission_html",
    "omission_png",
    "omission_scores",
    "sentiment_encoder",
    "sentiment_token_ids",
    "seq2seq_encoder",
    "seq2seq_token_ids",
]
