"""Re-estimating the statistics of recurrent batch normalization on a
trained model (`reestimate_batch_norm`), what ``rnncells train --batch-norm``
does before it evaluates.

The moving averages a batch-norm cell infers with
(`keras_rnncells.cells.batch_norm.RecurrentBatchNorm`) are updated during
training while the weights move, so after the last epoch they lag the
weights, and the lag compounds over the steps of a sequence. Averaging each
batch's own statistics on the final weights does not give inference's
statistics either: those are statistics of states computed with each
batch's statistics at every earlier step, where inference computes them
with the population's, and an LSTM on MNIST rows amplifies that difference
over its 28 steps (``benchmarks/batch_norm_statistics.py`` compares the
estimates).
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from keras_rnncells.cells.batch_norm import RecurrentBatchNorm
from keras_rnncells.checks import check_positive_int


def batch_norm_cells(model: keras.Layer) -> list[RecurrentBatchNorm]:
    """Every cell of ``model`` (nested layers and cells included) with ``batch_norm=True``."""
    return [layer for layer in sublayers(model) if getattr(layer, "batch_norm", False) is True]


def reestimate_batch_norm(model: keras.Layer, dataset: Any, batches: int = 20) -> int:
    """Replaces the moving averages of every recurrent batch-norm cell of
    ``model`` (`RecurrentBatchNorm`) by the statistics, at each step index,
    of the first ``batches`` batches of ``dataset`` read as one batch, with
    the weights as they are now (no weight changes). Returns the number of
    batches read (fewer where ``dataset`` ends first).

    Read as one batch, the rows are normalized at every step with the
    statistics of all of them, so the statistics measured at step t are
    those of the states that inference computes from the statistics at the
    steps before t. An average of each batch's own statistics is not: a
    row-MNIST LSTM inferred 96.93% test accuracy with the average over 200
    batches, 98.90% with 41 batches read as one
    (``benchmarks/batch_norm_statistics.py``). Memory grows with the rows
    read.

    ``dataset`` yields what the model reads, or ``(inputs, targets)`` pairs
    (as ``model.fit`` takes), of which the inputs are read; batches of
    different lengths are padded with zeros at the end, as a padded batch
    is. A step index that no row reaches keeps its average.
    """
    check_positive_int("batches", batches)
    cells = batch_norm_cells(model)
    if not cells:
        raise ValueError(
            f"Argument `model` must hold a recurrent cell with batch_norm=True; "
            f"{model.name!r} has none"
        )
    stateful = [layer.name for layer in sublayers(model) if getattr(layer, "stateful", False)]
    if stateful:
        raise ValueError(
            f"Argument `model` must be stateless (its batch size fixed by state), received "
            f"{model.name!r} with stateful layers {stateful}; re-estimate a stateless copy"
        )
    parts = [
        element[0] if isinstance(element, tuple) else element for element in dataset.take(batches)
    ]
    if not parts:
        return 0
    momenta = [cell.batch_norm_momentum for cell in cells]
    try:
        for cell in cells:  # the rows' statistics replace the averages where they reach
            cell.batch_norm_momentum = 0.0
        tf.function(lambda inputs: model(inputs, training=True))(one_batch(parts))
    finally:
        for cell, momentum in zip(cells, momenta):
            cell.batch_norm_momentum = momentum
    return len(parts)


def one_batch(batches: list[Any]) -> Any:
    """``batches`` (each a tensor or a structure of tensors) concatenated
    along the batch axis, the shorter padded with zeros at the end of their
    time axis (axis 1)."""

    def concatenated(*parts: Any) -> tf.Tensor:
        parts = [tf.convert_to_tensor(part) for part in parts]
        if parts[0].shape.rank < 2:
            return tf.concat(parts, axis=0)
        longest = max(int(part.shape[1]) for part in parts)
        padded = [
            tf.pad(
                part, [[0, 0], [0, longest - int(part.shape[1])]] + [[0, 0]] * (part.shape.rank - 2)
            )
            for part in parts
        ]
        return tf.concat(padded, axis=0)

    return tf.nest.map_structure(concatenated, *batches)


def sublayers(model: keras.Layer) -> list[keras.Layer]:
    """``model`` and every layer and cell nested in it."""
    # `_flatten_layers` is how Keras itself walks a layer's tracked sublayers
    # (a recurrent layer's cell, a Bidirectional's two copies); no public name.
    return list(model._flatten_layers(include_self=True, recursive=True))
