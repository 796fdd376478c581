"""``rnncells quickstart``: the color namer, both ways, from training to serving.

It trains the color namer (RGB -> name) and its reverse (name -> RGB) on the
949 XKCD colors shipped with the package, exports both as SavedModel and ONNX
(each checked at export: the SavedModel in a fresh process, the ONNX model in
onnxruntime), then asks the artifacts themselves, loaded the way a server
loads them, for names and colors. No download, no flags.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import onnxruntime
import tensorflow as tf

from keras_rnncells.apps.color_namer import NamerSettings, train_color_namer
from keras_rnncells.apps.name_to_color import NameToColorSettings, train_name_to_color
from keras_rnncells.export.command import export_run

COLORS = {"red": (0.9, 0.1, 0.1), "sky": (0.5, 0.75, 0.95), "olive": (0.5, 0.5, 0.1)}
NAMES = ("light greenish blue", "dark red", "pale purple", "bright orange")


def rgb_text(rgb: Any) -> str:
    return "(" + ", ".join(f"{value:.2f}" for value in rgb) + ")"


def quickstart(out: str | Path = "rnncells-quickstart", epochs: int | None = None) -> dict:
    """Trains, exports and queries both models under ``out``; returns what it printed."""
    out = Path(out)
    started = time.perf_counter()
    runs = {
        "color-namer": out / "runs" / "color-namer",
        "name-to-color": out / "runs" / "name-to-color",
    }
    epochs_given = {} if epochs is None else {"epochs": epochs}
    print("1/3 Training the color namer (rgb -> name) on the 949 shipped XKCD colors")
    namer = train_color_namer(runs["color-namer"], NamerSettings(**epochs_given), verbose=2)
    print("2/3 Training the reverse model (name -> rgb)")
    reverse = train_name_to_color(
        runs["name-to-color"], NameToColorSettings(**epochs_given), verbose=2
    )
    print("3/3 Exporting SavedModel and ONNX, each checked against the Keras model")
    artifacts = {name: export_run(run, out / "export") for name, run in runs.items()}

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
    print("\nNames from the exported SavedModel (beam search in the graph):")
    for rgb, name in summary["names"].items():
        print(f"  {rgb} -> {name!r}")
    print("Colors from the exported SavedModel (names need not be in the list):")
    for name, rgb in summary["colors"].items():
        print(f"  {name!r:>24} -> {rgb}")
    print(
        f"\nHeld-out: namer perplexity {namer['test_perplexity']:.1f}; name -> rgb mean "
        f"distance {reverse['test_mean_rgb_distance']:.3f} (always the mean color: "
        f"{reverse['test_mean_rgb_distance_of_mean_color']:.3f})."
    )
    print("Artifacts (each directory has its manifest.json with checksums):")
    for model, paths in summary["artifacts"].items():
        for fmt, path in paths.items():
            print(f"  {model:<14} {fmt:<10} {path}")
    print(f"Done in {summary['seconds']:.0f} s.")
    return summary
