"""Speed of the encoder-decoders: a training step and in-graph decoding.

Rows: ``keras_rnncells.seq2seq.Seq2Seq`` over several cells (unidirectional
encoder, Luong "dot" attention) and the reference, the same architecture
written with Keras' own layers (``keras.layers.GRU`` encoder and decoder,
``keras.layers.Attention``, the same attentional layer and output layer),
measured in the same run. Columns:

* train: one training step (forward, sparse cross-entropy, backward, Adam)
  inside a ``tf.function``, batch ``--batch``, source ``--source`` and target
  ``--target`` steps; ratio against the Keras reference;
* greedy/beam: ``model.generate`` (one ``tf.while_loop``, XLA-compiled) of
  ``--target`` tokens at batch 1 and ``--batch``, greedy and beam width 4.
  Keras has no in-graph decoder, so these have no reference.

Timing: each function is warmed up, then ``--repeats`` rounds call every
function once (round robin), timed to the result's ``.numpy()``; the table
shows medians.

Usage::

    python benchmarks/seq2seq.py                 # batch 64, source 30, target 12, units 128
    python benchmarks/seq2seq.py --cells gru,mgu,mufuru --json seq2seq.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import tensorflow as tf

from keras_rnncells.seq2seq import Seq2Seq

VOCABULARY = 40
REFERENCE = "keras GRU + keras Attention"


def keras_reference(units: int, embedding_dim: int) -> keras.Model:
    """The reference encoder-decoder in Keras' own layers."""
    source = keras.Input((None,), dtype="int32")
    target_in = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(VOCABULARY, embedding_dim, mask_zero=True)(source)
    memory, state = keras.layers.GRU(units, return_sequences=True, return_state=True)(embedded)
    decoded = keras.layers.GRU(units, return_sequences=True)(
        keras.layers.Embedding(VOCABULARY, embedding_dim)(target_in), initial_state=state
    )
    context = keras.layers.Attention()([decoded, memory])
    attentional = keras.layers.Dense(units, activation="tanh", use_bias=False)(
        keras.layers.Concatenate()([context, decoded])
    )
    return keras.Model([source, target_in], keras.layers.Dense(VOCABULARY)(attentional))


def batch_of(size: int, source_steps: int, target_steps: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    source = rng.integers(4, VOCABULARY, (size, source_steps)).astype("int32")
    source[::2, source_steps // 2 :] = 0  # half the rows padded to half length
    target = rng.integers(4, VOCABULARY, (size, target_steps)).astype("int32")
    return tf.constant(source), tf.constant(target)


def train_step_fn(model: keras.Model) -> Callable:
    optimizer = keras.optimizers.Adam()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)

    @tf.function
    def step(source, target):
        with tf.GradientTape() as tape:
            loss = loss_fn(target, model((source, target), training=True))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    return step


def decode_fn(model: Seq2Seq, beam_width: int, max_length: int) -> Callable:
    return tf.function(
        lambda source: model.generate(source, beam_width, max_length).tokens, jit_compile=True
    )


def timed(function: Callable, *args) -> float:
    started = time.perf_counter()
    result = function(*args)
    tf.nest.map_structure(lambda t: t.numpy(), result)
    return time.perf_counter() - started


def measure(functions: dict, repeats: int) -> dict[str, float]:
    """Median milliseconds of each (function, args), timed round robin."""
    for function, args in functions.values():
        timed(function, *args)
        timed(function, *args)
    samples = {key: [] for key in functions}
    for _ in range(repeats):
        for key, (function, args) in functions.items():
            samples[key].append(timed(function, *args))
    return {key: 1000 * statistics.median(values) for key, values in samples.items()}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", default="gru,lstm,mgu,mufuru")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--source", type=int, default=30)
    parser.add_argument("--target", type=int, default=12)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--embedding", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    if args.quick:
        args.batch, args.source, args.target, args.units, args.embedding = 3, 5, 4, 4, 4
        args.repeats = 2
    return args


def main(argv: Sequence[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    source, target = batch_of(args.batch, args.source, args.target)
    single = source[:1]
    models: dict[str, keras.Model] = {REFERENCE: keras_reference(args.units, args.embedding)}
    for cell in args.cells.split(","):
        models[f"Seq2Seq({cell})"] = Seq2Seq(
            VOCABULARY, VOCABULARY, cell, args.units, args.embedding, attention="dot"
        )
    functions = {
        (label, "train"): (train_step_fn(m), (source, target)) for label, m in models.items()
    }
    for label, model in models.items():
        if isinstance(model, Seq2Seq):
            greedy, beam = decode_fn(model, 1, args.target), decode_fn(model, 4, args.target)
            functions[(label, "greedy 1")] = (greedy, (single,))
            functions[(label, f"greedy {args.batch}")] = (greedy, (source,))
            functions[(label, f"beam4 {args.batch}")] = (beam, (source,))
    milliseconds = measure(functions, args.repeats)
    columns = ["train", "greedy 1", f"greedy {args.batch}", f"beam4 {args.batch}"]
    reference = milliseconds[(REFERENCE, "train")]
    rows = []
    for label, model in models.items():
        row = {"model": label, "parameters": model.count_params()}
        row.update({column: milliseconds.get((label, column)) for column in columns})
        row["train vs reference"] = row["train"] / reference
        rows.append(row)
    print(
        f"\nEncoder-decoders, batch {args.batch}, source {args.source}, target {args.target}, "
        f"units {args.units}, median ms over {args.repeats} rounds"
    )
    header = ["model", "parameters", *(f"{c} ms" for c in columns), "train vs reference"]
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for row in rows:
        values = [row["model"], row["parameters"]]
        values += ["-" if row[c] is None else f"{row[c]:.2f}" for c in columns]
        values.append(f"{row['train vs reference']:.2f}x")
        print("| " + " | ".join(str(v) for v in values) + " |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"settings": vars(args), "rows": rows}, handle, indent=2)
    return rows


if __name__ == "__main__":
    main()
