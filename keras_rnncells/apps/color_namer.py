"""The color namer: an sRGB color in, a name ("light greenish blue") out.

``ColorNamer`` is a word-level ``keras_rnncells.seq2seq.Decoder`` (any
registered cell) conditioned on the color twice, as in Monroe et al. 2016
("Learning to generate compositional color descriptions"): its initial state
comes from the summary s = tanh(W f + b) of the color features f
(`colors.color_features`), and every step reads f as its prompt next to the
previous word. Names are decoded in the graph by greedy or beam search
(``keras_rnncells.seq2seq.search``). ``train_color_namer`` trains it on the
shipped color list (or the XKCD counts) and ``rnncells train color-namer``
runs that.
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
    ColorExamples,
    ColorSettings,
    check_rgb,
    color_batches,
    color_features,
    finite_or_failing,
    normalized_weights,
    start_run,
)
from keras_rnncells.apps.registry import register_app
from keras_rnncells.checks import check_positive_int
from keras_rnncells.export.servable import Servable, traced
from keras_rnncells.layers import portable
from keras_rnncells.seq2seq.decoder import Decoder
from keras_rnncells.seq2seq.search import Decoded, decode
from keras_rnncells.text import END_ID, START_ID, WordTokenizer
from keras_rnncells.training import Evaluation, Fit, train_run

SERVING_BEAM_WIDTH = 3
EXAMPLE_RGB = np.array([[0.58, 0.82, 0.99], [0.0, 0.01, 0.36], [0.9, 0.1, 0.1]], "float32")


@keras.saving.register_keras_serializable(package="keras_rnncells")
class ColorNamer(TokenizerModel):
    """``model((rgb, target_in))``: colors ``(B, 3)`` in [0, 1] and the
    teacher-forced name ids ``(B, T)`` (``[START]`` then the words) to logits
    ``(B, T, V)``; fit on the words followed by ``[END]``, padding ignored.
    ``describe(rgb, beam_width)`` names colors: ``(names (B,) strings, scores
    (B,))``, scores the names' log-probabilities. Colors are clipped to
    [0, 1]; a NaN or infinite color raises ``InvalidArgumentError`` in
    ``describe`` and ``generate``.
    """

    tokenizer_class = WordTokenizer

    def __init__(
        self,
        tokenizer: WordTokenizer,
        cell: str = "gru",
        units: int = 64,
        embedding_dim: int = 32,
        max_length: int = 8,
        cell_options: dict | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(tokenizer, **kwargs)
        self.max_length = check_positive_int("max_length", max_length)
        self.summarize = keras.layers.Dense(units, activation="tanh", name="summary")
        self.decoder = Decoder(
            tokenizer.vocabulary_size,
            embedding_dim,
            cell,
            units,
            cell_options=cell_options,
            name="decoder",
        )
        with portable():  # creates every weight, with no XLA compilation for it
            self((ops.zeros((1, 3)), ops.ones((1, 2), "int32")))

    def call(self, inputs, training=None):
        rgb, target_in = inputs
        features = color_features(check_rgb(rgb, check_finite=False))
        return self.decoder(
            target_in, summary=self.summarize(features), prompt=features, training=training
        )

    def generate(self, rgb, beam_width: int = 1, check_finite: bool = True) -> Decoded:
        """Name ids of colors ``(B, 3)``: greedy search for ``beam_width=1``
        (tokens ``(B, L)``), beam search otherwise (``(B, K, L)``, best first).
        ``check_finite=False`` leaves out the NaN check (for ONNX)."""
        features = color_features(check_rgb(rgb, check_finite))
        batch_size = tf.shape(features)[0]
        states = self.decoder.initial_state(batch_size, self.summarize(features))
        return decode(
            self.decoder.log_prob_step,
            {"prompt": features},
            states,
            batch_size,
            beam_width,
            self.max_length,
            START_ID,
            END_ID,
        )

    def describe(self, rgb, beam_width: int = 1) -> tuple[tf.Tensor, tf.Tensor]:
        """``(names, scores)`` of colors ``(B, 3)``: the best name of each."""
        tokens, scores = self.generate(rgb, beam_width)
        if beam_width > 1:
            tokens, scores = tokens[:, 0], scores[:, 0]
        return self.tokenizer.detokenize(tokens), scores

    def get_config(self) -> dict:
        decoder = self.decoder
        return {
            **super().get_config(),
            "cell": decoder.cell_name,
            "units": decoder.units,
            "embedding_dim": decoder.embedding_dim,
            "max_length": self.max_length,
            "cell_options": decoder.cell_options,
        }


def color_namer_servable(model: ColorNamer, name: str = "color-namer") -> Servable:
    """Serving: ``{"rgb": float32 (B, 3)}`` -> ``{"names": string (B,),
    "scores": float32 (B,)}``, beam search of width 3 in the graph, scores the
    names' log-probabilities. Colors are clipped to [0, 1]; NaN or infinity
    fails the request with ``InvalidArgument``. ONNX (no string ops): the
    same input -> ``{"tokens": int32 (B, L), "scores"}``, word ids of the
    vocabulary shipped with it, rows ended by 3 (``[END]``) and padded with 0;
    colors clipped, and NaN or infinity fails the request there too (an
    out-of-range Gather named ``rgb_must_be_finite``: `finite_or_failing`)."""
    module = tf.Module()
    module.model = model

    def to_names(rgb):
        names, scores = model.describe(rgb, SERVING_BEAM_WIDTH)
        return {"names": names, "scores": scores}

    def to_tokens(rgb):
        rgb = finite_or_failing(rgb, "rgb_must_be_finite")
        tokens, scores = model.generate(rgb, SERVING_BEAM_WIDTH, check_finite=False)
        return {"tokens": tokens[:, 0], "scores": scores[:, 0]}

    signature = {"rgb": tf.TensorSpec((None, 3), tf.float32)}
    return Servable(
        name=name,
        cell=model.decoder.cell_name,
        module=module,
        serve=traced(to_names, signature),
        examples={"rgb": EXAMPLE_RGB},
        onnx_function=traced(to_tokens, signature),
        onnx_examples={"rgb": EXAMPLE_RGB},
        vocabulary_files={"vocabulary.txt": model.tokenizer.vocabulary},
        detokenizers={"names": ("tokens", model.tokenizer)},
    )


@dataclass(frozen=True)
class NamerSettings(ColorSettings):
    """The settings of a color-namer run (all written into ``results.json``)."""

    epochs: int = 20  # held-out perplexity (seed 0): 23.7 at 20 epochs, 35.7 at 30, 298 at 150
    beam_width: int = SERVING_BEAM_WIDTH


def teacher_forcing(model: ColorNamer, examples: ColorExamples) -> tuple[tuple, np.ndarray, Any]:
    """``(rgb, target_in)``, ``target_out`` and per-token weights of the examples."""
    ids = model.tokenizer(tf.constant(examples.names), add_start=True, add_end=True).numpy()
    targets = ids[:, 1:]
    weights = np.broadcast_to(normalized_weights(examples)[:, None], targets.shape)
    return (examples.rgb, ids[:, :-1]), targets, weights


def describe_all(model: ColorNamer, rgb: np.ndarray, beam_width: int, batch_size=512) -> list:
    describe = tf.function(lambda colors: model.describe(colors, beam_width))
    names = []
    for start in range(0, len(rgb), batch_size):
        batch, _ = describe(tf.constant(rgb[start : start + batch_size]))
        names += [name.decode("utf-8") for name in batch.numpy()]
    return names


def exact_match(predictions: list[str], targets: list[str], weights: np.ndarray) -> float:
    hits = np.array([p == t for p, t in zip(predictions, targets)], "float64")
    return float(np.average(hits, weights=weights))


def train_color_namer(
    run_dir: str | Path,
    settings: NamerSettings = NamerSettings(),
    verbose: int | str = "auto",
    root=None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Trains, evaluates and saves into ``run_dir``; returns the results.

    Held-out metrics: per-word perplexity and exact-name match of the test
    examples (for the shipped list, names never seen in training, so exact
    match is a hard measure), and exact match on the training examples.

    ``run_dir`` and ``overwrite``: as `keras_rnncells.training.run_directory`
    holds, resumes or refuses a run."""
    return train_run(
        run_dir,
        settings,
        data=lambda: start_run(settings, root),
        build=lambda data, run_dir: build_namer(settings, data),
        evaluate=lambda model, data, run_dir: evaluate_namer(model, settings, data, run_dir),
        overwrite=overwrite,
        verbose=verbose,
    )


def build_namer(settings: NamerSettings, data: ColorData) -> Fit:
    """The compiled color namer of a run, and its teacher-forced training batches."""
    model = ColorNamer(
        data.tokenizer,
        settings.cell,
        settings.units,
        settings.embedding_dim,
        cell_options=settings.cell_options,
    )
    model.compile(
        keras.optimizers.Adam(settings.learning_rate, clipnorm=1.0),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
    )
    return Fit(model, color_batches(*teacher_forcing(model, data.train), settings))


def evaluate_namer(
    model: ColorNamer, settings: NamerSettings, data: ColorData, run_dir: Path
) -> Evaluation:
    """The held-out metrics of a trained namer (see `train_color_namer`) and
    its names of the first test colors; writes ``vocabulary.txt``."""
    train, test, tokenizer = data
    test_inputs, test_targets, test_weights = teacher_forcing(model, test)
    test_loss = model.evaluate(test_inputs, test_targets, sample_weight=test_weights, verbose=0)
    tokenizer.save_vocabulary(run_dir / "vocabulary.txt")
    greedy = describe_all(model, test.rgb, 1)
    beam = describe_all(model, test.rgb, settings.beam_width)
    train_names = describe_all(model, train.rgb, 1)
    results = {
        "task": f"color naming, rgb -> name ({settings.source})",
        "train_examples": len(train),
        "test_examples": len(test),
        "test_perplexity": float(np.exp(test_loss)),
        "test_exact_match_greedy": exact_match(greedy, test.names, test.weights),
        f"test_exact_match_beam{settings.beam_width}": exact_match(beam, test.names, test.weights),
        "train_exact_match_greedy": exact_match(train_names, train.names, train.weights),
    }
    samples = [
        {"rgb": [round(float(v), 3) for v in rgb], "name": name, "output": output}
        for rgb, name, output in zip(test.rgb[:20], test.names, beam)
    ]
    return Evaluation(results, {"samples": samples})


def train_from_arguments(args: Any, given: dict[str, Any]) -> None:
    """``rnncells train color-namer``: the run of the settings its flags
    ``given``, then its results and samples."""
    results = train_color_namer(args.out, NamerSettings(**given), overwrite=args.overwrite)
    print(
        f"\nHeld-out colors ({results['test_examples']}): perplexity "
        f"{results['test_perplexity']:.2f}, exact name (greedy) "
        f"{results['test_exact_match_greedy']:.2%}; training colors named exactly: "
        f"{results['train_exact_match_greedy']:.2%}; {results['parameters']} parameters, "
        f"{results['training_seconds']:.0f} s of training"
    )
    for sample in results["samples"][:8]:
        print(f"  {sample['rgb']} {sample['name']!r:>24} -> {sample['output']!r}")
    print(f"Model, vocabulary, results.json and logs in {args.out}")


register_app("color-namer", ColorNamer, color_namer_servable, train_from_arguments)
