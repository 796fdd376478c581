"""LiteRT against ONNX Runtime and the SavedModel: latency, file size and
quantization error of recurrent layers, as a phone or a server runs them.

For each layer (our GRU, LSTM and MGU, 128 units over 64 inputs, returning
sequences; untrained: speed does not depend on the weights) the script
exports LiteRT (float, and each of ``dynamic``, ``float16``, ``int8``),
ONNX and the SavedModel with ``keras_rnncells.export``, then times one
request at a time, median over ``--repeats`` after a warm-up, at batch 1
(T 20 and T 100) and batch 32 (T 100):

* ``LiteRT``: ``ai_edge_litert``'s interpreter (its XNNPACK delegate, as the
  interpreter applies it by default), in a child process where TensorFlow
  cannot be imported;
* ``LiteRT fused``: the LSTM exported with ``batch_size`` fixed, LiteRT's
  ``UNIDIRECTIONAL_SEQUENCE_LSTM`` op (batch 1 only: one file per batch);
* ``LiteRT unrolled``: the same layer with ``unroll=True`` over a fixed
  length (no ``WHILE``: one file per length), batch 1;
* ``ONNX Runtime``: the ONNX export, in a child without TensorFlow;
* ``SavedModel``: ``tf.saved_model.load`` in this process (the portable loop).

Ratios are against ONNX Runtime on the same input. Then the file sizes and
the quantized models' largest error against the float model on 32 random
sequences.

Usage::

    python benchmarks/litert_speed.py                    # all rows, 200 requests
    python benchmarks/litert_speed.py --layers lstm --repeats 50
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

from keras_rnncells import RNN, get_cell
from keras_rnncells.export import (
    recurrent_layer_servable,
    servable_from_model,
    write_litert,
    write_onnx,
)
from keras_rnncells.export.litert import MODEL_FILE

SHAPES = ((1, 20), (1, 100), (32, 100))
INPUT_DIM, UNITS = 64, 128

TIMER = textwrap.dedent(
    """
    import json, sys, time
    sys.modules["tensorflow"] = None
    import numpy as np
    kind, model, repeats, batches = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    if kind == "litert":
        from ai_edge_litert.interpreter import Interpreter
        runner = Interpreter(model_path=model).get_signature_runner("serving_default")
        call = lambda x: runner(sequences=x)
    else:
        import onnxruntime
        session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
        call = lambda x: session.run(None, {"sequences": x})
    medians = []
    for path in batches:
        x = np.load(path)
        for _ in range(5):
            call(x)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            call(x)
            times.append(time.perf_counter() - start)
        medians.append(1000 * float(np.median(times)))
    print(json.dumps(medians))
    """
)


def child_medians(kind: str, model: Path, batches: list[Path], repeats: int) -> list[float]:
    """Median ms per request of each batch, in a process without TensorFlow."""
    command = [sys.executable, "-c", TIMER, kind, str(model), str(repeats), *map(str, batches)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def saved_model_medians(servable, directory: Path, batches: list[Path], repeats: int) -> list:
    import tensorflow as tf

    from keras_rnncells.export import write_saved_model

    path = write_saved_model(servable, directory, version=1, check=False)
    function = tf.saved_model.load(str(path)).signatures["serving_default"]
    medians = []
    for batch in batches:
        x = tf.constant(np.load(batch))
        for _ in range(5):
            function(sequences=x)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            function(sequences=x)
            times.append(time.perf_counter() - start)
        medians.append(1000 * float(np.median(times)))
    return medians


def unrolled_file(cell: str, steps: int, directory: Path) -> Path:
    """The LiteRT file of ``cell``'s layer unrolled over ``steps`` steps."""
    import keras

    keras.utils.set_random_seed(0)
    inputs = keras.Input((steps, INPUT_DIM), name="sequences")
    layer = RNN(get_cell(cell)(UNITS), unroll=True, return_sequences=True)
    model = keras.Model(inputs, layer(inputs), name=f"{cell}-unrolled")
    return write_litert(servable_from_model(model), directory) / MODEL_FILE


def run_layer(cell: str, work: Path, repeats: int) -> tuple[list[dict], list[dict]]:
    servable = recurrent_layer_servable(cell, units=UNITS, input_dim=INPUT_DIM)
    rng = np.random.default_rng(0)
    work.mkdir(parents=True)
    batches = []
    for rows, steps in SHAPES:
        path = work / f"{cell}-{rows}-{steps}.npy"
        np.save(path, rng.normal(size=(rows, steps, INPUT_DIM)).astype("float32"))
        batches.append(path)

    def representative():
        for _ in range(16):
            yield {"sequences": rng.normal(size=(4, 20, INPUT_DIM)).astype("float32")}

    files = {}
    for quantize in (None, "dynamic", "float16", "int8"):
        directory = write_litert(
            servable, work / f"litert-{quantize}", quantize=quantize, representative=representative
        )
        files[quantize] = directory / MODEL_FILE
    onnx = work / "onnx" / cell / MODEL_FILE.replace(".tflite", ".onnx")
    write_onnx(servable, onnx)
    timings = {
        "LiteRT": child_medians("litert", files[None], batches, repeats),
        "ONNX Runtime": child_medians("onnx", onnx, batches, repeats),
        "SavedModel": saved_model_medians(servable, work / "savedmodel", batches, repeats),
    }
    unrolled = []
    for (rows, steps), batch in zip(SHAPES, batches):
        if rows == 1:
            path = unrolled_file(cell, steps, work / f"unrolled-{steps}")
            unrolled += child_medians("litert", path, [batch], repeats)
    timings["LiteRT unrolled"] = unrolled
    if cell == "lstm":
        fused = write_litert(servable, work / "litert-fused", batch_size=1) / MODEL_FILE
        timings["LiteRT fused"] = child_medians("litert", fused, batches[:2], repeats)
    rows = []
    for index, (batch, steps) in enumerate(SHAPES):
        reference = timings["ONNX Runtime"][index]
        for runtime, medians in timings.items():
            if index < len(medians):
                rows.append(
                    {
                        "layer": cell,
                        "batch": batch,
                        "steps": steps,
                        "runtime": runtime,
                        "ms": medians[index],
                        "vs_onnxruntime": medians[index] / reference,
                    }
                )
    sizes = []
    for quantize, path in files.items():
        manifest = json.loads((path.parent / "manifest.json").read_text(encoding="utf-8"))
        sizes.append(
            {
                "layer": cell,
                "quantize": str(quantize),
                "bytes": path.stat().st_size,
                "vs_float": path.stat().st_size / files[None].stat().st_size,
                "max_abs_error": max(manifest["parity"]["max_abs_error"].values()),
            }
        )
    return rows, sizes


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", default="gru,lstm,mgu")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    latency, sizes = [], []
    with tempfile.TemporaryDirectory() as work:
        for cell in args.layers.split(","):
            rows, size_rows = run_layer(cell, Path(work) / cell, args.repeats)
            latency += rows
            sizes += size_rows
    print(f"\nLatency, one request at a time (median ms of {args.repeats}; {UNITS} units)\n")
    print("| layer | batch | T | runtime | ms | vs ONNX Runtime |")
    print("|---|---:|---:|---|---:|---:|")
    for row in latency:
        print(
            f"| {row['layer']} | {row['batch']} | {row['steps']} | {row['runtime']} | "
            f"{row['ms']:.3f} | {row['vs_onnxruntime']:.2f}x |"
        )
    for row in latency:
        if row["runtime"] == "LiteRT" and row["batch"] == 1:
            verdict = "PASS" if row["vs_onnxruntime"] <= 1.0 else "FAIL"
            print(
                f"{verdict}: {row['layer']} LiteRT at batch 1, T {row['steps']}: "
                f"{row['vs_onnxruntime']:.2f}x ONNX Runtime (goal <= 1.0x)"
            )
    print("\nFile size and error against the float model (its parity inputs)\n")
    print("| layer | quantize | bytes | vs float | max abs error |")
    print("|---|---|---:|---:|---:|")
    for row in sizes:
        print(
            f"| {row['layer']} | {row['quantize']} | {row['bytes']:,} | {row['vs_float']:.2f}x | "
            f"{row['max_abs_error']:.2e} |"
        )
    result = {"latency": latency, "sizes": sizes}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
