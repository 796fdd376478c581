"""Recurrent cells, one module per family."""

from keras_rnncells.cells.base import AbstractRNNCell, DenseGatesCell
from keras_rnncells.cells.gru import GRUCell
from keras_rnncells.cells.lstm import LSTMCell
from keras_rnncells.cells.mgu import MGUCell
from keras_rnncells.cells.registry import get_cell, list_cells, register_cell
from keras_rnncells.cells.simple import SimpleRNNCell

__all__ = [
    "AbstractRNNCell",
    "DenseGatesCell",
    "GRUCell",
    "LSTMCell",
    "MGUCell",
    "SimpleRNNCell",
    "get_cell",
    "list_cells",
    "register_cell",
]
