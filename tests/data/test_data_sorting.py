"""The sorting task's generator: shapes, order, determinism, errors."""

from __future__ import annotations

import numpy as np
import pytest

from keras_rnncells.data.sorting import sorting_arrays


def test_sets_and_their_sorted_order():
    numbers, order = sorting_arrays(50, 7, seed=4)
    assert numbers.shape == (50, 7, 1) and numbers.dtype == np.float32
    assert order.shape == (50, 7) and order.dtype == np.int32
    assert ((numbers >= 0) & (numbers < 1)).all()
    ordered = np.take_along_axis(numbers[:, :, 0], order, axis=1)
    assert (np.diff(ordered, axis=1) > 0).all()
    for row in order:
        assert sorted(row) == list(range(7))
    again, _ = sorting_arrays(50, 7, seed=4)
    other, _ = sorting_arrays(50, 7, seed=5)
    np.testing.assert_array_equal(again, numbers)
    assert not np.array_equal(other, numbers)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"samples": 0}, "Argument `samples` must be a positive integer, received: 0"),
        ({"size": 2.5}, "Argument `size` must be a positive integer, received: 2.5"),
        ({"seed": "x"}, "Argument `seed` must be an integer, received: 'x'"),
    ],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        sorting_arrays(**{"samples": 3, "size": 4, **arguments})
