"""tf.data pipelines shared by the tasks, and the checks of their options.

Every pipeline starts from the example indices, so shuffling moves integers,
not examples: ``fixed_length_dataset`` batches the indices and gathers whole
batches; ``variable_length_dataset`` slices each example out of one flat array
and batches examples of similar lengths together (``bucket_by_sequence_length``),
zero-padded to their bucket's length.

A shuffled pipeline orders epoch ``e`` by ``(seed, e)`` alone, not by how many
times this process has iterated it: every new iteration takes the next value
of the pipeline's own counter (from 0), which `set_shuffle_epoch` sets for the
pipelines one dataset reads and no other; a resumed run sets it to the epoch it
resumes at (`keras_rnncells.training.ResumableRun`, for its training data), so
it sees the orders an uninterrupted run sees. Without a resume, iteration ``i``
is epoch ``i``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from keras_rnncells.checks import check_positive_int, check_seed

AUTOTUNE = tf.data.AUTOTUNE
MAX_BUCKETS = 16
# Subsets taken by `limit` are drawn with this seed, whatever the task's seed,
# so a smoke test and a full run see the same kind of split.
SUBSET_SEED = 0


def subset(count: int, limit: int | None) -> np.ndarray:
    """Indices of at most ``limit`` of ``count`` examples: all of them in order,
    or a fixed random subset (kept in order) when ``limit`` is smaller."""
    if limit is None or limit >= count:
        return np.arange(count)
    return np.sort(np.random.default_rng(SUBSET_SEED).permutation(count)[:limit])


# The attribute of `example_indices`'s dataset that holds its epoch counter.
COUNTER = "_keras_rnncells_shuffle_epoch"


def shuffle_counters(dataset: tf.data.Dataset) -> list[tf.Variable]:
    """The epoch counters of the shuffled pipelines (`example_indices`) that
    ``dataset`` reads, found through the datasets it transforms."""
    counters, seen, todo = [], set(), [dataset]
    while todo:
        node = todo.pop()
        if id(node) not in seen:
            seen.add(id(node))
            if (counter := getattr(node, COUNTER, None)) is not None:
                counters.append(counter)
            todo.extend(node._inputs())  # tf.data's own list of a dataset's inputs
    return counters


def set_shuffle_epoch(dataset: tf.data.Dataset, epoch: int) -> None:
    """The next iteration of ``dataset`` takes the order of ``epoch``: sets the
    counter of each shuffled pipeline it reads; other pipelines keep theirs."""
    if not isinstance(dataset, tf.data.Dataset):
        raise ValueError(
            f"Argument `dataset` must be a tf.data.Dataset, received: {type(dataset).__name__}"
        )
    if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 0:
        raise ValueError(f"Argument `epoch` must be a non-negative integer, received: {epoch!r}")
    for counter in shuffle_counters(dataset):
        counter.assign(int(epoch))


def example_indices(count: int, shuffle_seed: int | None) -> tf.data.Dataset:
    """``0 .. count - 1``, in the order of ``(shuffle_seed, epoch)`` when shuffled."""
    if shuffle_seed is None:
        return tf.data.Dataset.range(count)
    with tf.init_scope(), tf.device("/CPU:0"):  # a plain variable, even inside a tf.function
        counter = tf.Variable(0, dtype=tf.int64, trainable=False, name="shuffle_epoch")

    def permutation(_: tf.Tensor) -> tf.Tensor:
        epoch = counter.assign_add(1) - 1
        seed = tf.stack([tf.constant(shuffle_seed, tf.int64), epoch])
        return tf.random.experimental.stateless_shuffle(tf.range(count, dtype=tf.int64), seed)

    indices = tf.data.Dataset.from_tensors(0).map(permutation).unbatch()
    setattr(indices, COUNTER, counter)  # found by `shuffle_counters`
    return indices


def shuffled_slices(tensors: Any, shuffle_seed: int | None) -> tf.data.Dataset:
    """``tf.data.Dataset.from_tensor_slices(tensors)``, shuffled as `example_indices`."""
    tensors = tf.nest.map_structure(tf.convert_to_tensor, tensors)
    count = int(tf.nest.flatten(tensors)[0].shape[0])
    return example_indices(count, shuffle_seed).map(
        lambda i: tf.nest.map_structure(lambda t: tf.gather(t, i), tensors)
    )


def fixed_length_dataset(
    inputs: np.ndarray,
    targets: np.ndarray,
    batch_size: int,
    shuffle_seed: int | None = None,
    transform: Callable[[tf.Tensor], tf.Tensor] | None = None,
) -> tf.data.Dataset:
    """Batches ``(transform(inputs[batch]), targets[batch])``; the last may be smaller."""
    inputs, targets = tf.constant(inputs), tf.constant(targets)
    transform = transform or (lambda x: x)

    def gather(batch: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return transform(tf.gather(inputs, batch)), tf.gather(targets, batch)

    batches = example_indices(len(targets), shuffle_seed).batch(batch_size)
    return batches.map(gather, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)


def bucket_lengths(lengths: np.ndarray, max_buckets: int = MAX_BUCKETS) -> np.ndarray:
    """The padded length of each bucket, at most ``max_buckets`` of them: every
    distinct length when there are few (batches without padding), else the
    quantiles of ``lengths`` (ending with the longest)."""
    distinct = np.unique(lengths)
    if len(distinct) <= max_buckets:
        return distinct
    quantiles = np.quantile(lengths, np.linspace(0, 1, max_buckets + 1)[1:], method="higher")
    return np.unique(quantiles)


def variable_length_dataset(
    sequences: Sequence[np.ndarray],
    targets: np.ndarray,
    batch_size: int,
    shuffle_seed: int | None = None,
    max_buckets: int = MAX_BUCKETS,
) -> tf.data.Dataset:
    """Batches of similar-length ``sequences`` (axis 0 is time) with their
    ``targets``. A sequence goes to the first bucket of `bucket_lengths` that
    holds it, and is zero-padded at the end to that bucket's length, so a
    model sees at most ``2 * max_buckets`` batch shapes (full and last batch
    of each bucket), and compiles that many times at most."""
    lengths = np.array([len(s) for s in sequences], dtype="int64")
    starts = tf.constant(np.cumsum(lengths) - lengths)
    flat, lengths_t, targets_t = map(tf.constant, (np.concatenate(sequences), lengths, targets))

    def example(i: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return flat[starts[i] : starts[i] + lengths_t[i]], targets_t[i]

    # Bucket k holds lengths in [boundaries[k-1], boundaries[k]), padded to boundaries[k] - 1.
    boundaries = (bucket_lengths(lengths, max_buckets) + 1).tolist()
    sizes = np.bincount(np.searchsorted(boundaries, lengths, side="right"))
    examples = example_indices(len(targets), shuffle_seed).map(example)
    batches = examples.bucket_by_sequence_length(
        lambda x, y: tf.shape(x)[0],
        boundaries,
        [batch_size] * (len(boundaries) + 1),
        pad_to_bucket_boundary=True,
    )
    # The batch count is known (it does not depend on the order), so Keras can
    # show progress and does not warn that the data ran out.
    count = int(np.sum(-(-sizes // batch_size)))
    return batches.apply(tf.data.experimental.assert_cardinality(count)).prefetch(AUTOTUNE)


def binary_targets(labels: Sequence[int] | np.ndarray) -> np.ndarray:
    """0/1 labels as the float32 ``(n, 1)`` targets of binary tasks."""
    return np.asarray(labels, dtype="float32").reshape(-1, 1)


Split = tuple[Any, np.ndarray]  # (inputs: array or list of sequences, targets)


def split_datasets(
    splits: Sequence[Split],
    batch_size: int,
    seed: int,
    build: Callable[..., tf.data.Dataset] = variable_length_dataset,
) -> dict[str, tf.data.Dataset]:
    """The ``train`` (shuffled with ``seed``), ``validation`` and ``test``
    datasets of three ``(inputs, targets)`` splits, as `Task` arguments."""
    batch_size, seed = check_positive_int("batch_size", batch_size), check_seed("seed", seed)
    train, validation, test = splits
    return {
        "train": build(*train, batch_size, shuffle_seed=seed),
        "validation": build(*validation, batch_size),
        "test": build(*test, batch_size),
    }
