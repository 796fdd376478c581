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
    (N, d): the V − 1 node scores, then the sum over the tree's levels of
    each word's step at that level (0 past its leaf)."""
    internal = tree.nodes.shape[0] - 1
    scores = tf.matmul(hidden, node_kernel, transpose_b=True) + node_bias  # (N, V − 1)
    # columns: log σ(−s_n) (bit 0), log σ(s_n) (bit 1), then 0 (past the leaf)
    steps = tf.concat([log_sigmoid(-scores), log_sigmoid(scores), tf.zeros_like(scores[:, :1])], -1)
    columns = tree.nodes + internal * tree.bits
    columns[np.arange(tree.depth)[None, :] >= tree.lengths[:, None]] = 2 * internal
    log_p = tf.gather(steps, columns[:, 0], axis=-1)
    for level in range(1, tree.depth):
        log_p += tf.gather(steps, columns[:, level], axis=-1)
    return log_p


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
