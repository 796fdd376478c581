"""Fixtures of the data tests: examples of a dataset without their padding
(``require_data``, for the benchmark data folders, is in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import tensorflow as tf


def token_examples(dataset: tf.data.Dataset) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every ``(tokens, target)`` of a batched token dataset, padding (0) removed."""
    return [
        (row[row != 0], target) for x, y in dataset.as_numpy_iterator() for row, target in zip(x, y)
    ]


@pytest.fixture(scope="session", name="token_examples")
def token_examples_fixture() -> Callable[[tf.data.Dataset], list]:
    return token_examples
