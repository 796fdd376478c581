"""The task side of words from characters and of character-level PTB:
``rnncells train ptb --word-input``, the rare-word perplexity, and
``rnncells train ptb_chars`` reported in bits per character."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_rnncells as kr
from keras_rnncells.cli import main
from keras_rnncells.data import Task
from keras_rnncells.experiments import build_model, task_settings
from keras_rnncells.rare_words import rare_word_scores

WORDS = ("<pad>", "<unk>", "the", "cat", "sat", "mat")


def tiny_task() -> Task:
    tokens = np.array([[2, 3, 4, 2], [5, 2, 3, 1]], "int32")
    targets = np.array([[3, 4, 2, 5], [2, 3, 1, 0]], "int32")
    data = tf.data.Dataset.from_tensor_slices((tokens, targets)).batch(2)
    return Task("tiny", "language_model", data, data, data, 6, "tiny", None, 6, WORDS)


@pytest.mark.parametrize(
    ("word_input", "layer"),
    [
        ("words", keras.layers.Embedding),
        ("chars", kr.CharacterWordEmbedding),
        ("words+chars", kr.GatedWordCharacterEmbedding),
    ],
)
def test_build_model_reads_word_ids_through_the_word_input(word_input, layer):
    model = build_model(tiny_task(), "gru", 4, embedding_dim=12, word_input=word_input)
    embedding = model.get_layer("embedding")
    assert type(embedding) is layer and model.inputs[0].dtype == "int32"
    assert model(np.array([[2, 3, 0]], "int32")).shape == (1, 3, 6)
    if word_input != "words":
        characters = embedding if word_input == "chars" else embedding.characters
        assert characters.output_dim == 12 and sum(characters.filters) == 12
        assert characters.kind == "cnn" and characters.highway_layers == 1


def test_rare_word_scores_match_numpy():
    task = tiny_task()
    model = build_model(task, "gru", 4, embedding_dim=6)
    counts = np.array([0, 50, 12, 3, 9, 0])  # rare: "cat" (3), "sat" (9), "mat" (0)
    scores = rare_word_scores(model, task, counts)
    tokens, targets = next(iter(task.test))
    logits = np.asarray(model(tokens), "float64")
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    rare = np.isin(np.asarray(targets), [3, 4, 5])
    chosen = np.take_along_axis(log_p, np.asarray(targets)[..., None], -1)[..., 0]
    assert scores["rare_tokens"] == rare.sum() == 4 and scores["rare_fraction"] == 4 / 7
    assert scores["rare_cross_entropy"] == pytest.approx(-chosen[rare].mean(), rel=1e-6)
    assert scores["rare_perplexity"] == pytest.approx(np.exp(-chosen[rare].mean()), rel=1e-6)
    with pytest.raises(ValueError, match=r"Argument `counts` must hold one count per word \(6\)"):
        rare_word_scores(model, task, counts[:3])


def test_word_input_is_refused_off_ptb(refused_in_one_line):
    with pytest.raises(ValueError, match="Argument `word_input` applies to ptb, not to 'imdb_lm'"):
        task_settings("imdb_lm", word_input="chars")
    with pytest.raises(ValueError, match="Argument `word_input` must be one of"):
        task_settings("ptb", word_input="bytes")
    refused_in_one_line(
        ["train", "imdb_lm", "--word-input", "chars"], "--word-input applies to the ptb task"
    )


@pytest.mark.slow  # two PTB runs, tiny (a minute on 2 shared cores)
def test_ptb_word_input_and_ptb_chars_runs(require_data, tmp_path):
    require_data("ptb")
    tiny = ["--units", "4", "--epochs", "1", "--limit", "800", "--layers", "1"]
    out = tmp_path / "chars"
    main(
        [
            "train",
            "ptb",
            *tiny,
            "--word-input",
            "words+chars",
            "--embedding-dim",
            "12",
            "--out",
            str(out),
        ]
    )
    results = json.loads((out / "results.json").read_text())
    assert results["settings"]["word_input"] == "words+chars"
    assert "--word-input words+chars --embedding-dim 12" in results["command"]
    test = results["test"]
    assert 0 < test["rare_tokens"] and 0 < test["rare_fraction"] <= 1
    assert test["rare_perplexity"] == pytest.approx(np.exp(test["rare_cross_entropy"]))
    model = keras.models.load_model(out / "model.keras")
    assert isinstance(model.get_layer("embedding"), kr.GatedWordCharacterEmbedding)
    out = tmp_path / "ptb_chars"
    main(
        [
            "train",
            "ptb_chars",
            "--units",
            "4",
            "--epochs",
            "1",
            "--limit",
            "4000",
            "--out",
            str(out),
        ]
    )
    results = json.loads((out / "results.json").read_text())
    assert results["metric"] == "bits_per_character"
    assert results["test_metric"] == pytest.approx(results["test"]["cross_entropy"] / np.log(2))
    assert 1 < results["test_metric"] < 7  # below log2(52) + 1: learned or near uniform
