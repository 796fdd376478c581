"""The papers' experiments on the tasks of `keras_rnncells.data`.

``rnncells train TASK`` runs `train_task`: a model from `build_model` (an
embedding for token tasks, the recurrent layer(s) of one registered cell or
of one per layer, a head by ``task.kind``) trained with the task's defaults (`TASK_DEFAULTS`),
evaluated on the test split and written into a run directory
(`keras_rnncells.training`): ``model.keras``, ``results.json``,
``history.csv``, ``logs/`` and, with matplotlib, ``learning_curve.png`` (plus
``operation_weights.png`` for MuFuRU on token tasks, the MuFuRU paper's
Figure 1b). ``rnncells compare TASK`` runs `compare_cells`: one run per cell
(and hidden size), ``compare.json`` and, over several sizes, the paper's
Figure 1a (test metric against hidden size).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import importlib.metadata
import json
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import keras
import numpy as np
import tensorflow as tf

from keras_rnncells.cells.registry import get_cell
from keras_rnncells.checks import (
    check_choice,
    check_float,
    check_integer,
    check_positive_int,
    check_rate,
)
from keras_rnncells.data import Task, load_task, size_options, task_options
from keras_rnncells.defaults import (
    CHARACTER_LANGUAGE_MODELS,
    COUNTED_SOFTMAXES,
    GRID_MODELS,
    LANGUAGE_MODELS,
    MODELS,
    NORMALIZED_SOFTMAXES,
    OPTIMIZERS,
    SAMPLED_SOFTMAXES,
    SAMPLERS,
    SOFTMAXES,
    TASK_DEFAULTS,
    TREE_MODELS,
    WORD_INPUTS,
    Settings,
    TaskDefaults,
    task_flags,
)
from keras_rnncells.distribute import describe, make_strategy, prepare_model, writable_run_dir
from keras_rnncells.layers import RNN, StackedRNN, WordDropout
from keras_rnncells.layers.character_words import (
    CharacterWordEmbedding,
    GatedWordCharacterEmbedding,
    proportional_filters,
    spell_words,
)
from keras_rnncells.layers.grid_encoders import grid_encoding
from keras_rnncells.layers.stacks import connected_stack
from keras_rnncells.locks import run_lock
from keras_rnncells.metrics import TokenCrossEntropy, TokenLossMean
from keras_rnncells.rare_words import rare_word_scores
from keras_rnncells.reestimation import reestimate_batch_norm
from keras_rnncells.regularizers import NormStabilizer, TemporalCoherence, check_beta
from keras_rnncells.softmax import VocabularySoftmax, start_at_unigram, token_mean
from keras_rnncells.training import (
    Evaluation,
    Fit,
    parameter_count,
    train_run,
    write_atomically,
    write_json,
)
from keras_rnncells.tree import ShiftReduceEncoder, TransitionsFromTokens

# The penalties on hidden sequences a task run takes, by setting name.
PENALTIES = {"norm_stabilizer": NormStabilizer, "temporal_coherence": TemporalCoherence}
# The settings a run's reproducing command writes always (but the cell of a
# tree model); it writes the other flags of its task where they differ from
# the task's default (`reproduce_command`).
ALWAYS_WRITTEN = ("cell", "units", "epochs", "batch_size", "seed")
# The settings of a language model's output layer (`keras_rnncells.softmax`),
# with their defaults, the values that are no setting at all for other tasks.
SOFTMAX_ONLY = {
    name: getattr(Settings(), name)
    for name in ("softmax", "sampler", "num_sampled", "self_normalization", "unigram_bias")
}
# The settings of language-model tasks alone: the output layer's, and
# carrying states across the windows of the stream layout.
LANGUAGE_MODEL_ONLY = {**SOFTMAX_ONLY, "stateful": False}
# The settings of the plain stack of recurrent layers (model "rnn"), which
# the other models do not have (but `layers`, which a tree model alone does
# not have): each one's value that is no setting at all.
RNN_ONLY = {
    "layers": 1,
    "bidirectional": False,
    "batch_norm": False,
    "stateful": False,
    **dict.fromkeys(PENALTIES, 0.0),
}
PLOT_NOTE = "matplotlib is not installed (pip install 'keras-rnncells[plot]'): no PNG written"
# How many of the most frequent symbols the operation-weights figure shows.
MAX_SYMBOLS = 24
# About how many training rows `task_evaluation` re-estimates batch-norm
# statistics on (whole batches, read as one: 2,000 and 10,000 gave the same
# row-MNIST accuracy).
REESTIMATE_ROWS = 4096


def task_defaults(task: str) -> TaskDefaults:
    if task not in TASK_DEFAULTS:
        raise ValueError(
            f"Argument `task` must be one of {sorted(TASK_DEFAULTS)}, received: {task!r}"
        )
    return TASK_DEFAULTS[task]


def task_flag_names(task: str) -> set[str]:
    """The names of the flags ``rnncells train TASK`` reads."""
    return {flag.name for flag in task_flags(task)}


def layer_cells(cell: str, layers: int, model: str) -> list[str]:
    """The registered cell of each of ``layers`` stacked layers, bottom first:
    ``cell`` names one for every layer ("gru") or, for a plain stack (``model``
    "rnn"; the other connections repeat one cell), one per layer ("gru,mgu":
    the MGU paper's GRU layer under an MGU layer); a ValueError otherwise."""
    names = cell.split(",") if isinstance(cell, str) else [cell]
    for name in names:
        get_cell(name)  # a ValueError naming the registered cells
    if len(names) not in (1, layers):
        raise ValueError(
            f"Argument `cell` must name one cell, or one per layer (bottom first, "
            f"comma-separated) for {layers} layers, received {cell!r} ({len(names)} cells)"
        )
    if model != "rnn" and len(set(names)) > 1:
        raise ValueError(
            f"Argument `cell` may name one cell per layer for model 'rnn' (a plain stack); "
            f"model {model!r} repeats one cell, received: {cell!r}"
        )
    return names * layers if len(names) == 1 else names


def task_settings(task: str, **overrides: Any) -> Settings:
    """The defaults of ``task`` with the ``overrides`` that are not None."""
    given = {key: value for key, value in overrides.items() if value is not None}
    settings = dataclasses.replace(task_defaults(task).settings, **given)
    check_choice("model", settings.model, MODELS)
    check_positive_int("layers", settings.layers)  # before the cells are counted against it
    layer_cells(settings.cell, settings.layers, settings.model)
    if settings.model in TREE_MODELS and "cell" in given:
        raise ValueError(
            f"Argument `cell` applies to model 'rnn'; model {settings.model!r} composes with "
            f"the Tree-LSTM, received: {given['cell']!r}"
        )
    if settings.shape != "chain" and "shape" not in task_options(task):
        raise ValueError(
            f"Argument `shape` applies to the logic task, not to {task!r}, "
            f"received: {settings.shape!r}"
        )
    for name in ("units", "epochs", "batch_size", "layers", "embedding_dim"):
        check_positive_int(name, getattr(settings, name))
    if settings.max_length is not None and "max_length" not in task_options(task):
        raise ValueError(
            f"Argument `max_length` applies to the text classification tasks, not to {task!r}, "
            f"received: {settings.max_length!r}"
        )
    if settings.train_size is not None and "train_size" not in task_options(task):
        generated = [name for name in TASK_DEFAULTS if "train_size" in task_options(name)]
        raise ValueError(
            f"Argument `train_size` applies to the generated tasks {tuple(generated)}, not to "
            f"{task!r}, received: {settings.train_size!r}"
        )
    for name in ("limit", "train_size", "patience", "max_length"):
        if getattr(settings, name) is not None:
            check_positive_int(name, getattr(settings, name))
    check_length(task, settings.length)
    check_choice("optimizer", settings.optimizer, OPTIMIZERS)
    check_choice("softmax", settings.softmax, SOFTMAXES)
    check_choice("sampler", settings.sampler, SAMPLERS)
    check_positive_int("num_sampled", settings.num_sampled)
    check_float("self_normalization", settings.self_normalization, "[0, inf)")
    if task not in LANGUAGE_MODELS:
        for name, value in LANGUAGE_MODEL_ONLY.items():
            if getattr(settings, name) != value:
                raise ValueError(
                    f"Argument `{name}` applies to the language-model tasks {LANGUAGE_MODELS}, "
                    f"not to {task!r}, received: {getattr(settings, name)!r}"
                )
    check_choice("word_input", settings.word_input, WORD_INPUTS)
    if settings.word_input != "words" and "word_input" not in task_flag_names(task):
        raise ValueError(
            f"Argument `word_input` applies to ptb, not to {task!r}, "
            f"received: {settings.word_input!r}"
        )
    check_float("learning_rate", settings.learning_rate, "(0, inf)")
    check_float("learning_rate_decay", settings.learning_rate_decay, "[1, inf)")
    check_integer("decay_after", settings.decay_after, 0)
    if settings.ema_momentum is not None:
        check_rate("ema_momentum", settings.ema_momentum)
        if settings.patience is not None:  # the best epoch's weights are not the average's
            raise ValueError(
                f"Argument `patience` keeps the best epoch's weights, which a weight average "
                f"(`ema_momentum` {settings.ema_momentum}, task {task!r}) would replace: "
                f"not both, received: {settings.patience}"
            )
    for name in ("dropout", "word_dropout"):
        check_rate(name, getattr(settings, name))
    for name in PENALTIES:
        check_beta(getattr(settings, name), name)
    return settings


def check_length(task: str, length: int | None) -> None:
    """A ValueError unless ``length`` is None or a sequence length of at
    least 2 for a task that reads it (the adding problem)."""
    if length is None:
        return
    if "length" not in task_flag_names(task):
        raise ValueError(
            f"Argument `length` applies to the adding task, not to {task!r}, received: {length!r}"
        )
    check_integer("length", length, 2)


# -- the model ----------------------------------------------------------------------
def build_model(
    task: Task,
    cell: str,
    units: int,
    *,
    layers: int = 1,
    bidirectional: bool = False,
    embedding_dim: int = 64,
    learning_rate: float = 1e-3,
    optimizer: str = "adam",
    clipnorm: float | None = 1.0,
    dropout: float = 0.0,
    word_dropout: float = 0.0,
    norm_stabilizer: float = 0.0,
    temporal_coherence: float = 0.0,
    batch_norm: bool = False,
    ema_momentum: float | None = None,
    model: str = "rnn",
    softmax: str = "full",
    sampler: str = "log_uniform",
    num_sampled: int = 64,
    self_normalization: float = 0.0,
    unigram_bias: bool = False,
    unigram_counts: Any = None,
    stateful: bool = False,
    batch_size: int | None = None,
    word_input: str = "words",
) -> keras.Model:
    """A compiled model for ``task``: ``layers`` recurrent layers of ``cell``
    (``bidirectional``: each one `keras.layers.Bidirectional`, outputs
    concatenated) on an ``Embedding(mask_zero=True)`` of the tokens, or on
    the features themselves (not masked: zero vectors are data there), then
    the head of ``task.kind``; ``word_input`` (token tasks): "chars" or
    "words+chars" read each word's vector from its characters in place of
    the embedding (`word_input_layer`);
    ``dropout`` (a `keras.layers.Dropout` rate) on
    the input of every recurrent layer and of the head; ``word_dropout``
    (token tasks): in training, a token's embedding becomes zero with this
    probability (`keras_rnncells.WordDropout`, mode "zero"); ``norm_stabilizer``
    and ``temporal_coherence``: β of that penalty (`keras_rnncells.NormStabilizer`,
    `keras_rnncells.TemporalCoherence`) on the hidden sequence of every
    recurrent layer that returns one (every layer of a language model, all
    but the last of a classifier or regressor); ``batch_norm``: every cell
    with recurrent batch normalization (Cooijmans et al. 2016, the cell option
    ``batch_norm=True``); ``ema_momentum``: the
    optimizer keeps an exponential moving average of the weights (Polyak
    averaging), which replaces them at the end of `fit`; ``model``: "rnn" (the
    recurrent layers above), "residual", "dense", "gated_feedback" or
    "clockwork", "depth_gated" or "grid" (``layers`` layers of ``cell`` joined so,
    `keras_rnncells.layers.stacks.connected_stack`),
    or "treelstm" / "spinn" for a task whose tokens
    spell trees in postfix order (``task.reduce_ids``): the embeddings
    composed along the tree into its root (`keras_rnncells.tree.ShiftReduceEncoder`,
    a binary Tree-LSTM of ``units``, SPINN with a tracking LSTM of ``units``
    too) in place of the recurrent layers. The head reads:

    * regression: ``Dense(1)``, mean squared error;
    * binary: ``Dense(1)`` logits, binary cross-entropy, accuracy;
    * classification: ``Dense(num_classes)`` logits, cross-entropy, accuracy;
    * language_model: ``Dense(vocabulary_size)`` logits at every step,
      cross-entropy ignoring padding targets (0); perplexity is
      ``exp(cross_entropy)``, the metric (the loss also holds any penalty).
      With another ``softmax`` than "full", or ``self_normalization``, the
      head is a `keras_rnncells.VocabularySoftmax` trained by that method
      (``sampler``, ``num_sampled``; ``unigram_counts`` for the unigram
      sampler and for "hierarchical", "blackout" and "negative"), and the
      model reads ``[tokens, targets]`` and gives each
      token's loss, the exact one outside training
      (`language_model_for_serving` gives its tokens-to-logits model).

    ``stateful`` (language models, model "rnn"): every recurrent layer keeps
    its last state for the next batch, whose rows continue the stream rows of
    this one (the stream layout, `keras_rnncells.data.ptb`): the inputs have
    the fixed ``batch_size``. `reset_stream_states` starts the streams again;
    the same call with ``stateful=False`` builds the model for any batch,
    which takes its weights as they are.
    """
    check_positive_int("layers", layers)
    check_choice("model", model, MODELS)
    cells = layer_cells(cell, layers, model)
    if model in TREE_MODELS and not task.reduce_ids:
        raise ValueError(
            f"Argument `model` {model!r} composes along the trees a task's tokens spell in "
            f"postfix order; task {task.name!r} has none (the logic task has)"
        )
    if model in GRID_MODELS and task.vocabulary_size is not None:
        raise ValueError(
            f"Argument `model` {model!r} reads a feature task's sequences as a grid; task "
            f"{task.name!r} reads tokens"
        )
    penalties = {"norm_stabilizer": norm_stabilizer, "temporal_coherence": temporal_coherence}
    rnn_only = {
        "bidirectional": bidirectional,
        "batch_norm": batch_norm,
        "stateful": stateful,
        **penalties,
    }
    if model in TREE_MODELS or model in GRID_MODELS:
        rnn_only["layers"] = layers
    for name, value in rnn_only.items() if model != "rnn" else ():
        if value != RNN_ONLY[name]:
            raise ValueError(
                f"Argument `{name}` applies to model 'rnn' (a plain stack of recurrent "
                f"layers), not to model {model!r}, received: {value!r}"
            )
    word_dropout = check_rate("word_dropout", word_dropout)
    if stateful and (task.kind != "language_model" or bidirectional):
        raise ValueError(
            "Argument `stateful` carries states along a language model's token stream; "
            f"task {task.name!r} is a {task.kind} task"
            + (" and the layers are bidirectional" if bidirectional else "")
        )
    fixed_batch = check_positive_int("batch_size", batch_size) if stateful else None
    if task.vocabulary_size is not None:
        inputs = keras.Input((None,), fixed_batch, dtype="int32", name="tokens")
        x = word_input_layer(word_input, task, embedding_dim)(inputs)
        if word_dropout:
            x = WordDropout(word_dropout, mode="zero", name="word_dropout")(x)
    elif word_dropout:
        raise ValueError(
            f"Argument `word_dropout` applies to token tasks; task {task.name!r} reads "
            f"features, received: {word_dropout}"
        )
    else:
        inputs = keras.Input((None, task.input_dim), name="features")
        x = inputs
    per_step = task.kind == "language_model"
    betas = {name: check_beta(beta, name) for name, beta in penalties.items() if beta}
    if betas and not (per_step or layers > 1):
        name = next(iter(betas))
        raise ValueError(
            f"Argument `{name}` needs a recurrent layer that returns its hidden sequence: "
            f"a language-model task, or layers >= 2; task {task.name!r} has one layer "
            f"and a {task.kind} head, received: {betas[name]}"
        )
    drop = keras.layers.Dropout(check_rate("dropout", dropout)) if dropout else None
    if model in TREE_MODELS:
        x = tree_root(task, model, units, inputs, drop(x) if drop else x)
    elif model in GRID_MODELS:
        x = grid_encoding(model, cells[0], units, drop(x) if drop else x)
    elif model != "rnn":
        stack = connected_stack(model, cell, units, layers, per_step, name="recurrent")
        x = stack(drop(x) if drop else x)
    for index in range(layers if model == "rnn" else 0):
        x = drop(x) if drop else x
        returns_sequence = per_step or index < layers - 1
        layer = RNN(
            get_cell(cells[index])(units, **({"batch_norm": True} if batch_norm else {})),
            return_sequences=returns_sequence,
            stateful=stateful,
            name=f"recurrent_{index + 1}",
        )
        if bidirectional:
            layer = keras.layers.Bidirectional(layer, name=f"bidirectional_{index + 1}")
        x = layer(x)
        for name, beta in betas.items() if returns_sequence else ():
            x = PENALTIES[name](beta, name=f"{name}_{index + 1}")(x)
    name = f"{task.name}_{model if model in TREE_MODELS else '_'.join(dict.fromkeys(cells))}"
    x = drop(x) if drop else x
    if per_step and (softmax != "full" or self_normalization):
        output = VocabularySoftmax(
            task.output_units,
            softmax,
            num_sampled=num_sampled,
            sampler=sampler,
            unigram_counts=unigram_counts,
            self_normalization=self_normalization,
            name="logits",
        )
        targets = keras.Input((None,), fixed_batch, dtype="int32", name="targets")
        model = keras.Model([inputs, targets], output([x, targets]), name=name)
        loss, metrics = token_mean, [TokenLossMean()]
    else:
        model = keras.Model(
            inputs, keras.layers.Dense(task.output_units, name="logits")(x), name=name
        )
        loss, metrics = head(task.kind)
    if unigram_bias:
        if not per_step:
            raise ValueError(
                "Argument `unigram_bias` starts a language model's output bias at the unigram "
                f"log-probabilities; task {task.name!r} is a {task.kind} task"
            )
        start_at_unigram(model.get_layer("logits"), unigram_counts)
    options = {"learning_rate": learning_rate, "clipnorm": clipnorm}
    if ema_momentum is not None:
        options.update(use_ema=True, ema_momentum=check_rate("ema_momentum", ema_momentum))
    optimizer_object = keras.optimizers.get({"class_name": optimizer, "config": options})
    # No XLA for the whole step: the fused path compiles its own loop, and
    # variable-length batches would each compile the step again.
    model.compile(optimizer=optimizer_object, loss=loss, metrics=metrics, jit_compile=False)
    return model


def word_input_layer(
    word_input: str, task: Task, dim: int, name: str = "embedding"
) -> keras.layers.Layer:
    """The layer turning word ids into ``dim``-vectors for ``word_input``
    (``rnncells train ptb --word-input``): "words", ``Embedding(mask_zero=True)``;
    "chars", a `CharacterWordEmbedding` of kind "cnn" spelling the task's vocabulary
    (Kim et al.'s small model: widths 1-6, filters in proportion to the width
    summing to ``dim`` (`proportional_filters`), characters embedded in 15,
    one highway layer); "words+chars", a `GatedWordCharacterEmbedding` of an
    embedding and that char-CNN."""
    check_choice("word_input", word_input, WORD_INPUTS)
    if word_input == "words":
        return keras.layers.Embedding(task.vocabulary_size, dim, mask_zero=True, name=name)
    if len(task.vocabulary) < 2:
        raise ValueError(
            f"Argument `word_input` {word_input!r} spells the words of a task's vocabulary; "
            f"task {task.name!r} lists none"
        )
    table = spell_words(task.vocabulary).table
    filters = proportional_filters(dim)
    if word_input == "chars":
        return CharacterWordEmbedding(table, "cnn", filters=filters, name=name)
    characters = CharacterWordEmbedding(table, "cnn", filters=filters, name="characters")
    return GatedWordCharacterEmbedding(characters, name=name)


def run_label(results: dict[str, Any]) -> str:
    """The cell (or tree model) of a finished run, with the connection of a
    stack other than the plain one: "gru", "gru (clockwork)", "spinn"."""
    model = results["settings"].get("model", "rnn")  # a run from before the setting
    return results["cell"] if model in ("rnn", *TREE_MODELS) else f"{results['cell']} ({model})"


def named_run(name: str) -> dict[str, str]:
    """A name of `compare_cells` (or of an experiment's run) as the setting it
    is: a tree model's ``model``, else a registered cell's ``cell``."""
    return {"model": name} if name in TREE_MODELS else {"cell": name}


def tree_root(task: Task, model: str, units: int, tokens: Any, embedded: Any) -> Any:
    """The root's state of the tree ``tokens`` spell in postfix order, composed
    by the Tree-LSTM (``model`` "treelstm") or by SPINN ("spinn")."""
    transitions = TransitionsFromTokens(task.reduce_ids, name="transitions")(tokens)
    tracking = units if model == "spinn" else 0
    encoder = ShiftReduceEncoder(units, tracking_units=tracking, name="tree")
    return encoder([embedded, transitions])


def head(kind: str) -> tuple[keras.losses.Loss, list]:
    """The loss and metrics of a task kind (the model outputs logits)."""
    if kind == "regression":
        return keras.losses.MeanSquaredError(), []
    if kind == "binary":
        accuracy = keras.metrics.BinaryAccuracy(name="accuracy", threshold=0.0)
        return keras.losses.BinaryCrossentropy(from_logits=True), [accuracy]
    if kind == "classification":
        accuracy = keras.metrics.SparseCategoricalAccuracy(name="accuracy")
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True), [accuracy]
    if kind == "language_model":
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
        return loss, [TokenCrossEntropy()]
    raise ValueError(f"Argument `kind` must be a task kind, received: {kind!r}")


def test_metric(kind: str) -> str:
    """The metric reported for a task kind: its name in `evaluate`."""
    return {"regression": "loss", "language_model": "perplexity"}.get(kind, "accuracy")


def language_model_for_serving(model: keras.Model) -> keras.Model:
    """The tokens-to-logits model of a language model that reads its targets
    too (`build_model` with another softmax): the same layers and weights;
    any other model itself."""
    if len(model.inputs) == 1:
        return model
    output = model.get_layer("logits")
    hidden = output.input[0]
    return keras.Model(model.inputs[0], output(hidden), name=model.name)


def reset_stream_states(model: keras.Model) -> None:
    """Zero the carried states of ``model``'s stateful recurrent layers: the
    streams start again (a no-op for a stateless model)."""
    for layer in model.layers:
        if getattr(layer, "stateful", False):
            layer.reset_state()


class StreamStates(keras.callbacks.Callback):
    """Starts the streams of a stateful language model again at every epoch
    and before every evaluation (the validation stream is another stream)."""

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        reset_stream_states(self.model)

    def on_test_begin(self, logs: dict | None = None) -> None:
        reset_stream_states(self.model)


def stateless_copy(
    model: keras.Model, build: Callable[[], keras.Model], strategy: tf.distribute.Strategy
) -> keras.Model:
    """``build()``, the stateless model for any batch, holding the weights and
    the optimizer's state of the stateful ``model``: what a run keeps and
    serves."""
    with strategy.scope():
        stateless = build()
        stateless.optimizer.build(stateless.trainable_variables)
    stateless.set_weights(model.get_weights())
    for mine, trained in zip(stateless.optimizer.variables, model.optimizer.variables, strict=True):
        mine.assign(trained)
    return stateless


def with_targets(task: Task) -> Task:
    """``task`` whose batches also feed the targets as an input, ``((inputs,
    targets), targets)``: what a language model that reads them trains on."""

    def both(inputs: tf.Tensor, targets: tf.Tensor) -> tuple:
        return (inputs, targets), targets

    splits = {name: getattr(task, name).map(both) for name in ("train", "validation", "test")}
    return dataclasses.replace(task, **splits)


def token_counts(task: Task) -> np.ndarray:
    """How often each id is a training target (the unigram sampler's counts)."""
    counts = np.zeros(task.vocabulary_size)
    for _, targets in task.train:
        counts += np.bincount(np.asarray(targets).ravel(), minlength=task.vocabulary_size)
    counts[0] = 0  # padding
    return counts


def evaluate(model: keras.Model, task: Task) -> dict[str, float]:
    """Test loss and metrics (and perplexity for a language model); a
    stateful model reads the test stream from its start."""
    reset_stream_states(model)
    scores = {
        k: float(v) for k, v in model.evaluate(task.test, return_dict=True, verbose=0).items()
    }
    if task.kind == "language_model":
        scores["perplexity"] = float(np.exp(scores["cross_entropy"]))
    if task.name in CHARACTER_LANGUAGE_MODELS:
        scores["bits_per_character"] = scores["cross_entropy"] / float(np.log(2))
    return scores


# -- one run ------------------------------------------------------------------------
def reproduce_command(task: str, run_dir: Path, settings: Settings) -> str:
    """The ``rnncells train`` command of a run: the flags of its task
    (`keras_rnncells.defaults.task_flags`), in their order; those of
    `ALWAYS_WRITTEN` always, the others where they differ from the task's default."""
    defaults = task_defaults(task).settings
    words = ["rnncells", "train", task]
    for flag in task_flags(task):
        value = getattr(settings, flag.setting)
        if flag.setting == "cell" and settings.model in TREE_MODELS:
            continue  # a tree model has no cell
        if flag.switch:
            words += [flag.option] if value else []
        elif flag.setting in ALWAYS_WRITTEN or value != getattr(defaults, flag.setting):
            words += [flag.option, str(value)]
    return shlex.join([*words, "--out", str(run_dir)])


def train_task(
    task_name: str,
    run_dir: str | Path,
    cell: str | None = None,
    units: int | None = None,
    epochs: int | None = None,
    batch_size: int | None = None,
    seed: int | None = None,
    limit: int | None = None,
    verbose: int | str = "auto",
    strategy: str | tf.distribute.Strategy = "none",
    layers: int | None = None,
    overwrite: bool = False,
    dropout: float | None = None,
    word_dropout: float | None = None,
    norm_stabilizer: float | None = None,
    temporal_coherence: float | None = None,
    batch_norm: bool | None = None,
    model: str | None = None,
    shape: str | None = None,
    optimizer: str | None = None,
    learning_rate: float | None = None,
    learning_rate_decay: float | None = None,
    decay_after: int | None = None,
    patience: int | None = None,
    max_length: int | None = None,
    length: int | None = None,
    softmax: str | None = None,
    sampler: str | None = None,
    num_sampled: int | None = None,
    self_normalization: float | None = None,
    unigram_bias: bool | None = None,
    stateful: bool | None = None,
    train_size: int | None = None,
    word_input: str | None = None,
    embedding_dim: int | None = None,
) -> dict[str, Any]:
    """Train ``task_name`` with its defaults (None keeps a default), evaluate on
    the test split, write the run directory (see the module); returns the
    results written into ``results.json``. An interrupted run resumes when
    started again with the same settings (``epochs`` may grow); one of other
    settings is refused, or with ``overwrite`` started afresh
    (`keras_rnncells.training.run_directory`). ``strategy``: a `tf.distribute`
    strategy or its name in `keras_rnncells.distribute.STRATEGIES` (the batch
    size is global; only the chief writes ``run_dir``)."""
    settings = task_settings(
        task_name,
        cell=cell,
        units=units,
        epochs=epochs,
        batch_size=batch_size,
        seed=seed,
        limit=limit,
        train_size=train_size,
        layers=layers,
        dropout=dropout,
        word_dropout=word_dropout,
        norm_stabilizer=norm_stabilizer,
        temporal_coherence=temporal_coherence,
        batch_norm=batch_norm,
        model=model,
        shape=shape,
        optimizer=optimizer,
        learning_rate=learning_rate,
        learning_rate_decay=learning_rate_decay,
        decay_after=decay_after,
        patience=patience,
        max_length=max_length,
        length=length,
        softmax=softmax,
        sampler=sampler,
        num_sampled=num_sampled,
        self_normalization=self_normalization,
        unigram_bias=unigram_bias,
        stateful=stateful,
        word_input=word_input,
        embedding_dim=embedding_dim,
    )
    if isinstance(strategy, str):
        strategy = make_strategy(strategy)
    with writable_run_dir(run_dir, strategy) as directory:
        return train_run(
            directory,
            settings,
            data=lambda: task_data(task_name, settings, strategy),
            build=lambda data, run_dir: task_fit(settings, strategy, data),
            evaluate=lambda model, data, run_dir: task_evaluation(
                model, task_name, settings, strategy, data, run_dir
            ),
            overwrite=overwrite,
            verbose=verbose,
        )


def task_sizes(task_name: str, settings: Settings) -> dict[str, int]:
    """The size options a run loads its task with: every split capped at
    ``limit`` (`size_options`) and, for a generated task, ``train_size``
    training examples (capped too)."""
    sizes = size_options(task_name, settings.limit)
    if settings.train_size is not None:
        sizes["train_size"] = min(settings.train_size, settings.limit or settings.train_size)
    return sizes


class TaskData(NamedTuple):
    """The data of a task run: the ``task`` and ``build``, `build_model`
    for it with the run's settings (taking ``stateful`` and ``batch_size``)."""

    task: Task
    build: Callable[..., keras.Model]


def task_data(task_name: str, settings: Settings, strategy: tf.distribute.Strategy) -> TaskData:
    """The task of a run of `train_task` and the builder of its model."""
    task = load_task(
        task_name,
        batch_size=settings.batch_size,
        seed=settings.seed,
        **task_sizes(task_name, settings),
        **({"shape": settings.shape} if "shape" in task_options(task_name) else {}),
        **({"max_length": settings.max_length} if settings.max_length is not None else {}),
        **({"steps": (settings.length, settings.length)} if settings.length is not None else {}),
    )
    model_options = (
        "layers",
        "bidirectional",
        "embedding_dim",
        "learning_rate",
        "optimizer",
        "dropout",
        "word_dropout",
        *PENALTIES,
        "batch_norm",
        "ema_momentum",
        "model",
        *SOFTMAX_ONLY,
        "word_input",
    )
    counts = None
    if (
        settings.unigram_bias
        or settings.softmax in COUNTED_SOFTMAXES
        or (settings.softmax in SAMPLED_SOFTMAXES and settings.sampler == "unigram")
    ):
        counts = token_counts(task)
    if settings.stateful and strategy.num_replicas_in_sync > 1:
        raise ValueError(
            "Argument `stateful` needs one replica, which holds every stream row; strategy "
            f"{type(strategy).__name__} has {strategy.num_replicas_in_sync}"
        )
    build = functools.partial(
        build_model,
        task,
        settings.cell,
        settings.units,
        clipnorm=settings.clipnorm,
        unigram_counts=counts,
        **{name: getattr(settings, name) for name in model_options},
    )
    return TaskData(task, build)


def fed_task(task: Task, model: keras.Model) -> Task:
    """``task`` as ``model`` reads it: with the targets as an input too
    where it has two (`with_targets`)."""
    return with_targets(task) if len(model.inputs) == 2 else task


def task_fit(settings: Settings, strategy: tf.distribute.Strategy, data: TaskData) -> Fit:
    """The compiled model of a task run, its variables on the strategy's
    replicas, and its splits."""
    with strategy.scope():  # variables mirrored on every replica
        model = data.build(stateful=settings.stateful, batch_size=settings.batch_size)
    fed = fed_task(data.task, model)
    prepare_model(model, strategy)
    return Fit(
        model,
        fed.train,
        fed.validation,
        ema=settings.ema_momentum is not None,
        patience=settings.patience,
        callbacks=(
            *((StreamStates(),) if settings.stateful else ()),
            *learning_rate_decay(settings),
        ),
        record={"recurrent_parameters": recurrent_parameter_count(model)},
    )


def decayed_learning_rate(base: float, factor: float, after: int, epoch: int) -> float:
    """The learning rate of epoch ``epoch`` (from 0): ``base`` for the first
    ``after`` epochs, then divided by ``factor`` once more every epoch."""
    return base / factor ** max(0, epoch + 1 - after)


def learning_rate_decay(settings: Settings) -> tuple[keras.callbacks.Callback, ...]:
    """The callback setting each epoch's learning rate (`decayed_learning_rate`)
    where ``settings`` decay it; from the epoch's number, so a resumed run
    goes on at the rate it had."""
    if settings.learning_rate_decay == 1.0:
        return ()
    schedule = functools.partial(
        decayed_learning_rate,
        settings.learning_rate,
        settings.learning_rate_decay,
        settings.decay_after,
    )
    return (keras.callbacks.LearningRateScheduler(lambda epoch, rate: schedule(epoch)),)


def task_evaluation(
    model: keras.Model,
    task_name: str,
    settings: Settings,
    strategy: tf.distribute.Strategy,
    data: TaskData,
    run_dir: Path,
) -> Evaluation:
    """The test scores of a trained task model, what the run followed and
    its figures; the model saved is the stateless one that serves tokens
    to logits (`stateless_copy`, `language_model_for_serving`). With
    ``batch_norm``, the statistics are first re-estimated on the final
    weights over about `REESTIMATE_ROWS` training rows
    (`keras_rnncells.reestimate_batch_norm`; a stateful model's on its
    stateless copy)."""
    task = data.task
    details: dict[str, Any] = {}
    if settings.batch_norm:
        measured = stateless_copy(model, data.build, strategy) if settings.stateful else model
        details["batch_norm_reestimated_over"] = reestimate_batch_norm(
            measured, fed_task(task, measured).train, -(-REESTIMATE_ROWS // settings.batch_size)
        )
        if measured is not model:
            model.set_weights(measured.get_weights())
    scores = evaluate(model, fed_task(task, model))
    if settings.stateful:
        model = stateless_copy(model, data.build, strategy)
    served = language_model_for_serving(model)
    if served is not model and settings.softmax not in NORMALIZED_SOFTMAXES:
        scores["mean_abs_log_z"] = mean_abs_log_partition(served, task)
    if "word_input" in task_flag_names(task_name):
        scores.update(rare_word_scores(served, task, token_counts(task)))
    metric = "bits_per_character" if "bits_per_character" in scores else test_metric(task.kind)
    results = {
        "task": task_name,
        "kind": task.kind,
        "description": task.description,
        "cell": settings.model if settings.model in TREE_MODELS else settings.cell,
        "metric": "mse" if metric == "loss" else metric,
        "test_metric": scores[metric],
        "test": scores,
    }
    details |= {
        "distribution": describe(strategy),
        "defaults_follow": task_defaults(task_name).source,
        "package_version": package_version(),
        "command": reproduce_command(task_name, run_dir, settings),
    }
    if settings.model == "rnn" and settings.cell == "mufuru" and task.vocabulary_size is not None:
        details["operation_weights"] = average_operation_weights(served, task)
    details["plots"] = write_plots(run_dir, details)
    return Evaluation(results, details, served)


def mean_abs_log_partition(model: keras.Model, task: Task) -> float:
    """The mean |log Z| of a language model's logits over the test targets:
    how far from normalized (0) its unnormalized scores are."""
    total, count = 0.0, 0
    for tokens, targets in task.test:
        log_z = tf.reduce_logsumexp(model(tokens, training=False), -1)
        keep = np.asarray(targets) != 0
        total += float(np.abs(np.asarray(log_z))[keep].sum())
        count += int(keep.sum())
    return total / max(count, 1)


def package_version() -> str:
    """The installed keras_rnncells' version ("unknown" where it runs uninstalled)."""
    try:
        return importlib.metadata.version("keras_rnncells")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def recurrent_parameter_count(model: keras.Model) -> int:
    """Trainable parameters of the recurrent layers or the tree encoder
    (embedding and head excluded)."""
    recurrent = (RNN, keras.layers.Bidirectional, StackedRNN, ShiftReduceEncoder)
    return sum(parameter_count(layer) for layer in model.layers if isinstance(layer, recurrent))


# -- figures --------------------------------------------------------------------------
def figure() -> Any:
    """A new matplotlib ``Figure`` (no pyplot state), or None without matplotlib."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure(figsize=(6.4, 4.0), layout="constrained")


def write_plots(run_dir: Path, results: dict) -> dict[str, str]:
    """The run's figures (file names by what they show), or a note why none."""
    if figure() is None:
        return {"note": PLOT_NOTE}
    plots = {"learning_curve": plot_learning_curve(run_dir / "history.csv", run_dir)}
    if "operation_weights" in results:
        plots["operation_weights"] = plot_operation_weights(results["operation_weights"], run_dir)
    return plots


def plot_learning_curve(history_csv: Path, run_dir: Path) -> str:
    """Training and validation loss (and accuracy, if recorded) per epoch."""
    with open(history_csv, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    epochs = [int(row["epoch"]) + 1 for row in rows]
    shown = [name for name in ("loss", "accuracy") if name in rows[0]]
    fig = figure()
    for index, name in enumerate(shown):
        axes = fig.add_subplot(1, len(shown), index + 1)
        for prefix, label in (("", "training"), ("val_", "validation")):
            if prefix + name in rows[0]:
                axes.plot(epochs, [float(r[prefix + name]) for r in rows], "o-", label=label)
        axes.set(xlabel="epoch", ylabel=name)
        axes.legend()
    return save_figure(fig, run_dir / "learning_curve.png")


def save_figure(fig: Any, path: Path) -> str:
    write_atomically(path, lambda temporary: fig.savefig(temporary, dpi=100, format="png"))
    return path.name


def mufuru_layer(model: keras.Model) -> RNN:
    """The first recurrent layer (its forward half when bidirectional)."""
    names = [layer.name for layer in model.layers]
    if "bidirectional_1" in names:
        return model.get_layer("bidirectional_1").forward_layer
    return model.get_layer("recurrent_1")


def average_operation_weights(
    model: keras.Model, task: Task, max_batches: int = 50
) -> dict[str, dict[str, float]]:
    """The MuFuRU paper's Figure 1b: the first layer's operation weights
    (averaged over units) averaged over the test steps reading each symbol,
    for the `MAX_SYMBOLS` most frequent symbols of up to ``max_batches`` test
    batches."""
    cell = mufuru_layer(model).cell
    embedding = model.get_layer("embedding")
    sums = np.zeros((task.vocabulary_size, len(cell.operations)))
    counts = np.zeros(task.vocabulary_size)
    for tokens, _ in task.test.take(max_batches):
        mask = tokens != 0
        p = keras.ops.mean(cell.operation_weights(embedding(tokens), mask), axis=-1)
        ids, keep = np.asarray(tokens), np.asarray(mask)
        np.add.at(sums, ids[keep], np.asarray(p)[keep])
        np.add.at(counts, ids[keep], 1)
    shown = [i for i in np.argsort(-counts, kind="stable")[:MAX_SYMBOLS] if counts[i] > 0]
    return {
        task.vocabulary[i]: dict(zip(cell.operations, (sums[i] / counts[i]).tolist()))
        for i in sorted(shown)
    }


def plot_operation_weights(weights: dict[str, dict[str, float]], run_dir: Path) -> str:
    """A symbols × operations heat map of `average_operation_weights`."""
    symbols = list(weights)
    operations = list(weights[symbols[0]])
    values = np.array([[weights[s][o] for o in operations] for s in symbols])
    fig = figure()
    axes = fig.add_subplot()
    image = axes.imshow(values, cmap="viridis", vmin=0.0, aspect="auto")
    axes.set_xticks(range(len(operations)), operations, rotation=45)
    axes.set_yticks(range(len(symbols)), symbols)
    axes.set(xlabel="operation", ylabel="input symbol", title="average operation weight")
    fig.colorbar(image, ax=axes)
    return save_figure(fig, run_dir / "operation_weights.png")


# -- comparing cells ------------------------------------------------------------------
def compare_cells(
    task_name: str,
    run_dir: str | Path,
    cells: Sequence[str],
    units: Sequence[int] | None = None,
    epochs: int | None = None,
    batch_size: int | None = None,
    seed: int | None = None,
    limit: int | None = None,
    overwrite: bool = False,
    verbose: int | str = "auto",
    shape: str | None = None,
) -> dict[str, Any]:
    """One `train_task` run per cell and hidden size, in ``run_dir/CELL-UNITS``
    (``units`` None: the task's default); a name in ``cells`` may also be a
    tree model of `TREE_MODELS` ("treelstm", "spinn"), run as ``model``;
    ``shape``: the logic task's formulas. A sub-run already finished is
    reused unless ``overwrite``, so comparisons can grow run by run. Writes
    ``compare.json`` and, over several sizes, ``hidden_size.png`` (test metric
    against units, the MuFuRU paper's Figure 1a); returns the comparison. A
    second comparison into ``run_dir`` while this one runs is refused
    (`keras_rnncells.locks.run_lock`)."""
    if not cells:
        raise ValueError("Argument `cells` must name at least one cell, received none")
    for name in cells:  # every cell and the task checked before training
        task_settings(task_name, shape=shape, **named_run(name))
    run_dir = Path(run_dir)
    with run_lock(run_dir):  # one comparison at a time in run_dir
        sizes = list(units) if units else [None]
        rows = []
        for size in sizes:
            for name in cells:
                units_of_run = task_settings(task_name, units=size).units
                sub_dir = run_dir / f"{name}-{units_of_run}"
                finished = sub_dir / "results.json"
                if finished.exists() and not overwrite:
                    results = json.loads(finished.read_text(encoding="utf-8"))
                else:
                    results = train_task(
                        task_name,
                        sub_dir,
                        units=size,
                        epochs=epochs,
                        batch_size=batch_size,
                        seed=seed,
                        limit=limit,
                        verbose=verbose,
                        overwrite=overwrite,
                        shape=shape,
                        **named_run(name),
                    )
                rows.append(
                    {
                        "cell": name,
                        "units": results["settings"]["units"],
                        "parameters": results["parameters"],
                        "recurrent_parameters": results["recurrent_parameters"],
                        results["metric"]: results["test_metric"],
                        "seconds_per_epoch": float(np.median(results["seconds_per_epoch"])),
                        "run_dir": str(sub_dir),
                    }
                )
        comparison: dict[str, Any] = {"task": task_name, "metric": results["metric"], "runs": rows}
        if len(sizes) > 1:
            comparison["plots"] = plot_against_units(comparison, run_dir)
        write_json(run_dir / "compare.json", comparison)
        return comparison


def plot_against_units(comparison: dict[str, Any], run_dir: Path) -> dict[str, str]:
    """``hidden_size.png``: each cell's test metric against its hidden size,
    the mean of runs of the same size (seeds) as a line, each run as a dot."""
    fig = figure()
    if fig is None:
        return {"note": PLOT_NOTE}
    axes = fig.add_subplot()
    metric = comparison["metric"]
    for name in dict.fromkeys(row["cell"] for row in comparison["runs"]):
        by_size: dict[int, list[float]] = {}
        for row in comparison["runs"]:
            if row["cell"] == name:
                by_size.setdefault(row["units"], []).append(row[metric])
        cell_sizes = sorted(by_size)
        means = [np.mean(by_size[u]) for u in cell_sizes]
        (line,) = axes.plot(cell_sizes, means, "o-", label=name)
        if any(len(values) > 1 for values in by_size.values()):  # repeated runs (seeds)
            points = [(u, value) for u in cell_sizes for value in by_size[u]]
            axes.plot(*zip(*points), ".", color=line.get_color(), alpha=0.4)
    axes.set(xscale="log", xlabel="hidden units", ylabel=f"test {metric}")
    sizes = sorted({row["units"] for row in comparison["runs"]})
    axes.set_xticks(sizes, [str(size) for size in sizes], minor=False)
    axes.minorticks_off()
    axes.set_title(comparison["task"])
    axes.legend()
    return {"hidden_size": save_figure(fig, run_dir / "hidden_size.png")}


# -- the command line -----------------------------------------------------------------
def train_from_arguments(args: Any, given: dict[str, Any]) -> None:
    """``rnncells train TASK``: the run of the settings its flags ``given``,
    then its test metric."""
    results = train_task(
        args.name, args.out, **given, strategy=args.strategy, overwrite=args.overwrite
    )
    seconds = np.median(results["seconds_per_epoch"])
    print(
        f"\n{args.name}, {run_label(results)}: test {results['metric']} "
        f"{results['test_metric']:.4f}; {results['parameters']} parameters, "
        f"{seconds:.2f} s/epoch (median)"
    )
    print(f"Model, results.json, history and logs in {args.out}")
