"""The generated tasks: the adding problem and the counting languages."""

from __future__ import annotations

import re

import numpy as np
import pytest

from keras_rnncells.data import load_task

ADDING = {"train_size": 60, "validation_size": 12, "test_size": 12, "batch_size": 8}
COUNTING = {"train_size": 200, "validation_size": 40, "test_size": 100, "batch_size": 16}


def batches(dataset) -> list[tuple[np.ndarray, np.ndarray]]:
    return list(dataset.as_numpy_iterator())


def test_adding_marks_one_value_per_half_and_sums_them():
    task = load_task("adding", seed=3, **ADDING)
    assert (task.kind, task.input_dim, task.vocabulary_size, task.output_units) == (
        "regression",
        2,
        None,
        1,
    )
    lengths, examples = set(), 0
    for split in (task.train, task.validation, task.test):
        for x, y in batches(split):
            assert x.dtype == np.float32 and y.dtype == np.float32
            assert x.ndim == 3 and x.shape[2] == 2 and y.shape == (len(x), 1)
            steps = x.shape[1]
            lengths.add(steps)
            values, markers = x[..., 0], x[..., 1]
            # One length per batch: no padding (a padded step would be (0, 0)).
            assert np.all(values > 0) and np.all(values <= 1)
            assert set(np.unique(markers)) == {0.0, 1.0}
            half = steps // 2
            assert np.all(markers[:, :half].sum(axis=1) == 1)
            assert np.all(markers[:, half:].sum(axis=1) == 1)
            np.testing.assert_allclose(y[:, 0], (values * markers).sum(axis=1), rtol=1e-6)
            examples += len(x)
    assert examples == ADDING["train_size"] + ADDING["validation_size"] + ADDING["test_size"]
    assert lengths <= set(range(50, 56)) and len(lengths) > 2


def test_adding_is_determined_by_the_seed():
    first = batches(load_task("adding", seed=5, **ADDING).train)
    again = batches(load_task("adding", seed=5, **ADDING).train)
    other = batches(load_task("adding", seed=6, **ADDING).train)
    assert len(first) == len(again)
    for (x, y), (x2, y2) in zip(first, again):
        np.testing.assert_array_equal(x, x2)
        np.testing.assert_array_equal(y, y2)
    assert not np.array_equal(first[0][1], other[0][1])


def in_language(text: str, letters: str) -> bool:
    """Independent check: letters[0]^n letters[1]^n ... for some n >= 1."""
    pattern = "".join(f"({letter}+)" for letter in letters)
    match = re.fullmatch(pattern, text)
    return bool(match) and len({len(group) for group in match.groups()}) == 1


@pytest.mark.parametrize("name, letters", [("anbn", "ab"), ("anbncn", "abc")])
def test_counting_language_positives_and_near_misses(name, letters, token_examples):
    task = load_task(name, seed=1, **COUNTING)
    assert task.kind == "binary" and task.vocabulary == ("<pad>", *letters)
    assert task.vocabulary_size == len(letters) + 1 and task.output_units == 1
    x, y = next(task.train.as_numpy_iterator())
    assert x.dtype == np.int32 and y.dtype == np.float32 and y.shape == (len(x), 1)
    n_ranges = {"train": (1, 50), "validation": (1, 50), "test": (51, 100)}
    kinds = set()
    for split, (low, high) in n_ranges.items():
        examples = token_examples(getattr(task, split))
        assert len(examples) == COUNTING[f"{split}_size"]
        labels = np.array([label[0] for _, label in examples])
        assert labels.mean() == 0.5
        for tokens, label in examples:
            text = "".join(task.vocabulary[i] for i in tokens)
            counts = [text.count(letter) for letter in letters]
            assert in_language(text, letters) == bool(label), text
            # Near misses: every count within 3 of n, n in the split's range.
            assert max(counts) - min(counts) <= 3
            assert low - 3 <= min(counts) and max(counts) <= high + 3
            if label:
                assert low <= counts[0] <= high
            else:
                kinds.add("order" if len(set(counts)) == 1 else "counts")
    assert kinds == {"order", "counts"}


def test_counting_language_is_determined_by_the_seed(token_examples):
    first = token_examples(load_task("anbn", seed=2, **COUNTING).test)
    again = token_examples(load_task("anbn", seed=2, **COUNTING).test)
    other = token_examples(load_task("anbn", seed=3, **COUNTING).test)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(first, again))
    assert not all(np.array_equal(a[0], b[0]) for a, b in zip(first, other))


@pytest.mark.parametrize(
    "name, options, argument",
    [
        ("adding", {"steps": (1, 5)}, "steps"),
        ("adding", {"train_size": 0}, "train_size"),
        ("adding", {"batch_size": 0}, "batch_size"),
        ("adding", {"seed": "one"}, "seed"),
        ("anbn", {"test_n": (60,)}, "test_n"),
        ("anbncn", {"max_offset": 0}, "max_offset"),
    ],
)
def test_bad_options_name_the_argument(name, options, argument):
    with pytest.raises(ValueError, match=f"`{argument}`"):
        load_task(name, **options)
