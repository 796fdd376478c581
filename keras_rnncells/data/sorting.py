"""Sorting numbers, the task of "Order matters" (Vinyals, Bengio & Kudlur
2016, section 4.4): a set of ``size`` floats drawn uniformly from [0, 1), and
the indices of its elements in increasing order."""

from __future__ import annotations

import numpy as np

from keras_rnncells.checks import check_positive_int, check_seed


def sorting_arrays(samples: int, size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``samples`` sets of ``size`` numbers, drawn from
    ``numpy.random.default_rng(seed)``: ``numbers`` (samples, size, 1)
    float32 and ``order`` (samples, size) int32, ``numbers[i, order[i], 0]``
    increasing. Ties have probability zero (numbers are float64 draws rounded
    to float32; a tie keeps the earlier index first)."""
    check_positive_int("samples", samples)
    check_positive_int("size", size)
    rng = np.random.default_rng(check_seed("seed", seed))
    numbers = rng.uniform(0.0, 1.0, (samples, size)).astype("float32")
    order = np.argsort(numbers, axis=-1, kind="stable").astype("int32")
    return numbers[:, :, None], order
