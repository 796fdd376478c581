"""Serving latency and throughput: SavedModel (TensorFlow) against ONNX Runtime.

For each application (sentiment, seq2seq, and the recurrent layers GRU, LSTM
and MGU on float sequences, with Keras' own GRU and LSTM layers as the
reference, served the same way) the script builds a model of the default size
(untrained: speed does not depend on the weights), exports it with
``keras_rnncells.export`` (SavedModel and ONNX), loads both artifacts the
way a server does (``tf.saved_model.load`` and an ``onnxruntime``
``InferenceSession``) and times one request at batch 1 and at batch 64:
median and p99 latency over ``--repeats`` requests, and throughput
(examples per second at batch 64). SavedModel requests take the serving
signature's inputs (strings for the text applications); ONNX requests take
token ids (tokenization is not in the ONNX graph), so the ONNX column leaves
tokenization out.

Usage::

    python benchmarks/serving.py                      # all rows, 200 requests each
    python benchmarks/serving.py --rows gru,sentiment --repeats 50 --json serving.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf

from keras_rnncells.export import Servable, recurrent_layer_servable

ROWS = ("keras-gru", "gru", "keras-lstm", "lstm", "mgu", "sentiment", "seq2seq")


def text_servables(name: str) -> Servable:
    """An untrained application model of the default size, as a Servable."""
    from keras_rnncells.apps.sentiment import SentimentClassifier, sentiment_servable
    from keras_rnncells.apps.seq2seq import seq2seq_servable
    from keras_rnncells.data.dates import date_pairs
    from keras_rnncells.seq2seq import TextSeq2Seq
    from keras_rnncells.text import CharTokenizer, WordPieceTokenizer

    if name == "sentiment":
        corpus = ["a gripping , beautifully acted film", "dull and far too long"] * 50
        return sentiment_servable(SentimentClassifier(WordPieceTokenizer.from_corpus(corpus)))
    sources, targets = zip(*date_pairs(500))
    model = TextSeq2Seq.from_tokenizers(
        CharTokenizer.from_corpus(sources),
        CharTokenizer.from_corpus(targets),
        bidirectional=True,
        max_output_length=12,
    )
    return seq2seq_servable(model)


def keras_layer_servable(name: str, units: int = 128, input_dim: int = 64) -> Servable:
    """The reference: Keras' own GRU or LSTM layer, served like ours."""
    import keras

    from keras_rnncells.export.servable import layer_servable

    layer_class = {"keras-gru": keras.layers.GRU, "keras-lstm": keras.layers.LSTM}[name]
    return layer_servable(layer_class(units, return_sequences=True), name, input_dim)


def servable(name: str) -> Servable:
    if name in ("sentiment", "seq2seq"):
        return text_servables(name)
    if name.startswith("keras-"):
        return keras_layer_servable(name)
    return recurrent_layer_servable(name, units=128, input_dim=64)


def batch_of(examples: dict[str, np.ndarray], size: int, steps: int | None = None) -> dict:
    """``examples`` repeated (or cut) to ``size`` rows; float sequences get ``steps`` steps."""
    batch = {}
    for key, value in examples.items():
        rows = np.resize(value, (size, *value.shape[1:]))
        if steps is not None and rows.dtype == np.float32 and rows.ndim == 3:
            rows = np.random.default_rng(0).normal(size=(size, steps, rows.shape[2]))
            rows = rows.astype("float32")
        batch[key] = rows
    return batch


def latencies(call: Callable[[], object], repeats: int) -> list[float]:
    call()
    call()
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


def summary(samples: list[float], batch: int) -> dict[str, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    median = statistics.median(ordered)
    return {"p50_ms": 1000 * median, "p99_ms": 1000 * p99, "per_second": batch / median}


def measure(name: str, directory: Path, repeats: int, steps: int) -> list[dict]:
    import onnxruntime

    from keras_rnncells.export.command import export_servable

    served = servable(name)
    paths = export_servable(served, directory, version=1)
    saved_path, onnx_path = paths["savedmodel"], paths["onnx"]
    signature = tf.saved_model.load(str(saved_path)).signatures["serving_default"]
    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    onnx_examples = served.onnx()[1]
    rows = []
    for size in (1, 64):
        saved_inputs = {
            k: tf.constant(v) for k, v in batch_of(served.examples, size, steps).items()
        }
        onnx_inputs = batch_of(onnx_examples, size, steps)
        for runtime, call in (
            ("SavedModel", lambda inputs=saved_inputs: signature(**inputs)),
            ("ONNX Runtime", lambda inputs=onnx_inputs: session.run(None, inputs)),
        ):
            result = summary(latencies(call, repeats), size)
            rows.append({"model": name, "runtime": runtime, "batch": size, **result})
    return rows


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default=",".join(ROWS), help=f"any of {','.join(ROWS)}")
    parser.add_argument("--repeats", type=int, default=200, help="requests per measurement")
    parser.add_argument("--steps", type=int, default=30, help="steps of the float sequences")
    parser.add_argument("--json", help="also write the rows to this file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        for name in args.rows.split(","):
            rows += measure(name, Path(temporary) / name, args.repeats, args.steps)
    print(f"\nServing, median (p50) and p99 latency over {args.repeats} requests")
    print("| model | runtime | batch | p50 ms | p99 ms | examples/s | vs SavedModel |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in rows:
        reference = next(
            r["p50_ms"]
            for r in rows
            if (r["model"], r["batch"], r["runtime"]) == (row["model"], row["batch"], "SavedModel")
        )
        row["vs_savedmodel"] = row["p50_ms"] / reference
        print(
            f"| {row['model']} | {row['runtime']} | {row['batch']} | {row['p50_ms']:.2f} | "
            f"{row['p99_ms']:.2f} | {row['per_second']:.0f} | {row['vs_savedmodel']:.2f}x |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
