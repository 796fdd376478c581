"""Generated tasks: the adding problem and the counting languages aⁿbⁿ, aⁿbⁿcⁿ.

Everything is drawn from one ``numpy.random.Generator(seed)``, split after
split (train, validation, test), so a seed fixes the data.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from keras_rnncells.checks import check_positive_int, check_range, check_seed
from keras_rnncells.data.pipeline import binary_targets, split_datasets
from keras_rnncells.data.tasks import Task, register_task

ADDING_STEPS = (50, 55)


# -- the adding problem ------------------------------------------------------------
def adding_arrays(
    samples: int, steps: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``samples`` adding-problem sequences of ``steps`` steps, drawn from ``rng``.

    Each step is a pair (value drawn uniformly from [0, 1], marker); exactly
    two markers are 1, one in each half, and the target is the sum of the two
    marked values. Returns ``x`` ``(samples, steps, 2)`` and ``y`` ``(samples,
    1)``, both float32.
    """
    check_positive_int("samples", samples)
    if check_positive_int("steps", steps) < 2:
        raise ValueError(f"Argument `steps` must be at least 2, received: {steps}")
    values = rng.uniform(0.0, 1.0, (samples, steps))
    half = steps // 2
    rows = np.arange(samples)
    first = rng.integers(0, half, samples)
    second = rng.integers(half, steps, samples)
    markers = np.zeros((samples, steps))
    markers[rows, first] = 1.0
    markers[rows, second] = 1.0
    x = np.stack([values, markers], axis=-1).astype("float32")
    y = (values[rows, first] + values[rows, second])[:, None].astype("float32")
    return x, y


def adding_problem(
    samples: int, steps: int = ADDING_STEPS[0], seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """`adding_arrays` at a fixed length, from ``Generator(seed)``."""
    return adding_arrays(samples, steps, np.random.default_rng(seed))


def adding_sequences(
    samples: int, steps: tuple[int, int], rng: np.random.Generator
) -> tuple[list[np.ndarray], np.ndarray]:
    """Adding-problem sequences whose lengths are drawn uniformly from
    ``steps = (low, high)`` (inclusive): a list of ``(T_i, 2)`` arrays and the
    ``(samples, 1)`` targets."""
    lengths = rng.integers(steps[0], steps[1] + 1, samples)
    sequences: list[np.ndarray] = [np.empty(0)] * samples
    targets = np.empty((samples, 1), dtype="float32")
    for length in np.unique(lengths):
        rows = np.flatnonzero(lengths == length)
        x, targets[rows] = adding_arrays(len(rows), int(length), rng)
        for row, sequence in zip(rows, x):
            sequences[row] = sequence
    return sequences, targets


@register_task("adding")
def adding(
    *,
    batch_size: int = 32,
    seed: int = 0,
    root: object = None,
    train_size: int = 10000,
    validation_size: int = 1000,
    test_size: int = 1000,
    steps: tuple[int, int] = ADDING_STEPS,
) -> Task:
    """The adding problem with T drawn from ``steps`` (default 50-55) per
    sequence; batches hold sequences of one length (no padding). ``root`` is
    unused (generated data)."""
    steps = check_range("steps", steps, minimum=2)
    rng = np.random.default_rng(check_seed("seed", seed))
    sizes = {"train_size": train_size, "validation_size": validation_size, "test_size": test_size}
    splits = [adding_sequences(check_positive_int(k, n), steps, rng) for k, n in sizes.items()]
    return Task(
        name="adding",
        kind="regression",
        **split_datasets(splits, batch_size, seed),
        num_classes=0,
        input_dim=2,
        description=(
            f"Adding problem, T in [{steps[0]}, {steps[1]}]: (value ~ U[0,1], marker) pairs, "
            "two marked values, one per half; regress their sum (predicting the mean scores "
            "MSE 1/6). Le, Jaitly & Hinton (2015), 'A simple way to initialize recurrent "
            "networks of rectified linear units'."
        ),
    )


# -- counting languages aⁿbⁿ, aⁿbⁿcⁿ ------------------------------------------------------
def counting_string(counts: Sequence[int]) -> np.ndarray:
    """Token ids of letter 1 repeated ``counts[0]`` times, then letter 2, ..."""
    return np.repeat(np.arange(1, len(counts) + 1), counts).astype("int32")


def counting_example(
    n: int, letters: int, positive: bool, rng: np.random.Generator, max_offset: int
) -> np.ndarray:
    """One string over ``letters`` letters (ids 1, 2, ...) built from ``n``.

    A positive is aⁿbⁿ(cⁿ). A negative is a near miss, one of two kinds with
    equal chance: *counts off*: one block (chosen uniformly) is made longer or
    shorter by d, uniform in 1..``max_offset`` (longer when shorter would leave
    it empty); *wrong order*: the positive with one symbol of one block swapped
    with one of a later block (positions uniform), so the counts are right but
    a later letter comes before an earlier one.
    """
    counts = [n] * letters
    if positive:
        return counting_string(counts)
    if rng.random() < 0.5:
        block, offset = rng.integers(letters), int(rng.integers(1, max_offset + 1))
        shorter = rng.random() < 0.5 and counts[block] > offset
        counts[block] += -offset if shorter else offset
        return counting_string(counts)
    tokens = counting_string(counts)
    first, second = np.sort(rng.choice(letters, 2, replace=False))
    i, j = first * n + rng.integers(n), second * n + rng.integers(n)
    tokens[[i, j]] = tokens[[j, i]]
    return tokens


def counting_split(
    size: int, n_range: tuple[int, int], letters: int, rng: np.random.Generator, max_offset: int
) -> tuple[list[np.ndarray], np.ndarray]:
    """``size`` strings, half positive (rounded up), ``n`` uniform in ``n_range``."""
    positive = rng.permutation(np.arange(size) < (size + 1) // 2)
    ns = rng.integers(n_range[0], n_range[1] + 1, size)
    strings = [counting_example(int(n), letters, p, rng, max_offset) for n, p in zip(ns, positive)]
    return strings, binary_targets(positive)


def counting_task(
    letters: str,
    *,
    batch_size: int = 32,
    seed: int = 0,
    root: object = None,
    train_size: int = 2000,
    validation_size: int = 500,
    test_size: int = 1000,
    max_train_n: int = 50,
    test_n: tuple[int, int] = (51, 100),
    max_offset: int = 3,
) -> Task:
    """Recognize ``letters[0]ⁿ letters[1]ⁿ ...`` (see `counting_example` for
    the negatives). Train and validation draw n from 1..``max_train_n``, test
    from ``test_n``, to measure generalization to longer strings. ``root`` is
    unused (generated data)."""
    name = "".join(f"{letter}n" for letter in letters)
    train_range = (1, check_positive_int("max_train_n", max_train_n))
    test_range = check_range("test_n", test_n)
    check_positive_int("max_offset", max_offset)
    rng = np.random.default_rng(check_seed("seed", seed))
    splits = [
        counting_split(check_positive_int(k, size), n_range, len(letters), rng, max_offset)
        for k, size, n_range in (
            ("train_size", train_size, train_range),
            ("validation_size", validation_size, train_range),
            ("test_size", test_size, test_range),
        )
    ]
    vocabulary = ("<pad>", *letters)
    language = " ".join(f"{letter}ⁿ" for letter in letters)
    return Task(
        name=name,
        kind="binary",
        **split_datasets(splits, batch_size, seed),
        num_classes=2,
        vocabulary_size=len(vocabulary),
        vocabulary=vocabulary,
        description=(
            f"Recognize {language} against near misses (counts off by 1-{max_offset}, or two "
            f"letters swapped), n <= {max_train_n} in training, n in [{test_range[0]}, "
            f"{test_range[1]}] at test. Weiss, Goldberg & Yahav (2018), 'On the practical "
            "computational power of finite precision RNNs for language recognition'."
        ),
    )


anbn = register_task("anbn")(functools.partial(counting_task, "ab"))
anbncn = register_task("anbncn")(functools.partial(counting_task, "abc"))
