"""The hierarchical softmax (Morin & Bengio 2005; Mikolov et al. 2013) over a
binary tree of the vocabulary (`keras_rnncells.softmax.huffman`).

Every internal node n has a vector ``u_n`` and a bias ``c_n``; at a hidden
state h its score is ``s_n = h·u_n + c_n``, and a walk from the root turns
to its second child with probability ``σ(s_n)``, to its first with
``σ(−s_n) = 1 − σ(s_n)``. A word is the leaf its code ``b_1 … b_L`` (over the
nodes ``n_1 … n_L``) leads to:

    log p(w | h) = Σ_j log σ((2 b_j − 1) s_{n_j})

The leaves' probabilities sum to 1 at every node, so the model is normalized
by construction. Training reads the target's path alone (L ≈ log₂ V node
vectors per token, `path_log_probabilities`); serving gives every word's
log-probability (`every_log_probability`, V − 1 scores and a gather per
level of the tree).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keras_rnncells.softmax.huffman import HuffmanTree

__all__ = ["every_log_probability", "path_log_probabilities", "unigram_node_biases"]


def log_sigmoid(x: tf.Tensor) -> tf.Tensor:
    """log σ(x) as −softplus(−x) (exports to ONNX's Softplus)."""
    return -tf.nn.softplus(-x)


def path_log_probabilities(
    hidden: tf.Tensor,
    targets: tf.Tensor,
    tree: HuffmanTree,
    node_kernel: tf.Tensor,
    node_bias: tf.Tensor,
) -> tf.Tensor:
    """``log p(y | h)`` of each row of ``hidden`` (N, d) for its target
    (N,), from the nodes on the target's path alone."""
    nodes = tf.gather(tf.constant(tree.nodes), targets)  # (N, depth)
    bits = tf.cast(tf.gather(tf.constant(tree.bits), targets), hidden.dtype)
    on_path = tf.sequence_mask(tf.gather(tf.constant(tree.lengths), targets), tree.depth)
    scores = tf.einsum("nd,nld->nl", hidden, tf.gather(node_kernel, nodes))
    scores += tf.gather(node_bias, nodes)
    steps = log_sigmoid((2.0 * bits - 1.0) * scores)
    return tf.reduce_sum(tf.where(on_path, steps, tf.zeros_like(steps)), -1)


def every_log_probability(
    hidden: tf.Tensor, tree: HuffmanTree, node_kernel: tf.Tensor, node_bias: tf.Tensor
) -> tf.Tensor:
    """``log p(w | h)`` of every word w (N, V) for each row of ``hidden``
    (N, d), from the root down: the V − 1 node scores, then each level's
    nodes' log-probabilities from their parents' (`tree_levels`), then each
    word's from its last node's. Every node and word is gathered once, a
    row of (node, N) tables, and the result transposed once."""
    internal = tree.nodes.shape[0] - 1
    scores = tf.matmul(node_kernel, hidden, transpose_b=True) + node_bias[:, None]  # (V − 1, N)
    # rows: log σ(−s_n) (bit 0 of node n), then log σ(s_n) (bit 1)
    steps = tf.concat([log_sigmoid(-scores), log_sigmoid(scores)], 0)
    levels = tree_levels(tree)
    reached = tf.zeros_like(scores[:1])  # the root's log-probability, 0
    per_level = [reached]
    for _, parents, turns in levels:
        reached = tf.gather(reached, parents) + tf.gather(steps, turns)
        per_level.append(reached)
    every_node = tf.concat(per_level, 0)  # in level order
    order = np.concatenate([[internal - 1], *[nodes for nodes, _, _ in levels]])
    position = np.empty(internal, dtype="int64")
    position[order] = np.arange(internal)
    last = tree.lengths - 1
    words = np.arange(tree.nodes.shape[0])
    last_nodes, last_bits = tree.nodes[words, last], tree.bits[words, last]
    log_p = tf.gather(every_node, position[last_nodes]) + tf.gather(
        steps, last_nodes + internal * last_bits
    )
    return tf.transpose(log_p)


def tree_levels(tree: HuffmanTree) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The internal nodes below the root, level by level: per level, the
    nodes, each one's parent's position in the level above, and the row of
    ``steps`` (parent + (V − 1) · bit) that leads to it from there."""
    internal = tree.nodes.shape[0] - 1
    parent_turn = {}  # node -> (level, parent, bit)
    for nodes, bits, length in zip(tree.nodes, tree.bits, tree.lengths):
        for level in range(1, int(length)):
            parent_turn[int(nodes[level])] = (level, int(nodes[level - 1]), int(bits[level - 1]))
    levels: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    above = [internal - 1]  # the root
    for level in range(1, tree.depth):
        here = sorted(n for n, (at, _, _) in parent_turn.items() if at == level)
        if not here:
            break
        index = {node: position for position, node in enumerate(above)}
        parents = np.array([index[parent_turn[n][1]] for n in here], dtype="int64")
        turns = np.array(
            [parent_turn[n][1] + internal * parent_turn[n][2] for n in here], dtype="int64"
        )
        levels.append((np.array(here, dtype="int64"), parents, turns))
        above = here
    return levels


def unigram_node_biases(tree: HuffmanTree, probabilities: np.ndarray) -> np.ndarray:
    """The node biases ``c_n`` whose tree, where the vectors give nothing
    (h·u = 0), predicts ``probabilities`` (V,) exactly: ``σ(c_n)`` is the
    share of the node's probability under its second child."""
    under = np.zeros(tree.nodes.shape[0] - 1)
    second = np.zeros_like(under)
    for word, (nodes, bits, length) in enumerate(zip(tree.nodes, tree.bits, tree.lengths)):
        np.add.at(under, nodes[:length], probabilities[word])
        np.add.at(second, nodes[:length][bits[:length] == 1], probabilities[word])
    return np.log(second) - np.log(under - second)
