"""A language model's test perplexity on its rare words.

A test position is *rare* when its target word occurs fewer than
``threshold`` (`RARE_BELOW`, 10) times as a target of the run's training
batches (`keras_rnncells.experiments.token_counts`: the training stream the
run read, cut at ``--limit`` where one is given; a word never seen in
training counts 0). ``<unk>`` (frequent) and padding (0) are never rare. The
rare-word perplexity is ``exp`` of the mean cross-entropy over the rare test
positions alone, each window read from a zero state (the stateless model a
run saves), next to the overall perplexity over every position.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np

from keras_rnncells.checks import check_positive_int
from keras_rnncells.data import Task

RARE_BELOW = 10


def rare_word_scores(
    model: keras.Model, task: Task, counts: Any, threshold: int = RARE_BELOW
) -> dict[str, float]:
    """``rare_perplexity``, ``rare_cross_entropy`` (nats), ``rare_tokens``
    (how many test positions are rare) and ``rare_fraction`` of ``model``
    (word ids to logits) on ``task``'s test split; ``counts[i]``: how often
    word ``i`` is a training target. No rare position: perplexity NaN."""
    check_positive_int("threshold", threshold)
    counts = np.asarray(counts)
    if counts.shape != (task.vocabulary_size,):
        raise ValueError(
            f"Argument `counts` must hold one count per word ({task.vocabulary_size}), "
            f"received shape {counts.shape}"
        )
    rare = counts < threshold
    rare[0] = False  # padding
    total, found, positions = 0.0, 0, 0
    for tokens, targets in task.test:
        ids = np.asarray(targets)
        keep = rare[ids]
        positions += int((ids != 0).sum())
        if not keep.any():
            continue
        logits = np.asarray(model(tokens, training=False), "float64")
        log_z = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1))
        log_z += logits.max(-1)
        chosen = np.take_along_axis(logits, ids[..., None], -1)[..., 0]
        total += float((log_z - chosen)[keep].sum())
        found += int(keep.sum())
    cross_entropy = total / found if found else float("nan")
    return {
        "rare_cross_entropy": cross_entropy,
        "rare_perplexity": float(np.exp(cross_entropy)),
        "rare_tokens": found,
        "rare_fraction": found / max(positions, 1),
    }
