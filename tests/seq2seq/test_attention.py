"""Attention: weights are a distribution over the unpadded source, 0 on padding."""

import keras
import numpy as np
import pytest

from keras_rnncells.seq2seq import Attention

MASK = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]], bool)  # full, padded, empty


@pytest.fixture
def memory(rng):
    return rng.normal(size=(3, 4, 5)).astype("float32")


@pytest.mark.parametrize("score", ["dot", "general", "concat"])
@pytest.mark.parametrize("steps", [None, 2])
def test_weights_sum_to_one_and_vanish_on_padding(score, steps, memory, rng):
    attention = Attention(score, units=6)
    query_shape = (3, 5) if steps is None else (3, steps, 5)
    query = rng.normal(size=query_shape).astype("float32")
    context, weights = (np.asarray(t) for t in attention(query, memory, MASK))
    assert weights.shape == (*query_shape[:-1], 4)
    assert context.shape == query_shape
    mask = MASK if steps is None else MASK[:, None, :]
    np.testing.assert_array_equal(weights * ~mask, 0.0)
    np.testing.assert_allclose(weights[:2].sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(weights[2], 0.0)  # empty source: no weight at all
    np.testing.assert_array_equal(context[2], 0.0)
    subscripts = "bs,bsd->bd" if steps is None else "bts,bsd->btd"
    np.testing.assert_allclose(context, np.einsum(subscripts, weights, memory), atol=1e-6)


def softmax(scores):
    exp = np.exp(scores - scores.max())
    return exp / exp.sum()


def test_scores_follow_their_equations(memory, rng):
    query = rng.normal(size=(3, 5)).astype("float32")
    valid = MASK[1]  # the padded row: two positions
    layers = {score: Attention(score, units=3) for score in ("dot", "general", "concat")}
    weights = {score: np.asarray(layer(query, memory, MASK)[1]) for score, layer in layers.items()}
    general, concat = layers["general"], layers["concat"]
    wq, wm, v = (
        np.asarray(w) for w in (concat.query_kernel, concat.memory_kernel, concat.score_vector)
    )
    scores = {
        "dot": np.einsum("bd,bsd->bs", query, memory),
        "general": np.einsum("bd,de,bse->bs", query, np.asarray(general.kernel), memory),
        "concat": np.tanh((query @ wq)[:, None, :] + memory @ wm) @ v,
    }
    for score in layers:
        np.testing.assert_allclose(
            weights[score][1, valid], softmax(scores[score][1, valid]), rtol=1e-5
        )


def test_bad_arguments_name_themselves(memory):
    with pytest.raises(ValueError, match="`score`"):
        Attention("cosine")
    with pytest.raises(ValueError, match="`units`"):
        Attention("concat", units=0)
    with pytest.raises(ValueError, match="query size"):
        Attention("dot")(np.zeros((3, 2), "float32"), memory)


def test_saves_with_its_configuration():
    attention = Attention("concat", units=7)
    clone = Attention.from_config(
        keras.saving.deserialize_keras_object(
            keras.saving.serialize_keras_object(attention)
        ).get_config()
    )
    assert (clone.score, clone.units) == ("concat", 7)
