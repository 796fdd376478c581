"""Penn Treebank as characters, in the word-level task's stream layout."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from keras_rnncells.data import load_task
from keras_rnncells.data.ptb_chars import characters_of


def test_characters_of_joins_words_and_ends_lines():
    assert characters_of(["a", "bc", "<eos>", "<unk>", "<eos>"]) == [
        *"a bc",
        "<eos>",
        *"<unk>",
        "<eos>",
    ]


@pytest.fixture(scope="module")
def task(require_data):
    require_data("ptb")
    return load_task("ptb_chars", batch_size=4, sequence_length=50, limit=20000)


def test_ptb_chars_spells_the_test_text(task, require_data):
    assert task.kind == "language_model" and task.vocabulary[:2] == ("<pad>", "<unk>")
    assert task.vocabulary_size == 52 and task.vocabulary[2] == " "
    assert all(len(symbol) == 1 for symbol in task.vocabulary[2:] if symbol != "<eos>")
    with gzip.open(require_data("ptb") / "ptb.test.txt.gz", "rt") as f:
        text = "".join(" ".join(line.split()) + "\n" for line in f)
    batches = list(task.test.as_numpy_iterator())
    symbols = np.array([s if s != "<eos>" else "\n" for s in task.vocabulary])
    row = "".join(symbols[np.concatenate([x[0] for x, _ in batches])])
    assert text.startswith(row) and len(row) == len(batches) * 50
    for x, y in batches:
        np.testing.assert_array_equal(x[:, 1:], y[:, :-1])
        assert x.min() >= 2  # no padding, no unknown character
