"""Serving latency and throughput: SavedModel (TensorFlow) against ONNX Runtime.

For each application (sentiment, color namer, name to color, seq2seq, and the
recurrent layers GRU, LSTM and MGU on float sequences, with Keras' own GRU and
LSTM layers as the reference, served the same way) the script builds a model
of the default size (untrained: speed does not depend on the weights),
exports it with ``keras_rnncells.export`` (SavedModel and ONNX) and loads both
artifacts the way a server does (``tf.saved_model.load`` and an
``onnxruntime`` ``InferenceSession``). Then, in the same run:

* latency: one request at a time at batch 1 and at batch 64, median (p50)
  and p99 over ``--repeats`` requests, and throughput (examples per second
  at the median), on three runtimes:

  - ``SavedModel, JIT off``: the exported SavedModel in a child process with
    XLA JIT disabled, as a default ``tensorflow_model_server`` runs it (the
    portable loop: the export holds no XLA-compiled function);
  - ``tf.function, XLA loop``: the same serving function traced in this
    process under ``keras_rnncells.compiled_inference()``, the compiled loop
    that training uses (it would not serve in a default TF Serving);
  - ``ONNX Runtime``: the ONNX export;
* under load (``keras_rnncells.export.load``): ``--threads`` threads send
  ``--requests`` requests each to the one loaded artifact, batches of 1 to 8
  rows drawn from the application's examples; p50 and p99 latency, requests
  per second over the wall time, errors, and answers that differ from the
  single-threaded answer to the same request (``wrong``). Ratios are against
  Keras' GRU on the same runtime.

SavedModel requests take the serving signature's inputs (strings for the text
applications); ONNX requests take token ids (tokenization is not in the ONNX
graph), so the ONNX column leaves tokenization out.

Usage::

    python benchmarks/serving.py                  # all rows, 200 requests, 8 x 200 under load
    python benchmarks/serving.py --rows keras-gru,sentiment --threads 4 --requests 50
    python benchmarks/serving.py --rows gru --repeats 50 --json serving.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

from keras_rnncells.export import Servable, recurrent_layer_servable
from keras_rnncells.export.load import (
    OnnxRunner,
    Runner,
    SavedModelRunner,
    requests_from_examples,
    serve_under_load,
)

ROWS = (
    "keras-gru",
    "gru",
    "keras-lstm",
    "lstm",
    "mgu",
    "sentiment",
    "color-namer",
    "name-to-color",
    "seq2seq",
)
APPLICATIONS = ("sentiment", "color-namer", "name-to-color", "seq2seq")
REFERENCE = "keras-gru"
SIZES = (1, 64)
JIT_OFF, XLA_LOOP, ONNX = "SavedModel, JIT off", "tf.function, XLA loop", "ONNX Runtime"


def application_servable(name: str) -> Servable:
    """An untrained application model of the default size, as a Servable."""
    from keras_rnncells.apps import servable_for
    from keras_rnncells.apps.color_namer import ColorNamer
    from keras_rnncells.apps.colors import load_color_list
    from keras_rnncells.apps.name_to_color import NameToColor
    from keras_rnncells.apps.sentiment import SentimentClassifier
    from keras_rnncells.data.dates import date_pairs
    from keras_rnncells.seq2seq import TextSeq2Seq
    from keras_rnncells.text import CharTokenizer, WordPieceTokenizer, WordTokenizer

    if name == "sentiment":
        corpus = ["a gripping , beautifully acted film", "dull and far too long"] * 50
        return servable_for(SentimentClassifier(WordPieceTokenizer.from_corpus(corpus)))
    if name in ("color-namer", "name-to-color"):
        words = WordTokenizer.from_corpus(load_color_list().names, lowercase=True)
        return servable_for((ColorNamer if name == "color-namer" else NameToColor)(words))
    sources, targets = zip(*date_pairs(500))
    model = TextSeq2Seq.from_tokenizers(
        CharTokenizer.from_corpus(sources),
        CharTokenizer.from_corpus(targets),
        bidirectional=True,
        max_output_length=12,
    )
    return servable_for(model)


def keras_layer_servable(name: str, units: int = 128, input_dim: int = 64) -> Servable:
    """The reference: Keras' own GRU or LSTM layer, served like ours."""
    import keras

    from keras_rnncells.export.servable import layer_servable

    layer_class = {"keras-gru": keras.layers.GRU, "keras-lstm": keras.layers.LSTM}[name]
    return layer_servable(layer_class(units, return_sequences=True), name, input_dim)


def servable(name: str) -> Servable:
    if name in APPLICATIONS:
        return application_servable(name)
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


def xla_loop_runner(served: Servable) -> Callable[[dict], dict]:
    """``served.serve`` traced afresh under ``compiled_inference()``."""
    import tensorflow as tf

    from keras_rnncells import compiled_inference

    function = tf.function(
        served.serve.python_function, input_signature=served.serve.input_signature
    )
    with compiled_inference():
        function.get_concrete_function()

    def run(inputs: dict) -> dict:
        return {k: v.numpy() for k, v in function(**inputs).items()}

    return run


def jit_off_summaries(directory: Path, batches: list[dict], repeats: int) -> list[dict]:
    """`summary` of the SavedModel at ``directory`` on each batch, measured in a
    child process with XLA JIT disabled (`jit_off_child`)."""
    with tempfile.TemporaryDirectory() as temporary:
        for index, batch in enumerate(batches):
            np.savez(Path(temporary) / f"batch{index}.npz", **batch)
        command = [sys.executable, __file__, "--jit-off-child", str(directory), temporary]
        subprocess.run([*command, str(len(batches)), str(repeats)], check=True)
        return json.loads((Path(temporary) / "summaries.json").read_text(encoding="utf-8"))


def jit_off_child(directory: str, temporary: str, batches: str, repeats: str) -> None:
    """The child of `jit_off_summaries`: XLA JIT disabled first, as the model
    server does, then one `SavedModelRunner` timed on each batch."""
    from keras_rnncells.export.check import disable_xla_jit
    from keras_rnncells.export.load import SavedModelRunner

    disable_xla_jit()
    run = SavedModelRunner(directory)
    summaries = []
    for index in range(int(batches)):
        with np.load(Path(temporary) / f"batch{index}.npz") as loaded:
            inputs = dict(loaded)
        size = len(next(iter(inputs.values())))
        summaries.append(summary(latencies(partial(run, inputs), int(repeats)), size))
    (Path(temporary) / "summaries.json").write_text(json.dumps(summaries), encoding="utf-8")


def measure(name: str, directory: Path, args: argparse.Namespace) -> tuple[list[dict], list[dict]]:
    """(latency rows at each of SIZES on every runtime, load rows) of one model."""
    from keras_rnncells.export.command import export_servable

    served = servable(name)
    paths = export_servable(served, directory, version=1)
    savedmodel_batches = [batch_of(served.examples, size, args.steps) for size in SIZES]
    rows = [
        {"model": name, "runtime": JIT_OFF, "batch": size, **result}
        for size, result in zip(
            SIZES, jit_off_summaries(paths["savedmodel"], savedmodel_batches, args.repeats)
        )
    ]
    in_process: dict[str, tuple[Runner, dict]] = {
        XLA_LOOP: (xla_loop_runner(served), served.examples),
        ONNX: (OnnxRunner(paths["onnx"]), served.onnx()[1]),
    }
    for size in SIZES:
        for runtime, (run, examples) in in_process.items():
            inputs = batch_of(examples, size, args.steps)
            result = summary(latencies(partial(run, inputs), args.repeats), size)
            rows.append({"model": name, "runtime": runtime, "batch": size, **result})
    loaded = []
    under_load: dict[str, tuple[Runner, dict]] = {
        "SavedModel": (SavedModelRunner(paths["savedmodel"]), served.examples),
        ONNX: in_process[ONNX],
    }
    for runtime, (run, examples) in under_load.items():
        requests = requests_from_examples(batch_of(examples, 8, args.steps))
        report = serve_under_load(run, requests, args.threads, args.requests)
        loaded.append({"model": name, "runtime": runtime, **report.summary()})
    return rows, loaded


def ratios_to_reference(rows: list[dict]) -> None:
    """Load rows get p50 and throughput as multiples of Keras' GRU on the same
    runtime (``None`` where it was not measured)."""
    reference = {row["runtime"]: row for row in rows if row["model"] == REFERENCE}
    for row in rows:
        base = reference.get(row["runtime"])
        row["p50_vs_keras_gru"] = row["p50_ms"] / base["p50_ms"] if base else None
        row["per_second_vs_keras_gru"] = row["per_second"] / base["per_second"] if base else None


def ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def print_tables(rows: list[dict], loaded: list[dict], args: argparse.Namespace) -> None:
    print(f"\nServing, median (p50) and p99 latency over {args.repeats} requests")
    print(f"(ratios: p50 against '{JIT_OFF}', what a default TF Serving runs)")
    print(f"| model | runtime | batch | p50 ms | p99 ms | examples/s | vs {JIT_OFF} |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in sorted(rows, key=lambda r: (ROWS.index(r["model"]), r["batch"])):
        print(
            f"| {row['model']} | {row['runtime']} | {row['batch']} | {row['p50_ms']:.2f} | "
            f"{row['p99_ms']:.2f} | {row['per_second']:.0f} | {row['vs_jit_off']:.2f}x |"
        )
    print(
        f"\nUnder load: {args.threads} threads x {args.requests} requests of 1-8 rows, "
        "one loaded artifact; ratios against keras-gru on the same runtime"
    )
    print(
        "| model | runtime | p50 ms | p99 ms | requests/s | errors | wrong | "
        "p50 vs keras-gru | requests/s vs keras-gru |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in loaded:
        print(
            f"| {row['model']} | {row['runtime']} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} | "
            f"{row['per_second']:.0f} | {row['errors']} | {row['wrong']} | "
            f"{ratio(row['p50_vs_keras_gru'])} | {ratio(row['per_second_vs_keras_gru'])} |"
        )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default=",".join(ROWS), help=f"any of {','.join(ROWS)}")
    parser.add_argument("--repeats", type=int, default=200, help="requests per measurement")
    parser.add_argument("--steps", type=int, default=30, help="steps of the float sequences")
    parser.add_argument("--threads", type=int, default=8, help="threads sending requests")
    parser.add_argument("--requests", type=int, default=200, help="requests per thread")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    for key in ("repeats", "steps", "threads", "requests"):
        if getattr(args, key) < 1:
            raise ValueError(
                f"Argument `--{key}` must be a positive integer, received: {getattr(args, key)}"
            )
    args.rows = [name.strip() for name in args.rows.split(",") if name.strip()]
    unknown = [name for name in args.rows if name not in ROWS]
    if unknown or not args.rows:
        raise ValueError(f"Argument `--rows` must list some of {ROWS}, received: {unknown}")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, list[dict]]:
    args = parse_args(argv)
    rows, loaded = [], []
    with tempfile.TemporaryDirectory() as temporary:
        for name in args.rows:
            measured = measure(name, Path(temporary) / name, args)
            rows += measured[0]
            loaded += measured[1]
    for row in rows:
        reference = next(
            r["p50_ms"]
            for r in rows
            if (r["model"], r["batch"], r["runtime"]) == (row["model"], row["batch"], JIT_OFF)
        )
        row["vs_jit_off"] = row["p50_ms"] / reference
    ratios_to_reference(loaded)
    print_tables(rows, loaded, args)
    result = {"latency": rows, "load": loaded}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    if sys.argv[1:2] == ["--jit-off-child"]:
        jit_off_child(*sys.argv[2:])
    else:
        main()
