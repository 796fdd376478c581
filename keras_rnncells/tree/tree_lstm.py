"""Tree-LSTM units (Tai, Socher & Manning 2015, "Improved Semantic
Representations From Tree-Structured Long Short-Term Memory Networks").

A node ``j`` with input ``x_j`` and children ``k`` (their states ``h_k``,
``c_k``) has

* binary (N-ary, N = 2; ordered children L and R):
  ``i = σ(W_i x + U_i^L h_L + U_i^R h_R + b_i)``,
  ``f_L = σ(W_f x + U_f^LL h_L + U_f^LR h_R + b_f)``,
  ``f_R = σ(W_f x + U_f^RL h_L + U_f^RR h_R + b_f)``,
  ``o = σ(W_o x + U_o^L h_L + U_o^R h_R + b_o)``,
  ``u = tanh(W_u x + U_u^L h_L + U_u^R h_R + b_u)``,
  ``c = i ⊙ u + f_L ⊙ c_L + f_R ⊙ c_R``, ``h = o ⊙ tanh(c)``;
* child-sum (any number of unordered children): ``h̃ = Σ_k h_k``,
  ``i, o, u`` as above with ``U h̃``, one forget gate per child
  ``f_k = σ(W_f x + U_f h_k + b_f)``, ``c = i ⊙ u + Σ_k f_k ⊙ c_k``,
  ``h = o ⊙ tanh(c)``.

A leaf is a node whose children are zero: ``c = i ⊙ u``. The forget-gate
biases start at 1 (Keras' ``unit_forget_bias``); the binary unit's two
forget gates have their own ``W_f`` columns and biases here, which the paper's
shared ``W_f`` is a special case of.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_rnncells.cells.projection import forget_bias_initializer
from keras_rnncells.checks import check_positive_int

Tensor = Any


class TreeLSTMUnit(keras.layers.Layer):
    """What both units hold: ``kernel`` (input_dim, blocks·units),
    ``recurrent_kernel`` (children·units, blocks·units: ``CHILDREN`` row blocks,
    one per ordered child, or one for the children's sum) and ``bias``
    (blocks·units), in the column blocks ``BLOCKS``, the forget gates'
    biases (``FORGET``) starting at 1."""

    BLOCKS: tuple[str, ...]
    FORGET: tuple[str, ...]
    CHILDREN: int

    def __init__(self, units: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.state_size = [self.units, self.units]
        self.output_size = self.units

    def build(self, input_shape: tuple) -> None:
        width = len(self.BLOCKS) * self.units
        self.kernel = self.add_weight((input_shape[-1], width), "glorot_uniform", name="kernel")
        self.recurrent_kernel = self.add_weight(
            (self.CHILDREN * self.units, width), "orthogonal", name="recurrent_kernel"
        )
        forget = tuple(self.BLOCKS.index(block) for block in self.FORGET)
        bias = forget_bias_initializer(self.units, len(self.BLOCKS), forget)
        self.bias = self.add_weight((width,), bias, name="bias")

    def get_config(self) -> dict:
        return {**super().get_config(), "units": self.units}


@keras.saving.register_keras_serializable(package="keras_rnncells")
class BinaryTreeLSTMCell(TreeLSTMUnit):
    """The binary Tree-LSTM unit (see the module): ``compose(x, left, right)``
    maps a node's input and its children's states ``[h, c]`` to its own.
    Recurrent rows: h_L, then h_R; column blocks i, f_L, f_R, o, u."""

    BLOCKS = ("i", "f_left", "f_right", "o", "u")
    FORGET = ("f_left", "f_right")
    CHILDREN = 2

    def compose(self, x: Tensor, left: list, right: list) -> list:
        gates = (
            ops.matmul(x, self.kernel)
            + ops.matmul(ops.concatenate([left[0], right[0]], axis=-1), self.recurrent_kernel)
            + self.bias
        )
        i, f_left, f_right, o, u = ops.split(gates, len(self.BLOCKS), axis=-1)
        c = (
            ops.sigmoid(i) * ops.tanh(u)
            + ops.sigmoid(f_left) * left[1]
            + ops.sigmoid(f_right) * right[1]
        )
        return [ops.sigmoid(o) * ops.tanh(c), c]


@keras.saving.register_keras_serializable(package="keras_rnncells")
class ChildSumTreeLSTMCell(TreeLSTMUnit):
    """The child-sum Tree-LSTM unit (see the module) over a whole level of
    nodes at once: ``compose(x, h, c, children)``. Column blocks i, o, u, f."""

    BLOCKS = ("i", "o", "u", "f")
    FORGET = ("f",)
    CHILDREN = 1

    def compose(self, x: Tensor, h: Tensor, c: Tensor, children: Tensor) -> list:
        """``x``: (batch, nodes, input_dim); ``h``, ``c``: every node's current
        state (batch, nodes, units); ``children``: (batch, nodes, nodes), 1
        where node k (last axis) is a child of node j. Returns every node's
        new ``[h, c]``."""
        projected = ops.matmul(x, self.kernel) + self.bias
        x_iou, x_f = projected[..., : 3 * self.units], projected[..., 3 * self.units :]
        u_iou = self.recurrent_kernel[:, : 3 * self.units]
        u_f = self.recurrent_kernel[:, 3 * self.units :]
        i, o, u = ops.split(x_iou + ops.matmul(ops.matmul(children, h), u_iou), 3, axis=-1)
        # Child k's forget gate reads its parent's W_f x: (children^T) x_f.
        parent_x_f = ops.matmul(ops.transpose(children, (0, 2, 1)), x_f)
        f = ops.sigmoid(parent_x_f + ops.matmul(h, u_f))
        c = ops.sigmoid(i) * ops.tanh(u) + ops.matmul(children, f * c)
        return [ops.sigmoid(o) * ops.tanh(c), c]
