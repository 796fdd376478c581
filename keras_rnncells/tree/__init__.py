"""Recursive composition over trees: Tree-LSTM units, a shift-reduce encoder
(binary Tree-LSTM and SPINN) over transitions, a tree-and-sequence encoder,
and the child-sum Tree-LSTM over parent indices, each a Keras layer over batched, padded trees;
the generative RNNG scoring trees by their top-down actions, and its oracle."""

from keras_rnncells.tree.child_sum import ChildSumTreeLSTM
from keras_rnncells.tree.oracle import ActionSpace, Tree, bracketed, postfix_tree
from keras_rnncells.tree.rnng import RNNG
from keras_rnncells.tree.shift_reduce import (
    PAD,
    REDUCE,
    SHIFT,
    ShiftReduceEncoder,
    TransitionsFromTokens,
)
from keras_rnncells.tree.tree_and_sequence import TreeAndSequenceEncoder
from keras_rnncells.tree.tree_lstm import BinaryTreeLSTMCell, ChildSumTreeLSTMCell

__all__ = [
    "PAD",
    "REDUCE",
    "RNNG",
    "SHIFT",
    "ActionSpace",
    "BinaryTreeLSTMCell",
    "ChildSumTreeLSTM",
    "ChildSumTreeLSTMCell",
    "ShiftReduceEncoder",
    "TransitionsFromTokens",
    "Tree",
    "TreeAndSequenceEncoder",
    "bracketed",
    "postfix_tree",
]
