"""The RNN layer with its execution paths, the named layers, stacks of layers
(plain, residual, dense; clockwork, gated-feedback, depth-gated and grid cells), the wrappers and
word dropout."""

from keras_rnncells.layers.character_words import (
    CharacterWordEmbedding,
    GatedWordCharacterEmbedding,
)
from keras_rnncells.layers.clockwork import ClockworkCell
from keras_rnncells.layers.depth_gated import DepthGatedLSTMCell
from keras_rnncells.layers.gated_feedback import GatedFeedbackCell
from keras_rnncells.layers.grid_lstm import GridLSTMCell
from keras_rnncells.layers.named import (
    CIFGLSTM,
    DSGU,
    GRU,
    IRNN,
    LSTM,
    MGU,
    MIGRU,
    MILSTM,
    MIRNN,
    MUT1,
    MUT2,
    MUT3,
    SCRN,
    SGU,
    SLSTM,
    CellLayer,
    JordanRNN,
    LSTMNoForgetGate,
    LSTMNoInputGate,
    LSTMNoOutputGate,
    MuFuRU,
    PeepholeLSTM,
    SimpleRNN,
)
from keras_rnncells.layers.rnn import IMPLEMENTATIONS, RNN, compiled_inference, portable
from keras_rnncells.layers.stacks import StackedRNN
from keras_rnncells.layers.word_dropout import WordDropout
from keras_rnncells.layers.wrappers import CellWrapper, Zoneout

__all__ = [
    "CIFGLSTM",
    "DSGU",
    "GRU",
    "IMPLEMENTATIONS",
    "IRNN",
    "LSTM",
    "MGU",
    "MIGRU",
    "MILSTM",
    "MIRNN",
    "MUT1",
    "MUT2",
    "MUT3",
    "RNN",
    "SCRN",
    "SGU",
    "SLSTM",
    "CellLayer",
    "CellWrapper",
    "CharacterWordEmbedding",
    "ClockworkCell",
    "DepthGatedLSTMCell",
    "GatedFeedbackCell",
    "GatedWordCharacterEmbedding",
    "GridLSTMCell",
    "JordanRNN",
    "LSTMNoForgetGate",
    "LSTMNoInputGate",
    "LSTMNoOutputGate",
    "MuFuRU",
    "PeepholeLSTM",
    "SimpleRNN",
    "StackedRNN",
    "WordDropout",
    "Zoneout",
    "compiled_inference",
    "portable",
]
