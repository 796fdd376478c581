"""Sequential MNIST, rows and pixels, from the offline mnist.npz."""

from __future__ import annotations

import numpy as np
import pytest

from keras_rnncells.data import load_task

LIMIT = 48


@pytest.fixture(scope="module")
def npz(require_data):
    with np.load(require_data("mnist") / "mnist.npz") as arrays:
        return dict(arrays)


@pytest.fixture(scope="module")
def rows(npz):
    return load_task("mnist_rows", batch_size=16, seed=1, limit=LIMIT)


def test_mnist_rows_batches_and_scaling(rows, npz):
    assert (rows.kind, rows.input_dim, rows.num_classes, rows.vocabulary) == (
        "classification",
        28,
        10,
        (),
    )
    x, y = next(rows.train.as_numpy_iterator())
    assert x.shape == (16, 28, 28) and x.dtype == np.float32
    assert y.shape == (16,) and y.dtype == np.int32
    images, labels = zip(*(batch for batch in rows.test.as_numpy_iterator()))
    images, labels = np.concatenate(images), np.concatenate(labels)
    assert len(images) == LIMIT and images.min() == 0.0 and images.max() == 1.0
    assert labels.min() >= 0 and labels.max() <= 9 and len(np.unique(labels)) > 5
    # Each test image is some MNIST test image divided by 255, with its label.
    raw = npz["x_test"].reshape(len(npz["x_test"]), -1).astype("float32") / 255.0
    for image, label in zip(images[:8], labels[:8]):
        match = np.flatnonzero(np.all(raw == image.reshape(-1), axis=1))
        assert len(match) >= 1 and label in npz["y_test"][match]


def test_mnist_pixels_are_the_rows_flattened(rows):
    pixels = load_task("mnist_pixels", batch_size=16, seed=1, limit=LIMIT)
    assert pixels.input_dim == 1 and pixels.num_classes == 10
    for split in ("validation", "test"):
        for (x_rows, y_rows), (x_pixels, y_pixels) in zip(
            getattr(rows, split).as_numpy_iterator(), getattr(pixels, split).as_numpy_iterator()
        ):
            assert x_pixels.shape == (len(x_rows), 784, 1)
            np.testing.assert_array_equal(x_pixels.reshape(-1, 28, 28), x_rows)
            np.testing.assert_array_equal(y_pixels, y_rows)


def test_mnist_full_splits_and_classes(npz):
    task = load_task("mnist_rows", batch_size=20000, validation_size=6000)
    labels = {
        split: np.concatenate([y for _, y in getattr(task, split).as_numpy_iterator()])
        for split in ("train", "validation", "test")
    }
    assert [len(labels[s]) for s in labels] == [54000, 6000, 10000]
    np.testing.assert_array_equal(labels["validation"], npz["y_train"][-6000:])
    np.testing.assert_array_equal(np.bincount(labels["test"]), np.bincount(npz["y_test"]))
    np.testing.assert_array_equal(np.bincount(labels["train"]), np.bincount(npz["y_train"][:-6000]))


def test_mnist_train_order_follows_the_seed(npz):
    def first_labels(seed: int) -> np.ndarray:
        task = load_task("mnist_rows", batch_size=LIMIT, seed=seed, limit=LIMIT)
        return next(task.train.as_numpy_iterator())[1]

    assert np.array_equal(first_labels(2), first_labels(2))
    assert not np.array_equal(first_labels(2), first_labels(3))
    assert sorted(first_labels(2)) == sorted(first_labels(3))


def test_mnist_bad_options(npz):
    with pytest.raises(ValueError, match="`validation_size`"):
        load_task("mnist_rows", validation_size=60000)
    with pytest.raises(ValueError, match="`limit`"):
        load_task("mnist_pixels", limit=0)
