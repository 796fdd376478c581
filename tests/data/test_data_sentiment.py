"""Word-level sentiment: tokenization, vocabularies, IMDB, SST-2 and SST-1."""

from __future__ import annotations

import numpy as np
import pytest

from keras_rnncells.data import build_vocabulary, load_task, tokenize


def test_tokenize_lowercases_and_undoes_escapes():
    text = "It's <br />GOOD -lrb-really-rrb- , and\\/or \\*fine\\*!"
    expected = ["it's", "good", "(", "really", ")", ",", "and", "/", "or", "*", "fine", "*", "!"]
    assert tokenize(text) == expected
    assert tokenize("crème brûlée wo n't") == ["crème", "brûlée", "wo", "n't"]


def test_vocabulary_ranks_by_count_then_alphabetically():
    tokens = [["b", "a", "c", "b"], ["c", "d", "b"]]
    assert build_vocabulary(tokens) == ("<pad>", "<unk>", "b", "c", "a", "d")
    assert build_vocabulary(tokens, min_count=2) == ("<pad>", "<unk>", "b", "c")
    assert build_vocabulary(tokens, max_size=3) == ("<pad>", "<unk>", "b")


def line_labels(path) -> list[int]:
    with open(path, encoding="utf-8") as f:
        return [int(line.split(" ", 1)[0]) for line in f if line.strip()]


def read_split(dataset) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """The batches of a split: padded ids, labels as vectors, lengths."""
    batches = list(dataset.as_numpy_iterator())
    ids = [x for x, _ in batches]
    return ids, [y.reshape(len(y)) for _, y in batches], [(x != 0).sum(axis=1) for x in ids]


def test_sst2_splits_are_the_labeled_files(require_data):
    folder = require_data("sst2")
    task = load_task("sst2", batch_size=256)
    assert task.kind == "binary" and task.num_classes == 2 and task.output_units == 1
    assert task.vocabulary[:2] == ("<pad>", "<unk>")
    assert task.vocabulary_size == len(task.vocabulary) == len(set(task.vocabulary))
    x, y = next(task.train.as_numpy_iterator())
    assert x.dtype == np.int32 and y.dtype == np.float32 and y.shape == (len(x), 1)
    for split, name in (("test", "stsa.binary.test"), ("validation", "stsa.binary.dev")):
        expected = line_labels(folder / name)
        ids, labels, _ = read_split(getattr(task, split))
        assert sum(map(len, labels)) == len(expected)
        assert sum(map(np.sum, labels)) == sum(expected)
        assert any((x == 1).any() for x in ids)  # words unseen in training
    # The vocabulary comes from the training split alone: every training word
    # is known, and the test sentences have unknown ones (id 1).
    small = load_task("sst2", batch_size=32, limit=3000)
    ids, labels, lengths = read_split(small.train)
    assert not any((x == 1).any() for x in ids)
    assert max(x.max() for x in ids) == small.vocabulary_size - 1
    assert any((x == 1).any() for x in read_split(small.test)[0])
    # Bucketing: far less padding than batches of random lengths would need.
    bucketed = 1 - sum(map(np.sum, lengths)) / sum(x.size for x in ids)
    shuffled = np.random.default_rng(0).permutation(np.concatenate(lengths))
    random_batches = np.array_split(shuffled, len(lengths))
    unbucketed = 1 - shuffled.sum() / sum(len(b) * b.max() for b in random_batches)
    assert bucketed < unbucketed / 2, (bucketed, unbucketed)


def test_sst1_five_classes_limit_and_seed(require_data):
    require_data("sst2")
    task = load_task("sst1", batch_size=8, limit=40, seed=1, max_vocabulary=50)
    assert task.kind == "classification" and task.num_classes == 5 == task.output_units
    assert task.vocabulary_size == 50
    x, y = next(task.train.as_numpy_iterator())
    assert x.dtype == np.int32 and y.dtype == np.int32 and y.shape == (len(x),)
    for split in ("train", "validation", "test"):
        labels = np.concatenate(read_split(getattr(task, split))[1])
        assert len(labels) == 40 and labels.min() >= 0 and labels.max() <= 4
        assert len(np.unique(labels)) >= 3

    def train_order(seed: int) -> list[tuple[int, ...]]:
        task = load_task("sst1", batch_size=8, limit=40, seed=seed)
        return [tuple(row) for x in read_split(task.train)[0] for row in x]

    assert train_order(1) == train_order(1) != train_order(2)
    assert sorted(train_order(1)) == sorted(train_order(2))


def test_imdb_truncates_and_holds_out_validation(require_data):
    require_data("imdb")
    task = load_task("imdb", batch_size=8, limit=40, max_length=20, min_count=1)
    assert task.kind == "binary" and task.vocabulary[:2] == ("<pad>", "<unk>")
    for split in ("train", "validation", "test"):
        _, labels, lengths = read_split(getattr(task, split))
        lengths = np.concatenate(lengths)
        assert len(lengths) == 40 and lengths.max() == 20 and lengths.min() > 0
        assert set(np.concatenate(labels)) == {0.0, 1.0}
    # "<br />" never survives tokenization.
    assert "br" not in task.vocabulary


@pytest.mark.parametrize(
    "name, options, argument",
    [
        ("sst2", {"max_vocabulary": 2}, "max_vocabulary"),
        ("sst1", {"max_length": 0}, "max_length"),
        ("imdb", {"validation_size": 25000}, "validation_size"),
    ],
)
def test_sentiment_bad_options(require_data, name, options, argument):
    require_data("imdb" if name == "imdb" else "sst2")
    with pytest.raises(ValueError, match=f"`{argument}`"):
        load_task(name, limit=10, **options)
