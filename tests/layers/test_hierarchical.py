"""HierarchicalEncoder: a NumPy reference of its equations (an Elman word
layer, a GRU sentence layer), masks at both levels (padding words, padding
sentences, empty sentences, empty documents), any recurrent layer at either
level, its config and ``.keras`` round trip, its argument errors, and its
export: a SavedModel served as stock TF Serving serves it and ONNX in
onnxruntime, each compared with the model on documents with an empty
sentence and an empty document, and on batches of 0 and 1."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import keras_rnncells as kr
from keras_rnncells.export import servable_from_model, write_onnx, write_saved_models

VOCABULARY = 9
DIM = 3


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def elman_last(words, kernel, recurrent, bias):
    """Elman's h_t = tanh(W x_t + U h_{t-1} + b) over the present words."""
    h = np.zeros(recurrent.shape[0])
    for x in words:
        h = np.tanh(x @ kernel + h @ recurrent + bias)
    return h


def gru_last(inputs, kernel, recurrent, bias):
    """The GRU (reset after, Keras' layout: blocks z, r, h; bias rows input,
    recurrent) over the present inputs."""
    units = recurrent.shape[0]
    h = np.zeros(units)
    for x in inputs:
        xs = x @ kernel + bias[0]
        hs = h @ recurrent + bias[1]
        z = sigmoid(xs[:units] + hs[:units])
        r = sigmoid(xs[units : 2 * units] + hs[units : 2 * units])
        candidate = np.tanh(xs[2 * units :] + r * hs[2 * units :])
        h = z * h + (1 - z) * candidate
    return h


def reference(documents, word_weights, sentence_weights):
    """Documents as lists of sentences of word vectors (empty sentences and
    documents allowed) to document vectors."""
    out = []
    for document in documents:
        vectors = [elman_last(s, *word_weights) for s in document if len(s)]
        out.append(gru_last(vectors, *sentence_weights))
    return np.stack(out)


def padded(documents, sentences=None, words=None):
    """Lists of sentences of ids as a zero-padded array ``(B, S, W)``."""
    sentences = sentences or max(1, max(len(d) for d in documents))
    words = words or max([1] + [len(s) for d in documents for s in d])
    ids = np.zeros((len(documents), sentences, words), "int32")
    for i, document in enumerate(documents):
        for j, sentence in enumerate(document):
            ids[i, j, : len(sentence)] = sentence
    return ids


DOCUMENTS = [
    [[1, 2, 3], [4], [5, 6]],
    [[7, 8], [], [2, 2, 2, 2]],  # an empty sentence inside
    [],  # an empty document
    [[], []],  # a document of empty sentences only
    [[3]],
]


def encoder_model(word_layer, sentence_layer, seed=0) -> keras.Model:
    """Ids ``(B, S, W)`` -> Embedding(mask_zero) -> the encoder."""
    keras.utils.set_random_seed(seed)
    ids = keras.Input((None, None), dtype="int32", name="ids")
    embedded = keras.layers.Embedding(VOCABULARY, DIM, mask_zero=True)(ids)
    encoded = kr.HierarchicalEncoder(word_layer, sentence_layer, name="documents")(embedded)
    return keras.Model(ids, encoded)


def test_matches_the_numpy_reference():
    model = encoder_model(kr.SimpleRNN(4), kr.GRU(5))
    rng = np.random.default_rng(0)
    model.set_weights([rng.normal(scale=0.5, size=w.shape) for w in model.get_weights()])
    table, *weights = model.get_weights()
    encoder = model.get_layer("documents")
    assert [w.shape for w in encoder.word_layer.get_weights()] == [(3, 4), (4, 4), (4,)]
    word_weights, sentence_weights = weights[:3], weights[3:]
    embedded = [[[table[i] for i in s] for s in d] for d in DOCUMENTS]
    expected = reference(embedded, word_weights, sentence_weights)
    found = np.asarray(model(padded(DOCUMENTS)))
    np.testing.assert_allclose(found, expected, atol=1e-5)
    assert np.all(found[2] == 0) and np.all(found[3] == 0)  # empty documents: zeros


LAYERS = {
    "gru-lstm": lambda: (kr.GRU(4), kr.LSTM(3)),
    "rnn-mgu-bidirectional": lambda: (
        kr.RNN(kr.get_cell("mgu")(4)),
        keras.layers.Bidirectional(kr.SCRN(3)),
    ),
    "bidirectional-words-sequences": lambda: (
        keras.layers.Bidirectional(kr.GRU(3)),
        kr.MuFuRU(3, return_sequences=True),
    ),
}


@pytest.mark.parametrize("layers", LAYERS, ids=list(LAYERS))
def test_padding_gives_the_unpadded_numbers(layers):
    """Each document alone, unpadded (its empty sentences left out), equals its
    row in a batch padded with more words, more sentences and empty ones."""
    model = encoder_model(*LAYERS[layers]())
    with kr.portable():  # the fused loop without XLA: no compilation per shape
        batch = np.asarray(model(padded(DOCUMENTS, sentences=6, words=7)))
        alones = [np.asarray(model(padded([[s for s in d if s]]))) for d in DOCUMENTS]
    assert np.all(np.isfinite(batch))
    for i, (document, alone) in enumerate(zip(DOCUMENTS, alones)):
        kept = [s for s in document if s]
        if batch.ndim == 2:
            np.testing.assert_allclose(batch[i], alone[0], atol=1e-6, err_msg=str(i))
            if not kept:
                assert np.all(batch[i] == 0)
        else:  # sentence outputs: compare where the sentences are present
            present = [j for j, s in enumerate(document) if s]
            np.testing.assert_allclose(batch[i, present], alone[0, : len(kept)], atol=1e-6)


def test_rows_rounded_to_a_power_of_two_change_nothing():
    from keras_rnncells.layers.hierarchical import rounded_rows

    for count, size in ((0, 0), (1, 1), (3, 4), (4, 4), (5, 8), (33, 64)):
        rows = np.asarray(rounded_rows(np.arange(count, dtype="int32"), 99))
        np.testing.assert_array_equal(rows, [*range(count), *[99] * (size - count)])
    rounded = encoder_model(kr.GRU(3), kr.GRU(2))
    exact = encoder_model(kr.GRU(3), kr.GRU(2))
    exact.get_layer("documents").round_rows = False
    exact.set_weights(rounded.get_weights())
    ids = padded(DOCUMENTS, sentences=4)
    with kr.portable():
        np.testing.assert_allclose(rounded(ids), exact(ids), atol=1e-6)
    assert rounded.get_layer("documents").get_config()["round_rows"] is True


def test_sentence_sequences_carry_the_sentence_mask():
    encoder = kr.HierarchicalEncoder(kr.GRU(2), kr.GRU(3, return_sequences=True))
    ids = padded(DOCUMENTS)
    embedded = keras.layers.Embedding(VOCABULARY, DIM)(ids)
    outputs = encoder(embedded, mask=ids != 0)
    assert outputs.shape == (5, 3, 3)
    mask = np.asarray(encoder.compute_mask(embedded, ids != 0))
    np.testing.assert_array_equal(mask, (ids != 0).any(-1))
    assert encoder.compute_output_shape((None, 3, 4, DIM)) == (None, 3, 3)


def test_without_a_mask_every_word_is_read():
    encoder = kr.HierarchicalEncoder(kr.SimpleRNN(2), kr.GRU(3))
    x = np.random.default_rng(1).normal(size=(2, 3, 4, DIM)).astype("float32")
    np.testing.assert_allclose(encoder(x), encoder(x, mask=np.ones((2, 3, 4), bool)), atol=0)


@pytest.mark.slow  # the fused loop's backward pass compiled twice
def test_gradients_are_finite_with_empty_documents():
    import tensorflow as tf

    model = encoder_model(kr.GRU(3), kr.MGU(3))
    for documents in (DOCUMENTS, [[], [[]]]):  # the second: no sentence in the batch
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(padded(documents), training=True) ** 2)
        gradients = tape.gradient(loss, model.trainable_variables)
        assert all(np.all(np.isfinite(tf.convert_to_tensor(g))) for g in gradients)


def test_config_and_keras_round_trip(tmp_path):
    model = encoder_model(keras.layers.Bidirectional(kr.GRU(3)), kr.LSTM(4))
    encoder = model.get_layer("documents")
    config = encoder.get_config()
    assert config["word_layer"]["class_name"] == "Bidirectional"
    rebuilt = kr.HierarchicalEncoder.from_config(config)
    assert rebuilt.sentence_layer.units == 4 and rebuilt.word_layer.forward_layer.units == 3
    ids = padded(DOCUMENTS)
    model.save(tmp_path / "encoder.keras")
    loaded = keras.saving.load_model(tmp_path / "encoder.keras")
    assert isinstance(loaded.get_layer("documents"), kr.HierarchicalEncoder)
    np.testing.assert_allclose(loaded(ids), model(ids), atol=0)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ((kr.GRU(2, return_sequences=True), kr.GRU(2)), r"`word_layer` must return one vector"),
        (("gru", kr.GRU(2)), r"`word_layer` must be a recurrent Keras layer"),
        ((kr.GRU(2), kr.GRU(2, return_state=True)), r"`sentence_layer` must return its outputs"),
    ],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        kr.HierarchicalEncoder(*arguments)


def test_bad_inputs():
    encoder = kr.HierarchicalEncoder(kr.GRU(2), kr.GRU(2), name="documents")
    with pytest.raises(ValueError, match=r"Input `documents` of layer 'documents' must be of rank"):
        encoder(np.zeros((2, 3, 4), "float32"))
    with pytest.raises(ValueError, match=r"Input `documents` .* must be a float tensor"):
        encoder(np.zeros((2, 3, 4, 2), "int32"))


# -- export ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exported():
    """The model (GRU words: a native ONNX GRU node; MGU sentences: a Loop),
    its servable, and inputs: documents with an empty sentence and an
    empty document, one document, no document."""
    model = encoder_model(kr.GRU(3), kr.MGU(4), seed=5)
    inputs = {
        "several": padded(DOCUMENTS, words=4),
        "one": padded([[[2, 3], [], [4]]]),
        "none": np.zeros((0, 2, 3), "int32"),
    }
    expected = {name: np.asarray(model(ids)) for name, ids in inputs.items()}
    return servable_from_model(model, name="hierarchical"), inputs, expected


@pytest.mark.slow  # a SavedModel written, checked and served in a child process
def test_served_as_tf_serving_does(exported, tmp_path, serve_like_tf_serving):
    servable, inputs, expected = exported
    (directory,) = write_saved_models([servable], tmp_path / "export")
    served = serve_like_tf_serving(
        [(directory, {"ids": ids}) for ids in inputs.values()], tmp_path / "serve"
    )
    for name, outputs in zip(inputs, served):
        assert isinstance(outputs, dict), f"{name}: {outputs}"
        np.testing.assert_allclose(outputs["output_0"], expected[name], atol=1e-5, err_msg=name)


@pytest.mark.slow  # a tf2onnx conversion, checked, and onnxruntime in a child
def test_onnx_runs_without_tensorflow(exported, tmp_path, run_onnx_in_child):
    servable, inputs, expected = exported
    path = tmp_path / "onnx" / "model.onnx"
    manifest = write_onnx(servable, path)
    became = {r["cell"]: r["onnx"] for r in manifest["recurrent_layers"]}
    assert became == {"GRUCell": "GRU", "MGUCell": "Loop"}
    results = run_onnx_in_child([(path, {"ids": ids}) for ids in inputs.values()], tmp_path / "r")
    for name, outputs in zip(inputs, results):
        assert isinstance(outputs, dict), f"{name}: {outputs}"
        np.testing.assert_allclose(outputs["output_0"], expected[name], atol=1e-4, err_msg=name)
