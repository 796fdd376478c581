"""Three tasks on one source, written dates (`keras_rnncells.data.dates`), for
a multi-task encoder-decoder: ``"dates"`` rewrites the date as ISO 8601,
``"autoencode"`` writes the source back, and ``"month"`` classifies the
date's month (12 classes). Characters are ids as ``keras_rnncells.text``
numbers them (0 padding, 1 unknown, 2 start, 3 end, then the characters)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from keras_rnncells.checks import check_choice
from keras_rnncells.data.dates import date_splits

SEQUENCE_TASKS = ("dates", "autoencode")
CLASS_TASKS = ("month",)
TASKS = (*SEQUENCE_TASKS, *CLASS_TASKS)
MONTH_CLASSES = 12
FIRST_CHARACTER_ID = 4


class CharacterIds:
    """Characters to ids and back, over the characters of ``texts``."""

    def __init__(self, texts: Sequence[str]) -> None:
        characters = sorted({c for text in texts for c in text})
        self.ids = {c: i + FIRST_CHARACTER_ID for i, c in enumerate(characters)}
        self.characters = {i: c for c, i in self.ids.items()}

    @property
    def size(self) -> int:
        return len(self.ids) + FIRST_CHARACTER_ID

    def encode(self, texts: Sequence[str], start: bool = False, end: bool = False) -> np.ndarray:
        """``(len(texts), longest)`` int32 ids, padded with 0; ``start``/``end``
        put the start (2) or end (3) id before or after each text."""
        rows = [[2] * start + [self.ids.get(c, 1) for c in text] + [3] * end for text in texts]
        out = np.zeros((len(rows), max(map(len, rows))), np.int32)
        for i, row in enumerate(rows):
            out[i, : len(row)] = row
        return out

    def decode(self, ids: Sequence[int]) -> str:
        """Text up to the first end or padding id."""
        text = []
        for i in ids:
            if i in (0, 3):
                break
            text.append(self.characters.get(int(i), "?"))
        return "".join(text)


def task_arrays(task: str, pairs: Sequence[tuple[str, str]], ids: CharacterIds) -> tuple:
    """One task's arrays: ``(source, target_in, target_out)`` for a sequence
    task, ``(source, month)`` (0-11) for ``"month"``."""
    check_choice("task", task, TASKS)
    source = ids.encode([s for s, _ in pairs])
    if task == "month":
        return source, np.array([int(iso[5:7]) - 1 for _, iso in pairs], np.int32)
    targets = [iso if task == "dates" else s for s, iso in pairs]
    return source, ids.encode(targets, start=True), ids.encode(targets, end=True)


def endless_batches(arrays: tuple, batch_size: int, seed: int) -> Iterator[tuple]:
    """Shuffled batches of ``arrays`` forever (each pass a new order), at the
    arrays' full width (one shape: a training step traces once)."""
    rng = np.random.default_rng(seed)
    count = len(arrays[0])
    while True:
        order = rng.permutation(count)
        for begin in range(0, count - batch_size + 1, batch_size):
            rows = order[begin : begin + batch_size]
            yield tuple(a[rows] for a in arrays)


def multitask_date_splits(train: int, test: int, seed: int = 0) -> dict:
    """The pairs (`date_splits`) and the character ids of their training
    sources and targets."""
    splits = date_splits(train, test, seed=seed)
    ids = CharacterIds([c for pair in splits["train"] for c in pair])
    return {"train": splits["train"], "test": splits["test"], "ids": ids}
