"""Multi-task encoder-decoders (Luong, Le, Sutskever, Vinyals & Kaiser 2016,
"Multi-task Sequence to Sequence Learning", ICLR; their one-to-many setting).

One `Encoder` is shared by every task; each sequence task has its own
`Decoder` (attending to the shared encoder's outputs, starting from its
summary) and each classification task its own softmax head on the summary:

    (memory, summary, mask) = Encoder(source)
    seq task k:    p_k(y_t | y_<t, source) = softmax(Decoder_k(y_<t; summary, memory))
    class task c:  p_c(label | source)     = softmax(W_c summary + b_c)

Training alternates between tasks, one whole batch of one task per step:
task i gets the fraction ``α_i / Σ_j α_j`` of the steps (its mixing ratio),
each step minimizing that task's cross-entropy (padding ignored) with respect
to the shared encoder and the task's own decoder or head. `task_schedule`
interleaves the tasks deterministically in those proportions (smooth weighted
round robin: at each step every task gains its ratio, and the task with the
most credit runs and pays the total), so a run is reproducible and every
prefix of the schedule is already close to the ratios.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import keras
import tensorflow as tf
from keras import ops

from keras_rnncells.checks import check_positive_int
from keras_rnncells.layers import portable
from keras_rnncells.seq2seq.decoder import Decoder
from keras_rnncells.seq2seq.encoder import Encoder
from keras_rnncells.seq2seq.search import decode
from keras_rnncells.text.vocabulary import END_ID, START_ID


def check_tasks(name: str, tasks: Any) -> dict[str, int]:
    """A mapping of task names to positive sizes."""
    if not isinstance(tasks, Mapping) or not all(isinstance(key, str) and key for key in tasks):
        raise ValueError(
            f"Argument `{name}` must be a dict of task names to sizes, received: {tasks!r}"
        )
    return {key: check_positive_int(f"{name}[{key!r}]", value) for key, value in tasks.items()}


def task_schedule(ratios: Mapping[str, float], steps: int) -> list[str]:
    """``steps`` task names, each task in proportion to its mixing ratio
    (smooth weighted round robin; see the module)."""
    steps = check_positive_int("steps", steps) if steps else 0
    if not ratios or not all(
        isinstance(r, (int, float)) and not isinstance(r, bool) and r > 0 for r in ratios.values()
    ):
        raise ValueError(
            f"Argument `ratios` must map each task to a positive number, received: {ratios!r}"
        )
    total = float(sum(ratios.values()))
    credit = dict.fromkeys(ratios, 0.0)
    order = []
    for _ in range(steps):
        for task, ratio in ratios.items():
            credit[task] += ratio
        chosen = max(credit, key=credit.get)  # first of the ties, in the ratios' order
        credit[chosen] -= total
        order.append(chosen)
    return order


@keras.saving.register_keras_serializable(package="keras_rnncells")
class MultiTaskSeq2Seq(keras.Model):
    """One shared `Encoder`, a `Decoder` per sequence task and a softmax head
    per classification task (see the module).

    Args:
        source_vocabulary_size: the shared source vocabulary's size.
        sequence_tasks: task name -> its target vocabulary's size.
        class_tasks: task name -> its number of classes.
        cell, units, embedding_dim, encoder_layers, bidirectional, attention,
        cell_options: as `keras_rnncells.seq2seq.Seq2Seq` (every decoder alike).
        max_output_length: the longest decoded output.

    ``model(source, task=NAME)`` gives a classification task's logits
    ``(B, classes)``; ``model((source, target_in), task=NAME)`` a sequence
    task's teacher-forced logits ``(B, T, V)``. ``generate(source, task)``
    decodes a sequence task greedily in the graph. `fit_tasks` trains it.
    Token ids follow ``keras_rnncells.text``: 0 padding, 2 start, 3 end.
    """

    def __init__(
        self,
        source_vocabulary_size: int,
        sequence_tasks: Mapping[str, int] | None = None,
        class_tasks: Mapping[str, int] | None = None,
        cell: str = "gru",
        units: int = 128,
        embedding_dim: int = 64,
        encoder_layers: int = 1,
        bidirectional: bool = False,
        attention: str | None = "general",
        cell_options: dict | None = None,
        max_output_length: int = 32,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.sequence_tasks = check_tasks("sequence_tasks", sequence_tasks or {})
        self.class_tasks = check_tasks("class_tasks", class_tasks or {})
        shared = sorted(set(self.sequence_tasks) & set(self.class_tasks))
        if shared or not (self.sequence_tasks or self.class_tasks):
            raise ValueError(
                "Arguments `sequence_tasks` and `class_tasks` must name at least one task, "
                f"each once, received: {list(self.sequence_tasks)}, {list(self.class_tasks)}"
            )
        self.max_output_length = check_positive_int("max_output_length", max_output_length)
        self.attention_score = attention
        self.encoder = Encoder.of_model(
            source_vocabulary_size, cell, units, embedding_dim, encoder_layers, bidirectional,
            cell_options,
        )  # fmt: skip
        self.decoders = {
            task: Decoder(
                size,
                embedding_dim,
                cell,
                self.encoder.output_dim,
                attention,
                cell_options=cell_options,
                name=f"decoder_{task}",
            )
            for task, size in self.sequence_tasks.items()
        }
        self.heads = {
            task: keras.layers.Dense(size, name=f"head_{task}")
            for task, size in self.class_tasks.items()
        }
        self.build_from_sizes()

    @property
    def tasks(self) -> list[str]:
        """Every task's name: the sequence tasks, then the classification tasks."""
        return [*self.sequence_tasks, *self.class_tasks]

    def check_task(self, task: Any) -> str:
        if task not in self.tasks:
            raise ValueError(f"Argument `task` must be one of {self.tasks}, received: {task!r}")
        return task

    def build_from_sizes(self) -> None:
        """Creates every weight with one dummy call per task, so a fresh or
        loaded model holds all of them."""
        source = ops.ones((1, 2), "int32")
        with portable():
            for task in self.sequence_tasks:
                self((source, source), task=task)
            for task in self.class_tasks:
                self(source, task=task)

    def build(self, input_shape=None) -> None:
        """Nothing to create: the constructor made every weight (`build_from_sizes`)."""
        self.built = True

    def call(self, inputs, task: str | None = None, training=None):
        task = self.check_task(task if task is not None else self.tasks[0])
        if task in self.class_tasks:
            source = inputs[0] if isinstance(inputs, (tuple, list)) else inputs
            _, summary, _ = self.encoder(source, training=training)
            return self.heads[task](summary)
        source, target_in = inputs
        memory, summary, mask = self.encoder(source, training=training)
        return self.decoders[task](
            target_in,
            summary=summary,
            memory=memory,
            memory_mask=mask,
            source_ids=source,
            training=training,
        )

    def generate(
        self, source, task: str, max_length: int | None = None, encoded: tuple | None = None
    ):
        """Greedy decoding of sequence task ``task``: tokens ``(B, L)``, scores
        ``(B,)``; ``encoded``: ``self.encoder(source)`` when already computed."""
        if self.check_task(task) not in self.sequence_tasks:
            raise ValueError(
                f"Argument `task` must be a sequence task {list(self.sequence_tasks)} to "
                f"generate, received: {task!r}"
            )
        max_length = self.max_output_length if max_length is None else max_length
        decoder = self.decoders[task]
        memory, summary, mask = encoded or self.encoder(source, training=False)
        states = decoder.initial_state(ops.shape(source)[0], summary)
        return decode(
            decoder.log_prob_step,
            {"memory": memory, "memory_mask": mask, "source_ids": source},
            states,
            tf.shape(source)[0],
            1,
            max_length,
            START_ID,
            END_ID,
            0.0,
            False,
        )

    def predict_tasks(self, source) -> dict[str, Any]:
        """Every task's prediction from one pass of the shared encoder: a
        sequence task's greedy ``Decoded`` (tokens ``(B, L)``, scores ``(B,)``),
        a classification task's logits ``(B, classes)``, by task name."""
        encoded = self.encoder(source, training=False)
        outputs: dict[str, Any] = {
            task: self.generate(source, task, encoded=encoded) for task in self.sequence_tasks
        }
        for task, head in self.heads.items():
            outputs[task] = head(encoded[1])
        return outputs

    def get_config(self) -> dict:
        encoder = self.encoder
        return {
            **super().get_config(),
            "source_vocabulary_size": encoder.vocabulary_size,
            "sequence_tasks": dict(self.sequence_tasks),
            "class_tasks": dict(self.class_tasks),
            **encoder.model_config(),
            "attention": self.attention_score,
            "max_output_length": self.max_output_length,
        }


def task_loss(model: MultiTaskSeq2Seq, task: str, batch: Sequence, training: bool = True):
    """Task ``task``'s mean cross-entropy on ``batch``: ``(source, label)``
    for a classification task, ``(source, target_in, target_out)`` for a
    sequence task (padding 0 ignored)."""
    if task in model.class_tasks:
        source, label = batch
        logits = model(source, task=task, training=training)
        return ops.mean(
            keras.losses.sparse_categorical_crossentropy(label, logits, from_logits=True)
        )
    source, target_in, target_out = batch
    logits = model((source, target_in), task=task, training=training)
    losses = keras.losses.sparse_categorical_crossentropy(target_out, logits, from_logits=True)
    weights = ops.cast(ops.not_equal(target_out, 0), losses.dtype)
    return ops.sum(losses * weights) / ops.maximum(ops.sum(weights), 1.0)


def fit_tasks(
    model: MultiTaskSeq2Seq,
    batches: Mapping[str, Iterator],
    ratios: Mapping[str, float],
    steps: int,
    optimizer: keras.optimizers.Optimizer | None = None,
) -> dict[str, float]:
    """Trains ``model`` for ``steps`` steps on alternating batches: the tasks
    in `task_schedule` order, each step one batch from ``batches[task]`` (an
    endless iterator of `task_loss` batches). Returns each task's mean loss
    over its steps."""
    for task in ratios:
        model.check_task(task)
        if task not in batches:
            raise ValueError(
                f"Argument `batches` must hold task {task!r}, received: {list(batches)}"
            )
    optimizer = optimizer or keras.optimizers.Adam(1e-3, clipnorm=5.0)
    if not optimizer.built:
        optimizer.build(model.trainable_variables)  # every task's, once
    steps_of = {
        task: tf.function(
            lambda batch, task=task: task_update(model, task, batch, optimizer),
            reduce_retracing=True,
        )
        for task in ratios
    }
    totals = {task: [0.0, 0] for task in ratios}
    for task in task_schedule(ratios, steps):
        loss = steps_of[task](next(batches[task]))
        totals[task][0] += float(loss)
        totals[task][1] += 1
    return {task: total / max(count, 1) for task, (total, count) in totals.items()}


def task_update(
    model: MultiTaskSeq2Seq, task: str, batch: Sequence, optimizer: keras.optimizers.Optimizer
):
    """One update of task ``task`` on ``batch`` (`task_loss`): the gradient
    reaches the shared encoder and the task's own decoder or head, and the
    optimizer moves those only (the other tasks' weights and their optimizer
    slots are left as they are). Returns the loss."""
    with tf.GradientTape() as tape:
        loss = task_loss(model, task, batch)
    variables = model.trainable_variables
    gradients = tape.gradient(loss, variables)
    pairs = [(g, v) for g, v in zip(gradients, variables) if g is not None]
    optimizer.apply_gradients(pairs)
    return loss


# The keys of an `alternating_batches` batch.
BATCH_KEYS = ("task", "source", "target_in", "target_out", "label")


def task_batch(model: MultiTaskSeq2Seq, task: str, data: Mapping[str, Any]) -> tuple:
    """Task ``task``'s `task_loss` batch out of an `alternating_batches` batch."""
    if task in model.class_tasks:
        return data["source"], data["label"]
    return data["source"], data["target_in"], data["target_out"]


def switch_task_update(
    model: MultiTaskSeq2Seq, data: Mapping[str, Any], optimizer: keras.optimizers.Optimizer
):
    """`task_update` of the task ``data["task"]`` names (its index in
    ``model.tasks``, the same in every row of a batch), chosen in the graph
    (``tf.switch_case``): what a ``train_step`` calls to train on batches of
    alternating tasks (``keras_rnncells.apps.multitask.alternating_batches``).
    ``data``: `BATCH_KEYS`. Returns the loss and the task's index."""
    if not optimizer.built:
        optimizer.build(model.trainable_variables)
    branches = [
        lambda task=task: task_update(model, task, task_batch(model, task, data), optimizer)
        for task in model.tasks
    ]
    index = tf.reshape(data["task"], [-1])[0]
    return tf.switch_case(index, branches), index
