"""Word-level sentiment classification: IMDB, SST-2 and SST-1.

Texts are tokenized with `tokenize`; the vocabulary comes from the training
split only (``max_vocabulary`` entries at most, counting ``<pad>`` = 0 and
``<unk>`` = 1, of words seen ``min_count`` times or more); other words map to
``<unk>``. Reviews longer than ``max_length`` tokens keep their first
``max_length``. Batches group texts of similar lengths, zero-padded.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
from collections.abc import Sequence

import numpy as np

from keras_rnncells.checks import check_optional_positive_int, check_positive_int
from keras_rnncells.data.paths import data_file
from keras_rnncells.data.pipeline import (
    SUBSET_SEED,
    binary_targets,
    split_datasets,
    subset,
)
from keras_rnncells.data.tasks import Task, register_task
from keras_rnncells.data.vocabulary import UNK, build_vocabulary, encode, tokenize

Root = str | os.PathLike | None
Examples = tuple[list[str], np.ndarray]  # texts and integer labels


def read_imdb(split: str, root: Root = None) -> Examples:
    """IMDB's ``train`` or ``test`` reviews (sorted by label, then id)."""
    with gzip.open(data_file("imdb", f"imdb_{split}.jsonl.gz", root), "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    return [r["text"] for r in records], np.array([r["label"] for r in records])


def read_stsa(name: str, root: Root = None) -> Examples:
    """A sentence-level SST file (``stsa.binary.test`` ...): ``label sentence`` lines."""
    with open(data_file("sst2", name, root), encoding="utf-8") as f:
        pairs = [line.rstrip("\n").split(" ", 1) for line in f if line.strip()]
    return [text for _, text in pairs], np.array([int(label) for label, _ in pairs])


def read_glue_train(root: Root = None) -> Examples:
    """GLUE SST-2 training phrases: a header, then ``sentence<TAB>label`` lines."""
    with gzip.open(data_file("sst2", "glue_train.tsv.gz", root), "rt", encoding="utf-8") as f:
        pairs = [line.rstrip("\n").rsplit("\t", 1) for line in f.readlines()[1:]]
    return [text for text, _ in pairs], np.array([int(label) for _, label in pairs])


def take(examples: Examples, indices: np.ndarray) -> Examples:
    texts, labels = examples
    return [texts[i] for i in indices], labels[indices]


def text_task(
    name: str,
    splits: Sequence[Examples],
    num_classes: int,
    description: str,
    *,
    batch_size: int,
    seed: int,
    max_vocabulary: int | None,
    min_count: int,
    max_length: int | None,
    limit: int | None,
) -> Task:
    """The `Task` of train, validation and test ``splits`` of labeled texts,
    each cut to at most ``limit`` examples (a fixed random subset)."""
    limit = check_optional_positive_int("limit", limit)
    if max_vocabulary is not None and check_positive_int("max_vocabulary", max_vocabulary) < 3:
        raise ValueError(
            f"Argument `max_vocabulary` must be at least 3, received: {max_vocabulary}"
        )
    check_positive_int("min_count", min_count)
    if max_length is not None:
        check_positive_int("max_length", max_length)
    splits = [take(split, subset(len(split[1]), limit)) for split in splits]
    tokens = [[tokenize(text) for text in texts] for texts, _ in splits]
    vocabulary = build_vocabulary(tokens[0], max_size=max_vocabulary, min_count=min_count)
    index = {token: i for i, token in enumerate(vocabulary)}
    binary = num_classes == 2
    data = [
        (
            [encode(t, index, index[UNK], max_length) for t in split_tokens],
            binary_targets(labels) if binary else labels.astype("int32"),
        )
        for split_tokens, (_, labels) in zip(tokens, splits)
    ]
    return Task(
        name=name,
        kind="binary" if binary else "classification",
        **split_datasets(data, batch_size, seed),
        num_classes=num_classes,
        vocabulary_size=len(vocabulary),
        vocabulary=vocabulary,
        description=description,
    )


@register_task("imdb")
def imdb(
    *,
    batch_size: int = 32,
    seed: int = 0,
    root: Root = None,
    max_vocabulary: int | None = 20000,
    min_count: int = 2,
    max_length: int | None = 400,
    validation_size: int = 2500,
    limit: int | None = None,
) -> Task:
    """IMDB reviews, positive or negative. Validation: ``validation_size``
    training reviews drawn at random with a fixed seed (`SUBSET_SEED`, not
    ``seed``, so every run holds out the same reviews)."""
    train = read_imdb("train", root)
    count = len(train[1])
    if check_positive_int("validation_size", validation_size) >= count:
        raise ValueError(
            f"Argument `validation_size` must be below {count}, received: {validation_size}"
        )
    order = np.random.default_rng(SUBSET_SEED).permutation(count)
    splits = (
        take(train, np.sort(order[validation_size:])),
        take(train, np.sort(order[:validation_size])),
        read_imdb("test", root),
    )
    description = (
        f"IMDB movie reviews, positive or negative; 25k training reviews ({validation_size} "
        "held out for validation), 25k test. Maas et al. (2011), 'Learning word vectors for "
        "sentiment analysis'."
    )
    return text_task(
        "imdb",
        splits,
        2,
        description,
        batch_size=batch_size,
        seed=seed,
        max_vocabulary=max_vocabulary,
        min_count=min_count,
        max_length=max_length,
        limit=limit,
    )


def sst(
    num_classes: int,
    *,
    batch_size: int = 32,
    seed: int = 0,
    root: Root = None,
    max_vocabulary: int | None = None,
    min_count: int = 1,
    max_length: int | None = None,
    limit: int | None = None,
) -> Task:
    """Stanford Sentiment Treebank sentences. SST-2 (``num_classes=2``)
    trains on the GLUE SST-2 phrases and validates and tests on the labeled
    sentence splits ``stsa.binary.dev`` and ``stsa.binary.test``; SST-1
    (``num_classes=5``) uses ``stsa.fine.{train,dev,test}``."""
    if num_classes == 2:
        name, train = "sst2", read_glue_train(root)
        scope = "binary; trained on the 67k GLUE SST-2 phrases (Wang et al. 2019)"
    else:
        name, train = "sst1", read_stsa("stsa.fine.train", root)
        scope = "5 classes; trained on the 8,544 training sentences"
    prefix = "stsa.binary" if num_classes == 2 else "stsa.fine"
    splits = (train, read_stsa(f"{prefix}.dev", root), read_stsa(f"{prefix}.test", root))
    description = (
        f"Stanford Sentiment Treebank, {scope}; validated on {prefix}.dev, tested on "
        f"{prefix}.test. Socher et al. (2013), 'Recursive deep models for semantic "
        "compositionality over a sentiment treebank'."
    )
    return text_task(
        name,
        splits,
        num_classes,
        description,
        batch_size=batch_size,
        seed=seed,
        max_vocabulary=max_vocabulary,
        min_count=min_count,
        max_length=max_length,
        limit=limit,
    )


sst2 = register_task("sst2")(functools.partial(sst, 2))
sst1 = register_task("sst1")(functools.partial(sst, 5))
