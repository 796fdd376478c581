"""The sentiment classifier: raw text in, the probability that it is positive out.

``SentimentClassifier`` holds the whole pipeline, so the exported model takes
strings: HTML line breaks removed, then BERT-style normalization and WordPiece
tokenization (by default ``keras_rnncells.text.WordPieceTokenizer``: lower
case, accents stripped, punctuation split; ``tokenizer`` picks SentencePiece's
BPE or unigram subwords, or characters, instead), an embedding, a (bidirectional) recurrent
encoder over any registered cell and a logistic output, the classifier of the
MGU (Zhou et al. 2016) and MuFuRU (Weissenborn & Rocktäschel 2016) papers'
sentiment experiments; ``encoder="hierarchical"`` reads the same tokens as
sentences, with a hierarchical recurrent encoder (Serban et al. 2016:
`keras_rnncells.apps.document_encoder`). ``train_sentiment`` trains it on SST-2 (GLUE train,
tested on the labeled ``stsa.binary.test`` sentences) or IMDB, optionally
after pre-training its encoder on the training texts without their labels
(``pretrain``: `keras_rnncells.apps.pretrain`, Dai & Le 2015). IMDB's 50k
unlabelled reviews are not in the benchmark data: pre-training reads the
training split the classifier is fine-tuned on.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_rnncells.apps.base import TokenizerModel, check_settings
from keras_rnncells.apps.document_encoder import HierarchicalTextEncoder, sentence_end_ids
from keras_rnncells.apps.pretrain import OBJECTIVES, pretrain
from keras_rnncells.apps.registry import register_app
from keras_rnncells.checks import check_choice, check_positive_int, check_rate
from keras_rnncells.data.pipeline import shuffled_slices
from keras_rnncells.data.sentiment import read_glue_train, read_imdb, read_stsa
from keras_rnncells.defaults import TOKENIZERS
from keras_rnncells.export.limits import RequestLimits
from keras_rnncells.export.servable import (
    Servable,
    StringFrontEnd,
    padded_ids,
    served_ids,
    traced,
    with_limits,
)
from keras_rnncells.layers.word_dropout import WordDropout
from keras_rnncells.seq2seq.encoder import Encoder
from keras_rnncells.text import SentencePieceTokenizer, Tokenizer, learn_tokenizer
from keras_rnncells.text.vocabulary import UNK_ID
from keras_rnncells.training import (
    Evaluation,
    Fit,
    ResumableRun,
    backed_up_epochs,
    train_run,
)

LABELS = ("negative", "positive")
DATASETS = ("sst2", "imdb")
ENCODERS = ("flat", "hierarchical")
# HTML line breaks (IMDB reviews hold "<br />"), made spaces before tokenizing.
LINE_BREAK = r"<br\s*/?>"
PRETRAIN_HISTORY = "pretrain_history.csv"  # in the run directory: one row per epoch


@keras.saving.register_keras_serializable(package="keras_rnncells")
class SentimentClassifier(TokenizerModel):
    """Strings ``(B,)`` to logits ``(B, 1)`` (``predict_proba``: probabilities).

    Token rows are padded up to a multiple of ``pad_to_multiple`` (masked, so
    results do not change): the compiled recurrent loops then see a few
    sequence lengths instead of one per batch. ``max_length`` keeps the first
    tokens of longer texts. An empty text is an empty (fully masked) sequence,
    whose encoding is zero: it gets the output layer's bias alone.

    ``word_dropout``: in training, each token becomes ``[UNK]`` with this
    probability (`keras_rnncells.WordDropout`, Iyyer et al. 2015); 0 adds no
    layer.

    ``encoder``: ``"flat"``, one recurrence over the tokens (`Encoder`), or
    ``"hierarchical"``, the tokens split into sentences, a recurrence over
    each sentence's tokens and one over the sentence vectors
    (`HierarchicalTextEncoder`; one layer, ``num_layers`` must be 1).
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        cell: str = "gru",
        units: int = 128,
        embedding_dim: int = 128,
        bidirectional: bool = True,
        num_layers: int = 1,
        dropout: float = 0.3,
        pad_to_multiple: int = 16,
        cell_options: dict | None = None,
        word_dropout: float = 0.0,
        encoder: str = "flat",
        **kwargs: Any,
    ) -> None:
        super().__init__(tokenizer, **kwargs)
        self.encoder_kind = check_choice("encoder", encoder, ENCODERS)
        self.word_dropout_rate = check_rate("word_dropout", word_dropout)
        self.word_dropout = None
        if self.word_dropout_rate:
            self.word_dropout = WordDropout(
                self.word_dropout_rate, mode="unknown", unknown_id=UNK_ID, name="word_dropout"
            )
        self.pad_to_multiple = check_positive_int("pad_to_multiple", pad_to_multiple)
        if self.encoder_kind == "hierarchical":
            if num_layers != 1:
                raise ValueError(
                    "Argument `num_layers` must be 1 with encoder='hierarchical', received: "
                    f"{num_layers!r}"
                )
            self.encoder = HierarchicalTextEncoder(
                tokenizer.vocabulary_size,
                sentence_end_ids(tokenizer.vocabulary),
                embedding_dim,
                cell,
                units,
                bidirectional,
                cell_options,
                max_words=tokenizer.max_length or 64,
                pad_to_multiple=self.pad_to_multiple,
                name="encoder",
            )
        else:
            self.encoder = Encoder(
                tokenizer.vocabulary_size,
                embedding_dim,
                cell,
                units,
                num_layers,
                bidirectional,
                cell_options,
                name="encoder",
            )
        self.dropout_rate = check_rate("dropout", dropout)
        self.dropout = keras.layers.Dropout(dropout)
        self.head = keras.layers.Dense(1, name="logit")
        self.logits_from_ids(ops.ones((1, 2), "int32"))  # creates every weight
        self.built = True

    def token_ids(self, texts):
        """Strings ``(B,)`` to padded token ids ``(B, T)``, T a multiple of
        ``pad_to_multiple``."""
        texts = tf.strings.regex_replace(texts, LINE_BREAK, " ")
        return self.pad_ids(self.tokenizer.tokenize(texts))

    def pad_ids(self, ids):
        """Ragged token ids ``(B, None)`` (``tokenizer.tokenize``) as the
        padded ids ``(B, T)`` of `token_ids`: ``tokenizer.pad``'s, with ops
        that convert to ONNX exactly at every length (`padded_ids`)."""
        return padded_ids(ids, self.tokenizer.max_length, self.pad_to_multiple)

    def logits_from_ids(self, token_ids, training=None):
        if self.word_dropout is not None:
            token_ids = self.word_dropout(token_ids, training=training)
        _, summary, _ = self.encoder(token_ids, training=training)
        return self.head(self.dropout(summary, training=training))

    def call(self, texts, training=None):
        return self.logits_from_ids(self.token_ids(texts), training=training)

    def predict_proba(self, texts):
        return ops.sigmoid(self(texts))[:, 0]

    def get_config(self) -> dict:
        encoder = self.encoder
        return {
            **super().get_config(),
            "cell": encoder.cell_name,
            "units": encoder.units,
            "embedding_dim": encoder.embedding_dim,
            "bidirectional": encoder.bidirectional,
            "num_layers": encoder.num_layers,
            "dropout": self.dropout_rate,
            "pad_to_multiple": self.pad_to_multiple,
            "cell_options": encoder.cell_options,
            "word_dropout": self.word_dropout_rate,
            "encoder": self.encoder_kind,
        }


def sentiment_servable(
    model: SentimentClassifier, name: str = "sentiment", limits: RequestLimits | None = None
) -> Servable:
    """Serving: ``{"text": string (B,)}`` -> ``{"probability": float32 (B,),
    "label": string (B,)}``, "positive" where the probability is >= 0.5. ONNX
    (no string ops): ``{"token_ids": int32 (B, T)}`` -> ``{"probability"}``,
    ids from ``model.token_ids`` (the vocabulary ships with it; an
    id outside it fails the request, `served_ids`), and ``model_text.onnx``
    with the serving signature, the tokenizer as onnxruntime-extensions ops
    (`keras_rnncells.export.onnx_text`). Both on strings refuse a request
    past ``limits`` before tokenizing it (`with_limits`; unset limits:
    `keras_rnncells.export.limits.DEFAULT_LIMITS`, which admit every IMDB
    review)."""
    module = tf.Module()
    module.model = model

    def from_ids(token_ids):
        logits = model.logits_from_ids(token_ids, training=False)
        return {"probability": tf.sigmoid(tf.cast(logits, tf.float32))[:, 0]}

    def labelled(token_ids):
        outputs = from_ids(token_ids)
        label = tf.where(outputs["probability"] >= 0.5, LABELS[1], LABELS[0])
        return {**outputs, "label": label}

    examples = {
        "text": np.array(["a gripping, beautifully acted film", "dull and far too long", ""])
    }
    ids = model.token_ids(tf.constant(examples["text"])).numpy()
    servable = Servable(
        name=name,
        cell=model.encoder.cell_name,
        module=module,
        serve=traced(
            lambda text: labelled(model.token_ids(text)),
            {"text": tf.TensorSpec((None,), tf.string)},
        ),
        examples=examples,
        onnx_function=traced(
            lambda token_ids: from_ids(served_ids(token_ids, model.encoder.vocabulary_size)),
            {"token_ids": tf.TensorSpec((None, None), tf.int32)},
        ),
        onnx_examples={"token_ids": ids.astype("int32")},
        onnx_text=StringFrontEnd(
            model.tokenizer,
            lambda ragged: labelled(model.pad_ids(ragged)),
            replacements=((LINE_BREAK, " "),),
            pad_to_multiple=model.pad_to_multiple,
        ),
        vocabulary_files={"vocabulary.txt": model.tokenizer.vocabulary},
    )
    return with_limits(servable, limits)


@dataclass(frozen=True)
class SentimentSettings:
    """The settings of a run (all written into ``results.json``).

    ``pretrain``: None, or ``"lm"`` or ``"autoencoder"``: first pre-train the
    embedding and encoder for ``pretrain_epochs`` on the training texts
    without labels (`keras_rnncells.apps.pretrain`), then fine-tune the
    whole classifier from those weights."""

    dataset: str = "sst2"
    cell: str = "gru"
    units: int = 128
    epochs: int = 2
    batch_size: int = 64
    seed: int = 0
    train_size: int | None = None  # all
    tokenizer: str = "wordpiece"  # one of TOKENIZERS
    vocabulary_size: int = 8000
    embedding_dim: int = 128
    bidirectional: bool = True
    dropout: float = 0.3
    word_dropout: float = 0.0
    learning_rate: float = 2e-3
    max_tokens: int = 400  # IMDB reviews keep their first 400 tokens
    cell_options: dict = field(default_factory=dict)
    pretrain: str | None = None
    pretrain_epochs: int = 1
    encoder: str = "flat"  # one of ENCODERS

    def __post_init__(self) -> None:
        check_settings(
            self,
            dataset=DATASETS,
            pretrain=(None, *OBJECTIVES),
            tokenizer=TOKENIZERS,
            encoder=ENCODERS,
        )
        check_positive_int("pretrain_epochs", self.pretrain_epochs)
        if self.encoder == "hierarchical" and self.pretrain is not None:
            raise ValueError(
                "Argument `pretrain` must be None with encoder='hierarchical' (pre-training "
                f"reads the flat encoder), received: {self.pretrain!r}"
            )


def sentiment_splits(dataset: str, root=None) -> dict[str, tuple[list[str], np.ndarray]]:
    """Train, validation and test (texts, labels) of ``"sst2"`` or ``"imdb"``."""
    if dataset == "sst2":
        return {
            "train": read_glue_train(root),
            "validation": read_stsa("stsa.binary.dev", root),
            "test": read_stsa("stsa.binary.test", root),
        }
    if dataset == "imdb":
        texts, labels = read_imdb("train", root)
        order = np.random.default_rng(0).permutation(len(texts))
        held, kept = order[:2500], order[2500:]
        return {
            "train": ([texts[i] for i in kept], labels[kept]),
            "validation": ([texts[i] for i in held], labels[held]),
            "test": read_imdb("test", root),
        }
    raise ValueError(f"Argument `dataset` must be one of {DATASETS}, received: {dataset!r}")


def text_dataset(examples, batch_size: int, seed: int | None = None) -> tf.data.Dataset:
    texts, labels = examples
    # shuffled per (seed, epoch): a resumed run sees an uninterrupted run's order
    dataset = shuffled_slices((tf.constant(texts), tf.constant(labels[:, None], tf.float32)), seed)
    return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def train_sentiment(
    run_dir: str | Path,
    settings: SentimentSettings = SentimentSettings(),
    verbose: int | str = "auto",
    root=None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Trains, evaluates and saves into ``run_dir``; returns the results.

    ``run_dir`` and ``overwrite``: as `keras_rnncells.training.run_directory`
    holds, resumes or refuses a run."""
    return train_run(
        run_dir,
        settings,
        data=lambda: sentiment_data(settings, root),
        build=lambda data, run_dir: build_classifier(settings, data, run_dir, verbose),
        evaluate=lambda model, data, run_dir: evaluate_classifier(model, settings, data, run_dir),
        overwrite=overwrite,
        verbose=verbose,
    )


class SentimentData(NamedTuple):
    """The data of a run: its splits of (texts, labels) and its tokenizer."""

    splits: dict[str, tuple[list[str], np.ndarray]]
    tokenizer: Tokenizer


def sentiment_data(settings: SentimentSettings, root=None) -> SentimentData:
    """The splits of ``settings.dataset`` (``train_size``: a random part of
    the training split) and the tokenizer learned from the training texts."""
    splits = sentiment_splits(settings.dataset, root)
    texts, labels = splits["train"]
    if settings.train_size is not None:
        order = np.random.default_rng(settings.seed).permutation(len(texts))[: settings.train_size]
        splits["train"] = texts, labels = [texts[i] for i in order], labels[order]
    tokenizer = learn_tokenizer(
        settings.tokenizer, texts, settings.vocabulary_size, max_length=settings.max_tokens
    )
    return SentimentData(splits, tokenizer)


def build_classifier(
    settings: SentimentSettings, data: SentimentData, run_dir: Path, verbose: int | str = "auto"
) -> Fit:
    """The compiled classifier of a run, its encoder pre-trained as
    ``settings.pretrain`` asks (`pretrain_run`), and its batches."""
    model = SentimentClassifier(
        data.tokenizer,
        settings.cell,
        settings.units,
        settings.embedding_dim,
        settings.bidirectional,
        dropout=settings.dropout,
        cell_options=settings.cell_options,
        word_dropout=settings.word_dropout,
        encoder=settings.encoder,
    )
    model.compile(
        keras.optimizers.Adam(settings.learning_rate, clipnorm=1.0),
        keras.losses.BinaryCrossentropy(from_logits=True),
        metrics=[keras.metrics.BinaryAccuracy(threshold=0.0, name="accuracy")],
    )
    pretraining = pretrain_run(model, data.splits["train"][0], settings, run_dir, verbose)
    return Fit(
        model,
        text_dataset(data.splits["train"], settings.batch_size, settings.seed),
        validation=text_dataset(data.splits["validation"], 256),
        record={} if pretraining is None else {"pretraining": pretraining},
    )


def evaluate_classifier(
    model: SentimentClassifier, settings: SentimentSettings, data: SentimentData, run_dir: Path
) -> Evaluation:
    """The test accuracy of a trained classifier and its probabilities of two
    sample texts; writes its vocabulary (and a SentencePiece tokenizer's model)."""
    splits, tokenizer = data
    test = model.evaluate(text_dataset(splits["test"], 256), return_dict=True, verbose=0)
    tokenizer.save_vocabulary(run_dir / "vocabulary.txt")
    if isinstance(tokenizer, SentencePieceTokenizer):
        tokenizer.save_model(run_dir / "tokenizer.model")
    samples = ["a gripping, beautifully acted film", "dull and far too long"]
    probabilities = model.predict_proba(tf.constant(samples)).numpy()
    results = {
        "task": f"sentiment ({settings.dataset})",
        "test_examples": len(splits["test"][0]),
        "test_accuracy": float(test["accuracy"]),
        "test_loss": float(test["loss"]),
        "vocabulary_size": tokenizer.vocabulary_size,
    }
    details = {"samples": {text: float(p) for text, p in zip(samples, probabilities)}}
    return Evaluation(results, details)


def pretrain_run(
    model: SentimentClassifier,
    texts: list[str],
    settings: SentimentSettings,
    run_dir: Path,
    verbose: int | str = "auto",
) -> dict[str, Any] | None:
    """Pre-trains ``model``'s encoder as ``settings.pretrain`` asks (nothing
    for None) on ``texts``, once per run, and returns what ``results.json``
    holds of it (None without pre-training).

    Its epochs go into ``run_dir/pretrain_history.csv``. Once it has ended,
    the classifier (pre-trained encoder, fresh output layer and optimizer) is
    backed up as the state of a run at epoch 0 (`backup_at_start`), so a run
    killed from then on resumes from those weights without pre-training
    again, and `run_directory` refuses to resume it with other settings
    (another ``pretrain`` included). A run killed while pre-training starts
    afresh, as one killed in its first epoch does."""
    history = run_dir / PRETRAIN_HISTORY
    if backed_up_epochs(run_dir) is None:  # a fresh start: no stale rows
        history.unlink(missing_ok=True)
        if settings.pretrain is None:
            return None
        pretrain(
            model.encoder,
            model.token_ids,
            texts,
            settings.pretrain,
            history,
            epochs=settings.pretrain_epochs,
            batch_size=settings.batch_size,
            learning_rate=settings.learning_rate,
            seed=settings.seed,
            verbose=verbose,
        )
        backup_at_start(model, run_dir)
    if settings.pretrain is None:
        return None
    with open(history, encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    return {
        "objective": settings.pretrain,
        "epochs": len(rows),
        "loss": float(rows[-1]["loss"]),
        "perplexity": float(rows[-1]["perplexity"]),
        "training_seconds": sum(float(row["seconds"]) for row in rows),
    }


def backup_at_start(model: keras.Model, run_dir: Path) -> None:
    """Writes ``model``'s backup (`ResumableRun`'s: its variables and its
    optimizer's, no history rows) as a run at epoch 0."""
    backup = ResumableRun(run_dir)
    backup.set_model(model)
    backup.save(0)


def train_from_arguments(args: Any, given: dict[str, Any]) -> None:
    """``rnncells train sentiment``: the run of the settings its flags
    ``given``, then its results and samples."""
    settings = SentimentSettings(**given)
    results = train_sentiment(args.out, settings, overwrite=args.overwrite)
    print(
        f"\nTest accuracy ({settings.dataset}, {results['test_examples']} texts): "
        f"{results['test_accuracy']:.2%}; {results['parameters']} parameters, "
        f"{results['training_seconds']:.0f} s of training"
    )
    if "pretraining" in results:
        pretraining = results["pretraining"]
        print(
            f"Pre-trained ({pretraining['objective']}, {pretraining['epochs']} epoch(s)): "
            f"loss {pretraining['loss']:.3f}, perplexity {pretraining['perplexity']:.1f}"
        )
    for text, probability in results["samples"].items():
        print(f"  P(positive | {text!r}) = {probability:.3f}")
    print(f"Model, vocabulary, results.json and logs in {args.out}")


register_app("sentiment", SentimentClassifier, sentiment_servable, train_from_arguments)
