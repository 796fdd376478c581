"""Color data and what both color applications share.

Two sources of (name, color) examples, as `ColorExamples`:

* ``"list"`` (the default, shipped in the package, no download): the 949 XKCD
  color names with one sRGB value each (``xkcd_colors.tsv``, written by
  ``tools/make_color_list.py`` from matplotlib's copy of xkcd.com/color/rgb).
  Names are word sequences ("light greenish blue"), one example each.
* ``"counts"``: the XKCD color survey's naming counts as Heer & Stone (2012)
  aggregated them (``xkcd_color/c3_data.json.gz`` in the data folder, see
  `keras_rnncells.data.data_root`): 153 names (written without spaces,
  "lightblue") times 8,325 CIELAB grid cells, 2.68 million observations. Each
  nonzero (name, cell) pair is one example, its count the example's weight,
  its color the cell's Lab centre converted to sRGB (D65) and clipped to the
  sRGB cube.

Colors are float32 sRGB in [0, 1]. `color_features` is what both models read
of a color; `check_rgb` is how they treat bad input.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

from keras_rnncells.apps.base import check_settings
from keras_rnncells.checks import shapes_compatible
from keras_rnncells.data.paths import data_file
from keras_rnncells.data.pipeline import shuffled_slices
from keras_rnncells.text import WordTokenizer

SOURCES = ("list", "counts")
COUNTS_FOLDER, COUNTS_FILE = "xkcd_color", "c3_data.json.gz"

# D65 reference white (CIE 1931 2°) and the XYZ -> linear sRGB matrix (IEC 61966-2-1).
WHITE = np.array([95.047, 100.0, 108.883])
XYZ_TO_RGB = np.array(
    [[3.2406, -1.5372, -0.4986], [-0.9689, 1.8758, 0.0415], [0.0557, -0.2040, 1.0570]]
)


@dataclass(frozen=True)
class ColorExamples:
    """``names[i]`` names the color ``rgb[i]`` (float32 in [0, 1]),
    observed ``weights[i]`` times."""

    names: list[str]
    rgb: np.ndarray
    weights: np.ndarray

    def __len__(self) -> int:
        return len(self.names)

    def subset(self, index: np.ndarray) -> ColorExamples:
        return ColorExamples([self.names[i] for i in index], self.rgb[index], self.weights[index])


def load_color_list() -> ColorExamples:
    """The shipped list: 949 XKCD names, sorted, each with its sRGB color, weight 1."""
    text = resources.files("keras_rnncells.apps").joinpath("xkcd_colors.tsv").read_text("utf-8")
    rows = [line.split("\t") for line in text.splitlines()[2:] if line]  # comment, column names
    rgb = np.array([[int(v) for v in row[1:]] for row in rows], dtype="float32") / 255.0
    return ColorExamples([row[0] for row in rows], rgb, np.ones(len(rows), "float32"))


def lab_to_rgb(lab: np.ndarray) -> np.ndarray:
    """CIELAB (D65) ``(N, 3)`` to sRGB in [0, 1], out-of-gamut colors clipped."""
    lab = np.asarray(lab, dtype="float64")
    fy = (lab[:, 0] + 16.0) / 116.0
    f = np.stack([fy + lab[:, 1] / 500.0, fy, fy - lab[:, 2] / 200.0], axis=1)
    xyz = np.where(f > 6 / 29, f**3, 3 * (6 / 29) ** 2 * (f - 4 / 29)) * WHITE / 100.0
    linear = xyz @ XYZ_TO_RGB.T
    rgb = np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * np.abs(linear) ** (1 / 2.4) - 0.055)
    return np.clip(rgb, 0.0, 1.0).astype("float32")


def read_color_counts(root: str | os.PathLike | None = None) -> ColorExamples:
    """The XKCD naming counts (source ``"counts"``): one example per nonzero
    (name, Lab cell) pair, weighted by its count, ordered by cell then name.
    Reads ``xkcd_color/c3_data.json.gz`` under the data folder (never downloads)."""
    with gzip.open(data_file(COUNTS_FOLDER, COUNTS_FILE, root), "rt", encoding="utf-8") as file:
        data = json.load(file)
    terms = data["terms"]
    cells = lab_to_rgb(np.asarray(data["color"], dtype="float64").reshape(-1, 3))
    pairs = np.asarray(data["T"], dtype="int64").reshape(-1, 2)
    pairs = pairs[pairs[:, 1] > 0]
    cell, term = np.divmod(pairs[:, 0], len(terms))
    return ColorExamples([terms[t] for t in term], cells[cell], pairs[:, 1].astype("float32"))


def load_colors(source: str = "list", root: str | os.PathLike | None = None) -> ColorExamples:
    """The examples of ``source``: ``"list"`` or ``"counts"`` (see the module)."""
    if source == "list":
        return load_color_list()
    if source == "counts":
        return read_color_counts(root)
    raise ValueError(f"Argument `source` must be one of {SOURCES}, received: {source!r}")


def split_examples(
    examples: ColorExamples, test_fraction: float, seed: int
) -> tuple[ColorExamples, ColorExamples]:
    """(train, test): a random ``test_fraction`` of the examples held out.
    For the shipped list each name is one example, so held-out names are
    names never seen in training."""
    order = np.random.default_rng(seed).permutation(len(examples))
    held = round(test_fraction * len(examples))
    return examples.subset(np.sort(order[held:])), examples.subset(np.sort(order[:held]))


def check_rgb(rgb, check_finite: bool = True) -> tf.Tensor:
    """Colors as the models take them: float32 ``(B, 3)`` clipped to [0, 1];
    with ``check_finite``, NaN or infinity raises ``InvalidArgumentError``
    (``tf.debugging.assert_all_finite``), in the graph too."""
    rgb = tf.cast(rgb, tf.float32)
    if not shapes_compatible(rgb.shape, (None, 3)):
        raise ValueError(f"Argument `rgb` must be of shape (batch, 3), received shape {rgb.shape}")
    if check_finite:
        rgb = tf.debugging.assert_all_finite(rgb, "rgb must be finite (no NaN or infinity)")
    return tf.clip_by_value(rgb, 0.0, 1.0)


def finite_or_failing(values: tf.Tensor, name: str) -> tf.Tensor:
    """``values``, failing the request on a NaN or infinity in a way that also
    converts to ONNX, which has no assertion op: the check gathers index 1 of a
    one-element tensor, out of range in TensorFlow and in onnxruntime alike,
    from an op named ``name`` (which onnxruntime's error message names)."""
    failing = tf.cast(tf.reduce_any(tf.logical_not(tf.math.is_finite(values))), tf.int32)
    return values + tf.gather(tf.zeros((1,), values.dtype), failing[None], name=name)


FEATURES = 13


def color_features(rgb) -> tf.Tensor:
    """What the models read of a color ``(B, 3)`` in [0, 1]: ``(B, 13)``.

    * r, g, b (3);
    * hue as a unit vector, chroma and value (4): from the opponent
      coordinates α = r - (g + b) / 2 and β = √3/2 (g - b) (Hanbury's
      circular hue), C = √(α² + β²), cos h = α / C, sin h = β / C (h = 0 for
      grays) and V = max(r, g, b);
    * Fourier features sin(π x) and cos(π x) of each channel x (6).

    Elementwise ops and reductions only, so the features convert to ONNX.
    """
    rgb = tf.cast(rgb, tf.float32)
    r, g, b = tf.unstack(rgb, axis=-1)
    alpha, beta = r - (g + b) / 2.0, (3.0**0.5 / 2.0) * (g - b)
    chroma = tf.sqrt(alpha**2 + beta**2 + 1e-12)
    gray = chroma < 1e-4
    cos_h = tf.where(gray, 1.0, alpha / chroma)
    sin_h = tf.where(gray, 0.0, beta / chroma)
    value = tf.reduce_max(rgb, axis=-1)
    angle = np.pi * rgb
    return tf.concat(
        [rgb, tf.stack([cos_h, sin_h, chroma, value], -1), tf.sin(angle), tf.cos(angle)], -1
    )


# -- what both training runs share ------------------------------------------------------
@dataclass(frozen=True)
class ColorSettings:
    """The settings of a color run (all written into ``results.json``)."""

    source: str = "list"
    cell: str = "gru"
    units: int = 64
    epochs: int = 40
    batch_size: int = 32
    seed: int = 0
    train_size: int | None = None  # all
    test_fraction: float = 0.1
    embedding_dim: int = 32
    learning_rate: float = 1e-2
    cell_options: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_settings(self, source=SOURCES)


def run_splits(settings: ColorSettings, root=None) -> tuple[ColorExamples, ColorExamples]:
    """(train, test) of the run; ``train_size`` keeps a random part of train."""
    train, test = split_examples(
        load_colors(settings.source, root), settings.test_fraction, settings.seed
    )
    if settings.train_size is not None and settings.train_size < len(train):
        order = np.random.default_rng(settings.seed).permutation(len(train))
        train = train.subset(np.sort(order[: settings.train_size]))
    return train, test


class ColorData(NamedTuple):
    """What both color runs begin with (`start_run`)."""

    train: ColorExamples
    test: ColorExamples
    tokenizer: WordTokenizer


def start_run(settings: ColorSettings, root=None) -> ColorData:
    """The data of a color run: its (train, test) split (`run_splits`) and
    the lower-case word tokenizer of the training names."""
    train, test = run_splits(settings, root)
    return ColorData(train, test, WordTokenizer.from_corpus(train.names, lowercase=True))


def normalized_weights(examples: ColorExamples) -> np.ndarray:
    """The examples' weights scaled to mean 1 (Keras sample weights)."""
    return (examples.weights / examples.weights.mean()).astype("float32")


def color_batches(
    inputs: Any, targets: np.ndarray, weights: np.ndarray, settings: ColorSettings
) -> tf.data.Dataset:
    """The training batches of a color run, shuffled per ``(seed, epoch)``
    rather than by Keras, so a resumed run sees an uninterrupted run's order."""
    batches = shuffled_slices((inputs, targets, weights), settings.seed).batch(settings.batch_size)
    return batches.prefetch(tf.data.AUTOTUNE)
