"""Recurrent cells, one module per family."""

from keras_rnncells.cells.base import AbstractRNNCell
from keras_rnncells.cells.context import RecurrentMasks, StepContext
from keras_rnncells.cells.dense_gates import DenseGatesCell, GatedCell
from keras_rnncells.cells.gru import GRUCell
from keras_rnncells.cells.jordan import JordanRNNCell
from keras_rnncells.cells.linear import LinearRecurrenceCell
from keras_rnncells.cells.lstm import LSTMCell
from keras_rnncells.cells.lstm_variants import (
    CIFGLSTMCell,
    LSTMNoForgetGateCell,
    LSTMNoInputGateCell,
    LSTMNoOutputGateCell,
    LSTMVariantCell,
    PeepholeLSTMCell,
    SLSTMCell,
)
from keras_rnncells.cells.mgu import MGUCell
from keras_rnncells.cells.mi import MIGRUCell, MILSTMCell, MIRNNCell, MultiplicativeIntegration
from keras_rnncells.cells.minimal import MinGRUCell, MinLSTMCell
from keras_rnncells.cells.mufuru import MuFuRUCell
from keras_rnncells.cells.mut import MUT1Cell, MUT2Cell, MUT3Cell
from keras_rnncells.cells.qrnn import QRNNCell
from keras_rnncells.cells.registry import get_cell, list_cells, register_cell
from keras_rnncells.cells.scrn import SCRNCell
from keras_rnncells.cells.sgu import DSGUCell, SGUCell
from keras_rnncells.cells.simple import IRNNCell, SimpleRNNCell

__all__ = [
    "AbstractRNNCell",
    "CIFGLSTMCell",
    "DSGUCell",
    "DenseGatesCell",
    "GRUCell",
    "GatedCell",
    "IRNNCell",
    "JordanRNNCell",
    "LSTMCell",
    "LSTMNoForgetGateCell",
    "LSTMNoInputGateCell",
    "LSTMNoOutputGateCell",
    "LSTMVariantCell",
    "LinearRecurrenceCell",
    "MGUCell",
    "MIGRUCell",
    "MILSTMCell",
    "MIRNNCell",
    "MUT1Cell",
    "MUT2Cell",
    "MUT3Cell",
    "MinGRUCell",
    "MinLSTMCell",
    "MuFuRUCell",
    "MultiplicativeIntegration",
    "PeepholeLSTMCell",
    "QRNNCell",
    "RecurrentMasks",
    "SCRNCell",
    "SGUCell",
    "SLSTMCell",
    "SimpleRNNCell",
    "StepContext",
    "get_cell",
    "list_cells",
    "register_cell",
]
