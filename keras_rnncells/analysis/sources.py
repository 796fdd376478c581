"""What `rnncells inspect` feeds a run's model, and what each recurrent layer reads.

A `RunSource` knows, for the model of one run directory (any application of
`keras_rnncells.defaults.APPS`, or a task run of ``rnncells train TASK``):

* ``layers``: every recurrent layer, by ``id``, with a display name and the
  input ``stream`` it reads (``"text"``, ``"source"``, ``"target"``,
  ``"name"``, ``"tokens"`` or ``"steps"``);
* ``corpus()``: held-out batches (at most `CORPUS_LIMIT` rows), each a
  `Batch`: a function running the model's forward pass, and per stream the
  tokens of every row (``None`` for real-valued steps), the valid steps and
  the rows' labels where they have one;
* ``shown(texts)``: the `Batch` of the rows shown one by one: ``texts``
  (``--text``) tokenized as the model does, or the first held-out rows.

Per run: sentiment: the encoder over the text's word pieces (labels: the
test sentences'); seq2seq: the encoder over the source characters and the
decoder over the target, teacher forced (the held-out target; for a given
text, the model's own translation); name-to-color: the encoder over the
name's words; color-namer: the decoder over the name's words after
``[START]``, teacher forced, each name with its color (a given text is a name
of the run's color list, or a name followed by a color ``#rrggbb``); task
runs: the layers over the task's test inputs (token tasks: the tokens;
feature tasks such as MNIST rows: steps without tokens, and no ``--text``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from keras_rnncells.analysis.omission import check_texts, pieces_of
from keras_rnncells.apps.color_namer import ColorNamer
from keras_rnncells.apps.colors import ColorSettings, load_colors, run_splits
from keras_rnncells.apps.name_to_color import NameToColor
from keras_rnncells.apps.sentiment import SentimentClassifier, sentiment_splits
from keras_rnncells.data import list_tasks, load_task, size_options
from keras_rnncells.data.dates import date_splits
from keras_rnncells.data.vocabulary import UNK, tokenize
from keras_rnncells.layers.rnn import RNN
from keras_rnncells.seq2seq import TextSeq2Seq
from keras_rnncells.text.vocabulary import PAD_ID

__all__ = ["Batch", "RunSource", "Stream", "run_source"]

CORPUS_LIMIT = 2000  # held-out rows at most (IMDB has 25,000 test reviews)
BATCH_ROWS = 256
SHOWN = 8  # held-out rows shown one by one when no --text is given
MAX_TOKENS = 60  # a shown row keeps its first tokens
HEX_COLOR = re.compile(r"^(.*?)\s*#([0-9a-fA-F]{6})\s*$")
SENTIMENT_TASKS = ("imdb", "sst1", "sst2")


@dataclass
class Stream:
    """The rows of one input sequence: ``mask`` ``(rows, steps)`` marks the
    valid steps; ``tokens[k]`` the tokens of row ``k``'s valid steps in order
    (``None``: real-valued steps); ``labels`` ``(rows,)`` or None."""

    mask: np.ndarray
    tokens: list[list[str]] | None = None
    labels: np.ndarray | None = None


@dataclass
class Batch:
    """A forward pass of the model (``run()``) and the streams it reads."""

    run: Callable[[], Any]
    streams: dict[str, Stream]


@dataclass
class RunSource:
    """See the module."""

    label: str
    layers: dict[int, tuple[str, str]]  # id(layer) -> (display name, stream)
    corpus: Callable[[], Iterator[Batch]]
    shown: Callable[[Sequence[str] | None], Batch]
    text_streams: tuple[str, ...]  # streams with tokens; empty: no --text


def run_source(model: Any, results: dict, root: Any = None) -> RunSource | None:
    """The `RunSource` of a run's model and ``results.json``; None for a
    model of none of the kinds above."""
    settings = results.get("settings", {})
    if isinstance(model, SentimentClassifier):
        return sentiment_source(model, settings, root)
    if isinstance(model, TextSeq2Seq):
        return seq2seq_source(model, settings)
    if isinstance(model, NameToColor):
        return name_to_color_source(model, settings, root)
    if isinstance(model, ColorNamer):
        return color_namer_source(model, settings, root)
    if results.get("task") in list_tasks():
        return task_source(model, results["task"], settings, root)
    return None


# -- shared pieces ----------------------------------------------------------------------
def encoder_layers(encoder: Any, stream: str, prefix: str = "encoder") -> dict:
    names = {}
    for index, layer in enumerate(encoder.forward_layers):
        direction = " forward" if encoder.bidirectional else ""
        names[id(layer)] = (f"{prefix} layer {index + 1}{direction}", stream)
    for index, layer in enumerate(encoder.backward_layers):
        names[id(layer)] = (f"{prefix} layer {index + 1} backward", stream)
    return names


def batches(rows: int) -> Iterator[slice]:
    for start in range(0, min(rows, CORPUS_LIMIT), BATCH_ROWS):
        yield slice(start, min(start + BATCH_ROWS, rows, CORPUS_LIMIT))


def by_length(texts: Sequence[str]) -> np.ndarray:
    """The order of the first `CORPUS_LIMIT` texts by length: batches of
    similar lengths hold little padding."""
    lengths = [len(text) for text in texts[:CORPUS_LIMIT]]
    return np.argsort(lengths, kind="stable")


def id_stream(ids: Any, vocabulary: Sequence[str], labels: Any = None) -> Stream:
    ids = np.asarray(ids)
    return Stream(ids != PAD_ID, pieces_of(ids, vocabulary), labels)


def checked_texts(texts: Sequence[str]) -> list[str]:
    check_texts(texts)
    for text in texts:
        if not text.strip():
            raise ValueError("Argument `texts`: an empty text has no token to show")
    return list(texts)


def shortened(texts: Sequence[str]) -> list[str]:
    return [" ".join(text.split()[:MAX_TOKENS]) for text in texts]


# -- sentiment ----------------------------------------------------------------------
def sentiment_source(model: SentimentClassifier, settings: dict, root: Any) -> RunSource:
    dataset = settings.get("dataset", "sst2")
    texts, labels = sentiment_splits(dataset, root)["test"]
    vocabulary = model.tokenizer.vocabulary

    def batch(rows: Sequence[str], row_labels: Any) -> Batch:
        ids = np.asarray(model.token_ids(tf.constant(list(rows), tf.string)))
        return Batch(
            lambda: model.encoder(ids, training=False),
            {"text": id_stream(ids, vocabulary, row_labels)},
        )

    def corpus() -> Iterator[Batch]:
        order = by_length(texts)
        for part in batches(len(order)):
            chosen = order[part]
            yield batch([texts[i] for i in chosen], np.asarray(labels)[chosen])

    def shown(given: Sequence[str] | None) -> Batch:
        if given is not None:
            return batch(shortened(checked_texts(given)), None)
        return batch(shortened(texts[:SHOWN]), np.asarray(labels[:SHOWN]))

    return RunSource(
        f"sentiment classifier ({dataset})",
        encoder_layers(model.encoder, "text"),
        corpus,
        shown,
        ("text",),
    )


# -- the date normalizer ------------------------------------------------------------
def seq2seq_source(model: TextSeq2Seq, settings: dict) -> RunSource:
    sizes = [settings[name] for name in ("train_size", "test_size", "validation_size")]
    pairs = date_splits(*sizes, settings["seed"])["test"]
    source_vocabulary = model.source_tokenizer.vocabulary
    target_vocabulary = model.target_tokenizer.vocabulary
    layers = encoder_layers(model.seq2seq.encoder, "source")
    layers[id(model.seq2seq.decoder.rnn)] = ("decoder", "target")

    def batch(sources: Sequence[str], targets: Sequence[str]) -> Batch:
        (source_ids, target_in), _ = model.examples(
            tf.constant(list(sources)), tf.constant(list(targets))
        )
        source_ids, target_in = np.asarray(source_ids), np.asarray(target_in)
        return Batch(
            lambda: model.seq2seq((source_ids, target_in), training=False),
            {
                "source": id_stream(source_ids, source_vocabulary),
                "target": id_stream(target_in, target_vocabulary),
            },
        )

    def corpus() -> Iterator[Batch]:
        for part in batches(len(pairs)):
            chosen = pairs[part]
            yield batch([s for s, _ in chosen], [t for _, t in chosen])

    def shown(given: Sequence[str] | None) -> Batch:
        if given is None:
            chosen = pairs[:SHOWN]
            return batch([s for s, _ in chosen], [t for _, t in chosen])
        sources = checked_texts(given)
        outputs, _ = model.translate(tf.constant(sources))
        return batch(sources, [t.decode("utf-8") for t in np.asarray(outputs).tolist()])

    return RunSource("date normalizer", layers, corpus, shown, ("source", "target"))


# -- the color applications ---------------------------------------------------------
def color_test(settings: dict, root: Any) -> Any:
    fields = {f.name for f in dataclasses.fields(ColorSettings)}
    _, test = run_splits(ColorSettings(**{k: v for k, v in settings.items() if k in fields}), root)
    return test


def name_to_color_source(model: NameToColor, settings: dict, root: Any) -> RunSource:
    names = color_test(settings, root).names
    vocabulary = model.tokenizer.vocabulary

    def batch(rows: Sequence[str]) -> Batch:
        ids = np.asarray(model.tokenizer(tf.constant(list(rows))))
        return Batch(lambda: model(ids, training=False), {"name": id_stream(ids, vocabulary)})

    def corpus() -> Iterator[Batch]:
        for part in batches(len(names)):
            yield batch(names[part])

    def shown(given: Sequence[str] | None) -> Batch:
        return batch(names[:SHOWN] if given is None else checked_texts(given))

    layers = encoder_layers(model.encoder, "name")
    return RunSource("color name → color encoder", layers, corpus, shown, ("name",))


def color_namer_source(model: ColorNamer, settings: dict, root: Any) -> RunSource:
    test = color_test(settings, root)
    vocabulary = model.tokenizer.vocabulary

    def batch(names: Sequence[str], rgb: np.ndarray) -> Batch:
        ids = np.asarray(model.tokenizer(tf.constant(list(names)), add_start=True))
        rgb = np.asarray(rgb, np.float32)
        return Batch(
            lambda: model((rgb, ids), training=False), {"name": id_stream(ids, vocabulary)}
        )

    def corpus() -> Iterator[Batch]:
        for part in batches(len(test)):
            yield batch(test.names[part], test.rgb[part])

    def shown(given: Sequence[str] | None) -> Batch:
        if given is None:
            return batch(test.names[:SHOWN], test.rgb[:SHOWN])
        names, rgb = named_colors(checked_texts(given), settings, root)
        return batch(names, rgb)

    layers = {id(model.decoder.rnn): ("decoder", "name")}
    return RunSource("color namer decoder (teacher forced)", layers, corpus, shown, ("name",))


def named_colors(texts: Sequence[str], settings: dict, root: Any) -> tuple[list, np.ndarray]:
    """Each text's name and color: ``"name #rrggbb"``, or a name of the run's
    color list with its (first) color there."""
    known: dict[str, np.ndarray] = {}
    examples = None
    names, colors = [], []
    for text in texts:
        match = HEX_COLOR.match(text)
        if match and match.group(1).strip():
            names.append(match.group(1).strip())
            colors.append([int(match.group(2)[i : i + 2], 16) / 255 for i in (0, 2, 4)])
            continue
        if examples is None:
            examples = load_colors(settings.get("source", "list"), root)
            for name, rgb in zip(examples.names, examples.rgb):
                known.setdefault(name.lower(), rgb)
        if text.strip().lower() not in known:
            raise ValueError(
                f"Argument `texts`: the color namer reads a color with each name; {text!r} is "
                "not a name of the run's color list: give it as 'name #rrggbb'"
            )
        names.append(text.strip())
        colors.append(known[text.strip().lower()])
    return names, np.asarray(colors, np.float32)


# -- the papers' tasks ----------------------------------------------------------------
def task_layers(model: Any, stream: str) -> dict[int, tuple[str, str]]:
    names = {}
    for layer in model.layers:
        index = layer.name.rsplit("_", 1)[-1]
        if layer.name.startswith("bidirectional_"):
            names[id(layer.forward_layer)] = (f"layer {index} forward", stream)
            names[id(layer.backward_layer)] = (f"layer {index} backward", stream)
        elif isinstance(layer, RNN):
            names[id(layer)] = (f"layer {index}", stream)
    return names


def task_source(model: Any, name: str, settings: dict, root: Any) -> RunSource:
    task = load_task(
        name,
        batch_size=settings.get("batch_size", 32),  # PTB's windows depend on it
        seed=settings.get("seed", 0),
        root=root,
        **size_options(name, settings.get("limit")),
    )
    tokens = task.vocabulary_size is not None
    stream = "tokens" if tokens else "steps"
    if tokens and model.get_layer("embedding").input_dim != task.vocabulary_size:
        raise ValueError(
            f"Argument `run_dir`: the model reads {model.get_layer('embedding').input_dim} "
            f"token ids, the data of task {name!r} found here has {task.vocabulary_size}"
        )
    labelled = task.kind == "binary"

    def batch(inputs: np.ndarray, targets: Any) -> Batch:
        labels = np.asarray(targets).reshape(-1) if labelled and targets is not None else None
        if tokens:
            found = id_stream(inputs, task.vocabulary, labels)
        else:
            found = Stream(np.ones(inputs.shape[:2], bool), None, labels)
        return Batch(lambda: model(inputs, training=False), {stream: found})

    rows = task.test.unbatch().take(CORPUS_LIMIT).padded_batch(BATCH_ROWS)

    def corpus() -> Iterator[Batch]:
        for inputs, targets in rows:
            yield batch(np.asarray(inputs), targets)

    def shown(given: Sequence[str] | None) -> Batch:
        if given is None:
            inputs, targets = next(iter(task.test.unbatch().take(SHOWN).padded_batch(SHOWN)))
            inputs = np.asarray(inputs)[:, :MAX_TOKENS] if tokens else np.asarray(inputs)
            return batch(inputs, targets)
        if not tokens:
            raise ValueError(
                f"Argument `texts`: task {name!r} reads real-valued steps "
                f"({task.input_dim} features each), not text"
            )
        return batch(task_ids(checked_texts(given), name, task.vocabulary), None)

    label = f"task {name} ({task.kind})"
    return RunSource(label, task_layers(model, stream), corpus, shown, (stream,) if tokens else ())


def task_ids(texts: Sequence[str], task: str, vocabulary: Sequence[str]) -> np.ndarray:
    """The padded ids ``(N, T)`` of ``texts`` in a task's vocabulary: the
    sentiment tasks' tokenizer (`keras_rnncells.data.vocabulary.tokenize`),
    else words split on spaces (characters for a vocabulary of characters);
    a token outside the vocabulary is ``<unk>`` where it has one."""
    index = {token: i for i, token in enumerate(vocabulary)}
    characters = all(len(token) == 1 for token in vocabulary[1:])
    rows = []
    for text in texts:
        if task in SENTIMENT_TASKS:
            words = tokenize(text)
        else:
            words = list("".join(text.split())) if characters else text.split()
        ids = []
        for word in words:
            found = index.get(word, index.get(word.lower(), index.get(UNK)))
            if found is None:
                raise ValueError(
                    f"Argument `texts`: {word!r} is not a token of task {task!r} "
                    f"(its vocabulary: {' '.join(vocabulary[1:13])} ...)"
                )
            ids.append(found)
        if not ids:
            raise ValueError(f"Argument `texts`: {text!r} has no token of task {task!r}")
        rows.append(ids[:MAX_TOKENS])
    width = max(len(row) for row in rows)
    return np.array([row + [PAD_ID] * (width - len(row)) for row in rows], np.int32)
