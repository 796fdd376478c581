"""Composition along shift-reduce transitions: a binary Tree-LSTM over
batched trees, and SPINN (Bowman, Gauthier, Rastogi, Gupta, Manning & Potts
2016, "A Fast Unified Model for Parsing and Sentence Understanding").

A tree in postfix order is a transition sequence: one transition per node,
``SHIFT`` for a leaf and ``REDUCE`` for a node of two children (the two items
on top of the stack, the top one its right child), with ``PAD`` steps doing
nothing (padding, anywhere in the row). Each transition reads its node's
features ``x_t`` (a token's embedding, or a sequence encoder's output at
that token).

`ShiftReduceEncoder` runs every row of a batch through one ``tf.while_loop``
over the transitions, with no Python per node: at step t each row's node is
composed from ``x_t`` and the two items on its stack (zero children for a
SHIFT, so one composition serves both) and written at its stack position:

* ``composition="treelstm"``: the binary Tree-LSTM unit
  (`keras_rnncells.tree.BinaryTreeLSTMCell`), a stack item being ``[h, c]``;
* a registered cell's name (``"gru"``, ``"mgu"``, ...): the node's state is
  the cell's step from the left child's state on the input ``[x_t; h_R]``
  (``h_R`` the right child's first state), ``cell([x_t; h_R], state_L)``; a
  leaf steps from the zero state;
* ``tracking_units > 0`` (SPINN's tracking LSTM): an LSTM reads
  ``[x_t; h_top; h_second]`` at every non-padding step and its output joins
  the composition's input, ``x_t → [x_t; h_tracking]``.

Without tracking and with ``"treelstm"`` the encoder is the Tree-LSTM of Tai
et al. (2015) evaluated by transition; with tracking it is SPINN with its
buffer read in postfix order (the transitions here interleave the leaves, so
SPINN's "top of the buffer" is the current step's ``x_t``).

The output is the root's output (``h``), or with ``return_sequences`` every
node's output at its transition's step (zeros at padding): phrase vectors for
attention. A malformed row (an unknown code, a REDUCE with fewer than two
items on the stack, more than one item left at the end) is refused
(`keras_rnncells.tree.malformed`): a ``ValueError`` naming it in an eager
call, an ``InvalidArgumentError`` in ``model.fit`` and in a served
SavedModel, NaN in its output from an ONNX runtime.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_rnncells.cells.base import as_state_list
from keras_rnncells.cells.registry import get_cell, list_cells
from keras_rnncells.checks import check_choice, check_input, check_integer, check_positive_int
from keras_rnncells.tree.malformed import refuse_malformed
from keras_rnncells.tree.tree_lstm import BinaryTreeLSTMCell

Tensor = Any

PAD, SHIFT, REDUCE = 0, 1, 2
TREE_LSTM = "treelstm"


def features_mask(mask: Any) -> Any:
    """The Keras mask of a tree layer's first input, its features (None
    without one), from what Keras passes for ``[features, structure]``."""
    return mask[0] if isinstance(mask, (list, tuple)) else mask


def padded_transitions(transitions: Tensor, mask: Any) -> Tensor:
    """``transitions`` as int32, `PAD` where the features' Keras mask is false."""
    transitions = tf.cast(transitions, "int32")
    feature_mask = features_mask(mask)
    if feature_mask is None:
        return transitions
    return tf.where(tf.cast(feature_mask, bool), transitions, PAD)


def stack_item(stack: Tensor, index: Tensor) -> Tensor:
    """Each row's item ``index`` (batch,) of ``stack`` (batch, depth, width),
    zero where ``index`` is negative."""
    item = tf.gather(stack, tf.maximum(index, 0), batch_dims=1)
    return item * tf.cast(index >= 0, item.dtype)[:, None]


@keras.saving.register_keras_serializable(package="keras_rnncells")
class ShiftReduceEncoder(keras.layers.Layer):
    """A tree encoder over shift-reduce transitions (see the module).

    Call it on ``[features, transitions]``: ``features`` (batch, steps,
    input_dim) floats, ``transitions`` (batch, steps) integers, `PAD` (0),
    `SHIFT` (1) or `REDUCE` (2). A Keras mask on ``features`` turns masked
    steps into padding.

    Args:
        units: the composition's units.
        composition: ``"treelstm"`` or a registered cell's name.
        tracking_units: units of SPINN's tracking LSTM (0: none).
        return_sequences: every node's output instead of the root's.
    """

    def __init__(
        self,
        units: int,
        composition: str = TREE_LSTM,
        tracking_units: int = 0,
        return_sequences: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.composition = check_choice("composition", composition, [TREE_LSTM, *list_cells()])
        self.tracking_units = check_integer("tracking_units", tracking_units, 0)
        self.return_sequences = bool(return_sequences)
        if composition == TREE_LSTM:
            self.cell = BinaryTreeLSTMCell(units, name="composition", dtype=self.dtype_policy)
        else:
            self.cell = get_cell(composition)(units, name="composition", dtype=self.dtype_policy)
        self.tracker = None
        if self.tracking_units:
            self.tracker = get_cell("lstm")(
                self.tracking_units, name="tracking", dtype=self.dtype_policy
            )
        self.supports_masking = True

    @property
    def state_sizes(self) -> list[int]:
        return as_state_list(self.cell.state_size)

    def build(self, input_shape: list) -> None:
        features = input_shape[0][-1]
        summary = self.state_sizes[0]
        if self.tracker is not None:
            self.tracker.build((None, features + 2 * summary))
        composed = features + self.tracking_units
        self.cell.build((None, composed if self.composition == TREE_LSTM else composed + summary))

    def compose(self, x: Tensor, left: list, right: list, training: bool) -> tuple[Tensor, list]:
        """A node's output and states from its input and its children's states."""
        if self.composition == TREE_LSTM:
            node = self.cell.compose(x, left, right)
            return node[0], node
        output, states = self.cell.call(ops.concatenate([x, right[0]], axis=-1), left, training)
        return output, as_state_list(states)

    def call(self, inputs: list, mask: Any = None, training: bool = False) -> Tensor:
        features, transitions = inputs
        check_input(self, "features", features, ("batch", "steps", "features"), dtype="float")
        check_input(self, "transitions", transitions, ("batch", "steps"), dtype="integer")
        transitions = padded_transitions(transitions, mask)
        nodes, root = self.run(tf.convert_to_tensor(features), transitions, training)
        return nodes if self.return_sequences else root

    def run(self, features: Tensor, transitions: Tensor, training: bool) -> list[Tensor]:
        """Every node's output at its step (batch, steps, output_size; zero
        at padding) and the root's (batch, output_size), malformed rows
        refused (`refuse_malformed`)."""
        x_steps = tf.transpose(features, (1, 0, 2))
        codes = tf.transpose(transitions)
        steps, batch = tf.shape(x_steps)[0], tf.shape(x_steps)[1]
        sizes = self.state_sizes
        zeros = tf.zeros((batch, self.tracking_units), features.dtype)
        output_size = self.cell.output_size

        def body(t, stack, depth, bad, last, tracking, outputs):
            code, x = codes[t], x_steps[t]
            shift, reduce = code == SHIFT, code == REDUCE
            active = shift | reduce
            bad = bad | tf.stack([~(active | (code == PAD)), reduce & (depth < 2)], axis=-1)
            top, second = stack_item(stack, depth - 1), stack_item(stack, depth - 2)
            if self.tracker is not None:
                read = tf.concat([x, top[:, : sizes[0]], second[:, : sizes[0]]], axis=-1)
                _, new = self.tracker.call(read, tracking, training)
                tracking = [tf.where(active[:, None], n, s) for n, s in zip(new, tracking)]
                x = tf.concat([x, tracking[0]], axis=-1)
            children = [tf.where(reduce[:, None], item, 0.0) for item in (second, top)]
            left, right = (tf.split(child, sizes, axis=-1) for child in children)
            output, node = self.compose(x, left, right, training)
            position = tf.where(shift, depth, depth - 2)
            written = (tf.range(steps)[None, :] == position[:, None]) & active[:, None]
            stack = tf.where(written[..., None], tf.concat(node, axis=-1)[:, None], stack)
            depth = depth + tf.where(shift, 1, tf.where(reduce, -1, 0))
            last = tf.where(active[:, None], output, last)
            outputs = outputs.write(t, tf.where(active[:, None], output, 0.0))
            return t + 1, stack, depth, bad, last, tracking, outputs

        start = (
            tf.constant(0),
            tf.zeros((batch, steps, sum(sizes)), features.dtype),
            tf.zeros((batch,), "int32"),
            tf.zeros((batch, 2), bool),
            tf.zeros((batch, output_size), features.dtype),
            [zeros, zeros] if self.tracker is not None else [],
            tf.TensorArray(features.dtype, size=steps, element_shape=(None, output_size)),
        )
        _, _, depth, bad, last, _, outputs = tf.while_loop(
            lambda t, *_: t < steps, body, start, maximum_iterations=steps
        )
        where = f"Argument `transitions` of layer {self.name!r}"
        codes = "codes must be 0 (pad), 1 (shift) or 2 (reduce)"
        problems = [
            (bad[:, 0], f"{where}: {codes}; rows:"),
            (bad[:, 1], f"{where}: a reduce needs two items on the stack; rows:"),
            (depth > 1, f"{where}: a tree leaves one item on the stack, not more; rows:"),
        ]
        return refuse_malformed([tf.transpose(outputs.stack(), (1, 0, 2)), last], problems)

    def compute_output_shape(self, input_shape: list) -> tuple:
        batch, steps = input_shape[0][0], input_shape[0][1]
        size = self.cell.output_size
        return (batch, steps, size) if self.return_sequences else (batch, size)

    def compute_mask(self, inputs: list, mask: Any = None) -> Any:
        if not self.return_sequences:
            return None
        return ops.not_equal(inputs[1], PAD)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "units": self.units,
            "composition": self.composition,
            "tracking_units": self.tracking_units,
            "return_sequences": self.return_sequences,
        }


@keras.saving.register_keras_serializable(package="keras_rnncells")
class TransitionsFromTokens(keras.layers.Layer):
    """Token ids of postfix trees (batch, steps) → their transitions: id 0 is
    `PAD`, the ids in ``reduce_ids`` (binary operators) are `REDUCE`, every
    other id `SHIFT`. For the logic task, ``reduce_ids`` are its gates."""

    def __init__(self, reduce_ids: list[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reduce_ids = sorted(check_integer("reduce_ids", i, 1) for i in reduce_ids)

    def call(self, tokens: Tensor) -> Tensor:
        tokens = ops.cast(tokens, "int32")
        reduce = ops.any(ops.equal(tokens[..., None], self.reduce_ids), axis=-1)
        return ops.where(tokens == PAD, PAD, ops.where(reduce, REDUCE, SHIFT))

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return input_shape

    def example_ids(self, shape: tuple[int, int], ids: int, rng: np.random.Generator) -> np.ndarray:
        """Token ids below ``ids`` that spell trees, (batch, steps) = ``shape``:
        what an export's parity check runs (`keras_rnncells.export`'s examples
        ask a model's layers for them; random ids would be malformed trees).
        Each row is a chain ``leaf leaf op leaf op ...`` of an odd length, the
        second row two steps shorter, right-padded."""
        leaves = [i for i in range(1, ids) if i not in self.reduce_ids]
        operators = [i for i in self.reduce_ids if i < ids]
        if not leaves or not operators:
            raise ValueError(
                f"Layer {self.name!r} cannot draw example trees below id {ids}: it needs a "
                f"leaf id and one of the operator ids {self.reduce_ids}"
            )
        batch, steps = shape
        value = np.zeros(shape, "int64")
        for row in range(batch):
            length = steps - (2 if row == 1 else 0)
            length -= 1 - length % 2  # a tree has an odd number of nodes
            for t in range(max(length, 0)):
                pool = operators if t >= 2 and t % 2 == 0 else leaves
                value[row, t] = rng.choice(pool)
        return value

    def get_config(self) -> dict:
        return {**super().get_config(), "reduce_ids": self.reduce_ids}
