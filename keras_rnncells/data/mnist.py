"""Sequential MNIST: digits read row by row or pixel by pixel.

The images of ``mnist/mnist.npz`` are scaled to [0, 1]; the validation split
is the last ``validation_size`` training images, the test split MNIST's 10,000
test images. ``mnist_rows`` gives 28 steps of 28 pixels, ``mnist_pixels`` 784
steps of one pixel (Le, Jaitly & Hinton 2015).
"""

from __future__ import annotations

import functools
import os

import numpy as np
import tensorflow as tf

from keras_rnncells.checks import check_optional_positive_int, check_positive_int
from keras_rnncells.data.paths import data_file
from keras_rnncells.data.pipeline import fixed_length_dataset, split_datasets, subset
from keras_rnncells.data.tasks import Task, register_task

IMAGE_SIZE = 28


def read_mnist(root: str | os.PathLike | None = None) -> dict[str, np.ndarray]:
    """``x_train`` (60000, 28, 28) uint8, ``y_train``, ``x_test``, ``y_test``."""
    with np.load(data_file("mnist", "mnist.npz", root)) as arrays:
        return {key: arrays[key] for key in ("x_train", "y_train", "x_test", "y_test")}


def mnist_task(
    features: int,
    *,
    batch_size: int = 32,
    seed: int = 0,
    root: str | os.PathLike | None = None,
    validation_size: int = 5000,
    limit: int | None = None,
) -> Task:
    """MNIST as sequences of ``784 // features`` steps of ``features`` pixels;
    ``limit`` keeps at most that many images of each split (a fixed random subset)."""
    limit = check_optional_positive_int("limit", limit)
    arrays = read_mnist(root)
    count = len(arrays["y_train"])
    if check_positive_int("validation_size", validation_size) >= count:
        raise ValueError(
            f"Argument `validation_size` must be below {count}, received: {validation_size}"
        )
    cut = count - validation_size
    splits = [
        (x[indices], y[indices].astype("int32"))
        for x, y in (
            (arrays["x_train"][:cut], arrays["y_train"][:cut]),
            (arrays["x_train"][cut:], arrays["y_train"][cut:]),
            (arrays["x_test"], arrays["y_test"]),
        )
        for indices in [subset(len(y), limit)]
    ]
    steps = IMAGE_SIZE * IMAGE_SIZE // features

    def to_sequences(images: tf.Tensor) -> tf.Tensor:
        return tf.reshape(tf.cast(images, "float32") / 255.0, (-1, steps, features))

    build = functools.partial(fixed_length_dataset, transform=to_sequences)
    reading = "row by row" if features == IMAGE_SIZE else "pixel by pixel"
    return Task(
        name="mnist_rows" if features == IMAGE_SIZE else "mnist_pixels",
        kind="classification",
        **split_datasets(splits, batch_size, seed, build),
        num_classes=10,
        input_dim=features,
        description=(
            f"MNIST digits read {reading}: {steps} steps of {features} pixels in [0, 1], 10 "
            f"classes; {', '.join(str(len(y)) for _, y in splits)} train/validation/test "
            "images. LeCun et al. (1998); sequential MNIST of Le, Jaitly & Hinton (2015)."
        ),
    )


mnist_rows = register_task("mnist_rows")(functools.partial(mnist_task, IMAGE_SIZE))
mnist_pixels = register_task("mnist_pixels")(functools.partial(mnist_task, 1))
