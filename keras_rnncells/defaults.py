"""Plain data that `rnncells` reads while parsing its arguments, importable
without TensorFlow: the applications' names, modules and help lines (`APPS`,
read by the app registry `keras_rnncells.apps.registry`), the default
`Settings` of each data task
(`TASK_DEFAULTS`, used by `keras_rnncells.experiments`), the models a task
can compose with (`MODELS`), the names of the
distribution strategies (`STRATEGIES`, built by `keras_rnncells.distribute`)
and the check of ``TF_CONFIG`` (`cluster_config`), so that a malformed one is
told before TensorFlow is imported."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from typing import Any

STRATEGIES = ("none", "mirrored", "multiworker")
# What a data task's model is: recurrent layers of the run's cell, stacked
# ("rnn", plain), or joined as the literature joins them (`STACKS`:
# `keras_rnncells.StackedRNN`'s residual and dense connections, the
# gated-feedback, clockwork, depth-gated LSTM and grid LSTM cells); or a
# tree model composing along the tree the tokens spell in postfix order
# (`TREE_MODELS`: the binary Tree-LSTM and SPINN,
# `keras_rnncells.tree.ShiftReduceEncoder`), for tasks whose tokens do.
# The tokenizers that `rnncells train sentiment|seq2seq --tokenizer` learns
# (`keras_rnncells.text.learn_tokenizer`): WordPiece, SentencePiece's BPE and
# unigram models, Unicode characters.
TOKENIZERS = ("wordpiece", "bpe", "unigram", "char")
STACKS = ("rnn", "residual", "dense", "gated_feedback", "clockwork", "depth_gated", "grid")
TREE_MODELS = ("treelstm", "spinn")
MODELS = (*STACKS, *TREE_MODELS)


@dataclasses.dataclass(frozen=True)
class AppListing:
    """Where an application registers itself (``module`` calls
    `keras_rnncells.apps.registry.register_app` with the app's name) and its
    one-line help, known without importing the module."""

    module: str
    help: str


# Every application, by the name `rnncells train NAME` and the registry give
# it; a test holds each module to registering exactly its listed name.
APPS: dict[str, AppListing] = {
    "color-namer": AppListing(
        "keras_rnncells.apps.color_namer", "rgb -> color name, shipped XKCD list"
    ),
    "name-to-color": AppListing(
        "keras_rnncells.apps.name_to_color", "color name -> rgb, shipped XKCD list"
    ),
    "sentiment": AppListing(
        "keras_rnncells.apps.sentiment",
        "text -> probability of positive; SST-2 (--dataset imdb: IMDB), tokenized in the model",
    ),
    "seq2seq": AppListing(
        "keras_rnncells.apps.seq2seq",
        "date normalization, 'Nov 21, 2026' -> '2026-11-21': a character-level "
        "encoder-decoder with attention",
    ),
}


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything a run depends on besides the data and the package version."""

    cell: str = "gru"
    units: int = 64
    epochs: int = 10
    batch_size: int = 32
    learning_rate: float = 1e-3
    optimizer: str = "adam"  # one of OPTIMIZERS
    clipnorm: float = 1.0
    bidirectional: bool = False
    layers: int = 1
    embedding_dim: int = 64  # token tasks only
    dropout: float = 0.0  # on the recurrent layers' inputs and on the head's input
    word_dropout: float = 0.0  # token tasks: a token's embedding is zeroed with this probability
    # β of a penalty on every recurrent layer's hidden sequence (0: none)
    norm_stabilizer: float = 0.0
    temporal_coherence: float = 0.0
    batch_norm: bool = False  # recurrent batch normalization in every recurrent layer
    # None: no averaging; else the optimizer keeps an exponential moving average
    # of the weights with this momentum, used for validation, test and the saved model
    ema_momentum: float | None = None
    model: str = "rnn"  # one of MODELS
    shape: str = "chain"  # logic: formulas as chains or random trees (its `shape` option)
    max_length: int | None = None  # text tasks: tokens kept per text (None: the task's default)
    seed: int = 0
    limit: int | None = None
    # None: train all the epochs; else stop after this many epochs without a
    # new lowest validation loss, keeping the best epoch's weights
    patience: int | None = None
    # language models: the output layer's training loss (one of SOFTMAXES),
    # its sampler and samples per batch ("sampled", "nce"), and α of self-normalization
    softmax: str = "full"
    sampler: str = "log_uniform"
    num_sampled: int = 64
    self_normalization: float = 0.0
    # language models: the output bias starts at the log unigram probabilities
    # of the training tokens (keras_rnncells.softmax.start_at_unigram), not at 0
    unigram_bias: bool = False
    # language models: every recurrent layer carries each stream row's state
    # from one window to the next (truncated backpropagation through time)
    stateful: bool = False


# The optimizers a task run may name (Keras' names).
OPTIMIZERS = ("adam", "rmsprop", "sgd")
# A language model's output-layer training losses (keras_rnncells.softmax), those of
# them that draw noise words, and the samplers they draw them from.
SOFTMAXES = ("full", "sampled", "nce", "class")
SAMPLED_SOFTMAXES = ("sampled", "nce")
SAMPLERS = ("log_uniform", "unigram")


@dataclasses.dataclass(frozen=True)
class TaskDefaults:
    """A task's default `Settings`, what they follow, and its one-line help."""

    settings: Settings
    source: str
    help: str


OURS = "our choice (no paper setting known to us)"
TASK_DEFAULTS: dict[str, TaskDefaults] = {
    "adding": TaskDefaults(
        Settings(units=100, bidirectional=True, epochs=50, batch_size=100),
        "MGU paper (Zhou et al. 2016), adding problem: bidirectional, 100 hidden units; "
        f"optimizer, learning rate, batch and epochs: {OURS}",
        "adding problem, T 50-55: regress the sum of two marked values (MSE)",
    ),
    "logic": TaskDefaults(
        Settings(units=8, embedding_dim=8, epochs=30, batch_size=32, learning_rate=1e-2),
        "MuFuRU paper (Weissenborn & Rocktäschel 2016) §4.1: 8 hidden units; embedding "
        f"size, optimizer, learning rate, batch and epochs: {OURS}",
        "truth value of propositional formulas in postfix order (MuFuRU paper §4.1)",
    ),
    "anbn": TaskDefaults(
        Settings(units=16, embedding_dim=4, epochs=20, learning_rate=1e-2),
        OURS,
        "recognize a^n b^n against near misses; longer n at test",
    ),
    "anbncn": TaskDefaults(
        Settings(units=16, embedding_dim=4, epochs=20, learning_rate=1e-2),
        OURS,
        "recognize a^n b^n c^n against near misses; longer n at test",
    ),
    "mnist_rows": TaskDefaults(
        Settings(units=100, epochs=20, batch_size=100),
        "MGU paper, MNIST read row by row (28 steps of 28 pixels): 100 hidden units; "
        f"the rest: {OURS}",
        "MNIST read row by row, 28 steps of 28 pixels, 10 classes",
    ),
    "mnist_pixels": TaskDefaults(
        Settings(units=100, epochs=20, batch_size=100),
        f"100 hidden units as for mnist_rows; the rest: {OURS}",
        "MNIST read pixel by pixel, 784 steps, 10 classes",
    ),
    "imdb": TaskDefaults(
        Settings(units=100, embedding_dim=128, epochs=10),
        "MGU paper, IMDB: word embeddings of 128, 100 hidden units; the rest: " + OURS,
        "IMDB movie reviews, positive or negative",
    ),
    "sst2": TaskDefaults(
        Settings(units=100, embedding_dim=128, epochs=3, dropout=0.5, ema_momentum=0.999),
        "sizes of the IMDB setting; dropout, epochs, batch and the weight average: our "
        "choice, by validation accuracy over a few settings (no paper setting known to us)",
        "Stanford Sentiment Treebank, binary (trained on the GLUE SST-2 phrases)",
    ),
    "sst1": TaskDefaults(
        Settings(units=100, embedding_dim=128, epochs=10),
        f"sizes of the IMDB setting; the rest: {OURS}",
        "Stanford Sentiment Treebank, 5 classes",
    ),
    "ptb": TaskDefaults(
        Settings(units=200, layers=2, embedding_dim=200, epochs=13, batch_size=20, clipnorm=5.0),
        "Zaremba et al. (2014) small model: 2 layers of 200, embedding 200, batch 20, 35 "
        "steps, 13 epochs, clipnorm 5; Adam at 1e-3 in place of their SGD schedule, and "
        "stateless windows (no state carried across batches) unless --stateful",
        "Penn Treebank word-level language model (test perplexity)",
    ),
    "imdb_lm": TaskDefaults(
        Settings(units=200, embedding_dim=200, epochs=2, batch_size=20, clipnorm=5.0),
        f"PTB's sizes and batches, one layer; the rest: {OURS}",
        "IMDB reviews as a word-level language model over 50,000 words (test perplexity)",
    ),
}
# The language-model tasks: the ones whose output layer --softmax chooses.
LANGUAGE_MODELS = ("ptb", "imdb_lm")


def cluster_config(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``TF_CONFIG`` of a multi-worker run, parsed and checked: a
    ``cluster`` of ``worker`` (and optionally one ``chief``) "host:port"
    addresses, and this process's ``task`` (``type`` and ``index``)."""
    text = (os.environ if environ is None else environ).get("TF_CONFIG")
    expected = (
        'expected JSON like {"cluster": {"worker": ["host1:port", "host2:port"]}, '
        '"task": {"type": "worker", "index": 0}}'
    )
    if not text:
        raise ValueError(f"Environment variable `TF_CONFIG` is not set; {expected}")
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"Environment variable `TF_CONFIG` is not JSON ({error}); {expected}"
        ) from None
    cluster = config.get("cluster") if isinstance(config, dict) else None
    task = config.get("task") if isinstance(config, dict) else None
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise ValueError(f"Environment variable `TF_CONFIG` lacks `cluster` or `task`; {expected}")
    for role, addresses in cluster.items():
        if (
            role not in ("chief", "worker")
            or not isinstance(addresses, list)
            or not addresses
            or not all(isinstance(a, str) and ":" in a for a in addresses)
        ):
            raise ValueError(
                "Environment variable `TF_CONFIG`: `cluster` must map 'worker' (and optionally "
                f"'chief') to lists of 'host:port', received: {cluster!r}"
            )
    roles = cluster.get(task.get("type"), [])
    index = task.get("index")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(roles):
        raise ValueError(
            f"Environment variable `TF_CONFIG`: `task` must name a role of the cluster "
            f"({sorted(cluster)}) and an index into its list, received: {task!r}"
        )
    return config
