"""The RNN layer with its execution paths, and the named layers."""

from keras_rnncells.layers.named import GRU, LSTM, MGU, CellLayer, SimpleRNN
from keras_rnncells.layers.rnn import IMPLEMENTATIONS, RNN, portable

__all__ = ["GRU", "IMPLEMENTATIONS", "LSTM", "MGU", "RNN", "CellLayer", "SimpleRNN", "portable"]
