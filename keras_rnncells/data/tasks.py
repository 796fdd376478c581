"""The `Task` record and the registry of tasks by name.

A task loader is a function taking keyword arguments only (``batch_size``,
``seed``, ``root`` and its own sizes) and returning a `Task`; ``load_task(name,
**options)`` looks it up and calls it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import tensorflow as tf

KINDS = ("regression", "binary", "classification", "language_model")


@dataclass(frozen=True, eq=False)
class Task:
    """One experiment's data: three splits of ``(inputs, targets)`` batches.

    * ``train`` is reshuffled every epoch with the loader's seed (and TF's
      global seed, when one is set), except for ``ptb``, whose batches form a
      stream (see ``keras_rnncells.data.ptb``); ``validation`` and ``test``
      are not shuffled. All three prefetch. Pass ``shuffle=False`` to
      ``model.fit`` (Keras cannot shuffle a dataset and warns otherwise).
    * ``kind`` says what the targets are: ``"regression"`` (float32
      ``(batch, 1)``), ``"binary"`` (float32 ``(batch, 1)`` of 0/1),
      ``"classification"`` (int32 ``(batch,)`` in ``[0, num_classes)``) or
      ``"language_model"`` (int32 ``(batch, steps)``, the next token).
    * ``input_dim`` is set for real-valued inputs (float32 ``(batch, steps,
      input_dim)``); ``vocabulary_size`` for token inputs (int32 ``(batch,
      steps)``, 0 is padding, so models embed with ``mask_zero=True``).
      Padded real-valued batches are padded with zero vectors.
    * ``num_classes``: 0 for regression, 2 for binary, the number of classes,
      or ``vocabulary_size`` for a language model.
    * ``vocabulary``: the token of every id (``vocabulary[0]`` is the padding)
      for token tasks, empty for real-valued ones.
    * ``reduce_ids``: for tokens that spell trees in postfix order, the ids
      of the binary operators (each joins the two trees before it); empty
      otherwise.
    """

    name: str
    kind: str
    train: tf.data.Dataset
    validation: tf.data.Dataset
    test: tf.data.Dataset
    num_classes: int
    description: str
    input_dim: int | None = None
    vocabulary_size: int | None = None
    vocabulary: tuple[str, ...] = ()
    reduce_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Argument `kind` must be one of {KINDS}, received: {self.kind!r}")
        if (self.input_dim is None) == (self.vocabulary_size is None):
            raise ValueError(
                "Exactly one of the arguments `input_dim` and `vocabulary_size` must be set, "
                f"received: {self.input_dim!r} and {self.vocabulary_size!r}"
            )
        if self.vocabulary and len(self.vocabulary) != self.vocabulary_size:
            raise ValueError(
                f"Argument `vocabulary` must have `vocabulary_size` = {self.vocabulary_size} "
                f"tokens, received: {len(self.vocabulary)}"
            )

    @property
    def output_units(self) -> int:
        """Units of the output layer: 1 for regression and binary, else ``num_classes``."""
        return 1 if self.kind in ("regression", "binary") else self.num_classes


TaskLoader = Callable[..., Task]

_TASKS: dict[str, TaskLoader] = {}


def register_task(name: str) -> Callable[[TaskLoader], TaskLoader]:
    """Decorator: register a task loader under ``name``."""

    def decorate(loader: TaskLoader) -> TaskLoader:
        if name in _TASKS:
            raise ValueError(f"A task named {name!r} is already registered")
        _TASKS[name] = loader
        return loader

    return decorate


def list_tasks() -> list[str]:
    """Names of every registered task, sorted."""
    return sorted(_TASKS)


def get_task(name: str) -> TaskLoader:
    """The loader registered under ``name``."""
    try:
        return _TASKS[name]
    except KeyError:
        raise ValueError(
            f"Argument `name` must be one of {list_tasks()}, received: {name!r}"
        ) from None


def task_options(name: str) -> dict[str, object]:
    """The options of task ``name`` and their defaults."""
    parameters = inspect.signature(get_task(name)).parameters.values()
    return {p.name: p.default for p in parameters}


def size_options(task: str, limit: int | None) -> dict[str, int]:
    """The options of ``task`` capping every split at ``limit`` examples (for
    PTB, tokens per split): what ``rnncells train TASK --limit`` loads with."""
    if limit is None:
        return {}
    options = task_options(task)
    if "limit" in options:
        return {"limit": limit}
    sizes = ("train_size", "validation_size", "test_size")
    return {name: min(limit, options[name]) for name in sizes if name in options}


def load_task(name: str, **options: object) -> Task:
    """Build task ``name``. Every task takes ``batch_size``, ``seed`` and
    ``root`` (the data folder, see `data_root`) plus its own sizes (see
    `task_options`)."""
    accepted = task_options(name)
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ValueError(
            f"Task {name!r} takes the options {sorted(accepted)}, received unknown: {unknown}"
        )
    return get_task(name)(**options)
