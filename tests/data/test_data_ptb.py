"""Penn Treebank language modelling in the stream layout."""

from __future__ import annotations

import gzip
import itertools

import numpy as np
import pytest

from keras_rnncells.data import load_task

BATCH, STEPS = 20, 35


@pytest.fixture(scope="module")
def task(require_data):
    require_data("ptb")
    return load_task("ptb", batch_size=BATCH, sequence_length=STEPS)


@pytest.fixture(scope="module")
def train_words(require_data):
    """The training stream, read here independently: words, ``<eos>`` per line."""
    with gzip.open(require_data("ptb") / "ptb.train.txt.gz", "rt") as f:
        return " ".join(line.strip() + " <eos>" for line in f).split()


def test_ptb_vocabulary_has_the_10k_words(task, train_words):
    assert task.kind == "language_model" and task.input_dim is None
    assert task.vocabulary[0] == "<pad>"
    assert set(task.vocabulary[1:]) == set(train_words)
    assert len(task.vocabulary) - 1 == 10000 == len(set(task.vocabulary[1:]))
    assert task.vocabulary_size == task.num_classes == task.output_units == 10001
    assert "<eos>" in task.vocabulary and "<unk>" in task.vocabulary


def test_ptb_targets_are_the_inputs_shifted_by_one(task, train_words):
    batches = list(task.train.as_numpy_iterator())
    row_length = len(train_words) // BATCH
    assert len(batches) == (row_length - 1) // STEPS
    for x, y in batches:
        assert x.shape == y.shape == (BATCH, STEPS)
        assert x.dtype == y.dtype == np.int32 and x.min() >= 1
        np.testing.assert_array_equal(x[:, 1:], y[:, :-1])
    for (_, y), (x_next, _) in itertools.pairwise(batches):
        np.testing.assert_array_equal(y[:, -1], x_next[:, 0])
    # Row r of the batches, end to end, is the r-th slice of the stream.
    words = np.array(task.vocabulary)
    for row in (0, BATCH - 1):
        stream = np.concatenate([x[row] for x, _ in batches])
        start = row * row_length
        assert list(words[stream]) == train_words[start : start + len(stream)]


def test_ptb_validation_and_test_are_streams_too(task):
    for split in (task.validation, task.test):
        x, y = next(split.as_numpy_iterator())
        assert x.shape == (BATCH, STEPS)
        np.testing.assert_array_equal(x[:, 1:], y[:, :-1])


def test_ptb_limit_and_bad_options(require_data):
    require_data("ptb")
    small = load_task("ptb", batch_size=4, sequence_length=5, limit=100)
    assert len(list(small.train.as_numpy_iterator())) == (100 // 4 - 1) // 5
    assert small.vocabulary_size == 10001
    with pytest.raises(ValueError, match="too short"):
        load_task("ptb", batch_size=20, sequence_length=35, limit=500)
    with pytest.raises(ValueError, match="`sequence_length`"):
        load_task("ptb", sequence_length=0)
