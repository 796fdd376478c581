"""IMDB reviews as a word-level language model with a large vocabulary.

The setting where the output layers of `keras_rnncells.softmax` matter: the
vocabulary is the ``max_vocabulary`` (50,000) most frequent words of the
training reviews, after ``<pad>`` = 0 and ``<unk>``, against PTB's 10,000.
Each split is one token stream: its reviews (`keras_rnncells.data.vocabulary.
tokenize`), each followed by ``<eos>``, in a fixed random order (`SUBSET_SEED`,
so a ``limit`` keeps a mix of positive and negative reviews); batches use
PTB's stream layout (`keras_rnncells.data.ptb.stream_task`). Validation:
``validation_size`` training reviews held out as in the ``imdb`` task; test:
IMDB's test reviews.
"""

from __future__ import annotations

import os

import numpy as np

from keras_rnncells.checks import check_optional_positive_int, check_positive_int, check_seed
from keras_rnncells.data.ptb import EOS, stream_task
from keras_rnncells.data.sentiment import SUBSET_SEED, read_imdb
from keras_rnncells.data.tasks import Task, register_task
from keras_rnncells.data.vocabulary import PAD, UNK, build_vocabulary, tokenize


def review_stream(texts: list[str], order: np.ndarray) -> list[str]:
    """The tokens of ``texts`` taken in ``order``, ``<eos>`` after each."""
    return [token for i in order for token in (*tokenize(texts[i]), EOS)]


@register_task("imdb_lm")
def imdb_lm(
    *,
    batch_size: int = 20,
    seed: int = 0,
    root: str | os.PathLike | None = None,
    sequence_length: int = 35,
    max_vocabulary: int = 50000,
    validation_size: int = 2500,
    limit: int | None = None,
) -> Task:
    """IMDB language modelling (see the module); ``limit`` keeps the first
    ``limit`` tokens of each split (the vocabulary is still the full training
    one). ``seed`` is unused: nothing is shuffled (as for ``ptb``)."""
    check_positive_int("batch_size", batch_size)
    check_positive_int("sequence_length", sequence_length)
    check_positive_int("max_vocabulary", max_vocabulary)
    check_seed("seed", seed)
    limit = check_optional_positive_int("limit", limit)
    train_texts, _ = read_imdb("train", root)
    test_texts, _ = read_imdb("test", root)
    if check_positive_int("validation_size", validation_size) >= len(train_texts):
        raise ValueError(
            f"Argument `validation_size` must be below {len(train_texts)}, received: "
            f"{validation_size}"
        )
    rng = np.random.default_rng(SUBSET_SEED)
    order = rng.permutation(len(train_texts))
    streams = [
        review_stream(train_texts, order[validation_size:]),
        review_stream(train_texts, order[:validation_size]),
        review_stream(test_texts, rng.permutation(len(test_texts))),
    ]
    vocabulary = build_vocabulary([streams[0]], reserved=(PAD, UNK), max_size=max_vocabulary + 2)
    description = (
        f"IMDB reviews as a word-level language model, {len(vocabulary) - 2} words and <unk>, "
        f"windows of {sequence_length} tokens in the stream layout; Maas et al. (2011) "
        f"reviews, {len(train_texts) - validation_size} for training."
    )
    return stream_task(
        "imdb_lm", streams, vocabulary, description, batch_size, sequence_length, limit
    )
