"""Word tokenization and vocabularies of the text tasks.

Tokenization (`tokenize`) is deliberately simple: lowercase; IMDB's ``<br />``
line breaks become spaces; the Penn Treebank escapes of the SST files
(``-lrb-``, ``-rrb-``, ``\\/``, ``\\*``) become the characters they stand for,
so SST's GLUE and sentence-level files agree; then a token is a run of word
characters and apostrophes (``don't``, ``'s``) or any other single non-space
character (punctuation).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

PAD, UNK = "<pad>", "<unk>"
_TOKEN = re.compile(r"[\w']+|[^\w\s]")
_REPLACEMENTS = {"<br />": " ", "-lrb-": "(", "-rrb-": ")", "\\/": "/", "\\*": "*"}


def tokenize(text: str) -> list[str]:
    """The lowercase word and punctuation tokens of ``text`` (see the module)."""
    text = text.lower()
    for escaped, plain in _REPLACEMENTS.items():
        text = text.replace(escaped, plain)
    return _TOKEN.findall(text)


def build_vocabulary(
    token_lists: Iterable[Sequence[str]],
    reserved: Sequence[str] = (PAD, UNK),
    max_size: int | None = None,
    min_count: int = 1,
) -> tuple[str, ...]:
    """``reserved`` (ids 0, 1, ...), then the tokens seen at least
    ``min_count`` times, most frequent first (ties alphabetically), at most
    ``max_size`` entries in all."""
    counts = Counter(token for tokens in token_lists for token in tokens)
    for token in reserved:
        counts.pop(token, None)
    ranked = sorted((t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t))
    vocabulary = (*reserved, *ranked)
    return vocabulary if max_size is None else vocabulary[:max_size]


def encode(
    tokens: Sequence[str], index: Mapping[str, int], unknown: int, max_length: int | None = None
) -> np.ndarray:
    """int32 ids of the first ``max_length`` ``tokens``; ``unknown`` for tokens not in ``index``."""
    return np.array([index.get(t, unknown) for t in tokens[:max_length]], dtype="int32")
