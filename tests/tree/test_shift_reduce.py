"""`ShiftReduceEncoder` (binary Tree-LSTM and SPINN over transitions) against
NumPy recursions of the equations, node by node and row by row; padding,
masks, malformed rows, gradients, and a `.keras` file loaded in a fresh
process."""

from __future__ import annotations

import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.tree import (
    PAD,
    REDUCE,
    SHIFT,
    ShiftReduceEncoder,
    TransitionsFromTokens,
    TreeAndSequenceEncoder,
)

UNITS, FEATURES = 3, 4
S, R, P = SHIFT, REDUCE, PAD
# Trees of several shapes, padded right, left and in the middle; the last
# row is empty. Each has 9 steps.
TRANSITIONS = np.array(
    [
        [S, S, R, S, R, S, S, R, R],  # ((a b) c) (d e)
        [S, S, S, S, R, R, R, P, P],  # a (b (c d))
        [P, P, P, S, P, S, R, P, P],  # (a b) with holes
        [S, P, P, P, P, P, P, P, P],  # one leaf
        [P, P, P, P, P, P, P, P, P],  # empty
    ],
    dtype="int32",
)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def tree_lstm_node(weights, x, left, right):
    """Tai et al.'s binary Tree-LSTM node in NumPy; children are (h, c)."""
    kernel, recurrent, bias = weights
    gates = x @ kernel + np.concatenate([left[0], right[0]]) @ recurrent + bias
    i, f_left, f_right, o, u = np.split(gates, 5)
    c = sigmoid(i) * np.tanh(u) + sigmoid(f_left) * left[1] + sigmoid(f_right) * right[1]
    return sigmoid(o) * np.tanh(c), c


def lstm_step(weights, x, state):
    """Keras' LSTM step (gates i, f, c, o) in NumPy."""
    kernel, recurrent, bias = weights
    i, f, g, o = np.split(x @ kernel + state[0] @ recurrent + bias, 4)
    c = sigmoid(f) * state[1] + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


def reference(layer, features, transitions):
    """Each row on its own: a Python stack of (h, c) pairs, the tracking LSTM
    stepping on every non-padding transition. Returns the roots and every
    node's h at its step."""
    composition = [w.numpy().astype("float64") for w in layer.cell.weights]
    tracking = [w.numpy().astype("float64") for w in layer.tracker.weights] if layer.tracker else []
    zero = (np.zeros(UNITS), np.zeros(UNITS))
    roots, nodes = [], np.zeros((*transitions.shape, UNITS))
    for row, codes in enumerate(transitions):
        stack, root = [], np.zeros(UNITS)
        state = (np.zeros(layer.tracking_units),) * 2
        for t, code in enumerate(codes):
            if code == PAD:
                continue
            x = features[row, t]
            top = stack[-1] if stack else zero
            second = stack[-2] if len(stack) > 1 else zero
            if tracking:
                state = lstm_step(tracking, np.concatenate([x, top[0], second[0]]), state)
                x = np.concatenate([x, state[0]])
            if code == SHIFT:
                node = tree_lstm_node(composition, x, zero, zero)
            else:
                right, left = stack.pop(), stack.pop()
                node = tree_lstm_node(composition, x, left, right)
            stack.append(node)
            root = nodes[row, t] = node[0]
        roots.append(root)
    return np.array(roots), nodes


def randomized(layer, features, transitions, rng):
    layer([features, transitions])  # builds
    for weight in layer.weights:
        weight.assign(rng.normal(scale=0.5, size=weight.shape))
    return layer


@pytest.mark.parametrize("tracking_units", [0, 2], ids=["tree-lstm", "spinn"])
def test_matches_a_numpy_stack_machine(tracking_units):
    rng = np.random.default_rng(0)
    features = rng.normal(size=(*TRANSITIONS.shape, FEATURES))
    layer = ShiftReduceEncoder(UNITS, tracking_units=tracking_units, dtype="float64")
    randomized(layer, features, TRANSITIONS, rng)
    sequences = ShiftReduceEncoder.from_config(layer.get_config() | {"return_sequences": True})
    sequences([features, TRANSITIONS])
    sequences.set_weights(layer.get_weights())
    roots, nodes = reference(layer, features, TRANSITIONS)
    np.testing.assert_allclose(layer([features, TRANSITIONS]), roots, atol=1e-12)
    np.testing.assert_allclose(sequences([features, TRANSITIONS]), nodes, atol=1e-12)
    assert not np.any(roots[-1]) and np.any(roots[:-1], axis=-1).all()


def test_a_feature_mask_pads_and_rows_do_not_mix():
    """Masked steps are padding; a row's root does not depend on the others."""
    rng = np.random.default_rng(1)
    features = rng.normal(size=(*TRANSITIONS.shape, FEATURES)).astype("float32")
    layer = randomized(ShiftReduceEncoder(UNITS, tracking_units=2), features, TRANSITIONS, rng)
    padded = TRANSITIONS.copy()
    padded[1, 7:] = SHIFT  # masked below
    mask = np.ones(TRANSITIONS.shape, bool)
    mask[1, 7:] = False
    batched = layer([features, padded], mask=[mask, None])
    for row in range(len(TRANSITIONS)):
        alone = layer([features[row : row + 1], TRANSITIONS[row : row + 1]])
        np.testing.assert_allclose(batched[row : row + 1], alone, atol=1e-6)
    assert layer([features[:0], TRANSITIONS[:0]]).shape == (0, UNITS)


@pytest.mark.parametrize("composition", ["gru", "lstm"])
def test_a_registered_cell_composes(composition):
    """``cell([x; h_R], state_L)``, a leaf from the zero state, checked row by
    row against the cell's own ``call``."""
    rng = np.random.default_rng(2)
    features = rng.normal(size=(*TRANSITIONS.shape, FEATURES)).astype("float32")
    layer = ShiftReduceEncoder(UNITS, composition=composition)
    randomized(layer, features, TRANSITIONS, rng)
    cell = layer.cell
    zero = [np.zeros((1, size), "float32") for size in layer.state_sizes]
    roots = []
    for row, codes in enumerate(TRANSITIONS):
        stack, root = [], np.zeros((1, UNITS), "float32")
        for t, code in enumerate(codes):
            if code == PAD:
                continue
            left, right = (stack.pop(-2), stack.pop()) if code == REDUCE else (zero, zero)
            x = np.concatenate([features[row, t][None], right[0]], axis=-1)
            root, states = cell.call(x, left)
            stack.append([np.asarray(s) for s in states])
        roots.append(np.asarray(root)[0])
    np.testing.assert_allclose(layer([features, TRANSITIONS]), np.array(roots), atol=1e-6)


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(3)
    features = tf.constant(rng.normal(size=(*TRANSITIONS.shape, FEATURES)))
    layer = randomized(
        ShiftReduceEncoder(UNITS, tracking_units=2, dtype="float64"), features, TRANSITIONS, rng
    )
    projection = tf.constant(rng.normal(size=(UNITS,)))

    def loss():
        return tf.reduce_sum(layer([features, TRANSITIONS]) * projection)

    with tf.GradientTape() as tape:
        value = loss()
    gradients = tape.gradient(value, layer.trainable_weights)
    assert all(g is not None for g in gradients)
    for weight, gradient in zip(layer.trainable_weights, gradients):
        index = tuple(rng.integers(dim) for dim in weight.shape)
        original = weight.numpy()
        shifted = original.copy()
        shifted[index] += 1e-6
        weight.assign(shifted)
        numeric = (loss() - value) / 1e-6
        weight.assign(original)
        np.testing.assert_allclose(numeric, np.asarray(gradient)[index], rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize(
    "codes, problem",
    [
        ([S, S, 3, R], "codes must be 0 \\(pad\\), 1 \\(shift\\) or 2 \\(reduce\\); rows: \\[1\\]"),
        ([S, R, P, P], "a reduce needs two items on the stack; rows: \\[1\\]"),
        ([S, S, S, R], "a tree leaves one item on the stack, not more; rows: \\[1\\]"),
    ],
    ids=["unknown-code", "underflow", "two-left"],
)
def test_malformed_rows_are_refused(codes, problem):
    transitions = np.array([[S, S, R, P], codes], "int32")
    features = np.zeros((2, 4, FEATURES), "float32")
    layer = ShiftReduceEncoder(UNITS, name="encoder")
    with pytest.raises(ValueError, match=r"Argument `transitions` of layer 'encoder': " + problem):
        layer([features, transitions])
    graph = tf.function(lambda f, t: layer([f, t]))  # model.fit and serving run a graph
    with pytest.raises(tf.errors.InvalidArgumentError, match=problem.split(";")[0]):
        graph(features, transitions)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="Argument `composition` must be one of"):
        ShiftReduceEncoder(UNITS, composition="tree")
    with pytest.raises(ValueError, match="Argument `tracking_units`"):
        ShiftReduceEncoder(UNITS, tracking_units=-1)
    layer = ShiftReduceEncoder(UNITS)
    with pytest.raises(ValueError, match=r"Input `transitions` .* must be an integer tensor"):
        layer([np.zeros((1, 2, FEATURES), "float32"), np.zeros((1, 2), "float32")])


def postfix_model() -> keras.Model:
    """Token ids of postfix formulas (ids 3, 4 binary) → a SPINN root → logits."""
    keras.utils.set_random_seed(4)
    tokens = keras.Input((None,), dtype="int32", name="tokens")
    embedded = keras.layers.Embedding(6, FEATURES, mask_zero=True)(tokens)
    transitions = TransitionsFromTokens([3, 4])(tokens)
    root = ShiftReduceEncoder(UNITS, tracking_units=2)([embedded, transitions])
    return keras.Model(tokens, keras.layers.Dense(2)(root))


POSTFIX = np.array([[1, 2, 3, 1, 4, 0], [2, 1, 1, 3, 4, 0], [0, 0, 0, 0, 0, 2]], "int32")


def test_transitions_from_tokens():
    assert TransitionsFromTokens([3, 4])(POSTFIX).numpy().tolist() == [
        [S, S, R, S, R, P],
        [S, S, S, R, R, P],
        [P, P, P, P, P, S],
    ]


def test_keras_file_loads_in_a_fresh_process(tmp_path):
    model = postfix_model()
    expected = model.predict(POSTFIX, verbose=0)
    model.save(tmp_path / "spinn.keras")
    np.save(tmp_path / "tokens.npy", POSTFIX)
    script = (
        "import sys, numpy as np, keras, keras_rnncells\n"
        "model = keras.saving.load_model(sys.argv[1])\n"
        "np.save(sys.argv[3], model.predict(np.load(sys.argv[2]), verbose=0))\n"
    )
    paths = [tmp_path / name for name in ("spinn.keras", "tokens.npy", "out.npy")]
    subprocess.run([sys.executable, "-c", script, *map(str, paths)], check=True)
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), expected, atol=1e-6)


def test_tree_and_sequence_encoder_gives_words_and_phrases_to_attend_over():
    """Eriguchi et al. (2016): the tree's leaves are a sequence encoder's
    outputs; the memory holds the words' states, then the phrases' (REDUCE
    nodes) as the two layers give them composed by hand; attention over it
    never reads padding nor leaves twice, and the loss reaches the word layer
    through the tree."""
    from keras_rnncells.seq2seq import Attention

    keras.utils.set_random_seed(6)
    tokens = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(6, FEATURES, mask_zero=True)(tokens)
    transitions = TransitionsFromTokens([3, 4])(tokens)
    encoder = TreeAndSequenceEncoder(UNITS, cell="gru")
    memory, memory_mask, root = encoder([embedded, transitions])
    context, weights = Attention("general")(root, memory, memory_mask)
    model = keras.Model(tokens, [memory, memory_mask, root, context, weights])
    with tf.GradientTape() as tape:
        memory, memory_mask, root, context, weights = model(POSTFIX)
        loss = tf.reduce_sum(context**2)
    codes = TransitionsFromTokens([3, 4])(POSTFIX).numpy()
    present = POSTFIX != 0
    assert (
        np.asarray(memory_mask).tolist() == np.concatenate([present, codes == REDUCE], 1).tolist()
    )
    x = model.layers[1](POSTFIX)  # the embedding
    words = np.asarray(encoder.words(x, mask=present))
    phrases = ShiftReduceEncoder.from_config(
        encoder.phrases.get_config() | {"return_sequences": True}
    )
    phrases([words, codes])
    phrases.set_weights(encoder.phrases.get_weights())
    nodes = np.asarray(phrases([words, codes]))
    expected = np.concatenate([words * present[..., None], nodes * (codes == REDUCE)[..., None]], 1)
    np.testing.assert_allclose(memory, expected, atol=1e-6)
    last = [max(np.flatnonzero(row)) for row in present]
    np.testing.assert_allclose(root, nodes[np.arange(3), last], atol=1e-6)
    found = np.asarray(weights)
    assert found.shape == (3, 12) and not found[~np.asarray(memory_mask)].any()
    np.testing.assert_allclose(found.sum(axis=-1), 1.0, rtol=1e-6)
    (gradient,) = tape.gradient(loss, [encoder.words.cell.recurrent_kernel])
    assert gradient is not None and np.any(np.asarray(gradient))


def test_the_loop_compiles_with_xla_in_a_training_step():
    """``model.compile(jit_compile=True)``: XLA compiles the whole step, the
    encoder's loop and its gradient included, to the numbers of the graph."""
    targets = np.array([[1.0], [0.0], [1.0]], "float32")
    weights = []
    for jit_compile in (False, True):
        model = postfix_model()
        model.compile(keras.optimizers.SGD(0.5), "mse", jit_compile=jit_compile)
        model.fit(POSTFIX, targets, epochs=1, batch_size=3, verbose=0)
        weights.append(model.get_weights())
    assert not np.allclose(weights[1][-1], postfix_model().get_weights()[-1])  # it trained
    for graph, xla in zip(*weights):
        np.testing.assert_allclose(xla, graph, atol=1e-5)


def test_an_export_draws_example_trees():
    """`rnncells export` checks an artifact on examples the model takes:
    random ids would be malformed trees, so the transitions layer draws them."""
    from keras_rnncells.export import servable_from_model

    model = postfix_model()
    examples = servable_from_model(model).examples["tokens"]
    assert examples.shape == (2, 5) and (examples[1, -2:] == 0).all() and examples.min() >= 0
    assert np.isfinite(model(examples)).all()  # a malformed tree would raise
