"""How much a batch-normalized run's accuracy depends on the statistics it infers with.

A recurrent batch-norm cell (``batch_norm=True``) trains on each batch's
statistics and infers with per-step moving averages, updated during training
while the weights move. This script loads a finished ``rnncells train TASK
--batch-norm`` run of a classification task and prints its validation and
test accuracy with four sets of statistics: the run's moving averages as
saved, each evaluated batch's own statistics, the average over ``--batches``
training batches of each batch's own statistics (what
`keras_rnncells.reestimate_batch_norm` did before it read the batches as
one), and `keras_rnncells.reestimate_batch_norm` over the same batches read
as one batch (what ``rnncells train --batch-norm`` does before it
evaluates).

Usage::

    python benchmarks/batch_norm_statistics.py results/runs/mnist_rows_batch_norm/lstm-100-bn
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import tensorflow as tf

import keras_rnncells
from keras_rnncells.data import load_task, size_options
from keras_rnncells.reestimation import batch_norm_cells


def accuracy(model: keras.Model, batches: tf.data.Dataset, training: bool) -> float:
    """The accuracy of ``model`` on ``batches``, inferring (``training``
    False) or with each batch's own statistics (True; the caller restores
    the averages that this updates)."""
    right = total = 0
    for x, y in batches:
        predicted = np.argmax(np.asarray(model(x, training=training)), axis=-1)
        right += int(np.sum(predicted == np.asarray(y).reshape(-1)))
        total += len(predicted)
    return right / total


def averaged_batch_statistics(model: keras.Model, batches: tf.data.Dataset) -> None:
    """Sets the moving averages of ``model`` to the mean over ``batches`` of
    each batch's own statistics at each step (every batch reaches every
    step: a task of fixed length)."""
    statistics = moving_statistics(model)
    cells = batch_norm_cells(model)
    momenta = [cell.batch_norm_momentum for cell in cells]
    for cell in cells:
        cell.batch_norm_momentum = 0.0
    forward = tf.function(lambda inputs: model(inputs, training=True))
    sums = [np.zeros(v.shape) for v in statistics]
    count = 0
    for x, _ in batches:
        forward(x)
        for total, variable in zip(sums, statistics):
            total += keras.ops.convert_to_numpy(variable)
        count += 1
    for variable, total in zip(statistics, sums):
        variable.assign((total / count).astype("float32"))
    for cell, momentum in zip(cells, momenta):
        cell.batch_norm_momentum = momentum


def moving_statistics(model: keras.Model) -> list:
    return [v for v in model.non_trainable_variables if "moving" in v.path]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--batches", type=int, default=41, help="training batches re-estimating")
    args = parser.parse_args()
    results = json.loads((args.run_dir / "results.json").read_text(encoding="utf-8"))
    settings = results["settings"]
    task = load_task(
        results["task"],
        batch_size=settings["batch_size"],
        seed=settings["seed"],
        **size_options(results["task"], settings["limit"]),
    )
    model = keras.saving.load_model(args.run_dir / "model.keras")
    statistics = moving_statistics(model)
    if not statistics:
        parser.error(f"{args.run_dir}: no batch-norm statistics in its model")
    saved = [keras.ops.convert_to_numpy(v) for v in statistics]
    training_batches = task.train.take(args.batches).cache()

    def restore() -> None:
        for variable, value in zip(statistics, saved):
            variable.assign(value)

    def scores(training: bool = False) -> tuple[float, float]:
        found = tuple(accuracy(model, split, training) for split in (task.validation, task.test))
        if training:
            restore()  # the batch-statistics passes updated the averages
        return found

    rows = [("moving averages as saved", scores())]
    rows.append(("each evaluated batch's own statistics", scores(training=True)))
    averaged_batch_statistics(model, training_batches)
    rows.append((f"mean of {args.batches} training batches' own statistics", scores()))
    restore()
    keras_rnncells.reestimate_batch_norm(model, training_batches, batches=args.batches)
    rows.append((f"`reestimate_batch_norm`: {args.batches} training batches read as one", scores()))
    print(f"{args.run_dir}: run's test accuracy {results['test_metric']:.4f}")
    print("| statistics | validation accuracy | test accuracy |\n|---|---:|---:|")
    for name, (validation, test) in rows:
        print(f"| {name} | {100 * validation:.2f}% | {100 * test:.2f}% |")


if __name__ == "__main__":
    main()
