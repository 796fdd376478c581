"""How much a batch-normalized run's accuracy depends on the statistics it infers with.

A recurrent batch-norm cell (``batch_norm=True``) trains on each batch's
statistics and infers with per-step moving averages, updated during training
while the weights move. This script loads a finished ``rnncells train TASK
--batch-norm`` run of a classification task and prints the validation
accuracy (its first ``--batches`` batches) three ways: with the run's moving
averages, with each batch's own statistics, and with the moving averages
re-estimated on the final weights over ``--passes`` training batches
(`keras_rnncells.reestimate_batch_norm`, what ``rnncells train --batch-norm``
now does before it evaluates; a run trained before that has the averages of
its last epoch).

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

import keras_rnncells
from keras_rnncells.data import load_task, size_options


def accuracy(model: keras.Model, batches, training: bool, count: int) -> float:
    right = total = 0
    for x, y in batches.take(count):
        predicted = np.argmax(np.asarray(model(x, training=training)), axis=-1)
        right += int(np.sum(predicted == np.asarray(y).reshape(-1)))
        total += len(predicted)
    return right / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--batches", type=int, default=20, help="validation batches")
    parser.add_argument("--passes", type=int, default=300, help="training batches re-estimating")
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
    statistics = [v for v in model.non_trainable_variables if "moving" in v.path]
    if not statistics:
        parser.error(f"{args.run_dir}: no batch-norm statistics in its model")
    saved = [keras.ops.convert_to_numpy(v) for v in statistics]
    rows = [("moving averages of the run", accuracy(model, task.validation, False, args.batches))]
    rows.append(("each batch's statistics", accuracy(model, task.validation, True, args.batches)))
    for variable, value in zip(statistics, saved):
        variable.assign(value)  # the batch-statistics pass updated them on validation data
    keras_rnncells.reestimate_batch_norm(model, task.train, batches=args.passes)
    rows.append(
        (
            f"re-estimated over {args.passes} training batches",
            accuracy(model, task.validation, False, args.batches),
        )
    )
    test = results["test_metric"]
    print(f"{args.run_dir}: validation accuracy ({args.batches} batches); test {test:.4f}")
    print("| statistics | validation accuracy |\n|---|---:|")
    for name, value in rows:
        print(f"| {name} | {100 * value:.2f}% |")


if __name__ == "__main__":
    main()
