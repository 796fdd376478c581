"""The IMDB language-model task: a capped vocabulary of the training reviews,
streams of reviews ending in <eos>, targets the inputs shifted by one token,
the first training review the first after the held-out validation ones."""

from __future__ import annotations

import numpy as np
import pytest

from keras_rnncells.data import load_task
from keras_rnncells.data.imdb_lm import review_stream
from keras_rnncells.data.ptb import EOS
from keras_rnncells.data.sentiment import read_imdb
from keras_rnncells.data.vocabulary import PAD, UNK, tokenize


@pytest.mark.slow  # reads the IMDB corpus (12 s of the default run)
def test_imdb_language_model_streams(require_data):
    require_data("imdb")
    task = load_task("imdb_lm", batch_size=2, sequence_length=5, max_vocabulary=50, limit=400)
    assert task.kind == "language_model" and task.vocabulary_size == 52
    assert task.vocabulary[:2] == (PAD, UNK) and EOS in task.vocabulary
    (inputs, targets), *_ = task.train.as_numpy_iterator()
    assert inputs.shape == targets.shape == (2, 5)
    np.testing.assert_array_equal(inputs[:, 1:], targets[:, :-1])  # the next token
    texts, _ = read_imdb("train")
    order = np.random.default_rng(0).permutation(len(texts))
    index = {token: i for i, token in enumerate(task.vocabulary)}
    first = [index.get(t, 1) for t in review_stream(texts, order[2500:2501])]
    assert list(inputs[0]) == first[:5]  # the first training review, in the fixed order


def test_review_stream_ends_every_review():
    assert review_stream(["A film.", "Dull!"], np.array([1, 0])) == [
        *tokenize("Dull!"),
        EOS,
        *tokenize("A film."),
        EOS,
    ]


def test_bad_sizes_are_named(require_data):
    require_data("imdb")
    with pytest.raises(ValueError, match="`validation_size` must be below 25000"):
        load_task("imdb_lm", validation_size=25000)
