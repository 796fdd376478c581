"""The sentiment classifier with ``encoder="hierarchical"``: the sentences
found among the token ids, the classifier on strings (padding and empty
texts), its ``.keras`` round trip, its argument errors and flag, and its
export: a SavedModel on strings served as stock TF Serving serves it, the
ONNX model on ids and the ONNX model on strings (model_text.onnx), each
compared with the model."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.apps import servable_for
from keras_rnncells.apps.document_encoder import (
    HierarchicalTextEncoder,
    sentence_end_ids,
    split_sentences,
)
from keras_rnncells.apps.sentiment import SentimentClassifier, SentimentSettings
from keras_rnncells.cli import main
from keras_rnncells.layers import portable
from keras_rnncells.text import WordPieceTokenizer

CORPUS = [
    "a wonderful , moving film. i liked it!",
    "a dull and lifeless film?! so dull...",
    "wonderful acting",
]
TEXTS = [
    "A wonderful film. So dull!<br /><br />I liked it",
    "",  # no token: an empty document
    "so dull?! so dull. . .",
    "wonderful acting",  # one sentence, no end
]


def test_split_sentences():
    end = 2
    ids = tf.constant(
        [
            [5, 6, end, 7, end, end, 8, 0, 0],  # a run of two ends closes one sentence
            [0] * 9,
            [end, 0, 0, 0, 0, 0, 0, 0, 0],
            [3, 4, 5, 6, 7, 8, 9, 1, 1],  # one sentence, cut at max_words
        ]
    )
    found = split_sentences(ids, [end], max_sentences=2, max_words=4).numpy()
    expected = np.zeros((4, 2, 4), "int32")
    expected[0] = [[5, 6, end, 0], [7, end, end, 0]]  # the third sentence is past max_sentences
    expected[2, 0, 0] = end
    expected[3, 0] = [3, 4, 5, 6]
    np.testing.assert_array_equal(found, expected)
    rounded = split_sentences(ids, [end], max_sentences=8, max_words=8, multiple=4).numpy()
    assert rounded.shape == (4, 4, 8)
    np.testing.assert_array_equal(rounded[0, 2, :1], [8])
    assert split_sentences(tf.zeros((0, 3), tf.int32), [end], 4, 4).shape == (0, 1, 1)


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    tokenizer = WordPieceTokenizer.from_corpus(CORPUS, vocab_size=80)
    return SentimentClassifier(
        tokenizer, "gru", units=4, embedding_dim=4, pad_to_multiple=4, encoder="hierarchical"
    )


def test_text_to_probability_through_sentences(model, tmp_path):
    assert isinstance(model.encoder, HierarchicalTextEncoder)
    vocabulary = model.tokenizer.vocabulary
    assert sorted(vocabulary[i] for i in model.encoder.end_ids) == sorted(
        t for t in vocabulary if t.strip("#") in {".", "!", "?", "..."}
    )
    texts = tf.constant(TEXTS)
    probabilities = np.asarray(model.predict_proba(texts))
    assert probabilities.shape == (4,) and np.all(np.isfinite(probabilities))
    with portable():  # the loops without XLA: no compilation per shape
        alone = [model.predict_proba(tf.constant([text])) for text in TEXTS]
        swapped = model.predict_proba(tf.constant(["I liked it. A wonderful film. So dull!"]))
    for i, text in enumerate(TEXTS):  # alone: no padding words or sentences
        np.testing.assert_allclose(alone[i], probabilities[i : i + 1], atol=1e-6, err_msg=text)
    bias = float(np.asarray(model.head.bias)[0])  # the empty text: the bias alone
    assert probabilities[1] == pytest.approx(1 / (1 + np.exp(-bias)), rel=1e-5)
    # the order of the sentences counts: a sentence-level recurrence
    assert abs(float(swapped[0]) - probabilities[0]) > 1e-7

    assert model.get_config()["encoder"] == "hierarchical"
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(loaded.predict_proba(texts), probabilities, atol=1e-7)
    servable = servable_for(loaded)
    np.testing.assert_allclose(servable.serve(text=texts)["probability"], probabilities, atol=1e-6)


def test_bad_arguments(model):
    with pytest.raises(ValueError, match=r"Argument `encoder` must be one of \('flat', 'hier"):
        SentimentClassifier(model.tokenizer, encoder="tree")
    with pytest.raises(ValueError, match=r"`num_layers` must be 1 with encoder='hierarchical'"):
        SentimentClassifier(model.tokenizer, num_layers=2, encoder="hierarchical")
    with pytest.raises(ValueError, match=r"`pretrain` must be None with encoder='hierarchical'"):
        SentimentSettings(encoder="hierarchical", pretrain="lm")
    with pytest.raises(ValueError, match=r"`tokenizer` must have a token that ends a sentence"):
        sentence_end_ids(["[PAD]", "a", "b"])
    with pytest.raises(ValueError, match=r"`end_ids` must be a non-empty list of token ids"):
        HierarchicalTextEncoder(10, [])


def test_encoder_flag(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "sentiment", "--encoder", "tree", "--out", str(tmp_path / "run")])
    assert exit_info.value.code == 2
    assert "--encoder" in capsys.readouterr().err


@pytest.mark.slow  # SavedModel and both ONNX models written and checked, run in children
def test_exports_on_strings(model, tmp_path, serve_like_tf_serving, run_onnx_in_child):
    """The SavedModel (strings in) served as TF Serving does, model.onnx on
    ids and model_text.onnx on strings in onnxruntime: each equals the model
    on texts with sentences, an empty text, one text and no text."""
    from keras_rnncells.export import write_onnx, write_saved_models

    servable = servable_for(model)
    batches = {
        "several": TEXTS,
        "one": TEXTS[:1],
        "none": [],
    }
    expected = {
        name: np.asarray(model.predict_proba(tf.constant(texts, tf.string)))
        for name, texts in batches.items()
    }
    (directory,) = write_saved_models([servable], tmp_path / "export")
    served = serve_like_tf_serving(
        [(directory, {"text": texts}) for texts in batches.values()], tmp_path / "serve"
    )
    path = tmp_path / "onnx" / "model.onnx"
    manifest = write_onnx(servable, path)
    assert manifest["string_input"]["parity"]["token_ids_identical"] is True
    ids = {name: model.token_ids(tf.constant(t, tf.string)).numpy() for name, t in batches.items()}
    jobs = [(path, {"token_ids": ids[name]}) for name in batches]
    jobs += [(path.parent / "model_text.onnx", {"text": texts}) for texts in batches.values()]
    ran = run_onnx_in_child(jobs, tmp_path / "run")
    for i, name in enumerate(batches):
        for form, outputs in (("served", served[i]), ("ids", ran[i]), ("text", ran[3 + i])):
            assert isinstance(outputs, dict), f"{name}, {form}: {outputs}"
            np.testing.assert_allclose(
                outputs["probability"], expected[name], atol=1e-5, err_msg=f"{name}, {form}"
            )
