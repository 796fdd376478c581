"""The applications on LiteRT: file size and held-out quality of each
quantization against the float model, on the apps' own test sets.

The script trains each application with its defaults (or reads the run
directories given with ``--runs``), exports it with
``keras_rnncells.export.write_litert`` as float, ``dynamic`` (int8 weights),
``float16`` and ``int8`` (full integer kernels, calibrated on 200 training
examples), and runs every file in ``ai_edge_litert``'s interpreter on the
held-out examples, the text turned into ids beforehand (as the shipped
``tokenizer.py`` does; its parity with the in-graph tokenizer is tested in
tests/text/test_standalone_tokenizer.py):

* ``sentiment``: accuracy on SST-2's ``stsa.binary.test`` (1,821 sentences);
  goal: each quantization within 0.5 points of float;
* ``name-to-color``: mean sRGB distance of the predicted color of each
  held-out name to its color; goal: within 5% of float;
* ``color-namer``: exact-name match of the beam's name for each held-out
  color (a hard measure: the names were never seen in training) and the
  share of colors named as the float file names them; goal: the match within
  5% of float.

Usage::

    python benchmarks/litert_apps.py                      # trains the three (~4 min on 2 cores)
    python benchmarks/litert_apps.py --runs runs/         # runs/<app>/ from `rnncells train`
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf

from keras_rnncells.apps import servable_for
from keras_rnncells.apps.color_namer import NamerSettings, exact_match, train_color_namer
from keras_rnncells.apps.colors import start_run
from keras_rnncells.apps.name_to_color import (
    NameToColorSettings,
    mean_distance,
    train_name_to_color,
)
from keras_rnncells.apps.runs import read_model
from keras_rnncells.apps.sentiment import SentimentSettings, sentiment_splits, train_sentiment
from keras_rnncells.export import write_litert
from keras_rnncells.export.litert import MODEL_FILE
from keras_rnncells.export.litert_run import run_signature

QUANTIZATIONS = (None, "dynamic", "float16", "int8")
APPS = ("sentiment", "name-to-color", "color-namer")


def trained(app: str, runs: Path) -> Path:
    """The run directory of ``app`` under ``runs``, trained with its defaults
    where it is missing."""
    run = runs / app
    if not (run / "model.keras").exists():
        train = {
            "sentiment": lambda: train_sentiment(run, SentimentSettings(), verbose=0),
            "name-to-color": lambda: train_name_to_color(run, NameToColorSettings(), verbose=0),
            "color-namer": lambda: train_color_namer(run, NamerSettings(), verbose=0),
        }[app]
        train()
    return run


def batched(run: Callable[[dict], dict], inputs: dict[str, np.ndarray], size: int = 256) -> dict:
    """``run`` over ``inputs`` in batches of ``size`` rows, outputs joined."""
    rows = len(next(iter(inputs.values())))
    parts = [run({k: v[i : i + size] for k, v in inputs.items()}) for i in range(0, rows, size)]
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


def held_out(app: str, model) -> tuple[dict[str, np.ndarray], Callable[[dict], float], str]:
    """The held-out inputs of ``app`` (ids or colors), the metric of the
    outputs, and its name."""
    if app == "sentiment":
        texts, labels = sentiment_splits("sst2")["test"]
        ids = model.token_ids(tf.constant(texts)).numpy()
        accuracy = lambda out: float(np.mean((out["probability"] >= 0.5) == labels))  # noqa: E731
        return {"token_ids": ids}, accuracy, "accuracy"
    settings = NameToColorSettings() if app == "name-to-color" else NamerSettings()
    _, test, _ = start_run(settings)
    if app == "name-to-color":
        ids = model.tokenizer(tf.constant(test.names)).numpy()
        distance = lambda out: mean_distance(out["rgb"], test.rgb, test.weights)  # noqa: E731
        return {"token_ids": ids}, distance, "mean RGB distance"

    def match(out) -> float:
        names = [t.decode() for t in model.tokenizer.detokenize(out["tokens"]).numpy()]
        return exact_match(names, test.names, test.weights)

    return {"rgb": test.rgb.astype("float32")}, match, "exact match (beam)"


def representative(inputs: dict[str, np.ndarray]) -> Callable:
    def batches():
        for start in range(0, 200, 20):
            yield {k: v[start : start + 20] for k, v in inputs.items()}

    return batches


def measure(app: str, run: Path, work: Path) -> list[dict]:
    model = read_model(run)
    servable = servable_for(model)
    inputs, metric, metric_name = held_out(app, model)
    rows, float_out, float_bytes = [], None, None
    for quantize in QUANTIZATIONS:
        try:
            directory = write_litert(
                servable,
                work / str(quantize),
                quantize=quantize,
                representative=representative(inputs),
            )
        except ValueError as error:  # the converter's refusal, reported as a row
            rows.append({"app": app, "quantize": str(quantize), "refused": str(error)})
            continue
        path = directory / MODEL_FILE
        outputs = batched(lambda batch, path=path: run_signature(path, batch), inputs)
        if quantize is None:
            float_out, float_bytes = outputs, path.stat().st_size
        row = {
            "app": app,
            "quantize": str(quantize),
            "bytes": path.stat().st_size,
            "vs_float_size": path.stat().st_size / float_bytes,
            "metric": metric_name,
            "value": metric(outputs),
        }
        if app == "color-namer":
            row["same_names_as_float"] = float(
                np.mean(np.all(outputs["tokens"] == float_out["tokens"], axis=1))
            )
        rows.append(row)
    reference = rows[0]["value"]
    for row in rows:
        if "refused" in row:
            continue
        row["vs_float"] = (
            row["value"] - reference if app == "sentiment" else row["value"] / reference
        )
    return rows


def main(argv: Sequence[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", default=",".join(APPS))
    parser.add_argument("--runs", help="run directories <runs>/<app> (trained where missing)")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        runs = Path(args.runs) if args.runs else Path(work) / "runs"
        for app in args.apps.split(","):
            rows += measure(app, trained(app, runs), Path(work) / "export" / app)
    print("\n| app | quantize | bytes | vs float size | metric | value | vs float |")
    print("|---|---|---:|---:|---|---:|---:|")
    for row in rows:
        if "refused" in row:
            print(f"| {row['app']} | {row['quantize']} | does not convert: {row['refused']} |")
            continue
        change = (
            f"{100 * row['vs_float']:+.2f} points"
            if row["app"] == "sentiment"
            else f"{row['vs_float']:.3f}x"
        )
        size = f"{row['bytes']:,} | {row['vs_float_size']:.2f}x"
        print(
            f"| {row['app']} | {row['quantize']} | {size} | "
            f"{row['metric']} | {row['value']:.4f} | {change} |"
        )
    for row in rows:
        if row["quantize"] == "None":
            continue
        if "refused" in row:
            print(f"FAIL: {row['app']} {row['quantize']}: does not convert")
            continue
        if row["app"] == "sentiment":
            ok, goal = abs(row["vs_float"]) <= 0.005, "within 0.5 points of float"
        elif row["app"] == "name-to-color":
            ok, goal = row["vs_float"] <= 1.05, "distance within 5% of float"
        else:
            ok, goal = row["vs_float"] >= 0.95, "match within 5% of float"
        print(f"{'PASS' if ok else 'FAIL'}: {row['app']} {row['quantize']}: {goal}")
        if row["quantize"] == "dynamic":
            ok = row["vs_float_size"] <= 0.3
            print(
                f"{'PASS' if ok else 'FAIL'}: {row['app']} dynamic file <= 0.3x float: "
                f"{row['vs_float_size']:.2f}x"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
