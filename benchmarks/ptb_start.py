"""How fast each cell leaves the unigram plateau of PTB language modelling.

The reproduction's PTB runs (one epoch) leave the GRU near the perplexity of
a unigram model (about 700) where MuFuRU has gone far below it. This script
tells the GRU's behaviour from a defect of ours: it trains, on the same
batches from the same seed, the reproduction's model (embedding 200, one
recurrent layer of 200, full softmax, Adam 1e-3, clipnorm 5) with our GRU,
Keras' own ``keras.layers.GRU`` in its place (the reference), our LSTM and
MuFuRU, and prints the training perplexity of every window of ``--window``
steps (exp of the mean loss over the window), and the last window's ratio to
Keras' GRU. ``--units`` and ``--layers`` size every model alike (Keras'
GRU then stacks ``--layers`` of its own); ``--unigram-bias`` adds, for each
model, a second row with its output bias started at the unigram
log-probabilities (`keras_rnncells.start_at_unigram`), which tells the
plateau's cause: the output bias learning the words' frequencies.

Usage (from the repository root, with ``../shared/data`` or
``RNNCELLS_DATA`` holding PTB)::

    python benchmarks/ptb_start.py                 # 600 steps, windows of 50
    python benchmarks/ptb_start.py --steps 200 --models gru,keras_gru
    python benchmarks/ptb_start.py --units 500 --layers 2 --steps 300 --unigram-bias
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
from collections.abc import Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np

from keras_rnncells import start_at_unigram
from keras_rnncells.cells.registry import list_cells
from keras_rnncells.data import load_task
from keras_rnncells.data.tasks import Task
from keras_rnncells.experiments import build_model, head, task_settings, token_counts

REFERENCE = "keras_gru"
MODELS = ("gru", REFERENCE, "lstm", "mufuru")
UNIGRAM = " + unigram bias"  # the mark of a row whose output bias starts at the unigram


def keras_gru_model(task: Task, units: int, layers: int, embedding_dim: int) -> keras.Model:
    """The reproduction's model with ``layers`` of ``keras.layers.GRU`` as its recurrent layers."""
    inputs = keras.Input((None,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(task.vocabulary_size, embedding_dim, mask_zero=True)(inputs)
    for _ in range(layers):
        x = keras.layers.GRU(units, return_sequences=True)(x)
    return keras.Model(inputs, keras.layers.Dense(task.vocabulary_size, name="logits")(x))


def window_perplexities(
    name: str, task: Task, args: argparse.Namespace, counts: np.ndarray | None = None
) -> list[float]:
    """Training perplexity of each ``args.window`` steps of ``args.steps`` for
    model ``name``; with unigram ``counts``, its output bias starts there."""
    settings = task_settings("ptb", units=args.units, layers=args.layers)
    keras.utils.set_random_seed(settings.seed)
    if name == REFERENCE:  # compiled as `build_model` compiles ours
        model = keras_gru_model(task, settings.units, settings.layers, settings.embedding_dim)
        optimizer = keras.optimizers.Adam(settings.learning_rate, clipnorm=settings.clipnorm)
        loss, _ = head(task.kind)
        model.compile(optimizer=optimizer, loss=loss, jit_compile=False)
    else:
        model = build_model(
            task,
            name,
            settings.units,
            layers=settings.layers,
            embedding_dim=settings.embedding_dim,
            learning_rate=settings.learning_rate,
            clipnorm=settings.clipnorm,
        )
    if counts is not None:
        start_at_unigram(model.get_layer("logits"), counts)
    window, steps = args.window, args.steps
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
        "--models",
        default=",".join(MODELS),
        help=f"comma list of {REFERENCE} and registered cells (default {','.join(MODELS)})",
    )
    parser.add_argument("--units", type=int, default=200, help="units per layer (default 200)")
    parser.add_argument("--layers", type=int, default=1, help="recurrent layers (default 1)")
    parser.add_argument(
        "--unigram-bias",
        action="store_true",
        help="also train each model with its output bias started at the unigram",
    )
    args = parser.parse_args(argv)
    args.models = args.models.split(",")
    unknown = sorted(set(args.models) - {REFERENCE, *list_cells()})
    if unknown:
        parser.error(f"--models: unknown {unknown}; known: {REFERENCE}, {', '.join(list_cells())}")
    if args.units < 1 or args.layers < 1:
        parser.error("--units and --layers must be positive")
    if args.window < 1 or args.steps < args.window:
        parser.error("--window must be positive and at most --steps")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, list[float]]:
    args = parse_args(argv)
    task = load_task("ptb", batch_size=20)
    curves = {name: window_perplexities(name, task, args) for name in args.models}
    if args.unigram_bias:
        counts = token_counts(task)
        for name in args.models:
            curves[name + UNIGRAM] = window_perplexities(name, task, args, counts)
    ends = [args.window * (i + 1) for i in range(args.steps // args.window)]
    print(
        f"PTB training perplexity per window of {args.window} steps (batch 20, 35 steps; "
        f"{args.layers} layer(s) of {args.units})"
    )
    print("| model | " + " | ".join(str(end) for end in ends) + f" | last vs {REFERENCE} |")
    print("|---|" + "---:|" * (len(ends) + 1))
    reference = curves.get(REFERENCE)
    for name, curve in curves.items():
        ratio = f"{curve[-1] / reference[-1]:.2f}x" if reference else "-"
        print(f"| {name} | " + " | ".join(f"{p:.0f}" for p in curve) + f" | {ratio} |")
    return curves


if __name__ == "__main__":
    main()
