"""The generative Recurrent Neural Network Grammar (Dyer, Kuncoro, Ballesteros
& Smith 2016, "Recurrent Neural Network Grammars", §4 and §5).

An RNNG defines the joint probability of a sentence ``x`` and its tree ``y``
through the tree's top-down actions ``a_1 .. a_T`` (`keras_rnncells.tree.oracle`:
``NT(X)``, ``GEN(w)``, ``REDUCE``):

    p(x, y) = Π_t p(a_t | a_<t),
    u_t = tanh(W [s_t; o_t; h_t] + c),
    p(a_t | a_<t) = softmax over the valid actions of (r_a · u_t + b_a),

with ``s_t`` the stack LSTM's summary of the stack, ``o_t`` the output
(terminals) LSTM's state over the words generated so far and ``h_t`` the
action-history LSTM's state over the actions so far (each zero before its
first input).

* The stack holds item vectors: an open nonterminal's embedding ``e_X``, a
  generated word's embedding ``e_w`` (the same embedding the terminals LSTM
  reads), or a closed constituent's composed vector. The stack LSTM's state
  at each position is its step from the state below on that item, so a push
  is one step and a pop returns to the state below; ``s_t`` is the top's
  ``h`` (zero for an empty stack).
* ``REDUCE`` pops the items back to the innermost open nonterminal ``X`` and
  composes ``[e_X, c_1, ..., c_n]``: a forward LSTM reads ``e_X, c_1, ...,
  c_n``, a backward LSTM ``e_X, c_n, ..., c_1`` (the label first in both
  directions, as in the paper), and ``tanh(W_c [h_fwd; h_bwd] + b_c)`` is
  pushed in X's place as one closed item.
* Valid actions (the probabilities are normalized over them, as the paper's
  implementation does): on the empty stack only ``NT``; ``NT`` and ``GEN``
  need an open nonterminal; ``REDUCE`` needs an open nonterminal with a
  child; after the root's ``REDUCE`` nothing (the sequence ends).

Simplifications against the paper: one softmax over all the actions (the
paper factors ``GEN``'s word choice through classes, for large vocabularies;
here ``p(GEN(w))`` is one entry of the softmax, which is the same model with a
flat output layer); zero vectors in place of the learned empty-stack guard
and the LSTMs' learned start states; no cap on the number of open
nonterminals.

`RNNG` is a Keras layer over a batch of action sequences ``(batch, steps)``
(ids of `keras_rnncells.tree.ActionSpace`; 0 is padding, anywhere, a step
doing nothing), giving each step's ``log p(a_t | a_<t)`` (zero at padding):
the row's sum is ``log p(x, y)``. Every row runs in one ``tf.while_loop`` over
the steps, stacks held in tensors written with a mask (as
`keras_rnncells.tree.ShiftReduceEncoder`), and the composition in a nested
loop over the reducing rows' children (as many steps as the longest of them,
none when no row reduces). A row that is not one tree's actions (an unknown
id, an invalid action, a tree left open) is refused
(`keras_rnncells.tree.malformed`): a ``ValueError`` in an eager call, an
``InvalidArgumentError`` in a graph, NaN rows where no error can be raised.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_rnncells.cells.base import as_state_list
from keras_rnncells.cells.registry import get_cell
from keras_rnncells.checks import check_input, check_positive_int
from keras_rnncells.tree.malformed import refuse_malformed
from keras_rnncells.tree.oracle import PAD_ACTION, REDUCE_ACTION
from keras_rnncells.tree.shift_reduce import stack_item

Tensor = Any
INVALID_LOGIT = -1e9


def masked_step(cell: keras.layers.Layer, x: Tensor, state: list, active: Tensor) -> list:
    """``cell``'s new state on ``x`` where ``active`` (batch,), ``state`` elsewhere."""
    _, new = cell.call(x, state, False)
    return [tf.where(active[:, None], n, s) for n, s in zip(as_state_list(new), state)]


@keras.saving.register_keras_serializable(package="keras_rnncells")
class RNNG(keras.layers.Layer):
    """A generative RNNG scoring action sequences (see the module).

    Call it on action ids ``(batch, steps)``; it returns ``log p(a_t | a_<t)``
    ``(batch, steps)``, zero at padding; ``log p(x, y)`` is a row's sum.

    Args:
        nonterminals: the number of nonterminal labels ``N`` (ids ``2 ..
            N + 1`` open them).
        terminals: the number of words ``V`` (ids ``N + 2 .. N + V + 1``).
        units: units of the stack, terminals and history LSTMs and of ``u_t``.
        embedding_dim: size of the item and action embeddings and of the
            composed vectors (and each composition LSTM's units); default
            ``units``.
    """

    def __init__(
        self,
        nonterminals: int,
        terminals: int,
        units: int,
        embedding_dim: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.nonterminals = check_positive_int("nonterminals", nonterminals)
        self.terminals = check_positive_int("terminals", terminals)
        self.units = check_positive_int("units", units)
        self.embedding_dim = check_positive_int(
            "embedding_dim", units if embedding_dim is None else embedding_dim
        )
        lstm = get_cell("lstm")
        policy = self.dtype_policy
        self.stack_cell = lstm(self.units, name="stack", dtype=policy)
        self.terminals_cell = lstm(self.units, name="terminals", dtype=policy)
        self.history_cell = lstm(self.units, name="history", dtype=policy)
        self.forward_cell = lstm(self.embedding_dim, name="compose_forward", dtype=policy)
        self.backward_cell = lstm(self.embedding_dim, name="compose_backward", dtype=policy)

    @property
    def actions(self) -> int:
        """The number of actions (padding not counted): REDUCE, N NTs, V GENs."""
        return 1 + self.nonterminals + self.terminals

    def build(self, input_shape: tuple) -> None:
        width, units = self.embedding_dim, self.units
        uniform = keras.initializers.RandomUniform(-0.05, 0.05)
        self.item_embeddings = self.add_weight(
            (self.nonterminals + self.terminals, width), uniform, name="item_embeddings"
        )
        self.action_embeddings = self.add_weight(
            (self.actions, width), uniform, name="action_embeddings"
        )
        for cell in (self.stack_cell, self.terminals_cell, self.history_cell):
            cell.build((None, width))
        for cell in (self.forward_cell, self.backward_cell):
            cell.build((None, width))
        self.composition_kernel = self.add_weight(
            (2 * width, width), "glorot_uniform", name="composition_kernel"
        )
        self.composition_bias = self.add_weight((width,), "zeros", name="composition_bias")
        self.state_kernel = self.add_weight(
            (3 * units, units), "glorot_uniform", name="state_kernel"
        )
        self.state_bias = self.add_weight((units,), "zeros", name="state_bias")
        self.action_kernel = self.add_weight(
            (units, self.actions), "glorot_uniform", name="action_kernel"
        )
        self.action_bias = self.add_weight((self.actions,), "zeros", name="action_bias")

    def call(self, actions: Tensor) -> Tensor:
        check_input(self, "actions", actions, ("batch", "steps"), dtype="integer")
        (log_probabilities,) = self.run(tf.cast(actions, "int32"))
        return log_probabilities

    def valid_actions(self, depth: Tensor, opens: Tensor, top_open: Tensor) -> Tensor:
        """(batch, actions) booleans: the actions each row may take next."""
        has_open = opens > 0
        return tf.concat(
            [
                (has_open & ~top_open)[:, None],
                tf.tile((has_open | (depth == 0))[:, None], [1, self.nonterminals]),
                tf.tile(has_open[:, None], [1, self.terminals]),
            ],
            axis=-1,
        )

    def compose(
        self, items: Tensor, start: Tensor, depth: Tensor, reduce: Tensor, steps: Tensor
    ) -> Tensor:
        """The composed vector of each reducing row's constituent: its label at
        ``start`` and its children at ``start + 1 .. depth - 1`` of ``items``."""
        children = tf.where(reduce, depth - start - 1, 0)
        reads = tf.maximum(tf.reduce_max(tf.where(reduce, children + 1, 0)), 0)
        zeros = tf.zeros((tf.shape(items)[0], self.embedding_dim), items.dtype)

        def body(k, forward, backward):
            active = reduce & (k <= children)
            backward_at = tf.where(k == 0, start, depth - k)
            forward = masked_step(self.forward_cell, stack_item(items, start + k), forward, active)
            backward = masked_step(
                self.backward_cell, stack_item(items, backward_at), backward, active
            )
            return k + 1, forward, backward

        _, forward, backward = tf.while_loop(
            lambda k, *_: k < reads,
            body,
            (tf.constant(0), [zeros, zeros], [zeros, zeros]),
            maximum_iterations=steps,
        )
        joined = tf.concat([forward[0], backward[0]], axis=-1)
        return tf.tanh(tf.matmul(joined, self.composition_kernel) + self.composition_bias)

    def run(self, actions: Tensor) -> list[Tensor]:
        """Each step's log-probability (batch, steps), malformed rows refused."""
        codes = tf.transpose(actions)
        steps, batch = tf.shape(codes)[0], tf.shape(codes)[1]
        dtype = self.compute_dtype
        first_word = 2 + self.nonterminals
        positions = tf.range(steps)[None, :]
        width, units = self.embedding_dim, self.units

        def body(t, items, stack_h, stack_c, opened, depth, terminal, history, bad, scores):
            code = codes[t]
            active = code != PAD_ACTION
            known = (code >= 0) & (code <= self.actions)
            code = tf.where(known, code, PAD_ACTION)
            action = tf.maximum(code - 1, 0)  # row of the action's logit and embedding
            open_below = opened & (positions < depth[:, None])
            opens = tf.reduce_sum(tf.cast(open_below, "int32"), axis=-1)
            top = tf.maximum(depth - 1, 0)
            top_open = tf.gather(opened, top, batch_dims=1) & (depth > 0)
            valid = self.valid_actions(depth, opens, top_open)

            summary = tf.concat([stack_item(stack_h, depth - 1), terminal[0], history[0]], -1)
            state = tf.tanh(tf.matmul(summary, self.state_kernel) + self.state_bias)
            logits = tf.matmul(state, self.action_kernel) + self.action_bias
            logits = tf.where(valid, logits, tf.constant(INVALID_LOGIT, logits.dtype))
            log_probabilities = tf.nn.log_softmax(logits)
            chosen = tf.gather(log_probabilities, action, batch_dims=1)
            legal = tf.gather(valid, action, batch_dims=1)
            bad = bad | tf.stack([active & ~known, active & known & ~legal], axis=-1)
            scores = scores.write(t, tf.where(active, chosen, tf.zeros_like(chosen)))

            taken = active & known & legal
            reduce = taken & (code == REDUCE_ACTION)
            generate = taken & (code >= first_word)
            open_nt = taken & ~reduce & ~generate
            history = masked_step(
                self.history_cell, tf.gather(self.action_embeddings, action), history, taken
            )
            word = tf.gather(self.item_embeddings, tf.clip_by_value(code - 2, 0, self.actions - 2))
            terminal = masked_step(self.terminals_cell, word, terminal, generate)
            start = tf.reduce_max(tf.where(open_below, positions, -1), axis=-1)
            composed = self.compose(items, start, depth, reduce, steps)
            item = tf.where(reduce[:, None], composed, word)  # word: e_X for an NT too
            position = tf.where(reduce, start, depth)
            below = [stack_item(stack_h, position - 1), stack_item(stack_c, position - 1)]
            _, (h, c) = self.stack_cell.call(item, below, False)
            written = (positions == position[:, None]) & taken[:, None]
            items = tf.where(written[..., None], item[:, None], items)
            stack_h = tf.where(written[..., None], h[:, None], stack_h)
            stack_c = tf.where(written[..., None], c[:, None], stack_c)
            opened = tf.where(written, open_nt[:, None], opened)
            depth = tf.where(taken, position + 1, depth)
            return t + 1, items, stack_h, stack_c, opened, depth, terminal, history, bad, scores

        zeros = tf.zeros((batch, units), dtype)
        start = (
            tf.constant(0),
            tf.zeros((batch, steps, width), dtype),
            tf.zeros((batch, steps, units), dtype),
            tf.zeros((batch, steps, units), dtype),
            tf.zeros((batch, steps), bool),
            tf.zeros((batch,), "int32"),
            [zeros, zeros],
            [zeros, zeros],
            tf.zeros((batch, 2), bool),
            tf.TensorArray(dtype, size=steps, element_shape=(None,)),
        )
        result = tf.while_loop(lambda t, *_: t < steps, body, start, maximum_iterations=steps)
        opened, depth, bad, scores = result[4], result[5], result[8], result[9]
        left_open = tf.reduce_any(opened & (positions < depth[:, None]), axis=-1)
        where = f"Argument `actions` of layer {self.name!r}"
        problems = [
            (bad[:, 0], f"{where}: ids must be in [0, {self.actions}]; rows:"),
            (bad[:, 1], f"{where}: an action is not valid in its parser state; rows:"),
            ((depth > 1) | left_open, f"{where}: a row ends with its tree open; rows:"),
        ]
        return refuse_malformed([tf.transpose(scores.stack())], problems)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def example_ids(self, shape: tuple[int, int], ids: int, rng: np.random.Generator) -> np.ndarray:
        """Action ids that spell trees, (batch, steps) = ``shape``, for an
        export's parity checks (`keras_rnncells.export` asks a model's layers
        for them; random ids would not be trees): each row a random right
        chain ``NT GEN NT GEN ... REDUCE REDUCE``, the second row two steps
        shorter, right-padded. ``ids`` is not read."""
        batch, steps = shape
        value = np.zeros(shape, "int64")
        for row in range(batch):
            opens = max(steps - (2 if row == 1 else 0), 0) // 3
            sequence = []
            for _ in range(opens):
                sequence += [2 + int(rng.integers(self.nonterminals)), self.word_id(rng)]
            value[row, : 3 * opens] = sequence + [REDUCE_ACTION] * opens
        return value

    def word_id(self, rng: np.random.Generator) -> int:
        """A random ``GEN`` id."""
        return 2 + self.nonterminals + int(rng.integers(self.terminals))

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "nonterminals": self.nonterminals,
            "terminals": self.terminals,
            "units": self.units,
            "embedding_dim": self.embedding_dim,
        }
