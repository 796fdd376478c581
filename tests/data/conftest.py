"""Fixtures of the data tests: the benchmark data folders, and examples of a
dataset without their padding.

Tests that read real data ask ``require_data(folder)``: it skips them, with
the path tried, when the data is absent, except under ``CI=true``, where the
data must be present and they fail instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.data import data_root


def require_data(folder: str) -> Path:
    try:
        path = data_root() / folder
        if not path.is_dir():
            raise FileNotFoundError(f"no folder {path} (set $RNNCELLS_DATA)")
    except FileNotFoundError as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"benchmark data {folder}/ is required under CI=true: {error}")
        pytest.skip(f"benchmark data {folder}/ absent: {error}")
    return path


def token_examples(dataset: tf.data.Dataset) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every ``(tokens, target)`` of a batched token dataset, padding (0) removed."""
    return [
        (row[row != 0], target) for x, y in dataset.as_numpy_iterator() for row, target in zip(x, y)
    ]


@pytest.fixture(scope="session", name="require_data")
def require_data_fixture() -> Callable[[str], Path]:
    return require_data


@pytest.fixture(scope="session", name="token_examples")
def token_examples_fixture() -> Callable[[tf.data.Dataset], list]:
    return token_examples
