"""`keras_rnncells.MemoryNetwork` (MemN2N): the equations against NumPy,
padding and the memory's size, argument and input errors, a `.keras` round
trip, and the export as SavedModel (served as stock TF Serving serves it) and
ONNX (onnxruntime without TensorFlow)."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import keras_rnncells as kr
from keras_rnncells.export import servable_from_model, write_onnx, write_saved_models

VOCABULARY = 13
DIM = 6
ANSWERS = 5


def weights_of(layer: kr.MemoryNetwork) -> dict:
    return {
        "E": [np.asarray(e.embeddings) for e in layer.embeddings],
        "T": [np.asarray(t) for t in layer.temporal],
        "W": np.asarray(layer.answer.kernel),
        "H": None if layer.map is None else np.asarray(layer.map.kernel),
    }


def reference(layer: kr.MemoryNetwork, story: np.ndarray, question: np.ndarray) -> np.ndarray:
    """The paper's equations, one example and one sentence at a time."""
    w = weights_of(layer)
    d, hops = layer.embedding_dim, layer.hops
    adjacent = layer.weight_tying == "adjacent"
    a_of = (lambda k: k) if adjacent else (lambda k: 0)
    c_of = (lambda k: k + 1) if adjacent else (lambda k: 1)
    b = 0 if adjacent else 2

    def sentence_vector(E: np.ndarray, ids) -> np.ndarray:
        ids = [i for i in ids if i != 0]
        J = len(ids)
        total = np.zeros(d)
        for j, word in enumerate(ids, start=1):
            if layer.position_encoding:
                k = np.arange(1, d + 1)
                weight = (1 - j / J) - (k / d) * (1 - 2 * j / J)
            else:
                weight = np.ones(d)
            total += weight * E[word]
        return total

    answers = []
    for sentences, q in zip(story, question):
        kept = [s for s in sentences if np.any(s != 0)]
        if layer.memory_size is not None:
            kept = kept[-layer.memory_size :] if kept else kept
        n = len(kept)
        u = sentence_vector(w["E"][b], q)
        for hop in range(hops):
            if n == 0:
                o = np.zeros(d)
            else:
                m = np.stack([sentence_vector(w["E"][a_of(hop)], s) for s in kept])
                c = np.stack([sentence_vector(w["E"][c_of(hop)], s) for s in kept])
                if layer.temporal_encoding:
                    back = [n - 1 - i for i in range(n)]  # 0 = the last sentence
                    m = m + w["T"][a_of(hop)][back]
                    c = c + w["T"][c_of(hop)][back]
                scores = m @ u
                if layer.attention == "linear":  # linear start: no softmax
                    p = scores
                else:
                    p = np.exp(scores - scores.max())
                    p /= p.sum()
                o = p @ c
            if hop < hops - 1 and w["H"] is not None:
                u = u @ w["H"] + o
            else:
                u = u + o
        answers.append(u @ w["W"])
    return np.array(answers)


def random_inputs(seed: int = 0, batch: int = 3, sentences: int = 5, words: int = 4):
    rng = np.random.default_rng(seed)
    story = rng.integers(1, VOCABULARY, size=(batch, sentences, words))
    story[0, 1, 2:] = 0  # a short sentence
    story[1, 3:] = 0  # padding sentences
    story[2, 2] = 0  # an empty sentence inside the story
    question = rng.integers(1, VOCABULARY, size=(batch, 3))
    question[1, 2:] = 0
    return story.astype("int32"), question.astype("int32")


def randomized(layer: kr.MemoryNetwork, seed: int = 1) -> kr.MemoryNetwork:
    """``layer`` built, every weight drawn at random (temporal rows distinct)."""
    layer([np.ones((1, 2, 1), "int32"), np.ones((1, 1), "int32")])
    rng = np.random.default_rng(seed)
    for weight in layer.weights:
        weight.assign(rng.normal(scale=0.5, size=weight.shape).astype("float32"))
    return layer


CONFIGURATIONS = {
    "adjacent": {},
    "layerwise-H": {"weight_tying": "layerwise", "hidden_map": True},
    "adjacent-H-bag-of-words": {"hidden_map": True, "position_encoding": False},
    "no-temporal": {"temporal_encoding": False, "memory_size": None, "hops": 2},
    "one-hop-memory-3": {"hops": 1, "memory_size": 3},
    "linear-start": {"attention": "linear"},
}


@pytest.mark.parametrize("name", CONFIGURATIONS)
def test_matches_numpy_reference(name):
    options = {"hops": 3, "memory_size": 8, **CONFIGURATIONS[name]}
    layer = randomized(kr.MemoryNetwork(VOCABULARY, DIM, ANSWERS, **options))
    story, question = random_inputs()
    found = np.asarray(layer([story, question]))
    np.testing.assert_allclose(found, reference(layer, story, question), rtol=1e-5, atol=1e-5)


def test_weight_counts_follow_the_tying():
    adjacent = randomized(kr.MemoryNetwork(VOCABULARY, DIM, ANSWERS, hops=3))
    layerwise = randomized(
        kr.MemoryNetwork(VOCABULARY, DIM, ANSWERS, hops=3, weight_tying="layerwise")
    )
    assert (len(adjacent.embeddings), len(adjacent.temporal)) == (4, 4)  # K + 1
    assert (len(layerwise.embeddings), len(layerwise.temporal)) == (3, 3)  # A, C, B


def test_padding_leaves_the_answer_equal():
    layer = randomized(kr.MemoryNetwork(VOCABULARY, DIM, ANSWERS, hops=2, memory_size=4))
    story = np.array([[[3, 4, 5], [6, 7, 0], [8, 9, 10]]], "int32")
    question = np.array([[2, 3]], "int32")
    expected = np.asarray(layer([story, question]))
    padded = np.zeros((1, 6, 5), "int32")
    padded[0, 0, 1:4] = [3, 4, 5]  # a padding word before the sentence
    padded[0, 2, :2] = [6, 7]  # an empty sentence before it
    padded[0, 3, :3] = [8, 9, 10]  # empty sentences after the story
    padded_question = np.array([[0, 2, 0, 3, 0]], "int32")
    found = np.asarray(layer([padded, padded_question]))
    np.testing.assert_array_equal(found, expected)
    # in a batch beside a longer story: the same numbers
    other = np.random.default_rng(0).integers(1, VOCABULARY, (1, 6, 5)).astype("int32")
    batch = np.asarray(
        layer([np.concatenate([padded, other]), np.concatenate([padded_question] * 2)])
    )
    np.testing.assert_allclose(batch[:1], expected, rtol=1e-6, atol=1e-6)


def test_memory_holds_the_most_recent_sentences():
    layer = randomized(kr.MemoryNetwork(VOCABULARY, DIM, ANSWERS, hops=2, memory_size=2))
    rng = np.random.default_rng(2)
    story = rng.integers(1, VOCABULARY, (1, 5, 3)).astype("int32")
    question = rng.integers(1, VOCABULARY, (1, 3)).astype("int32")
    recent = np.asarray(layer([story[:, -2:], question]))
    np.testing.assert_array_equal(np.asarray(layer([story, question])), recent)


def test_empty_story_reads_nothing():
    layer = randomized(kr.MemoryNetwork(VOCABULARY, DIM, ANSWERS, hops=3))
    question = np.array([[2, 3, 0]], "int32")
    found = np.asarray(layer([np.zeros((1, 4, 3), "int32"), question]))
    u = weights_of(layer)["E"][0][2] * (
        (1 - 1 / 2) - (np.arange(1, DIM + 1) / DIM) * (1 - 2 / 2)
    ) + weights_of(layer)["E"][0][3] * ((1 - 2 / 2) - (np.arange(1, DIM + 1) / DIM) * (1 - 4 / 2))
    np.testing.assert_allclose(found, u[None] @ weights_of(layer)["W"], rtol=1e-5, atol=1e-6)
    assert np.isfinite(found).all()


@pytest.mark.parametrize(
    "options, message",
    [
        ({"hops": 0}, "Argument `hops` must be a positive integer, received: 0"),
        ({"weight_tying": "none"}, "Argument `weight_tying` must be one of"),
        ({"memory_size": None}, "Argument `memory_size` must be a positive integer with temporal"),
        ({"hidden_map": 1}, "Argument `hidden_map` must be True or False"),
        ({"attention": "relu"}, "Argument `attention` must be one of"),
    ],
)
def test_bad_arguments(options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        kr.MemoryNetwork(VOCABULARY, DIM, ANSWERS, **options)


def test_bad_inputs():
    layer = kr.MemoryNetwork(VOCABULARY, DIM, ANSWERS, name="memn2n")
    with pytest.raises(ValueError, match=r"Input `story` of layer 'memn2n' must be of rank 3"):
        layer([np.ones((2, 3), "int32"), np.ones((2, 3), "int32")])
    with pytest.raises(ValueError, match=r"takes inputs \[story, question\]"):
        layer(np.ones((2, 3, 4), "int32"))


def functional_model(**options) -> keras.Model:
    keras.utils.set_random_seed(4)
    story = keras.Input((None, None), dtype="int32", name="story")
    question = keras.Input((None,), dtype="int32", name="question")
    answer = kr.MemoryNetwork(VOCABULARY, DIM, ANSWERS, **options)([story, question])
    return keras.Model({"story": story, "question": question}, answer, name="memn2n")


@pytest.mark.parametrize("tying", ["adjacent", "layerwise"])
def test_keras_round_trip(tmp_path, tying):
    model = functional_model(hops=2, weight_tying=tying, hidden_map=tying == "layerwise")
    story, question = random_inputs(3)
    inputs = {"story": story, "question": question}
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(np.asarray(loaded(inputs)), np.asarray(model(inputs)))
    assert loaded.layers[-1].get_config() == model.layers[-1].get_config()


@pytest.fixture(scope="module")
def exported_case():
    model = functional_model(hops=3, memory_size=4)
    story, question = random_inputs(5, sentences=6)
    inputs = {"story": story, "question": question}
    return servable_from_model(model), inputs, np.asarray(model(inputs))


@pytest.mark.slow  # fresh processes: about a minute on 2 shared cores
def test_saved_model_serves_as_tf_serving_does(exported_case, tmp_path, serve_like_tf_serving):
    servable, inputs, expected = exported_case
    (directory,) = write_saved_models([servable], tmp_path / "export")
    (served,) = serve_like_tf_serving([(directory, inputs)], tmp_path / "serve")
    assert isinstance(served, dict), served  # else the server's error
    np.testing.assert_allclose(served["output_0"], expected, atol=1e-5)


@pytest.mark.slow
def test_onnx_runs_without_tensorflow(exported_case, tmp_path, run_onnx_in_child):
    servable, inputs, expected = exported_case
    path = tmp_path / "memn2n" / "model.onnx"
    manifest = write_onnx(servable, path)
    assert max(manifest["parity"]["max_abs_error"].values()) <= 1e-4
    (outputs,) = run_onnx_in_child([(path, inputs)], tmp_path / "run")
    assert isinstance(outputs, dict), outputs  # else onnxruntime's error
    np.testing.assert_allclose(outputs["output_0"], expected, atol=1e-4)
