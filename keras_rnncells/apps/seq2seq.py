"""The encoder-decoder application: a date normalizer over characters (or subwords).

``train_date_normalizer(run_dir)`` trains a ``TextSeq2Seq`` with attention to
rewrite dates as people write them ("Nov 21, 2026", "21.11.2026",
"saturday, november 21, 2026") as ISO 8601 ("2026-11-21"), evaluates exact
match on dates never seen in training, and writes the run directory
(``keras_rnncells.training``). ``rnncells train seq2seq`` runs it. Both sides
read and write characters, or with ``tokenizer`` SentencePiece's BPE or unigram
subwords learned from the training pairs (case kept). ``dataset="meetings"``
trains on notes with a name to copy ("Meeting with Okonkwo on Nov 21, 2026" ->
"Okonkwo 2026-11-21", `keras_rnncells.data.dates.meeting_splits`), and
``copy=True`` gives the decoder its copy mechanism. ``finetune`` ("reinforce"
or "mrt") adds ``finetune_epochs`` of sequence-level training on the outputs'
similarity to the targets after the teacher-forced epochs
(`keras_rnncells.seq2seq.sequence_level`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import keras
import numpy as np
import tensorflow as tf

from keras_rnncells.apps.base import check_settings
from keras_rnncells.apps.registry import register_app
from keras_rnncells.checks import check_float, check_integer, check_positive_int
from keras_rnncells.data.dates import date_splits, meeting_splits
from keras_rnncells.data.pipeline import shuffled_slices
from keras_rnncells.export.limits import RequestLimits
from keras_rnncells.export.servable import (
    Servable,
    StringFrontEnd,
    padded_ids,
    served_ids,
    traced,
    with_limits,
)
from keras_rnncells.seq2seq.attention import SCORES
from keras_rnncells.seq2seq.sequence_level import OBJECTIVES
from keras_rnncells.seq2seq.text import TextSeq2Seq
from keras_rnncells.text import SentencePieceTokenizer, Tokenizer, learn_tokenizer
from keras_rnncells.training import Evaluation, Fit, train_run

# The tokenizers of `keras_rnncells.defaults.TOKENIZERS` that write dates back
# exactly (WordPiece spaces out punctuation: "2026 - 11 - 21").
TOKENIZERS = ("char", "bpe", "unigram")
DATASETS = ("dates", "meetings")
EXAMPLES = {
    "dates": ("Nov 21, 2026", "saturday 21 november 2026", "11/21/2026", "21.11.2026"),
    "meetings": (
        "Meeting with Okonkwo on Nov 21, 2026",
        "lunch with Ngozi, 21.11.2026",
        "11/21/2126: call Wanjiru",
    ),
}
TASKS = {"dates": "date normalization", "meetings": "meeting notes to name and date"}
# The longest output of each dataset, in tokens, with room to spare.
MAX_OUTPUT_LENGTH = {"dates": 12, "meetings": 32}
SERVING_BEAM_WIDTH = 4
# A date or a meeting note is a line (the generated dates have at most 31
# characters, the notes 54), and the encoder and the beam search's attention
# read every character of a request's longest text, in every row and beam:
# 256 texts of 2,000 characters took 26 s and 5.5 GB of a server, 256 of 256
# characters 1.5 s and 1.4 GB (the default model; `keras_rnncells.export.limits`).
# So 256 characters a text (the other limits: `limits.DEFAULT_LIMITS`).
LIMITS = RequestLimits(max_chars=256)


def seq2seq_servable(
    model: TextSeq2Seq, name: str = "seq2seq", limits: RequestLimits | None = None
) -> Servable:
    """Serving: ``{"text": string (B,)}`` -> ``{"output": string (B,),
    "score": float32 (B,)}``, beam search of width 4 in the graph. ONNX (no
    string ops): ``{"token_ids": int32 (B, S)}`` -> ``{"tokens": int32 (B, L),
    "score"}``, the ids of the two vocabularies shipped with it (a source id
    outside its vocabulary fails the request, `served_ids`), and
    ``model_text.onnx`` with the serving signature, the tokenizers as
    onnxruntime-extensions ops (`keras_rnncells.export.onnx_text`). Both on
    strings refuse a request past ``limits`` before tokenizing it
    (`with_limits`; unset limits: `LIMITS`)."""
    module = tf.Module()
    module.model = model

    def from_text(text):
        output, score = model.translate(text, beam_width=SERVING_BEAM_WIDTH)
        return {"output": output, "score": score}

    def from_ids(token_ids):
        tokens, scores = model.seq2seq.generate(token_ids, beam_width=SERVING_BEAM_WIDTH)
        return {"tokens": tokens[:, 0], "score": scores[:, 0]}

    examples = {"text": np.array([*EXAMPLES["dates"][:2], ""])}
    ids = model.source_tokenizer(tf.constant(examples["text"])).numpy().astype("int32")
    servable = Servable(
        name=name,
        cell=model.seq2seq.encoder.cell_name,
        module=module,
        serve=traced(from_text, {"text": tf.TensorSpec((None,), tf.string)}),
        examples=examples,
        onnx_function=traced(
            lambda token_ids: from_ids(
                served_ids(token_ids, model.seq2seq.encoder.vocabulary_size)
            ),
            {"token_ids": tf.TensorSpec((None, None), tf.int32)},
        ),
        onnx_examples={"token_ids": ids},
        onnx_text=StringFrontEnd(
            model.source_tokenizer,
            lambda ragged: from_ids(padded_ids(ragged, model.source_tokenizer.max_length)),
            detokenizers={"output": ("tokens", model.target_tokenizer)},
        ),
        vocabulary_files={
            "source_vocabulary.txt": model.source_tokenizer.vocabulary,
            "target_vocabulary.txt": model.target_tokenizer.vocabulary,
        },
    )
    return with_limits(servable, limits, defaults=LIMITS)


@dataclass(frozen=True)
class DateSettings:
    """The settings of a run (all written into ``results.json``)."""

    cell: str = "gru"
    units: int = 128
    epochs: int = 5
    batch_size: int = 64
    seed: int = 0
    train_size: int = 20000
    validation_size: int = 1000
    test_size: int = 2000
    attention: str = "general"
    bidirectional: bool = True
    embedding_dim: int = 32
    learning_rate: float = 3e-3
    beam_width: int = 4
    tokenizer: str = "char"  # one of TOKENIZERS
    vocabulary_size: int = 1000  # per side, at most
    cell_options: dict = field(default_factory=dict)
    dataset: str = "dates"  # one of DATASETS
    typos: float = 0.0  # dates: the rate of letter typos in every source (data.dates.with_typos)
    copy: bool = False
    finetune: str | None = None  # None (teacher forcing only) or one of OBJECTIVES
    finetune_epochs: int = 2  # after `epochs`, with `finetune`
    finetune_samples: int = 8  # outputs drawn per source in each fine-tuning step

    def __post_init__(self) -> None:
        check_settings(
            self,
            attention=(None, *SCORES),
            tokenizer=TOKENIZERS,
            dataset=DATASETS,
            finetune=(None, *OBJECTIVES),
        )
        check_positive_int("finetune_epochs", self.finetune_epochs)
        check_float("typos", self.typos, "[0, 1)")
        if self.typos and self.dataset != "dates":
            raise ValueError("Argument `typos` applies to the dates dataset only")
        check_integer("finetune_samples", self.finetune_samples, 2)
        if self.copy and self.attention is None:
            raise ValueError("Argument `copy` needs `attention`: copying reads its weights")


def string_dataset(pairs: list[tuple[str, str]], model: TextSeq2Seq, batch_size: int, seed=None):
    """(source, target) string pairs as batches of ``model.examples``, shuffled if ``seed``."""
    sources, targets = (tf.constant(list(column)) for column in zip(*pairs))
    dataset = shuffled_slices((sources, targets), seed)  # per (seed, epoch): resumable
    return dataset.batch(batch_size).map(model.examples).prefetch(tf.data.AUTOTUNE)


def translate_all(model: TextSeq2Seq, texts: list[str], beam_width: int, batch_size=256) -> list:
    translate = tf.function(
        lambda strings: model.translate(strings, beam_width=beam_width),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    outputs = []
    for start in range(0, len(texts), batch_size):
        decoded, _ = translate(tf.constant(texts[start : start + batch_size]))
        outputs += [text.decode("utf-8") for text in decoded.numpy()]
    return outputs


def exact_match(predictions: list[str], targets: list[str]) -> float:
    return float(np.mean([p == t for p, t in zip(predictions, targets)]))


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance between two strings, in characters."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def mean_edit_distance(predictions: list[str], targets: list[str]) -> float:
    return float(np.mean([edit_distance(p, t) for p, t in zip(predictions, targets)]))


def train_date_normalizer(
    run_dir: str | Path,
    settings: DateSettings = DateSettings(),
    verbose: int | str = "auto",
    overwrite: bool = False,
) -> dict[str, Any]:
    """Trains, evaluates and saves into ``run_dir``; returns the results.

    ``run_dir`` and ``overwrite``: as `keras_rnncells.training.run_directory`
    holds, resumes or refuses a run."""
    return train_run(
        run_dir,
        settings,
        data=lambda: date_data(settings),
        build=lambda data, run_dir: build_normalizer(settings, data),
        evaluate=lambda model, data, run_dir: evaluate_normalizer(model, settings, data, run_dir),
        overwrite=overwrite,
        verbose=verbose,
    )


class DateData(NamedTuple):
    """The data of a run: its splits of (source, target) pairs and the
    tokenizers of both sides."""

    splits: dict[str, list[tuple[str, str]]]
    source_tokenizer: Tokenizer
    target_tokenizer: Tokenizer


def date_data(settings: DateSettings) -> DateData:
    """The generated splits of ``settings.dataset`` and the tokenizers
    learned from the training pairs."""
    sizes = (settings.train_size, settings.test_size, settings.validation_size, settings.seed)
    if settings.dataset == "dates":
        splits = date_splits(*sizes, typos=settings.typos)
    else:
        splits = meeting_splits(*sizes)
    sources, targets = zip(*splits["train"])
    source_tokenizer, target_tokenizer = (
        learn_tokenizer(settings.tokenizer, texts, settings.vocabulary_size, lowercase=False)
        for texts in (sources, targets)
    )
    return DateData(splits, source_tokenizer, target_tokenizer)


def build_normalizer(settings: DateSettings, data: DateData) -> Fit:
    """The compiled encoder-decoder of a run and its batches; with
    ``finetune``, the epochs of sequence-level training after the teacher-forced ones."""
    model = TextSeq2Seq.from_tokenizers(
        data.source_tokenizer,
        data.target_tokenizer,
        copy=settings.copy,
        cell=settings.cell,
        units=settings.units,
        embedding_dim=settings.embedding_dim,
        bidirectional=settings.bidirectional,
        attention=settings.attention,
        cell_options=settings.cell_options,
        max_output_length=MAX_OUTPUT_LENGTH[settings.dataset],
    )
    model.compile(
        keras.optimizers.Adam(settings.learning_rate, clipnorm=1.0),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
        jit_compile=False,  # the fine-tuning's edit distance has no XLA kernel
    )
    epochs, phases = settings.epochs, ()
    if settings.finetune is not None:
        phases = (model.fine_tune(settings.finetune, epochs, settings.finetune_samples),)
        epochs += settings.finetune_epochs
    return Fit(
        model,
        string_dataset(data.splits["train"], model, settings.batch_size, settings.seed),
        validation=string_dataset(data.splits["validation"], model, settings.batch_size),
        epochs=epochs,
        callbacks=phases,
    )


def evaluate_normalizer(
    model: TextSeq2Seq, settings: DateSettings, data: DateData, run_dir: Path
) -> Evaluation:
    """Exact match and edit distance of a trained model on the test pairs
    (and, for meetings, on the later years), its outputs of `EXAMPLES` and
    its first errors; writes the vocabularies (and SentencePiece models)."""
    splits = data.splits
    test_sources, test_targets = (list(column) for column in zip(*splits["test"]))
    greedy = translate_all(model, test_sources, beam_width=1)
    beam = translate_all(model, test_sources, beam_width=settings.beam_width)
    late = {}
    if "test_years" in splits:  # meetings after the training years
        late_sources, late_targets = (list(c) for c in zip(*splits["test_years"]))
        late_outputs = translate_all(model, late_sources, beam_width=1)
        late = {"exact_match_greedy_test_years": exact_match(late_outputs, late_targets)}
    for side, tokenizer in (("source", data.source_tokenizer), ("target", data.target_tokenizer)):
        tokenizer.save_vocabulary(run_dir / f"{side}_vocabulary.txt")
        if isinstance(tokenizer, SentencePieceTokenizer):
            tokenizer.save_model(run_dir / f"{side}_tokenizer.model")
    examples = list(EXAMPLES[settings.dataset])
    samples = dict(zip(examples, translate_all(model, examples, settings.beam_width)))
    copying = ", copy mechanism" if settings.copy else ""
    results = {
        "task": f"{TASKS[settings.dataset]} ({settings.tokenizer} tokens{copying})",
        "test_examples": len(test_targets),
        "exact_match_greedy": exact_match(greedy, test_targets),
        f"exact_match_beam{settings.beam_width}": exact_match(beam, test_targets),
        "mean_edit_distance_greedy": mean_edit_distance(greedy, test_targets),
        **late,
    }
    errors = [
        {"source": s, "target": t, "output": o}
        for s, t, o in zip(test_sources, test_targets, greedy)
        if o != t
    ][:20]
    return Evaluation(results, {"samples": samples, "test_errors": errors})


def train_from_arguments(args: Any, given: dict[str, Any]) -> None:
    """``rnncells train seq2seq``: the run of the settings its flags
    ``given``, then its results and samples."""
    settings = DateSettings(**given)
    results = train_date_normalizer(args.out, settings, overwrite=args.overwrite)
    beam = f"exact_match_beam{settings.beam_width}"
    held_out = "dates" if settings.dataset == "dates" else "notes, names"
    print(
        f"\nHeld-out exact match ({results['test_examples']} {held_out} never seen in "
        f"training): greedy {results['exact_match_greedy']:.2%}, beam {settings.beam_width} "
        f"{results[beam]:.2%}; {results['parameters']} parameters, "
        f"{results['training_seconds']:.0f} s of training"
    )
    if "exact_match_greedy_test_years" in results:
        print(
            "Exact match on notes of the years 2100-2199 (training ends in 2099), greedy: "
            f"{results['exact_match_greedy_test_years']:.2%}"
        )
    for source, output in results["samples"].items():
        print(f"  {source!r:>30} -> {output!r}")
    print(f"Model, vocabularies, results.json and logs in {args.out}")


register_app("seq2seq", TextSeq2Seq, seq2seq_servable, train_from_arguments)
