"""Each shuffled pipeline (`keras_rnncells.data.pipeline`) keeps its own epoch
counter: building, iterating or resuming one leaves every other's order as it
was, and `set_shuffle_epoch` reaches a pipeline through the datasets built on it."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.data.pipeline import (
    example_indices,
    fixed_length_dataset,
    set_shuffle_epoch,
    shuffled_slices,
    variable_length_dataset,
)
from keras_rnncells.training import ResumableRun


def epochs(dataset: tf.data.Dataset, count: int) -> list[list]:
    """``count`` iterations of ``dataset``, each as a list of its elements."""
    return [
        [tf.nest.map_structure(lambda a: a.tolist(), x) for x in dataset.as_numpy_iterator()]
        for _ in range(count)
    ]


def test_two_pipelines_built_alike_order_alike_whatever_the_other_does():
    orders = epochs(example_indices(20, shuffle_seed=5), 4)
    first, second = example_indices(20, shuffle_seed=5), example_indices(20, shuffle_seed=5)
    assert epochs(first, 1) == orders[:1]
    set_shuffle_epoch(second, 3)  # the other pipeline resumes at epoch 3
    assert epochs(first, 1) == [orders[1]]  # this one goes on at its own epoch 1
    assert epochs(second, 1) == [orders[3]]
    set_shuffle_epoch(first, 0)
    assert epochs(first, 2) == orders[:2]
    assert epochs(second, 0) == [] and epochs(example_indices(20, shuffle_seed=5), 1) == orders[:1]


def test_a_resumed_run_sets_the_epoch_of_its_own_training_data_only(tmp_path):
    """`ResumableRun` sets the epoch it resumes at on its ``data``'s pipelines:
    another run's live pipeline keeps its order."""
    orders = epochs(shuffled_slices(np.arange(12), 7), 3)
    other, train = shuffled_slices(np.arange(12), 7), shuffled_slices(np.arange(12), 7)
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    interrupted = ResumableRun(tmp_path)
    interrupted.set_model(model)
    interrupted.save(2)  # the backup of a run that has trained 2 epochs
    resumed = ResumableRun(tmp_path, data=train.batch(4).prefetch(1))
    resumed.set_model(model)
    resumed.on_train_begin()
    assert epochs(train, 1) == [orders[2]]
    assert epochs(other, 1) == [orders[0]]


@pytest.mark.parametrize("build", ["fixed_length", "variable_length", "zip"])
def test_the_epoch_is_set_through_the_datasets_built_on_a_pipeline(build):
    rng = np.random.default_rng(0)
    inputs = rng.normal(size=(24, 3, 2)).astype("float32")
    sequences = [rng.normal(size=(n, 2)).astype("float32") for n in rng.integers(1, 6, 24)]
    targets = np.arange(24, dtype="float32")

    def dataset() -> tf.data.Dataset:
        if build == "fixed_length":
            return fixed_length_dataset(inputs, targets, 5, shuffle_seed=1)
        if build == "variable_length":
            return variable_length_dataset(sequences, targets, 4, shuffle_seed=1, max_buckets=3)
        pair = (example_indices(24, 1), example_indices(24, 2).map(lambda i: i * 10))
        return tf.data.Dataset.zip(pair).batch(6)

    expected = epochs(dataset(), 3)
    assert expected[0] != expected[1] != expected[2]
    data = dataset()
    assert epochs(data, 1) == expected[:1]
    set_shuffle_epoch(data, 2)
    assert epochs(data, 1) == [expected[2]]
    set_shuffle_epoch(data, 1)
    assert epochs(data, 1) == [expected[1]]


def test_set_shuffle_epoch_refuses_what_is_not_a_dataset():
    with pytest.raises(ValueError, match=r"Argument `dataset` must be a tf\.data\.Dataset"):
        set_shuffle_epoch(np.arange(4), 0)
    set_shuffle_epoch(tf.data.Dataset.range(3), 2)  # not shuffled: nothing to set
