"""Vocabularies of the tokenizers: the special tokens, checks, files and learning.

Every vocabulary is a list of unique non-empty strings beginning with the four
special tokens, whose ids are therefore fixed for every tokenizer:

====== =========== ===================================================
id     token       meaning
====== =========== ===================================================
0      ``[PAD]``   padding of the dense batches (``mask_zero=True``)
1      ``[UNK]``   a character or word missing from the vocabulary
2      ``[START]`` start of a sequence (decoder inputs)
3      ``[END]``   end of a sequence (decoder targets; detokenization stops)
====== =========== ===================================================

A vocabulary file is UTF-8 text with one token per line, each line ending
with ``"\\n"`` (so a token cannot contain ``"\\n"``); line ``i`` holds id ``i - 1``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

import tensorflow as tf

from keras_rnncells.checks import check_integer
from keras_rnncells.files import write_atomically
from keras_rnncells.text._tf_text import tensorflow_text

PAD, UNK, START, END = "[PAD]", "[UNK]", "[START]", "[END]"
SPECIAL_TOKENS = (PAD, UNK, START, END)
PAD_ID, UNK_ID, START_ID, END_ID = range(len(SPECIAL_TOKENS))

# Strings are learned from and counted in batches of this many.
_BATCH_SIZE = 1024

Texts = Iterable[str] | tf.data.Dataset


def check_vocabulary(vocabulary: list[str]) -> list[str]:
    """``vocabulary`` as a new list, if it is a list (or tuple) of unique
    non-empty strings beginning with `SPECIAL_TOKENS`; else a ``ValueError``."""
    if not isinstance(vocabulary, (list, tuple)) or not all(
        isinstance(token, str) and token for token in vocabulary
    ):
        raise ValueError(
            "Argument `vocabulary` must be a list of non-empty strings, "
            f"received: {_preview(vocabulary)}"
        )
    if tuple(vocabulary[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
        raise ValueError(
            f"Argument `vocabulary` must begin with the special tokens {list(SPECIAL_TOKENS)}, "
            f"received: {_preview(vocabulary)}"
        )
    repeated = sorted(token for token, count in Counter(vocabulary).items() if count > 1)
    if repeated:
        raise ValueError(
            f"Argument `vocabulary` must hold unique tokens, received repeated tokens {repeated}"
        )
    return list(vocabulary)


def _preview(value: object, items: int = 8) -> str:
    """``repr`` of ``value``, the first ``items`` elements only of a long sequence."""
    if isinstance(value, (list, tuple)) and len(value) > items:
        return f"{list(value[:items])!r} ... ({len(value)} elements)"
    return repr(value)


def write_vocabulary(vocabulary: list[str], path: str | os.PathLike) -> None:
    """Write ``vocabulary`` to ``path``, one token per line, atomically: into a
    temporary file of the same directory, then renamed over ``path``."""
    vocabulary = check_vocabulary(vocabulary)
    multiline = [token for token in vocabulary if "\n" in token]
    if multiline:
        raise ValueError(
            "A vocabulary file holds one token per line: argument `vocabulary` must not hold "
            f"tokens with a line break, received {multiline}"
        )
    text = "".join(f"{token}\n" for token in vocabulary)
    write_atomically(path, lambda temporary: Path(temporary).write_text(text, encoding="utf-8"))


def read_vocabulary(path: str | os.PathLike) -> list[str]:
    """The vocabulary written by `write_vocabulary` to ``path`` (checked)."""
    with open(path, encoding="utf-8", newline="") as file:
        lines = file.read().split("\n")
    if lines[-1] == "":
        lines.pop()
    return check_vocabulary(lines)


def string_batches(texts: Texts) -> tf.data.Dataset:
    """``texts`` (an iterable of strings, or a ``tf.data.Dataset`` of string
    scalars or string vectors) as a dataset of string vectors."""
    if isinstance(texts, tf.data.Dataset):
        spec = texts.element_spec
        if (
            not isinstance(spec, tf.TensorSpec)
            or spec.dtype != tf.string
            or spec.shape.rank not in (0, 1)
        ):
            raise ValueError(
                "Argument `texts` must be an iterable of strings or a tf.data.Dataset of "
                f"string scalars or vectors, received a dataset of {spec}"
            )
        return texts.batch(_BATCH_SIZE) if spec.shape.rank == 0 else texts
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
        raise ValueError(
            "Argument `texts` must be an iterable of strings or a tf.data.Dataset of strings, "
            f"received: {_preview(texts)}"
        )
    texts = list(texts)
    if not all(isinstance(text, str) for text in texts):
        raise ValueError(
            f"Argument `texts` must be an iterable of strings, received: {_preview(texts)}"
        )
    return tf.data.Dataset.from_tensor_slices(tf.constant(texts, tf.string)).batch(_BATCH_SIZE)


def learn_frequency_vocabulary(
    texts: Texts,
    split: Callable[[tf.Tensor], tf.RaggedTensor],
    min_count: int = 1,
    max_size: int | None = None,
) -> list[str]:
    """The special tokens, then every token that ``split`` (string vector ->
    ragged string tokens) makes of ``texts`` at least ``min_count`` times, most
    frequent first, ties in codepoint order; at most ``max_size`` tokens in all."""
    check_integer("min_count", min_count, 1)
    if max_size is not None:
        check_integer("max_size", max_size, len(SPECIAL_TOKENS))
    counts = Counter()
    for batch in string_batches(texts):
        counts.update(split(batch).flat_values.numpy())
    tokens = sorted(
        (token.decode("utf-8") for token, count in counts.items() if count >= min_count),
        key=lambda token: (-counts[token.encode("utf-8")], token),
    )
    tokens = [token for token in tokens if token not in SPECIAL_TOKENS]
    return [*SPECIAL_TOKENS, *tokens][:max_size]


def learn_wordpiece_vocabulary(
    texts: Texts, vocab_size: int, bert_tokenizer_params: dict
) -> list[str]:
    """The special tokens, then a WordPiece vocabulary learned from ``texts``
    by tensorflow-text's ``bert_vocab_from_dataset`` (words split by BERT's
    basic tokenizer with ``bert_tokenizer_params``), about ``vocab_size`` in all
    (the learner's target, which it can exceed; only the special tokens if
    ``texts`` hold no word)."""
    check_integer("vocab_size", vocab_size, len(SPECIAL_TOKENS) + 1)
    learner = tensorflow_text(
        "WordPieceTokenizer.from_corpus",
        "tensorflow_text.tools.wordpiece_vocab.bert_vocab_from_dataset",
    )
    try:
        vocabulary = learner.bert_vocab_from_dataset(
            string_batches(texts),
            vocab_size=vocab_size,
            reserved_tokens=list(SPECIAL_TOKENS),
            bert_tokenizer_params=bert_tokenizer_params,
        )
    except StopIteration:  # the learner's way of saying that `texts` hold no word
        vocabulary = SPECIAL_TOKENS
    return check_vocabulary(vocabulary)
