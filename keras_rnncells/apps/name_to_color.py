"""Name to color: a color name in, a distribution over colors and its mean out.

``NameToColor`` reads the name's words with a ``keras_rnncells.seq2seq.Encoder``
(any registered cell) and predicts, from its summary, a distribution over
discretized color space in the manner of White et al. 2017 ("Learning
distributions of meant color"): each sRGB channel is cut into ``bins`` equal
bins and the model outputs one categorical distribution per channel (the
channels independent given the name; ``distribution`` ``(B, 3, bins)``). The
point estimate ``rgb`` is the mean color, each channel's expected bin centre.
Training targets are the color's bin per channel, blurred with a Gaussian of
one bin's width so that neighbouring bins share the mass (the ordering of
bins is known); with the XKCD counts, every observation weighs its count, so
the loss is the cross-entropy against each name's empirical distribution.
Words are embedded and composed by the recurrence, so unseen compositions of
known words ("light greenish blue") get sensible colors. An empty name (no
word) has a zero summary: it gets the prior, the distribution of the output
layer's bias. Unknown words read as ``[UNK]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_rnncells.apps.base import TokenizerModel
from keras_rnncells.apps.colors import (
    ColorData,
    ColorSettings,
    color_batches,
    normalized_weights,
    start_run,
)
from keras_rnncells.apps.registry import register_app
from keras_rnncells.checks import check_positive_int
from keras_rnncells.export.limits import RequestLimits
from keras_rnncells.export.servable import (
    Servable,
    StringFrontEnd,
    padded_ids,
    served_ids,
    traced,
    with_limits,
)
from keras_rnncells.layers import portable
from keras_rnncells.seq2seq.encoder import Encoder
from keras_rnncells.text import WordTokenizer
from keras_rnncells.training import Evaluation, Fit, train_run

EXAMPLE_NAMES = ("light greenish blue", "dark red", "")
# A color name is a few words (the shipped XKCD list's longest has 26
# characters), and the encoder reads every word of a request's longest name,
# in every row: 256 characters a name (the other limits:
# `keras_rnncells.export.limits.DEFAULT_LIMITS`).
LIMITS = RequestLimits(max_chars=256)


def bin_centres(bins: int) -> np.ndarray:
    return ((np.arange(bins) + 0.5) / bins).astype("float32")


def soft_bins(rgb: np.ndarray, bins: int) -> np.ndarray:
    """Training targets ``(N, 3, bins)``: per channel, a Gaussian of standard
    deviation one bin width around the color, normalized over the bins."""
    distance = (np.asarray(rgb)[..., None] - bin_centres(bins)) * bins
    mass = np.exp(-0.5 * distance**2)
    return (mass / mass.sum(-1, keepdims=True)).astype("float32")


@keras.saving.register_keras_serializable(package="keras_rnncells")
class NameToColor(TokenizerModel):
    """``model(token_ids)``: word ids ``(B, T)`` (0 = padding) to logits
    ``(B, 3, bins)``. ``colors(names)``: strings ``(B,)`` to ``(rgb (B, 3),
    distribution (B, 3, bins))``; ``colors_from_ids`` the same from ids."""

    tokenizer_class = WordTokenizer

    def __init__(
        self,
        tokenizer: WordTokenizer,
        cell: str = "gru",
        units: int = 64,
        embedding_dim: int = 32,
        bins: int = 16,
        cell_options: dict | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(tokenizer, **kwargs)
        self.bins = check_positive_int("bins", bins)
        self.encoder = Encoder(
            tokenizer.vocabulary_size,
            embedding_dim,
            cell,
            units,
            cell_options=cell_options,
            name="encoder",
        )
        self.head = keras.layers.Dense(3 * bins, name="logits")
        with portable():  # creates every weight, with no XLA compilation for it
            self(ops.ones((1, 2), "int32"))

    def call(self, token_ids, training=None):
        _, summary, _ = self.encoder(token_ids, training=training)
        return ops.reshape(self.head(summary), (-1, 3, self.bins))

    def colors_from_ids(self, token_ids) -> tuple[tf.Tensor, tf.Tensor]:
        distribution = tf.nn.softmax(tf.cast(self(token_ids, training=False), tf.float32))
        return tf.reduce_sum(distribution * bin_centres(self.bins), -1), distribution

    def colors(self, names) -> tuple[tf.Tensor, tf.Tensor]:
        return self.colors_from_ids(self.tokenizer(names))

    def get_config(self) -> dict:
        encoder = self.encoder
        return {
            **super().get_config(),
            "cell": encoder.cell_name,
            "units": encoder.units,
            "embedding_dim": encoder.embedding_dim,
            "bins": self.bins,
            "cell_options": encoder.cell_options,
        }


def name_to_color_servable(
    model: NameToColor, name: str = "name-to-color", limits: RequestLimits | None = None
) -> Servable:
    """Serving: ``{"name": string (B,)}`` -> ``{"rgb": float32 (B, 3),
    "distribution": float32 (B, 3, bins)}``; an empty name gets the prior
    (see the module), unknown words read as ``[UNK]``. ONNX (no string ops):
    ``{"token_ids": int32 (B, T)}`` -> the same outputs, ids of the
    vocabulary shipped with it (lower-cased words split on whitespace; an id
    outside it fails the request, `served_ids`), and
    ``model_text.onnx`` on ``{"name"}`` with the tokenizer as
    onnxruntime-extensions ops (`keras_rnncells.export.onnx_text`). Both on
    strings refuse a request past ``limits`` before tokenizing it
    (`with_limits`; unset limits: `LIMITS`)."""
    module = tf.Module()
    module.model = model

    def outputs(rgb, distribution):
        return {"rgb": rgb, "distribution": distribution}

    examples = {"name": np.array(EXAMPLE_NAMES)}
    ids = model.tokenizer(tf.constant(examples["name"])).numpy().astype("int32")
    servable = Servable(
        name=name,
        cell=model.encoder.cell_name,
        module=module,
        serve=traced(
            lambda name: outputs(*model.colors(name)), {"name": tf.TensorSpec((None,), tf.string)}
        ),
        examples=examples,
        onnx_function=traced(
            lambda token_ids: outputs(
                *model.colors_from_ids(served_ids(token_ids, model.encoder.vocabulary_size))
            ),
            {"token_ids": tf.TensorSpec((None, None), tf.int32)},
        ),
        onnx_examples={"token_ids": ids},
        onnx_text=StringFrontEnd(
            model.tokenizer,
            lambda ragged: outputs(
                *model.colors_from_ids(padded_ids(ragged, model.tokenizer.max_length))
            ),
            input_name="name",
        ),
        vocabulary_files={"vocabulary.txt": model.tokenizer.vocabulary},
    )
    return with_limits(servable, limits, defaults=LIMITS)


@dataclass(frozen=True)
class NameToColorSettings(ColorSettings):
    """The settings of a name-to-color run (all written into ``results.json``)."""

    bins: int = 16


def mean_distance(predicted: np.ndarray, rgb: np.ndarray, weights: np.ndarray) -> float:
    """The weighted mean Euclidean distance of sRGB colors in [0, 1] (at most √3)."""
    return float(np.average(np.linalg.norm(predicted - rgb, axis=-1), weights=weights))


def train_name_to_color(
    run_dir: str | Path,
    settings: NameToColorSettings = NameToColorSettings(),
    verbose: int | str = "auto",
    root=None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Trains, evaluates and saves into ``run_dir``; returns the results.

    Held-out metric: the mean sRGB distance between the predicted mean color
    of each test name and its color (for the shipped list, names never seen in
    training), next to that of always predicting the training colors' mean.

    ``run_dir`` and ``overwrite``: as `keras_rnncells.training.run_directory`
    holds, resumes or refuses a run."""
    return train_run(
        run_dir,
        settings,
        data=lambda: start_run(settings, root),
        build=lambda data, run_dir: build_name_to_color(settings, data),
        evaluate=lambda model, data, run_dir: evaluate_name_to_color(
            model, settings, data, run_dir
        ),
        overwrite=overwrite,
        verbose=verbose,
    )


def build_name_to_color(settings: NameToColorSettings, data: ColorData) -> Fit:
    """The compiled model of a run, and its training batches: each name's
    blurred color bins (`soft_bins`), weighted by its observations."""
    train, tokenizer = data.train, data.tokenizer
    model = NameToColor(
        tokenizer,
        settings.cell,
        settings.units,
        settings.embedding_dim,
        settings.bins,
        settings.cell_options,
    )
    model.compile(
        keras.optimizers.Adam(settings.learning_rate, clipnorm=1.0),
        keras.losses.CategoricalCrossentropy(from_logits=True),
    )
    ids = tokenizer(tf.constant(train.names)).numpy()
    targets = soft_bins(train.rgb, settings.bins)
    weights = np.broadcast_to(normalized_weights(train)[:, None], targets.shape[:2])
    return Fit(model, color_batches(ids, targets, weights, settings))


def evaluate_name_to_color(
    model: NameToColor, settings: NameToColorSettings, data: ColorData, run_dir: Path
) -> Evaluation:
    """The held-out distance of a trained model (see `train_name_to_color`)
    and its colors of `EXAMPLE_NAMES`; writes ``vocabulary.txt``."""
    train, test, tokenizer = data
    tokenizer.save_vocabulary(run_dir / "vocabulary.txt")
    predicted = model.colors(tf.constant(test.names))[0].numpy()
    prior_mean = np.average(train.rgb, axis=0, weights=train.weights)
    sample_colors = model.colors(tf.constant(EXAMPLE_NAMES))[0].numpy()
    results = {
        "task": f"name -> color ({settings.source})",
        "train_examples": len(train),
        "test_examples": len(test),
        "test_mean_rgb_distance": mean_distance(predicted, test.rgb, test.weights),
        "test_mean_rgb_distance_of_mean_color": mean_distance(
            prior_mean[None], test.rgb, test.weights
        ),
    }
    samples = {
        name: [round(float(v), 3) for v in rgb] for name, rgb in zip(EXAMPLE_NAMES, sample_colors)
    }
    return Evaluation(results, {"samples": samples})


def train_from_arguments(args: Any, given: dict[str, Any]) -> None:
    """``rnncells train name-to-color``: the run of the settings its flags
    ``given``, then its results and samples."""
    results = train_name_to_color(args.out, NameToColorSettings(**given), overwrite=args.overwrite)
    print(
        f"\nHeld-out names ({results['test_examples']}): mean sRGB distance "
        f"{results['test_mean_rgb_distance']:.3f} (always the mean color: "
        f"{results['test_mean_rgb_distance_of_mean_color']:.3f}); {results['parameters']} "
        f"parameters, {results['training_seconds']:.0f} s of training"
    )
    for name, rgb in results["samples"].items():
        print(f"  {name!r:>24} -> rgb {rgb}")
    print(f"Model, vocabulary, results.json and logs in {args.out}")


register_app("name-to-color", NameToColor, name_to_color_servable, train_from_arguments)
