"""The RNN layer with its execution paths, the named layers, stacks of layers
(plain, residual, dense; clockwork, gated-feedback, depth-gated and grid cells), the wrappers,
word dropout, the recurrences over 2-D grids (multi-dimensional RNN, row LSTM) and the
end-to-end memory network."""

from keras_rnncells.layers.character_words import (
    CharacterWordEmbedding,
    GatedWordCharacterEmbedding,
)
from keras_rnncells.layers.clockwork import ClockworkCell
from keras_rnncells.layers.depth_gated import DepthGatedLSTMCell
from keras_rnncells.layers.gated_feedback import GatedFeedbackCell
from keras_rnncells.layers.grid_lstm import GridLSTMCell
from keras_rnncells.layers.hierarchical import HierarchicalEncoder
from keras_rnncells.layers.memory_network import MemoryNetwork
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
    QRNN,
    SCRN,
    SGU,
    SLSTM,
    CellLayer,
    JordanRNN,
    LSTMNoForgetGate,
    LSTMNoInputGate,
    LSTMNoOutputGate,
    MinGRU,
    MinLSTM,
    MuFuRU,
    PeepholeLSTM,
    SimpleRNN,
)
from keras_rnncells.layers.rnn import IMPLEMENTATIONS, RNN, compiled_inference, portable
from keras_rnncells.layers.stacks import StackedRNN
from keras_rnncells.layers.two_dimensional import MultiDimensionalRNN, RowLSTM
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
    "QRNN",
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
    "HierarchicalEncoder",
    "JordanRNN",
    "LSTMNoForgetGate",
    "LSTMNoInputGate",
    "LSTMNoOutputGate",
    "MemoryNetwork",
    "MinGRU",
    "MinLSTM",
    "MuFuRU",
    "MultiDimensionalRNN",
    "PeepholeLSTM",
    "RowLSTM",
    "SimpleRNN",
    "StackedRNN",
    "WordDropout",
    "Zoneout",
    "compiled_inference",
    "portable",
]
