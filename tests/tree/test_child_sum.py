"""`ChildSumTreeLSTM` against a NumPy recursion from each root down; nodes in
any order, padding nodes, malformed trees."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.tree import ChildSumTreeLSTM

UNITS, FEATURES = 3, 4
# Rows of 6 node slots: a root with three children (one of them with two),
# a chain given leaf first, a star with the root last, one node; padding
# slots (False in MASK) hold a parent that would be malformed if read.
PARENTS = np.array(
    [
        [-1, 0, 0, 0, 1, 1],
        [1, 2, 3, 4, 5, -1],
        [5, 5, 5, 5, 5, -1],
        [-1, 7, 7, 7, 7, 7],
        [9, 9, 9, 9, 9, 9],
    ],
    dtype="int32",
)
MASK = np.array([[1] * 6, [1] * 6, [1] * 6, [1, 0, 0, 0, 0, 0], [0] * 6], bool)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def reference(layer, features):
    """Each tree recursively from its root: Tai et al.'s child-sum equations."""
    kernel, recurrent, bias = (w.numpy() for w in layer.cell.weights)
    n = UNITS

    def node(row, j):
        children = [k for k in range(PARENTS.shape[1]) if MASK[row, k] and PARENTS[row, k] == j]
        states = [node(row, k) for k in children]
        x = features[row, j] @ kernel + bias
        h_sum = sum((h for h, _ in states), np.zeros(n))
        i, o, u = np.split(x[: 3 * n] + h_sum @ recurrent[:, : 3 * n], 3)
        c = sigmoid(i) * np.tanh(u)
        for h_k, c_k in states:
            c = c + sigmoid(x[3 * n :] + h_k @ recurrent[:, 3 * n :]) * c_k
        h = sigmoid(o) * np.tanh(c)
        hidden[row, j] = h
        return h, c

    hidden = np.zeros((*PARENTS.shape, n))
    roots = np.zeros((len(PARENTS), n))
    for row in range(len(PARENTS)):
        for j in np.flatnonzero(MASK[row] & (PARENTS[row] == -1)):
            roots[row] = node(row, j)[0]
    return roots, hidden


def test_matches_a_numpy_recursion():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(*PARENTS.shape, FEATURES))
    layer = ChildSumTreeLSTM(UNITS, dtype="float64")
    layer([features, PARENTS], mask=[MASK, None])
    for weight in layer.weights:
        weight.assign(rng.normal(scale=0.5, size=weight.shape))
    sequences = ChildSumTreeLSTM(UNITS, return_sequences=True, dtype="float64")
    sequences([features, PARENTS], mask=[MASK, None])
    sequences.set_weights(layer.get_weights())
    roots, hidden = reference(layer, features)
    np.testing.assert_allclose(layer([features, PARENTS], mask=[MASK, None]), roots, atol=1e-12)
    found = sequences([features, PARENTS], mask=[MASK, None])
    np.testing.assert_allclose(found, hidden, atol=1e-12)
    assert np.any(roots[:4], axis=-1).all() and not np.any(roots[4])


def test_gradients_reach_every_weight():
    rng = np.random.default_rng(1)
    features = tf.constant(rng.normal(size=(*PARENTS.shape, FEATURES)).astype("float32"))
    layer = ChildSumTreeLSTM(UNITS)
    with tf.GradientTape() as tape:
        tape.watch(features)
        loss = tf.reduce_sum(layer([features, PARENTS], mask=[MASK, None]) ** 2)
    gradients = tape.gradient(loss, [features, *layer.trainable_weights])
    assert all(g is not None and np.any(np.asarray(g)) for g in gradients)
    assert not np.any(np.asarray(gradients[0])[~MASK])  # padding nodes are not read


@pytest.mark.parametrize(
    "parents, problem",
    [
        ([-1, 0, 6], "a parent must be -1 \\(the root\\) or the index of a node of the tree"),
        ([-1, 0, -2], "a parent must be -1"),
        ([-1, 3, 0], "a parent must be -1"),  # node 3 is padding
        ([-1, -1, 0], "a tree has one root"),
        ([1, 2, 1], "a tree has one root"),
        ([-1, 2, 1], "a node must not be its own ancestor \\(a cycle\\)"),
    ],
    ids=["out-of-range", "negative", "padding-parent", "two-roots", "no-root", "cycle"],
)
def test_malformed_trees_are_refused(parents, problem):
    rows = np.array([[-1, 0, 0, 0], [*parents, 0]], "int32")
    mask = np.array([[1, 1, 1, 1], [1, 1, 1, 0]], bool)
    features = np.zeros((2, 4, FEATURES), "float32")
    layer = ChildSumTreeLSTM(UNITS, name="tree")
    with pytest.raises(ValueError, match=f"Argument `parents` of layer 'tree': {problem}.*\\[1\\]"):
        layer([features, rows], mask=[mask, None])
    graph = tf.function(lambda f, p, m: layer([f, p], mask=[m, None]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=problem):
        graph(features, rows, mask)
