"""The propositional logic task of the MuFuRU paper."""

from __future__ import annotations

import numpy as np
import pytest

from keras_rnncells.data import load_task

# Written independently of the package's truth tables.
GATES = {
    "AND": lambda a, b: a and b,
    "NAND": lambda a, b: not (a and b),
    "OR": lambda a, b: a or b,
    "NOR": lambda a, b: not (a or b),
    "XOR": lambda a, b: a != b,
    "XNOR": lambda a, b: a == b,
    "IMPLIES": lambda a, b: (not a) or b,
    "NIMPLIES": lambda a, b: a and not b,
    "IMPLIED": lambda a, b: a or not b,
    "NIMPLIED": lambda a, b: b and not a,
}


def evaluate(tokens: list[str]) -> bool:
    stack: list[bool] = []
    for token in tokens:
        if token in ("T", "F"):
            stack.append(token == "T")
        else:
            b, a = stack.pop(), stack.pop()
            stack.append(GATES[token](a, b))
    assert len(stack) == 1, tokens
    return stack[0]


@pytest.fixture(scope="module")
def task():
    return load_task("logic", seed=4, batch_size=64)


@pytest.fixture(scope="module")
def formulas(task, token_examples):
    """Each split as a list of (tokens, label)."""
    return {
        split: [
            ([task.vocabulary[i] for i in ids], bool(label[0]))
            for ids, label in token_examples(getattr(task, split))
        ]
        for split in ("train", "validation", "test")
    }


def test_logic_batches(task):
    assert task.kind == "binary" and task.output_units == 1 and task.input_dim is None
    assert task.vocabulary[:3] == ("<pad>", "F", "T")
    assert set(task.vocabulary[3:]) == set(GATES) and task.vocabulary_size == 13
    x, y = next(task.train.as_numpy_iterator())
    assert x.dtype == np.int32 and x.shape[0] == 64 and y.shape == (64, 1)
    assert y.dtype == np.float32 and set(np.unique(y)) <= {0.0, 1.0}
    for split in (task.train, task.validation, task.test):
        assert int(split.cardinality()) == len(list(split))


def test_logic_gate_counts_sizes_and_balance(formulas):
    ranges = {"train": (5, 10), "validation": (5, 10), "test": (11, 20)}
    for split, (low, high) in ranges.items():
        assert len(formulas[split]) == 1000
        gates = [sum(token in GATES for token in tokens) for tokens, _ in formulas[split]]
        assert min(gates) == low and max(gates) == high
        for (tokens, _), count in zip(formulas[split], gates):
            assert len(tokens) == 2 * count + 1
        # Complementary gate pairs: each formula is true with probability 1/2.
        assert 0.4 < np.mean([label for _, label in formulas[split]]) < 0.6


def test_logic_splits_share_no_formula(formulas):
    sets = {split: {tuple(tokens) for tokens, _ in items} for split, items in formulas.items()}
    assert all(len(sets[split]) == 1000 for split in sets)
    assert not sets["test"] & sets["train"]
    assert not sets["validation"] & sets["train"]
    assert not sets["test"] & sets["validation"]


def test_logic_labels_match_an_independent_evaluator(formulas):
    for items in formulas.values():
        for tokens, label in items:
            assert evaluate(tokens) == label, tokens


def test_logic_is_determined_by_the_seed(token_examples):
    small = {"train_size": 50, "validation_size": 5, "test_size": 5, "batch_size": 8}

    def train_formulas(seed: int) -> list[tuple[int, ...]]:
        task = load_task("logic", seed=seed, **small)
        return [tuple(ids) for ids, _ in token_examples(task.train)]

    assert train_formulas(4) == train_formulas(4) != train_formulas(5)


def test_logic_bad_options():
    # 1 gate: 10 gates x 4 leaf pairs = 40 distinct formulas, fewer than asked.
    with pytest.raises(ValueError, match="distinct formulas"):
        load_task("logic", train_gates=(1, 1), train_size=100)
    with pytest.raises(ValueError, match="`test_gates`"):
        load_task("logic", test_gates=(20, 11))
