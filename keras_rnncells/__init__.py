"""keras_rnncells: the recurrent cells of the literature for Keras 3, fast."""

from keras_rnncells.cells import (
    AbstractRNNCell,
    DenseGatesCell,
    GRUCell,
    LSTMCell,
    MGUCell,
    SimpleRNNCell,
    get_cell,
    list_cells,
    register_cell,
)
from keras_rnncells.layers import GRU, LSTM, MGU, RNN, CellLayer, SimpleRNN, portable

__version__ = "0.1.0"

__all__ = [
    "GRU",
    "LSTM",
    "MGU",
    "RNN",
    "AbstractRNNCell",
    "CellLayer",
    "DenseGatesCell",
    "GRUCell",
    "LSTMCell",
    "MGUCell",
    "SimpleRNN",
    "SimpleRNNCell",
    "get_cell",
    "list_cells",
    "portable",
    "register_cell",
]
