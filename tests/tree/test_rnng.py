"""The generative RNNG and its oracle: trees to actions and back, a step-by-step
NumPy parser (lists as stacks) against the batched layer, padding anywhere,
malformed rows, the `.keras` round trip, and the export (a SavedModel served
as stock TF Serving serves it; ONNX in onnxruntime)."""

from __future__ import annotations

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.data.logic import GATES, random_formula
from keras_rnncells.tree import RNNG, ActionSpace, bracketed, postfix_tree

SPACE = ActionSpace(tuple(GATES)[:3], ("F", "T"))  # AND NAND OR; 7 ids with padding
TREES = [
    ("AND", "T", "F"),
    ("OR", ("AND", "T", "F"), "T"),
    ("NAND", "F", ("OR", "T", ("AND", "F", "F"))),
    ("OR", "T", "F", ("AND", "T"), "F"),  # n-ary and unary nodes
]


def padded(rows: list[list[int]], steps: int, lead: list[int] | None = None) -> np.ndarray:
    """The rows in a (len(rows), steps) array, row i starting at ``lead[i]``."""
    value = np.zeros((len(rows), steps), "int32")
    for i, row in enumerate(rows):
        start = 0 if lead is None else lead[i]
        value[i, start : start + len(row)] = row
    return value


def small_rnng(seed: int = 0) -> RNNG:
    """A built RNNG over `SPACE` with weights drawn from N(0, 0.5²), so every
    path of the equations moves the numbers."""
    layer = RNNG(len(SPACE.nonterminals), len(SPACE.terminals), units=5, embedding_dim=4)
    layer.build((None, None))
    rng = np.random.default_rng(seed)
    layer.set_weights([rng.normal(0, 0.5, w.shape) for w in layer.get_weights()])
    return layer


# -- the oracle -----------------------------------------------------------------------


def test_trees_round_trip_through_their_actions():
    rng = np.random.default_rng(0)
    formulas = [random_formula(int(rng.integers(1, 9)), rng, "tree")[0] for _ in range(50)]
    trees = [postfix_tree(f, tuple(GATES)) for f in formulas]
    space = ActionSpace(tuple(GATES), ("F", "T"))
    for tree in [*trees, *TREES]:
        actions = (SPACE if tree in TREES else space).actions(tree)
        assert (SPACE if tree in TREES else space).tree(actions) == tree
    tree = postfix_tree("T F AND T OR".split(), ("AND", "OR"))
    assert bracketed(tree) == "(OR (AND T F) T)"
    names = [SPACE.name(a) for a in SPACE.actions(tree)]
    assert names == ["NT(OR)", "NT(AND)", "GEN(T)", "GEN(F)", "REDUCE", "GEN(T)", "REDUCE"]
    # One action per bracketed token: "(X", a word, ")".
    assert len(names) == len(bracketed(tree).replace("(", "( ").split())


@pytest.mark.parametrize(
    ("actions", "problem"),
    [
        ([6, 1], "GEN(T) at step 0, where there is no open nonterminal"),
        ([2, 1], "REDUCE at step 1, where there is no open nonterminal with children"),
        ([2, 6, 1, 6], "GEN(T) at step 3, where the tree is complete"),
        ([2, 6], "it ends with the tree open"),
    ],
)
def test_sequences_that_are_not_trees_are_refused(actions, problem):
    with pytest.raises(ValueError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        SPACE.tree(actions)


def test_bad_trees_and_spaces_name_the_argument():
    with pytest.raises(ValueError, match="Argument `tree` must have a nonterminal at its root"):
        SPACE.actions("T")
    with pytest.raises(ValueError, match="Argument `tree` must be a terminal string"):
        SPACE.actions(("AND",))
    with pytest.raises(ValueError, match="Unknown terminal 'X'"):
        SPACE.actions(("AND", "X"))
    with pytest.raises(ValueError, match="Argument `terminals` must be a non-empty sequence"):
        ActionSpace(("AND",), ("T", "T"))
    with pytest.raises(ValueError, match="Argument `tokens` must spell one postfix tree"):
        postfix_tree(["T", "F"], ["AND"])


# -- the model against a step-by-step NumPy parser ------------------------------------


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def lstm(cell, x, state):
    """Keras' LSTM equations (gate blocks i, f, c, o) in float64."""
    kernel, recurrent, bias = (np.asarray(w, "float64") for w in cell.get_weights())
    h, c = state
    i, f, g, o = np.split(x @ kernel + h @ recurrent + bias, 4)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


def reference_log_probabilities(layer: RNNG, actions: list[int]) -> list[float]:
    """One sentence's log p(a_t | a_<t), parsing with Python lists: the stack
    a list of (item, h, c, open) entries, REDUCE popping back to the last open
    entry and composing [label, children] forwards and backwards."""
    weights = {w.path.split("/", 1)[1]: np.asarray(w, "float64") for w in layer.weights}
    n, units, width = layer.nonterminals, layer.units, layer.embedding_dim
    embeddings = weights["item_embeddings"]
    stack: list[tuple] = []
    zero_state = (np.zeros(units), np.zeros(units))
    terminals, history = zero_state, zero_state
    scores = []
    for a in actions:
        top = stack[-1][1] if stack else np.zeros(units)
        u = np.tanh(
            np.concatenate([top, terminals[0], history[0]]) @ weights["state_kernel"]
            + weights["state_bias"]
        )
        logits = u @ weights["action_kernel"] + weights["action_bias"]
        has_open = any(entry[3] for entry in stack)
        top_open = bool(stack) and stack[-1][3]
        valid = [has_open and not top_open] + [has_open or not stack] * n
        valid += [has_open] * layer.terminals
        logits = np.where(valid, logits, -np.inf)
        scores.append(logits[a - 1] - np.log(np.exp(logits - logits.max()).sum()) - logits.max())
        history = lstm(layer.history_cell, weights["action_embeddings"][a - 1], history)
        if a == 1:
            start = max(i for i, entry in enumerate(stack) if entry[3])
            label, children = stack[start][0], [entry[0] for entry in stack[start + 1 :]]
            forward = backward = (np.zeros(width), np.zeros(width))
            for x in [label, *children]:
                forward = lstm(layer.forward_cell, x, forward)
            for x in [label, *children[::-1]]:
                backward = lstm(layer.backward_cell, x, backward)
            item = np.tanh(
                np.concatenate([forward[0], backward[0]]) @ weights["composition_kernel"]
                + weights["composition_bias"]
            )
            del stack[start:]
            is_open = False
        else:
            item = embeddings[a - 2]
            is_open = a < 2 + n
            if not is_open:
                terminals = lstm(layer.terminals_cell, item, terminals)
        below = (stack[-1][1], stack[-1][2]) if stack else zero_state
        h, c = lstm(layer.stack_cell, item, below)
        stack.append((item, h, c, is_open))
    return scores


def test_matches_a_step_by_step_numpy_parser():
    layer = small_rnng()
    rows = [SPACE.actions(tree) for tree in TREES]
    batch = padded(rows, max(map(len, rows)))
    got = layer(batch).numpy()
    for i, row in enumerate(rows):
        expected = reference_log_probabilities(layer, row)
        np.testing.assert_allclose(got[i, : len(row)], expected, atol=1e-5)
        assert (got[i, len(row) :] == 0).all()
    # The same numbers in a graph (what model.fit and a served model run).
    graph = tf.function(lambda x: layer(x))(batch).numpy()
    np.testing.assert_allclose(graph, got, atol=1e-6)


def test_each_row_of_a_padded_batch_scores_alone():
    """Rows of different lengths, padded before, after and inside: each row's
    log-likelihoods are those of the row alone, unpadded."""
    layer = small_rnng(1)
    rows = [SPACE.actions(tree) for tree in TREES]
    alone = [layer(np.array([row], "int32")).numpy()[0] for row in rows]
    batch = padded(rows, 20, lead=[3, 0, 1, 2])
    batch[1] = np.insert(batch[1], 2, [0, 0])[:20]  # padding inside a row too
    got = layer(batch).numpy()
    for i in range(len(rows)):
        np.testing.assert_allclose(got[i][batch[i] != 0], alone[i], atol=1e-6)
        assert (got[i][batch[i] == 0] == 0).all()
    empty = layer(np.zeros((2, 4), "int32")).numpy()
    assert (empty == 0).all()


@pytest.mark.slow  # the gradient of the nested loops: a slow trace on 2 cores
def test_gradients_reach_every_weight():
    layer = small_rnng()
    batch = padded([SPACE.actions(tree) for tree in TREES], 14)
    with tf.GradientTape() as tape:
        loss = -tf.reduce_sum(tf.function(lambda x: layer(x))(batch))
    gradients = tape.gradient(loss, layer.trainable_weights)
    assert all(g is not None and float(tf.norm(g)) > 0 for g in gradients)


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ([2, 6, 9], r"ids must be in \[0, 6\]; rows: \[1\]"),
        ([6, 2, 1], "an action is not valid in its parser state; rows: \\[1\\]"),
        ([2, 2, 6, 1], "a row ends with its tree open; rows: \\[1\\]"),
    ],
)
def test_malformed_rows_are_refused(row, problem):
    layer = small_rnng()
    batch = padded([SPACE.actions(TREES[0]), row], 6)
    with pytest.raises(ValueError, match=problem):
        layer(batch)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.function(lambda x: layer(x))(batch)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="Argument `units` must be a positive integer"):
        RNNG(2, 2, 0)
    with pytest.raises(ValueError, match="Argument `nonterminals` must be a positive integer"):
        RNNG(0, 2, 3)
    with pytest.raises(ValueError, match="`actions`"):
        small_rnng()(np.zeros((2, 3), "float32"))


def scoring_model(seed: int = 0) -> keras.Model:
    actions = keras.Input((None,), dtype="int32", name="actions")
    layer = small_rnng(seed)
    return keras.Model(actions, layer(actions))


def test_keras_file_round_trip(tmp_path):
    model = scoring_model()
    batch = padded([SPACE.actions(tree) for tree in TREES], 14)
    expected = model.predict(batch, verbose=0)
    model.save(tmp_path / "rnng.keras")
    loaded = keras.saving.load_model(tmp_path / "rnng.keras")
    np.testing.assert_allclose(loaded.predict(batch, verbose=0), expected, atol=1e-6)
    assert isinstance(loaded.layers[-1], RNNG)
    assert loaded.layers[-1].get_config()["embedding_dim"] == 4


def test_an_export_draws_example_trees():
    from keras_rnncells.export import servable_from_model

    model = scoring_model()
    examples = servable_from_model(model).examples["actions"]
    for row in examples:
        SPACE.tree(row)  # raises unless each row is one tree
    assert np.isfinite(model(examples)).all()


@pytest.mark.slow  # exported, then run in two child processes
def test_export_serves_and_runs_in_onnxruntime(tmp_path, serve_like_tf_serving, run_onnx_in_child):
    from keras_rnncells.export import servable_from_model, write_onnx, write_saved_models

    model = scoring_model()
    rows = [SPACE.actions(tree) for tree in TREES]
    request = {"actions": padded(rows, 14, lead=[0, 2, 1, 0])}
    malformed = {"actions": request["actions"].copy()}
    malformed["actions"][1, 2] = 6  # GEN on the empty stack
    servable = servable_from_model(model, name="rnng")
    servable = dataclasses.replace(servable, examples={"actions": padded(rows[:2], 9)})
    expected = np.asarray(model(request["actions"]))
    (directory,) = write_saved_models([servable], tmp_path / "export")
    served = serve_like_tf_serving(
        [(directory, request), (directory, malformed)], tmp_path / "serve"
    )
    np.testing.assert_allclose(served[0]["output_0"], expected, atol=1e-5)
    assert isinstance(served[1], str) and "not valid in its parser state" in served[1]

    onnx_file = tmp_path / "onnx" / "rnng.onnx"
    write_onnx(servable, onnx_file)
    ran = run_onnx_in_child([(onnx_file, request), (onnx_file, malformed)], tmp_path / "run")
    np.testing.assert_allclose(ran[0]["output_0"], expected, atol=1e-4)
    nan_rows = np.isnan(ran[1]["output_0"]).any(axis=-1)
    assert nan_rows.tolist() == [False, True, False, False]
