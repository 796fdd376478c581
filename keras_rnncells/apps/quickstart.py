"""``rnncells quickstart``: the color namer, both ways, from training to serving.

It trains the color namer (RGB -> name) and its reverse (name -> RGB) on the
949 XKCD colors shipped with the package, exports both as SavedModel and ONNX
(each checked at export: the SavedModel in a fresh process, the ONNX model in
onnxruntime), then asks the artifacts themselves, loaded the way a server
loads them, for names and colors. No download, no flags; what it prints fits
on one screen: a line per step as it starts, one with its outcome, then the
answers of the artifacts and where they are.
"""

from __future__ import annotations

import csv
import os
import time
from pathlib import Path
from typing import Any

import onnxruntime
import tensorflow as tf

from keras_rnncells.apps.color_namer import NamerSettings, train_color_namer
from keras_rnncells.apps.name_to_color import NameToColorSettings, train_name_to_color
from keras_rnncells.apps.runs import export_run

COLORS = {"red": (0.9, 0.1, 0.1), "sky": (0.5, 0.75, 0.95), "olive": (0.5, 0.5, 0.1)}
NAMES = ("light greenish blue", "dark red", "pale purple", "bright orange")


def rgb_text(rgb: Any) -> str:
    return "(" + ", ".join(f"{value:.2f}" for value in rgb) + ")"


def say(text: str) -> None:
    print(text, flush=True)  # progress shows as it happens, also through a pipe


def training_report(run_dir: Path, seconds: float) -> str:
    """Epochs, seconds and the first and last epoch's loss, from ``history.csv``."""
    with open(run_dir / "history.csv", encoding="utf-8", newline="") as handle:
        losses = [float(row["loss"]) for row in csv.DictReader(handle)]
    return f"{len(losses)} epochs in {seconds:.0f} s, loss {losses[0]:.2f} -> {losses[-1]:.2f}"


def quickstart(out: str | os.PathLike = "rnncells-quickstart", epochs: int | None = None) -> dict:
    """Trains, exports and queries both models under ``out`` (a path relative
    to the current directory, or absolute); returns what it printed."""
    out = Path(os.path.abspath(out))
    started = time.perf_counter()
    runs = {
        "color-namer": out / "runs" / "color-namer",
        "name-to-color": out / "runs" / "name-to-color",
    }
    epochs_given = {} if epochs is None else {"epochs": epochs}
    say(f"rnncells quickstart: writing into {out}")
    say("1/3 Training the color namer (rgb -> name) on the 949 shipped XKCD colors")
    step = time.perf_counter()
    namer = train_color_namer(runs["color-namer"], NamerSettings(**epochs_given), verbose=0)
    say(
        f"    {training_report(runs['color-namer'], time.perf_counter() - step)}; "
        f"held-out perplexity {namer['test_perplexity']:.1f}"
    )
    say("2/3 Training the reverse model (name -> rgb)")
    step = time.perf_counter()
    reverse = train_name_to_color(
        runs["name-to-color"], NameToColorSettings(**epochs_given), verbose=0
    )
    say(
        f"    {training_report(runs['name-to-color'], time.perf_counter() - step)}; held-out "
        f"distance {reverse['test_mean_rgb_distance']:.3f} (the mean color's: "
        f"{reverse['test_mean_rgb_distance_of_mean_color']:.3f})"
    )
    say("3/3 Exporting SavedModel and ONNX, each checked against the Keras model")
    step = time.perf_counter()
    artifacts = {name: export_run(run, out / "export") for name, run in runs.items()}
    say(
        f"    4 artifacts in {time.perf_counter() - step:.0f} s; the SavedModels served the "
        "same outputs in a fresh process, the ONNX models in onnxruntime"
    )

    namer_signature = tf.saved_model.load(str(artifacts["color-namer"]["savedmodel"]))
    served = namer_signature.signatures["serving_default"](
        rgb=tf.constant(list(COLORS.values()), tf.float32)
    )
    names = [name.decode() for name in served["names"].numpy()]
    session = onnxruntime.InferenceSession(
        str(artifacts["name-to-color"]["onnx"]), providers=["CPUExecutionProvider"]
    )
    reverse_signature = tf.saved_model.load(str(artifacts["name-to-color"]["savedmodel"]))
    colors = reverse_signature.signatures["serving_default"](name=tf.constant(NAMES))["rgb"].numpy()
    summary = {
        "seconds": time.perf_counter() - started,
        "names": dict(zip((rgb_text(c) for c in COLORS.values()), names)),
        "colors": {name: rgb_text(rgb) for name, rgb in zip(NAMES, colors)},
        "onnx_inputs": [i.name for i in session.get_inputs()],  # the ONNX model loads
        "namer_results": {k: namer[k] for k in ("test_perplexity", "training_seconds")},
        "reverse_results": {
            k: reverse[k]
            for k in ("test_mean_rgb_distance", "test_mean_rgb_distance_of_mean_color")
        },
        "artifacts": {
            model: {fmt: str(path) for fmt, path in paths.items()}
            for model, paths in artifacts.items()
        },
    }
    say("\nNames from the exported SavedModel (beam search in the graph):")
    for rgb, name in summary["names"].items():
        say(f"  {rgb} -> {name!r}")
    say("Colors from the exported SavedModel (names need not be in the list):")
    for name, rgb in summary["colors"].items():
        say(f"  {name!r:>24} -> {rgb}")
    say("\nArtifacts (each directory has its manifest.json with checksums; rnncells verify):")
    for model, paths in summary["artifacts"].items():
        for fmt, path in paths.items():
            say(f"  {model:<14} {fmt:<10} {path}")
    say(f"Runs (model.keras, results.json, logs) in {out / 'runs'}")
    say(f"Done in {summary['seconds']:.0f} s.")
    return summary
