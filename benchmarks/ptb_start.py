"""How fast each cell leaves the unigram plateau of PTB language modelling.

The reproduction's PTB runs (one epoch) leave the GRU near the perplexity of
a unigram model (about 700) where MuFuRU has gone far below it. This script
tells the GRU's behaviour from a defect of ours: it trains, on the same
batches from the same seed, the reproduction's model (embedding 200, one
recurrent layer of 200, full softmax, Adam 1e-3, clipnorm 5) with our GRU,
Keras' own ``keras.layers.GRU`` in its place (the reference), our LSTM and
MuFuRU, and prints the training perplexity of every window of ``--window``
steps (exp of the mean loss over the window), and the last window's ratio to
Keras' GRU.

Usage (from the repository root, with ``../shared/data`` or
``RNNCELLS_DATA`` holding PTB)::

    python benchmarks/ptb_start.py                 # 600 steps, windows of 50
    python benchmarks/ptb_start.py --steps 200 --models gru,keras_gru
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
from collections.abc import Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras

from keras_rnncells.data import load_task
from keras_rnncells.data.tasks import Task
from keras_rnncells.experiments import build_model, head, task_settings

REFERENCE = "keras_gru"
MODELS = ("gru", REFERENCE, "lstm", "mufuru")


def keras_gru_model(task: Task, units: int, embedding_dim: int) -> keras.Model:
    """The reproduction's model with ``keras.layers.GRU`` as its recurrent layer."""
    inputs = keras.Input((None,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(task.vocabulary_size, embedding_dim, mask_zero=True)(inputs)
    x = keras.layers.GRU(units, return_sequences=True)(x)
    return keras.Model(inputs, keras.layers.Dense(task.vocabulary_size, name="logits")(x))


def window_perplexities(name: str, task: Task, steps: int, window: int) -> list[float]:
    """Training perplexity of each ``window`` steps of ``steps`` for model ``name``."""
    settings = task_settings("ptb", units=200, layers=1)
    keras.utils.set_random_seed(settings.seed)
    if name == REFERENCE:  # compiled as `build_model` compiles ours
        model = keras_gru_model(task, settings.units, settings.embedding_dim)
        optimizer = keras.optimizers.Adam(settings.learning_rate, clipnorm=settings.clipnorm)
        loss, _ = head(task.kind)
        model.compile(optimizer=optimizer, loss=loss, jit_compile=False)
    else:
        model = build_model(
            task,
            name,
            settings.units,
            embedding_dim=settings.embedding_dim,
            learning_rate=settings.learning_rate,
            clipnorm=settings.clipnorm,
        )
    means: list[float] = []  # Keras logs the running mean of the epoch's loss

    class EveryWindow(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
            if (batch + 1) % window == 0:
                means.append(float(logs["loss"]))

    model.fit(task.train.take(steps), epochs=1, callbacks=[EveryWindow()], verbose=0)
    totals = [0.0] + [mean * window * (i + 1) for i, mean in enumerate(means)]
    return [math.exp((after - before) / window) for before, after in itertools.pairwise(totals)]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=600, help="training steps (default 600)")
    parser.add_argument("--window", type=int, default=50, help="steps per window (default 50)")
    parser.add_argument(
        "--models", default=",".join(MODELS), help=f"comma list of {', '.join(MODELS)}"
    )
    args = parser.parse_args(argv)
    args.models = args.models.split(",")
    unknown = sorted(set(args.models) - set(MODELS))
    if unknown:
        parser.error(f"--models: unknown {unknown}; known: {', '.join(MODELS)}")
    if args.window < 1 or args.steps < args.window:
        parser.error("--window must be positive and at most --steps")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, list[float]]:
    args = parse_args(argv)
    task = load_task("ptb", batch_size=20)
    curves = {
        name: window_perplexities(name, task, args.steps, args.window) for name in args.models
    }
    ends = [args.window * (i + 1) for i in range(args.steps // args.window)]
    print(f"PTB training perplexity per window of {args.window} steps (batch 20, 35 steps)")
    print("| model | " + " | ".join(str(end) for end in ends) + f" | last vs {REFERENCE} |")
    print("|---|" + "---:|" * (len(ends) + 1))
    reference = curves.get(REFERENCE)
    for name, curve in curves.items():
        ratio = f"{curve[-1] / reference[-1]:.2f}x" if reference else "-"
        print(f"| {name} | " + " | ".join(f"{p:.0f}" for p in curve) + f" | {ratio} |")
    return curves


if __name__ == "__main__":
    main()
