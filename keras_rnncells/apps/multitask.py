"""``rnncells train multitask``: one encoder shared by several tasks on
written dates (`keras_rnncells.seq2seq.MultiTaskSeq2Seq`, Luong et al. 2016,
their one-to-many setting).

The tasks (``--tasks``, any of them, each once): ``dates`` rewrites the date
as ISO 8601 ("Nov 21, 2026" -> "2026-11-21"), ``autoencode`` writes the
source back, ``month`` classifies its month (12 classes). Training alternates
whole batches of one task, in proportion to the mixing ratios (``--ratios``,
one positive number per task; `keras_rnncells.seq2seq.multitask.task_schedule`):
an epoch is one pass over the data of the task of the largest ratio. The run
reports each task's score on dates never seen in training: exact match of the
greedy output for a sequence task, accuracy for the month.

`TextMultiTask` carries the tokenizers with the model (characters, or with
``--tokenizer`` SentencePiece subwords learned from the training pairs), so a
saved model reads strings. Served (`multitask_servable`): one signature,
``{"text": string (B,)}`` -> an output per task from one pass of the shared
encoder: ``"<task>"`` the greedy output text and ``"<task>_score"`` its
log-probability for a sequence task; ``"month"`` (1-12, int32) and
``"month_probabilities"`` (B, 12) for the month.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_rnncells.apps.base import check_settings
from keras_rnncells.apps.registry import register_app
from keras_rnncells.apps.seq2seq import EXAMPLES, LIMITS, TOKENIZERS
from keras_rnncells.checks import check_positive_int
from keras_rnncells.data.dates import date_splits
from keras_rnncells.data.multitask_dates import CLASS_TASKS, MONTH_CLASSES, TASKS
from keras_rnncells.data.pipeline import shuffled_slices
from keras_rnncells.export.limits import RequestLimits
from keras_rnncells.export.servable import (
    Servable,
    StringFrontEnd,
    padded_ids,
    served_ids,
    traced,
    with_limits,
)
from keras_rnncells.seq2seq.attention import SCORES
from keras_rnncells.seq2seq.multitask import MultiTaskSeq2Seq, switch_task_update, task_schedule
from keras_rnncells.text import END_ID, PAD_ID, Tokenizer, learn_tokenizer
from keras_rnncells.training import Evaluation, Fit, train_run


def parse_tasks(tasks: Any, ratios: Any) -> dict[str, float]:
    """``--tasks`` and ``--ratios`` ("dates,month", "1,0.5") as task -> mixing
    ratio; a one-line ``ValueError`` naming the flag otherwise."""
    names = [name.strip() for name in str(tasks).split(",")]
    if (
        not isinstance(tasks, str)
        or not all(n in TASKS for n in names)
        or (len(set(names)) != len(names))
    ):
        raise ValueError(
            f"Argument `tasks` (--tasks) must be distinct tasks of {', '.join(TASKS)}, "
            f"separated by commas, received: {tasks!r}"
        )
    try:
        values = [float(value) for value in str(ratios).split(",")]
    except ValueError:
        values = []
    if len(values) != len(names) or not all(0 < v < float("inf") for v in values):
        raise ValueError(
            f"Argument `ratios` (--ratios) must be {len(names)} positive numbers separated "
            f"by commas, one per task of --tasks ({','.join(names)}), received: {ratios!r}"
        )
    return dict(zip(names, values))


@keras.saving.register_keras_serializable(package="keras_rnncells")
class TextMultiTask(keras.Model):
    """A `MultiTaskSeq2Seq` with its tokenizers: strings in, every task's
    prediction out (`predict_texts`).

    Args:
        source_tokenizer: the shared source's tokenizer.
        target_tokenizers: sequence task -> its output's tokenizer.
        multitask: the model on ids, its sequence tasks those of
            ``target_tokenizers`` (with their vocabularies' sizes).

    ``model.fit`` trains it on `alternating_batches` (one task's batch a
    step, `keras_rnncells.seq2seq.multitask.switch_task_update`).
    """

    def __init__(
        self,
        source_tokenizer: Tokenizer,
        target_tokenizers: Mapping[str, Tokenizer],
        multitask: MultiTaskSeq2Seq,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        tokenizers = {"source_tokenizer": source_tokenizer, **dict(target_tokenizers)}
        for name, tokenizer in tokenizers.items():
            if not isinstance(tokenizer, Tokenizer):
                raise ValueError(
                    f"Argument `{name}` must be a keras_rnncells.text tokenizer, "
                    f"received: {tokenizer!r}"
                )
        if not isinstance(multitask, MultiTaskSeq2Seq):
            raise ValueError(
                "Argument `multitask` must be a keras_rnncells.seq2seq.MultiTaskSeq2Seq, "
                f"received: {multitask!r}"
            )
        sizes = {task: t.vocabulary_size for task, t in target_tokenizers.items()}
        expected = (multitask.encoder.vocabulary_size, multitask.sequence_tasks)
        if expected != (source_tokenizer.vocabulary_size, sizes):
            raise ValueError(
                f"Argument `multitask` has a source vocabulary and sequence tasks {expected}, "
                f"the tokenizers {(source_tokenizer.vocabulary_size, sizes)}"
            )
        self.source_tokenizer = source_tokenizer
        self.target_tokenizers = dict(target_tokenizers)
        self.multitask = multitask
        self.task_losses = {
            f"{task}_loss": keras.metrics.Mean(name=f"{task}_loss") for task in multitask.tasks
        }
        self.built = True  # MultiTaskSeq2Seq creates its weights; tokenizers have none

    @property
    def tasks(self) -> list[str]:
        """The tasks, in `MultiTaskSeq2Seq.tasks` order."""
        return self.multitask.tasks

    def call(self, inputs, task: str | None = None, training=None):
        return self.multitask(inputs, task=task, training=training)

    @property
    def metrics(self) -> list:
        return list(self.task_losses.values())

    def train_step(self, data):
        """One batch of `alternating_batches`: an update of its task; logs the
        mean loss of each task over the epoch (``"<task>_loss"``)."""
        loss, index = switch_task_update(self.multitask, data, self.optimizer)
        for position, tracker in enumerate(self.task_losses.values()):
            tracker.update_state(loss, sample_weight=tf.cast(tf.equal(index, position), loss.dtype))
        return {name: tracker.result() for name, tracker in self.task_losses.items()}

    def predict_ids(self, token_ids) -> dict[str, tf.Tensor]:
        """Every task's prediction from source ids (one encoder pass): a
        sequence task's output ids ``"<task>_tokens"`` and ``"<task>_score"``;
        the month ``"month"`` (1-12) and ``"month_probabilities"``."""
        outputs = {}
        for task, prediction in self.multitask.predict_tasks(token_ids).items():
            if task in self.multitask.class_tasks:
                # tf.argmax: Keras' argmax bitcasts floats, which ONNX lacks
                outputs[task] = tf.argmax(prediction, axis=-1, output_type=tf.int32) + 1
                outputs[f"{task}_probabilities"] = ops.softmax(prediction, axis=-1)
            else:
                outputs[f"{task}_tokens"], outputs[f"{task}_score"] = prediction
        return outputs

    def predict_texts(self, strings) -> dict[str, tf.Tensor]:
        """Texts ``(B,)`` to every task's prediction: `predict_ids`, each
        sequence task's ids replaced by its text ``"<task>"``."""
        outputs = self.predict_ids(self.source_tokenizer(strings))
        for task, tokenizer in self.target_tokenizers.items():
            outputs[task] = tokenizer.detokenize(outputs.pop(f"{task}_tokens"))
        return outputs

    def get_config(self) -> dict:
        serialize = keras.saving.serialize_keras_object
        return {
            **super().get_config(),
            "source_tokenizer": serialize(self.source_tokenizer),
            "target_tokenizers": {t: serialize(k) for t, k in self.target_tokenizers.items()},
            "multitask": serialize(self.multitask),
        }

    @classmethod
    def from_config(cls, config: dict) -> TextMultiTask:
        config = dict(config)
        deserialize = keras.saving.deserialize_keras_object
        for key in ("source_tokenizer", "multitask"):
            config[key] = deserialize(config[key])
        config["target_tokenizers"] = {
            task: deserialize(value) for task, value in config["target_tokenizers"].items()
        }
        return cls(**config)


def multitask_servable(
    model: TextMultiTask, name: str = "multitask", limits: RequestLimits | None = None
) -> Servable:
    """Serving: ``{"text": string (B,)}`` -> an output per task (see the
    module), greedy decoding in the graph. One signature rather than one per
    task: the tasks share the encoder, so one request reads the text once for
    all of them (a client reads the outputs it wants). ONNX (no string ops):
    ``{"token_ids": int32 (B, S)}`` -> ``"<task>_tokens"`` ids in place of the
    texts (`served_ids` checks the ids), and ``model_text.onnx`` on strings,
    the tokenizers as onnxruntime-extensions ops. Requests past ``limits``
    are refused before tokenizing (unset: the seq2seq app's `LIMITS`)."""
    module = tf.Module()
    module.model = model
    tokenizer = model.source_tokenizer
    examples = {"text": np.array([*EXAMPLES["dates"][:2], ""])}
    servable = Servable(
        name=name,
        cell=model.multitask.encoder.cell_name,
        module=module,
        serve=traced(
            lambda text: model.predict_texts(text), {"text": tf.TensorSpec((None,), tf.string)}
        ),
        examples=examples,
        onnx_function=traced(
            lambda token_ids: model.predict_ids(
                served_ids(token_ids, model.multitask.encoder.vocabulary_size)
            ),
            {"token_ids": tf.TensorSpec((None, None), tf.int32)},
        ),
        onnx_examples={"token_ids": tokenizer(tf.constant(examples["text"])).numpy()},
        onnx_text=StringFrontEnd(
            tokenizer,
            lambda ragged: model.predict_ids(padded_ids(ragged, tokenizer.max_length)),
            detokenizers={
                task: (f"{task}_tokens", target) for task, target in model.target_tokenizers.items()
            },
        ),
        vocabulary_files={
            "source_vocabulary.txt": tokenizer.vocabulary,
            **{f"{t}_vocabulary.txt": k.vocabulary for t, k in model.target_tokenizers.items()},
        },
    )
    return with_limits(servable, limits, defaults=LIMITS)


# -- the data --------------------------------------------------------------------------


class MultiTaskData(NamedTuple):
    """A run's (source, ISO date) pairs by split, and its tokenizers."""

    splits: dict[str, list[tuple[str, str]]]
    source_tokenizer: Tokenizer
    target_tokenizers: dict[str, Tokenizer]


def task_targets(task: str, pairs: list[tuple[str, str]]) -> list:
    """What task ``task`` writes for each pair: the ISO date, the source, or
    the month (0-11)."""
    if task in CLASS_TASKS:
        return [int(iso[5:7]) - 1 for _, iso in pairs]
    return [iso if task == "dates" else source for source, iso in pairs]


def task_arrays(model: TextMultiTask, task: str, pairs: list[tuple[str, str]]) -> tuple:
    """Task ``task``'s `keras_rnncells.seq2seq.multitask.task_loss` arrays
    for ``pairs``, tokenized by the model's tokenizers."""
    source = model.source_tokenizer(tf.constant([s for s, _ in pairs])).numpy()
    targets = task_targets(task, pairs)
    if task in CLASS_TASKS:
        return source, np.asarray(targets, np.int32)
    ids = model.target_tokenizers[task](tf.constant(targets), add_start=True, add_end=True)
    target_in = ids[:, :-1]
    target_in = tf.where(target_in == END_ID, tf.constant(PAD_ID, target_in.dtype), target_in)
    return source, target_in.numpy(), ids[:, 1:].numpy()


def as_batch(model: MultiTaskSeq2Seq, task: str, arrays: tuple) -> dict[str, np.ndarray]:
    """Task ``task``'s arrays as the examples of an `alternating_batches`
    batch (`keras_rnncells.seq2seq.multitask.BATCH_KEYS`): its index in
    ``model.tasks``, and zeros for what its loss does not read."""
    count = len(arrays[0])
    batch = {
        "task": np.full((count,), model.tasks.index(task), np.int32),
        "source": arrays[0],
        "target_in": np.zeros((count, 1), np.int32),
        "target_out": np.zeros((count, 1), np.int32),
        "label": np.zeros((count,), np.int32),
    }
    if task in model.class_tasks:
        batch["label"] = np.asarray(arrays[1], np.int32)
    else:
        batch["target_in"], batch["target_out"] = arrays[1], arrays[2]
    return batch


def alternating_batches(
    model: MultiTaskSeq2Seq,
    arrays: Mapping[str, tuple],
    ratios: Mapping[str, float],
    batch_size: int,
    seed: int,
) -> tf.data.Dataset:
    """An epoch of batches for ``model.fit``: ``len(arrays[first]) //
    batch_size`` steps (one pass over the data of the task of the largest
    ratio), the tasks in `task_schedule` order, each step a whole batch of one
    task (`as_batch`). ``arrays``: task -> its `task_loss` arrays. Each task's
    examples are shuffled once an epoch by ``(seed, epoch)``
    (`keras_rnncells.data.pipeline`), so a resumed run reads what an
    uninterrupted one would."""
    batch_size = check_positive_int("batch_size", batch_size)
    largest = max(ratios, key=ratios.get)
    schedule = task_schedule(ratios, len(arrays[largest][0]) // batch_size)
    datasets = []
    for index, task in enumerate(ratios):
        datasets.append(
            shuffled_slices(as_batch(model, task, arrays[task]), seed + index)
            .batch(batch_size, drop_remainder=True)
            .take(schedule.count(task))  # at most one pass: one shuffle an epoch
        )
    choices = tf.data.Dataset.from_tensor_slices(
        tf.constant([list(ratios).index(task) for task in schedule], tf.int64)
    )
    batches = tf.data.Dataset.choose_from_datasets(datasets, choices)
    batches = batches.apply(tf.data.experimental.assert_cardinality(len(schedule)))
    return batches.prefetch(tf.data.AUTOTUNE)


# -- the run ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MultiTaskSettings:
    """The settings of a run (all written into ``results.json``); ``tasks``
    and ``ratios`` as the flags write them (`parse_tasks`)."""

    tasks: str = "dates,autoencode,month"
    ratios: str = "1,0.5,0.5"
    cell: str = "gru"
    units: int = 64
    embedding_dim: int = 32
    bidirectional: bool = True
    attention: str | None = "general"
    epochs: int = 5
    batch_size: int = 64
    seed: int = 0
    train_size: int = 20000
    test_size: int = 1000
    learning_rate: float = 3e-3
    tokenizer: str = "char"  # one of TOKENIZERS
    vocabulary_size: int = 1000  # per side, at most

    def __post_init__(self) -> None:
        check_settings(self, attention=(None, *SCORES), tokenizer=TOKENIZERS)
        parse_tasks(self.tasks, self.ratios)

    @property
    def mixing(self) -> dict[str, float]:
        """Task -> mixing ratio."""
        return parse_tasks(self.tasks, self.ratios)


def multitask_data(settings: MultiTaskSettings) -> MultiTaskData:
    """The generated splits and the tokenizers learned from the training
    pairs: one for the sources (which ``autoencode`` writes too) and one for
    the ISO dates."""
    splits = date_splits(settings.train_size, settings.test_size, seed=settings.seed)
    sources, targets = zip(*splits["train"])

    def learned(texts):
        return learn_tokenizer(settings.tokenizer, texts, settings.vocabulary_size, lowercase=False)

    source_tokenizer = learned(sources)
    kept = {"dates": learned(targets), "autoencode": source_tokenizer}
    tasks = settings.mixing
    return MultiTaskData(splits, source_tokenizer, {t: kept[t] for t in kept if t in tasks})


def build_multitask(settings: MultiTaskSettings, data: MultiTaskData) -> Fit:
    """The compiled model of a run and its alternating batches."""
    tasks = settings.mixing
    sequence = {t: k.vocabulary_size for t, k in data.target_tokenizers.items()}
    longest = 1
    for task in tasks:
        if task in sequence:
            target = data.target_tokenizers[task](
                tf.constant(task_targets(task, data.splits["train"]))
            )
            longest = max(longest, int(target.shape[1]))
    multitask = MultiTaskSeq2Seq(
        data.source_tokenizer.vocabulary_size,
        sequence,
        {t: MONTH_CLASSES for t in tasks if t in CLASS_TASKS},
        cell=settings.cell,
        units=settings.units,
        embedding_dim=settings.embedding_dim,
        bidirectional=settings.bidirectional,
        attention=settings.attention,
        max_output_length=longest + 4,  # room to spare past the longest training target
    )
    model = TextMultiTask(data.source_tokenizer, data.target_tokenizers, multitask)
    model.compile(keras.optimizers.Adam(settings.learning_rate, clipnorm=1.0), jit_compile=False)
    arrays = {task: task_arrays(model, task, data.splits["train"]) for task in tasks}
    train = alternating_batches(multitask, arrays, tasks, settings.batch_size, settings.seed)
    return Fit(model, train, record={"updates_per_epoch": updates_per_epoch(settings)})


def updates_per_epoch(settings: MultiTaskSettings) -> dict[str, int]:
    """Each task's updates in an epoch of `alternating_batches`."""
    schedule = task_schedule(settings.mixing, settings.train_size // settings.batch_size)
    return {task: schedule.count(task) for task in settings.mixing}


def evaluate_multitask(
    model: TextMultiTask, data: MultiTaskData, batch_size: int = 256
) -> Evaluation:
    """Each task's score on the held-out dates (exact match of the greedy
    output, or accuracy), and the outputs on `EXAMPLES`."""
    predict = tf.function(model.predict_texts, input_signature=[tf.TensorSpec([None], tf.string)])

    def predictions(texts: list[str]) -> dict[str, list]:
        rows: dict[str, list] = {}
        for start in range(0, len(texts), batch_size):
            outputs = predict(tf.constant(texts[start : start + batch_size]))
            for task in model.tasks:
                value = outputs[task].numpy()
                rows.setdefault(task, []).extend(
                    v.decode("utf-8") if isinstance(v, bytes) else int(v) for v in value
                )
        return rows

    test = data.splits["test"]
    got = predictions([source for source, _ in test])
    results: dict[str, Any] = {
        "task": "dates: " + ", ".join(model.tasks),
        "test_examples": len(test),
    }
    for task in model.tasks:
        wanted = task_targets(task, test)
        if task in CLASS_TASKS:
            wanted = [month + 1 for month in wanted]
        metric = "accuracy" if task in CLASS_TASKS else "exact_match"
        results[f"{task}_{metric}"] = float(np.mean([g == w for g, w in zip(got[task], wanted)]))
    examples = list(EXAMPLES["dates"])
    samples = predictions(examples)
    return Evaluation(
        results,
        {"samples": {e: {t: samples[t][i] for t in model.tasks} for i, e in enumerate(examples)}},
    )


def train_multitask(
    run_dir: str | Path,
    settings: MultiTaskSettings = MultiTaskSettings(),
    overwrite: bool = False,
    verbose: int | str = "auto",
) -> dict[str, Any]:
    """Trains, evaluates and saves into ``run_dir`` (resumable, as
    `keras_rnncells.training.train_run` runs); returns the results."""
    return train_run(
        run_dir,
        settings,
        data=lambda: multitask_data(settings),
        build=lambda data, run_dir: build_multitask(settings, data),
        evaluate=lambda model, data, run_dir: evaluate_multitask(model, data),
        overwrite=overwrite,
        verbose=verbose,
    )


def task_scores(results: Mapping[str, Any]) -> dict[str, float]:
    """Each task's held-out score of a run's results."""
    return {
        task: results[f"{task}_{'accuracy' if task in CLASS_TASKS else 'exact_match'}"]
        for task in TASKS
        if f"{task}_accuracy" in results or f"{task}_exact_match" in results
    }


def train_from_arguments(args: Any, given: dict[str, Any]) -> None:
    """``rnncells train multitask``: the run of the settings its flags ``given``."""
    settings = MultiTaskSettings(**given)
    results = train_multitask(args.out, settings, overwrite=args.overwrite)
    scores = ", ".join(f"{task} {score:.2%}" for task, score in task_scores(results).items())
    print(
        f"\nHeld-out ({results['test_examples']} dates never seen in training; exact match, "
        f"month accuracy): {scores}; {results['parameters']} parameters, "
        f"{results['training_seconds']:.0f} s of training"
    )
    for source, outputs in results["samples"].items():
        print(f"  {source!r:>30} -> {outputs}")
    print(f"Model, results.json and logs in {args.out}")


register_app("multitask", TextMultiTask, multitask_servable, train_from_arguments)
