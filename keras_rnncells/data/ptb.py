"""Word-level language modelling on the Penn Treebank (Mikolov's 10k version).

Each split is one token stream: its lines, split on spaces, each followed by
``<eos>``. The vocabulary is the 10,000 words of the training stream, most
frequent first, after ``<pad>`` = 0 (never in the data; it keeps 0 free for
``mask_zero`` embeddings), so ``vocabulary_size`` is 10,001.

Batches use the usual stream layout (Zaremba, Sutskever & Vinyals 2014): the
stream is cut into ``batch_size`` equal rows, and batch ``i`` holds columns
``[i*T, (i+1)*T)`` of every row as inputs and the same columns shifted by one
token as targets (``T = sequence_length``; a last, shorter window is dropped).
Row ``r`` of batch ``i + 1`` continues row ``r`` of batch ``i``, so a stateful
model (fixed ``batch_size``) carries its state across batches, and a stateless
model treats every window as a sequence of its own. For that reason the
training batches come in stream order every epoch: they are never shuffled.
"""

from __future__ import annotations

import gzip
import os

import numpy as np
import tensorflow as tf

from keras_rnncells.checks import check_optional_positive_int, check_positive_int, check_seed
from keras_rnncells.data.paths import data_file
from keras_rnncells.data.pipeline import AUTOTUNE
from keras_rnncells.data.tasks import Task, register_task
from keras_rnncells.data.vocabulary import PAD, build_vocabulary, encode

EOS, UNK = "<eos>", "<unk>"
SPLIT_FILES = ("ptb.train.txt.gz", "ptb.valid.txt.gz", "ptb.test.txt.gz")


def read_stream(name: str, root: str | os.PathLike | None = None) -> list[str]:
    """The tokens of one PTB file, ``<eos>`` after every line."""
    with gzip.open(data_file("ptb", name, root), "rt", encoding="utf-8") as f:
        return [token for line in f for token in (*line.split(), EOS)]


def stream_windows(
    ids: np.ndarray, batch_size: int, sequence_length: int
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and targets ``(windows, batch_size, sequence_length)`` of a
    token stream in the stream layout (see the module)."""
    row_length = len(ids) // batch_size
    windows = (row_length - 1) // sequence_length
    if windows < 1:
        raise ValueError(
            f"A stream of {len(ids)} tokens is too short for `batch_size` {batch_size} and "
            f"`sequence_length` {sequence_length}"
        )
    rows = ids[: batch_size * row_length].reshape(batch_size, row_length)
    width = windows * sequence_length

    def cut(columns: np.ndarray) -> np.ndarray:
        return columns.reshape(batch_size, windows, sequence_length).transpose(1, 0, 2)

    return cut(rows[:, :width]), cut(rows[:, 1 : width + 1])


@register_task("ptb")
def ptb(
    *,
    batch_size: int = 20,
    seed: int = 0,
    root: str | os.PathLike | None = None,
    sequence_length: int = 35,
    limit: int | None = None,
) -> Task:
    """PTB language modelling; ``limit`` keeps the first ``limit`` tokens of
    each split (the vocabulary is still the full training one). ``seed`` is
    unused: nothing is shuffled (see the module)."""
    check_positive_int("batch_size", batch_size)
    check_positive_int("sequence_length", sequence_length)
    check_seed("seed", seed)
    limit = check_optional_positive_int("limit", limit)
    streams = [read_stream(name, root) for name in SPLIT_FILES]
    vocabulary = build_vocabulary([streams[0]], reserved=(PAD,))
    description = (
        f"Penn Treebank word-level language modelling, {len(vocabulary) - 1} words, windows "
        f"of {sequence_length} tokens in the stateful stream layout. Marcus et al. (1993); "
        "Mikolov et al. (2010) preprocessing; Zaremba, Sutskever & Vinyals (2014) setup."
    )
    return stream_task("ptb", streams, vocabulary, description, batch_size, sequence_length, limit)


def stream_task(
    name: str,
    streams: list[list[str]],
    vocabulary: tuple[str, ...],
    description: str,
    batch_size: int,
    sequence_length: int,
    limit: int | None,
) -> Task:
    """A language-model task of three token streams (train, validation,
    test) over ``vocabulary`` (``<unk>`` for the words it lacks), each cut
    to its first ``limit`` tokens and laid out by `stream_windows`."""
    index = {token: i for i, token in enumerate(vocabulary)}
    datasets = [
        tf.data.Dataset.from_tensor_slices(
            stream_windows(encode(stream, index, index[UNK], limit), batch_size, sequence_length)
        ).prefetch(AUTOTUNE)
        for stream in streams
    ]
    return Task(
        name=name,
        kind="language_model",
        train=datasets[0],
        validation=datasets[1],
        test=datasets[2],
        num_classes=len(vocabulary),
        vocabulary_size=len(vocabulary),
        vocabulary=vocabulary,
        description=description,
    )
