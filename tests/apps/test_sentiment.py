"""The sentiment classifier: strings in, probabilities out, trained by the CLI."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.apps import servable_for
from keras_rnncells.apps.sentiment import SentimentClassifier
from keras_rnncells.cli import main
from keras_rnncells.text import WordPieceTokenizer
from keras_rnncells.text.vocabulary import PAD_ID, UNK_ID

CORPUS = ["a wonderful , moving film", "a dull and lifeless film", "wonderful acting", "so dull"]


@pytest.fixture(scope="module")
def model():
    tokenizer = WordPieceTokenizer.from_corpus(CORPUS, vocab_size=60)
    return SentimentClassifier(tokenizer, cell="mgu", units=4, embedding_dim=4, pad_to_multiple=8)


def test_text_to_probability_in_the_graph(model, tmp_path):
    texts = tf.constant(["A WONDERFUL film<br />so moving", "", "unseen words entirely"])
    ids = model.token_ids(texts)
    assert ids.shape[1] % 8 == 0 and np.all(np.asarray(ids)[1] == 0)  # empty: all padding
    probabilities = np.asarray(model.predict_proba(texts))
    assert probabilities.shape == (3,) and np.all((probabilities > 0) & (probabilities < 1))
    # Padding to a multiple changes nothing: the same text in a longer batch.
    alone = model.predict_proba(texts[:1])
    np.testing.assert_allclose(alone, probabilities[:1], rtol=1e-5, atol=1e-6)
    # The empty text gets the output layer's bias alone (its encoding is zero).
    bias = float(np.asarray(model.head.bias)[0])
    assert probabilities[1] == pytest.approx(1 / (1 + np.exp(-bias)), rel=1e-5)

    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(loaded.predict_proba(texts), probabilities, rtol=1e-6)

    servable = servable_for(loaded)
    served = servable.serve(text=texts)
    np.testing.assert_allclose(served["probability"], probabilities, rtol=1e-6)
    expected = np.where(probabilities >= 0.5, b"positive", b"negative")
    np.testing.assert_array_equal(served["label"].numpy(), expected)
    function, examples = servable.onnx()
    from_ids = function(**examples)["probability"]
    np.testing.assert_allclose(
        from_ids, servable.serve(**servable.examples)["probability"], rtol=1e-6
    )


def test_bad_arguments(model):
    with pytest.raises(ValueError, match="`tokenizer`"):
        SentimentClassifier("not a tokenizer")
    with pytest.raises(ValueError, match="`pad_to_multiple`"):
        SentimentClassifier(model.tokenizer, pad_to_multiple=0)
    with pytest.raises(ValueError, match="`model`"):
        servable_for(keras.Sequential())


def test_word_dropout_makes_word_pieces_unknown_in_training_only(model, tmp_path):
    dropping = SentimentClassifier(
        model.tokenizer, cell="mgu", units=4, embedding_dim=4, pad_to_multiple=8, word_dropout=0.5
    )
    texts = tf.constant(["a wonderful , moving film " * 20, "so dull", ""])
    ids = np.asarray(dropping.token_ids(texts))
    dropped = np.asarray(dropping.word_dropout(ids, training=True))
    changed = dropped != ids
    assert np.all(dropped[changed] == UNK_ID) and np.all(dropped[ids == PAD_ID] == PAD_ID)
    assert 0.3 < changed.sum() / (ids != PAD_ID).sum() < 0.7  # 100+ draws at rate 0.5
    np.testing.assert_array_equal(dropping.word_dropout(ids, training=False), ids)
    probabilities = np.asarray(dropping.predict_proba(texts))
    dropping.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert loaded.get_config()["word_dropout"] == 0.5 and model.word_dropout is None
    np.testing.assert_allclose(loaded.predict_proba(texts), probabilities, rtol=1e-6)
    served = servable_for(loaded).serve(text=texts)["probability"]
    np.testing.assert_allclose(served, probabilities, rtol=1e-6)
    with pytest.raises(ValueError, match="`word_dropout`"):
        SentimentClassifier(model.tokenizer, word_dropout=1.0)


def test_word_dropout_flag_takes_a_rate(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "sentiment", "--word-dropout", "1.5", "--out", str(tmp_path / "run")])
    assert exit_info.value.code == 2
    assert "--word-dropout: expected a rate in [0, 1), received '1.5'" in capsys.readouterr().err


@pytest.mark.slow  # a fresh training run on SST-2 (40 s of the default run)
def test_train_command_on_sst2(require_data, tmp_path):
    require_data("sst2")
    out = tmp_path / "run"
    arguments = "train sentiment --epochs 1 --units 16 --limit 8000 --word-dropout 0.1 --out"
    main([*arguments.split(), str(out)])
    results = json.loads((out / "results.json").read_text())
    assert results["settings"]["word_dropout"] == 0.1
    assert results["test_examples"] == 1821  # stsa.binary.test
    assert 0.55 < results["test_accuracy"] <= 1.0  # chance is 0.5 on this balanced set
    loaded = keras.saving.load_model(out / "model.keras")
    evaluation = loaded.evaluate(
        tf.data.Dataset.from_tensor_slices(
            (tf.constant(["great", "awful"]), tf.constant([[1.0], [0.0]]))
        ).batch(2),
        return_dict=True,
        verbose=0,
    )
    assert set(evaluation) == {"loss", "accuracy"}


@pytest.mark.slow  # the app exported both ways (22 s of the default run)
def test_exports_to_both_formats(model, tmp_path):
    """SavedModel checked in a fresh process without keras_rnncells, ONNX in onnxruntime:
    both within tolerance of the Keras model, or the export raises."""
    from keras_rnncells.export import verify_manifest
    from keras_rnncells.export.command import export_servable

    paths = export_servable(servable_for(model), tmp_path)
    saved = verify_manifest(paths["savedmodel"])
    assert [spec["name"] for spec in saved["inputs"]] == ["text"]
    assert {spec["name"] for spec in saved["outputs"]} == {"probability", "label"}
    onnx = verify_manifest(paths["onnx"].parent)
    assert onnx["parity"]["max_abs_error"]["probability"] < 1e-4
