"""What a language model's training step costs with each output layer of
`keras_rnncells.softmax`, against Keras' own ``Dense`` + sparse cross-entropy
head, over a vocabulary of PTB's size (10k) and a large one (50k), in one
process (medians of round-robin rounds of ``train_on_batch``, and of the
forward pass to every word's logits, what inference computes).

The model is PTB's: an embedding of ``--units``, one GRU layer of ``--units``
and the head; batch 20, 35 steps (the PTB task's).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/softmax.py                # 10k and 50k words
    PYTHONPATH=. python benchmarks/softmax.py --quick        # seconds: tiny shapes
    PYTHONPATH=. python benchmarks/softmax.py --heads hierarchical,blackout,"negative sampling"
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import tensorflow as tf

from keras_rnncells import GRU, VocabularySoftmax
from keras_rnncells.defaults import COUNTED_SOFTMAXES
from keras_rnncells.metrics import TokenCrossEntropy
from keras_rnncells.softmax import token_mean

# The heads timed: Keras' own, then ours by (method, options); --quick times QUICK_HEADS.
HEADS = {
    "keras Dense + cross-entropy": None,
    "full": ("full", {}),
    "full, self-normalized": ("full", {"self_normalization": 0.1}),
    "sampled, log-uniform": ("sampled", {}),
    "sampled, unigram": ("sampled", {"sampler": "unigram"}),
    "nce, log-uniform": ("nce", {}),
    "class": ("class", {}),
    "hierarchical": ("hierarchical", {}),
    "blackout": ("blackout", {}),
    "negative sampling": ("negative", {}),
}
QUICK_HEADS = ("keras Dense + cross-entropy", "full", "sampled, log-uniform", "class")
# The references every run times (the ratios' denominators).
REFERENCES = ("keras Dense + cross-entropy", "full")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocabularies", default="10001,50001", help="comma-separated sizes")
    parser.add_argument("--units", type=int, default=200)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--steps", type=int, default=35)
    parser.add_argument("--num-sampled", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="tiny shapes, 2 rounds, 4 heads")
    parser.add_argument(
        "--heads",
        help=f"comma-separated heads to time besides {' and '.join(REFERENCES)} (default: all; "
        f"--quick: {', '.join(QUICK_HEADS[2:])}), of: {', '.join(HEADS)}",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.vocabularies, args.units, args.batch, args.steps, args.repeats = "300", 8, 4, 6, 2
        args.num_sampled = 16
    if args.heads is None:
        chosen = QUICK_HEADS if args.quick else tuple(HEADS)
    else:
        chosen = tuple(name.strip() for name in args.heads.split(","))
        unknown = [name for name in chosen if name not in HEADS]
        if unknown:
            parser.error(f"--heads: unknown {unknown}; the heads are {list(HEADS)}")
    args.heads = [name for name in HEADS if name in REFERENCES or name in chosen]
    return args


def build(
    head: tuple | None, vocabulary: int, args: argparse.Namespace
) -> tuple[keras.Model, keras.Model]:
    """The language model with ``head`` (None: Keras' Dense), compiled for
    training, and its tokens-to-logits model (the same layers)."""
    keras.utils.set_random_seed(0)
    tokens = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(vocabulary, args.units, mask_zero=True)(tokens)
    hidden = GRU(args.units, return_sequences=True)(embedded)
    if head is None:
        model = keras.Model(tokens, keras.layers.Dense(vocabulary)(hidden))
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
        model.compile("adam", loss, metrics=[TokenCrossEntropy()], jit_compile=False)
        return model, model
    method, options = head
    counts = 1.0 / np.arange(1, vocabulary + 1)  # Zipfian: samplers, the Huffman tree
    counted = options.get("sampler") == "unigram" or method in COUNTED_SOFTMAXES
    layer = VocabularySoftmax(
        vocabulary,
        method,
        num_sampled=args.num_sampled,
        unigram_counts=counts if counted else None,
        **options,
    )
    targets = keras.Input((None,), dtype="int32")
    model = keras.Model([tokens, targets], layer([hidden, targets]))
    model.compile("adam", token_mean, jit_compile=False)
    return model, keras.Model(tokens, layer(hidden))


def timed(call, *arguments) -> float:
    started = time.perf_counter()
    call(*arguments)
    return 1000 * (time.perf_counter() - started)


def main(argv: Sequence[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    tf.get_logger().setLevel("ERROR")  # one tf.function per model: no retracing to warn of
    rows = []
    for vocabulary in (int(v) for v in args.vocabularies.split(",")):
        rng = np.random.default_rng(0)
        tokens = rng.integers(1, vocabulary, size=(args.batch, args.steps)).astype("int32")
        targets = rng.integers(1, vocabulary, size=(args.batch, args.steps)).astype("int32")
        models = {name: build(HEADS[name], vocabulary, args) for name in args.heads}
        inputs = {name: tokens if HEADS[name] is None else (tokens, targets) for name in models}
        logits = {
            name: tf.function(lambda x, m=serving: m(x, training=False))
            for name, (_, serving) in models.items()
        }
        times: dict[str, dict[str, list[float]]] = {
            name: {"train": [], "fwd": []} for name in models
        }
        for round_ in range(args.repeats + 1):  # the first: trace and compile, not timed
            for name, (model, _) in models.items():
                train = timed(model.train_on_batch, inputs[name], targets)
                forward = timed(lambda f=logits[name], x=tokens: np.asarray(f(x)))
                if round_:
                    times[name]["train"].append(train)
                    times[name]["fwd"].append(forward)
        median = {
            name: {k: statistics.median(v) for k, v in t.items()} for name, t in times.items()
        }
        reference, full = median["keras Dense + cross-entropy"], median["full"]
        for name, values in median.items():
            rows.append(
                {
                    "vocabulary": vocabulary,
                    "head": name,
                    "train_ms": values["train"],
                    "fwd_ms": values["fwd"],
                    "train_vs_keras": values["train"] / reference["train"],
                    "train_vs_full": values["train"] / full["train"],
                    "fwd_vs_keras": values["fwd"] / reference["fwd"],
                }
            )
    print(
        f"\nLanguage-model training step (embedding, GRU {args.units}, head), batch "
        f"{args.batch}, {args.steps} steps, {args.num_sampled} samples per batch; medians of "
        f"{args.repeats} round-robin rounds\n"
    )
    print(
        "| vocabulary | head | train step ms | vs Keras Dense | vs our full | forward ms "
        "| forward vs Keras |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['vocabulary']:,} | {r['head']} | {r['train_ms']:.1f} "
            f"| {r['train_vs_keras']:.2f}x | {r['train_vs_full']:.2f}x | {r['fwd_ms']:.1f} "
            f"| {r['fwd_vs_keras']:.2f}x |"
        )
    return rows


if __name__ == "__main__":
    main()
