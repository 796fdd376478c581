"""Analyses of trained recurrent encoders.

`omission_scores` (Kádár, Chrupała & Alishahi 2016): how much a sentence's
final hidden state changes when one token is left out,
``1 - cos(h_end(S), h_end(S without w_i))``, for any encoder;
`sentiment_encoder` and `sentiment_token_ids` apply it to the sentiment
classifier, `seq2seq_encoder` and `seq2seq_token_ids` to the date normalizer's
encoder, `mean_by_token` averages it per token type, and `omission_html`
and `omission_png` show it.

`recorded_recurrences` records every recurrent layer's output and gates over
a forward pass (`gate_labels` names the gates by the cell's blocks);
`saturation_fractions` and `saturation_png` give Karpathy, Johnson &
Fei-Fei's (2015) gate saturation; `CorrelationTally` and `token_features`
find the units that follow a property of the text. `rnncells inspect` writes
them all (`keras_rnncells.analysis.inspect`).

`complexity_measures` gives an architecture's recurrent depth, feedforward
depth and recurrent skip coefficient (Zhang et al. 2016) from its cyclic
graph (`RecurrentGraph`); `cell_graph` and `connection_graph` build the
graphs of the registered cells and of the stacks' connections
(`rnncells cells --complexity`).
"""

from keras_rnncells.analysis.activations import CorrelationTally, token_features
from keras_rnncells.analysis.complexity import (
    Edge,
    Measures,
    RecurrentGraph,
    cell_graph,
    complexity_measures,
    connection_graph,
)
from keras_rnncells.analysis.omission import (
    mean_by_token,
    omission_scores,
    sentiment_encoder,
    sentiment_token_ids,
    seq2seq_encoder,
    seq2seq_token_ids,
)
from keras_rnncells.analysis.recording import gate_labels, recorded_recurrences
from keras_rnncells.analysis.render import omission_html, omission_png
from keras_rnncells.analysis.saturation import saturation_fractions, saturation_png

__all__ = [
    "CorrelationTally",
    "Edge",
    "Measures",
    "RecurrentGraph",
    "cell_graph",
    "complexity_measures",
    "connection_graph",
    "gate_labels",
    "mean_by_token",
    "omission_html",
    "omission_png",
    "omission_scores",
    "recorded_recurrences",
    "saturation_fractions",
    "saturation_png",
    "sentiment_encoder",
    "sentiment_token_ids",
    "seq2seq_encoder",
    "seq2seq_token_ids",
    "token_features",
]
