"""Pre-training the sentiment classifier's encoder (Dai & Le 2015): the
weights it trains are the classifier's own, its loss falls, and a run
pre-trains once, resumes from the pre-trained weights and refuses another
objective. Runs read a tiny SST-2 folder written here (one shape of batch)."""

from __future__ import annotations

import csv
import gzip
import json
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells import training
from keras_rnncells.apps import sentiment
from keras_rnncells.apps.pretrain import EncoderPretraining
from keras_rnncells.apps.sentiment import SentimentClassifier, SentimentSettings
from keras_rnncells.cli import main
from keras_rnncells.layers.rnn import portable
from keras_rnncells.seq2seq.encoder import Encoder
from keras_rnncells.text import WordPieceTokenizer

POSITIVE = ["a wonderful moving film", "wonderful acting here", "a moving story", "so good"]
NEGATIVE = ["a dull lifeless film", "so very dull", "dull and slow", "a bad story"]
CORPUS = (POSITIVE + NEGATIVE) * 4  # 32 texts: whole words in the vocabulary, 4 batches of 8


class Stop(Exception):
    """Stops a run where a test wants it killed."""


@pytest.fixture(scope="module")
def tokenizer() -> WordPieceTokenizer:
    return WordPieceTokenizer.from_corpus(CORPUS)


def classifier(tokenizer: WordPieceTokenizer) -> SentimentClassifier:
    return SentimentClassifier(tokenizer, units=8, embedding_dim=8, pad_to_multiple=8)


@pytest.fixture(autouse=True)
def fast_loops():
    """Every recurrence on the portable fused loop, which needs no XLA
    compilation (the paths give the same numbers, tests/layers)."""
    with portable():
        yield


def test_pretraining_models_hold_the_classifiers_own_weights(tokenizer):
    model = classifier(tokenizer)
    ids = model.token_ids(tf.constant(CORPUS[:3]))
    classifier_weights = {id(w) for w in model.weights}
    for objective in ("lm", "autoencoder"):
        pretraining = EncoderPretraining(model.encoder, objective)
        pretraining(ids)  # builds its softmax layers (and decoders)
        weights = {id(w) for w in pretraining.weights}
        # the embedding and both directions' cells: the same variables
        assert {id(w) for w in model.encoder.weights} <= weights
        assert len(model.encoder.weights) == 7  # embedding, 2 x (kernel, recurrent, bias)
        extra = weights - classifier_weights
        assert len(extra) == len(pretraining.weights) - len(model.encoder.weights) > 0
    assert {id(w) for w in model.weights} == classifier_weights  # nothing added to it


def test_targets_skip_padding(tokenizer):
    ids = tf.constant([[5, 6, 7, 0], [8, 0, 0, 0], [0, 0, 0, 0]])
    model = classifier(tokenizer)
    lm = np.asarray(EncoderPretraining(model.encoder, "lm").targets(ids))
    # next piece (then [END] = 3), previous piece (first [START] = 2)
    np.testing.assert_array_equal(lm[..., 0], [[6, 7, 3, 0], [3, 0, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(lm[..., 1], [[2, 5, 6, 0], [2, 0, 0, 0], [0, 0, 0, 0]])
    autoencoder = np.asarray(EncoderPretraining(model.encoder, "autoencoder").targets(ids))
    expected = [[5, 6, 7, 3, 0], [8, 3, 0, 0, 0], [3, 0, 0, 0, 0]]
    np.testing.assert_array_equal(autoencoder, expected)


def write_sst2(root) -> None:
    """A tiny SST-2 folder: GLUE-style training phrases, stsa dev and test."""
    folder = root / "sst2"
    folder.mkdir(parents=True)
    labelled = [(text, 1) for text in POSITIVE] + [(text, 0) for text in NEGATIVE]
    rows = "".join(f"{text}\t{label}\n" for text, label in labelled * 4)
    with gzip.open(folder / "glue_train.tsv.gz", "wt", encoding="utf-8") as file:
        file.write("sentence\tlabel\n" + rows)
    stsa = "".join(f"{label} {text}\n" for text, label in labelled)
    for name in ("stsa.binary.dev", "stsa.binary.test"):
        (folder / name).write_text(stsa, encoding="utf-8")


@pytest.fixture
def spy(monkeypatch, tmp_path):
    """Records the encoder's weights when pre-training ends (``"pretrained"``)
    and when fine-tuning starts, after any backup is restored
    (``"fine-tuning"``); ``stop``: raise `Stop` there, as a kill would."""
    monkeypatch.setenv("RNNCELLS_DATA", str(tmp_path / "data"))
    write_sst2(tmp_path / "data")
    seen = {"stop": False, "pretrained": None, "fine-tuning": None, "pretrainings": 0}
    real_pretrain, real_callbacks = sentiment.pretrain, training.run_callbacks

    def pretrain_spy(encoder, *args, **kwargs):
        seen["pretrainings"] += 1
        rows = real_pretrain(encoder, *args, **kwargs)
        seen["pretrained"] = [np.array(w) for w in encoder.weights]
        return rows

    class Start(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            seen["fine-tuning"] = [np.array(w) for w in self.model.encoder.weights]
            if seen["stop"]:
                raise Stop

    monkeypatch.setattr(sentiment, "pretrain", pretrain_spy)
    monkeypatch.setattr(
        training, "run_callbacks", lambda *args, **kw: [*real_callbacks(*args, **kw), Start()]
    )
    return seen


def pretrain_history(run_dir) -> list[dict[str, float]]:
    with open(run_dir / "pretrain_history.csv", encoding="utf-8") as file:
        return [{key: float(value) for key, value in row.items()} for row in csv.DictReader(file)]


def assert_same(first, second) -> None:
    assert len(first) == len(second)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


TINY = "train sentiment --units 4 --epochs 1 --batch-size 8 --out".split()
LM = ["--pretrain", "lm", "--pretrain-epochs", "2"]


@pytest.mark.slow  # pretraining and fine-tuning runs (17 s of the default run)
def test_cli_run_pretrains_once_resumes_from_the_pretrained_weights(spy, tmp_path, capsys):
    out = str(tmp_path / "run")
    spy["stop"] = True  # killed as fine-tuning starts
    with pytest.raises(Stop):
        main([*TINY, out, *LM])
    assert spy["pretrainings"] == 1
    assert_same(spy["fine-tuning"], spy["pretrained"])  # the classifier starts pre-trained
    pretrained = spy["pretrained"]
    history = pretrain_history(tmp_path / "run")
    assert [row["epoch"] for row in history] == [0, 1]
    assert history[1]["loss"] < history[0]["loss"]
    assert history[1]["perplexity"] == pytest.approx(math.exp(history[1]["loss"]))

    # Another objective does not resume this run: one line naming the flag.
    with pytest.raises(SystemExit) as exit_info:
        main([*TINY, out, "--pretrain", "autoencoder", "--pretrain-epochs", "2"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip()
    assert "--pretrain was 'lm', now 'autoencoder'" in error and "\n" not in error
    with pytest.raises(SystemExit):
        main([*TINY, out])  # nor does none
    error = capsys.readouterr().err
    assert "--pretrain was 'lm', now None; --pretrain-epochs was 2, now 1" in error

    # The same arguments resume it without pre-training again, from its weights.
    spy["stop"] = False
    main([*TINY, out, *LM])
    assert spy["pretrainings"] == 1
    assert_same(spy["fine-tuning"], pretrained)
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    pretraining = results["pretraining"]
    assert pretraining["objective"] == "lm" and pretraining["epochs"] == 2
    assert pretraining["perplexity"] == pytest.approx(math.exp(pretraining["loss"]))
    assert results["settings"]["pretrain"] == "lm" and results["settings"]["pretrain_epochs"] == 2
    assert "Pre-trained (lm, 2 epoch(s))" in capsys.readouterr().out


@pytest.mark.slow  # pretraining and fine-tuning runs (17 s of the default run)
def test_autoencoder_run_fine_tunes_from_the_pretrained_encoder(spy, tmp_path):
    spy["stop"] = True
    settings = SentimentSettings(
        cell="lstm",
        units=8,
        embedding_dim=8,
        batch_size=8,
        learning_rate=3e-2,
        pretrain="autoencoder",
        pretrain_epochs=3,
    )
    with pytest.raises(Stop):
        sentiment.train_sentiment(tmp_path / "run", settings, verbose=0)
    assert spy["pretrainings"] == 1
    assert_same(spy["fine-tuning"], spy["pretrained"])
    # Its loss falls well below its start (~log V: uniform guesses) on the repeated texts.
    losses = [row["loss"] for row in pretrain_history(tmp_path / "run")]
    assert len(losses) == 3 and losses[-1] < 0.85 * losses[0], losses


def test_bad_values_are_refused(tokenizer, tmp_path, capsys):
    with pytest.raises(
        ValueError, match=r"`pretrain` must be one of \(None, 'lm', 'autoencoder'\)"
    ):
        SentimentSettings(pretrain="foo")
    with pytest.raises(ValueError, match="`pretrain_epochs` must be a positive integer"):
        SentimentSettings(pretrain="lm", pretrain_epochs=0)
    model = classifier(tokenizer)
    with pytest.raises(ValueError, match="`objective` must be one of"):
        EncoderPretraining(model.encoder, "foo")
    stacked = Encoder(tokenizer.vocabulary_size, 4, "gru", 4, num_layers=2)
    with pytest.raises(ValueError, match="`encoder` must have one recurrent layer"):
        EncoderPretraining(stacked, "lm")
    out = str(tmp_path / "run")
    for arguments, message in [
        (["--pretrain", "foo"], "argument --pretrain: invalid choice: 'foo'"),
        (["--pretrain-epochs", "0"], "--pretrain-epochs: expected a positive integer"),
        (["--pretrain-epochs", "2"], "--pretrain-epochs needs --pretrain lm or"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            main(["train", "sentiment", "--out", out, *arguments])
        assert exit_info.value.code == 2
        error = capsys.readouterr().err.strip()
        assert message in error and "\n" not in error
    assert not (tmp_path / "run").exists()
