"""The child-sum Tree-LSTM over trees given by parent indices, evaluated by
level (Tai, Socher & Manning 2015; the unit's equations are in
`keras_rnncells.tree.tree_lstm`).

A tree of ``nodes`` nodes is a row of ``parents``: node k's parent index, -1
for the root. Nodes may come in any order, with any number of children
(dependency trees). The batch's ``children`` matrix (1 where node k is a
child of node j) is built once; then one ``tf.while_loop`` recomputes every
node of every tree from its children's states, as many times as the tallest
tree has levels. After pass ``n`` every node of height below ``n`` holds its
final state (a leaf after the first pass, its parent after the second, ...),
so no node order is needed and no Python runs per node.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from keras_rnncells.checks import check_input, check_positive_int
from keras_rnncells.tree.malformed import refuse_malformed
from keras_rnncells.tree.shift_reduce import features_mask
from keras_rnncells.tree.tree_lstm import ChildSumTreeLSTMCell

Tensor = Any


def tree_heights(children: Tensor) -> tuple[Tensor, Tensor]:
    """Each node's height (0 for a leaf) from the (batch, nodes, nodes)
    ``children`` matrix, and per row whether the heights did not settle
    within ``nodes`` passes (a cycle)."""
    nodes = tf.shape(children)[-1]
    linked = children > 0

    def step(_, heights, __):
        below = tf.where(linked, heights[:, None, :] + 1, 0)
        new = tf.reduce_max(below, axis=-1)
        return _ + 1, new, tf.reduce_any(new != heights, axis=-1)

    start = (
        tf.constant(0),
        tf.zeros(tf.shape(children)[:2], "int32"),
        tf.ones(tf.shape(children)[:1], bool),
    )
    _, heights, changing = tf.while_loop(
        lambda n, _, changing: (n <= nodes) & tf.reduce_any(changing), step, start
    )
    return heights, changing


@keras.saving.register_keras_serializable(package="keras_rnncells")
class ChildSumTreeLSTM(keras.layers.Layer):
    """The child-sum Tree-LSTM (see the module).

    Call it on ``[features, parents]``: ``features`` (batch, nodes,
    input_dim) floats, ``parents`` (batch, nodes) integers in [-1, nodes).
    A Keras mask on ``features`` marks padding nodes, which are left out
    (their outputs are zero). Each row with a node has one root. A malformed
    row (an index out of range or on a padding node, no root or two, a cycle)
    is refused as `keras_rnncells.tree.malformed` says: an error naming it,
    or NaN from an ONNX runtime.

    Args:
        units: the unit's size.
        return_sequences: every node's ``h`` (batch, nodes, units) instead of
            the root's (batch, units).
    """

    def __init__(self, units: int, return_sequences: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.return_sequences = bool(return_sequences)
        self.cell = ChildSumTreeLSTMCell(units, name="cell", dtype=self.dtype_policy)
        self.supports_masking = True

    def build(self, input_shape: list) -> None:
        self.cell.build(input_shape[0])

    def call(self, inputs: list, mask: Any = None) -> Tensor:
        features, parents = inputs
        check_input(self, "features", features, ("batch", "nodes", "features"), dtype="float")
        check_input(self, "parents", parents, ("batch", "nodes"), dtype="integer")
        features = tf.convert_to_tensor(features)
        parents = tf.cast(parents, "int32")
        nodes = tf.shape(parents)[1]
        node_mask = features_mask(mask)
        valid = tf.ones_like(parents, bool) if node_mask is None else tf.cast(node_mask, bool)
        in_range = (parents >= -1) & (parents < nodes)
        target = tf.gather(valid, tf.clip_by_value(parents, 0, nodes - 1), batch_dims=1)
        where = f"Argument `parents` of layer {self.name!r}"
        roots = tf.reduce_sum(tf.cast(valid & (parents == -1), "int32"), axis=-1)
        is_child = (parents[:, None, :] == tf.range(nodes)[None, :, None]) & valid[:, None, :]
        children = tf.cast(is_child, features.dtype)
        heights, cyclic = tree_heights(children)
        problems = [
            (
                tf.reduce_any(valid & (~in_range | ((parents >= 0) & ~target)), axis=-1),
                f"{where}: a parent must be -1 (the root) or the index of a node of the tree; "
                "rows:",
            ),
            (tf.reduce_any(valid, axis=-1) & (roots != 1), f"{where}: a tree has one root; rows:"),
            (cyclic, f"{where}: a node must not be its own ancestor (a cycle); rows:"),
        ]
        levels = tf.reduce_max(tf.where(valid, heights, -1)) + 1
        keep = tf.cast(valid, features.dtype)[..., None]
        zeros = tf.zeros(tf.concat([tf.shape(features)[:2], [self.units]], 0), features.dtype)

        def level(n, h, c):
            h, c = self.cell.compose(features, h, c, children)
            return n + 1, h * keep, c * keep

        _, h, _ = tf.while_loop(lambda n, *_: n < levels, level, (tf.constant(0), zeros, zeros))
        if not self.return_sequences:
            h = tf.reduce_sum(h * tf.cast(valid & (parents == -1), h.dtype)[..., None], axis=1)
        (h,) = refuse_malformed([h], problems)
        return h

    def compute_output_shape(self, input_shape: list) -> tuple:
        batch, nodes = input_shape[0][0], input_shape[0][1]
        return (batch, nodes, self.units) if self.return_sequences else (batch, self.units)

    def compute_mask(self, inputs: list, mask: Any = None) -> Any:
        return features_mask(mask) if self.return_sequences else None

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "units": self.units,
            "return_sequences": self.return_sequences,
        }
