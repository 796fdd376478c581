"""Plain data that `rnncells` reads while parsing its arguments, importable
without TensorFlow: the applications' names, modules, help lines and flags
(`APPS`, read by the app registry `keras_rnncells.apps.registry`), the
default `Settings` of each data task and the flags it reads (`TASK_DEFAULTS`,
`task_flags`, used by `keras_rnncells.experiments`; `train_flags` gives any
trainer's), the models a task can compose with (`MODELS`), the names of the
distribution strategies (`STRATEGIES`, built by `keras_rnncells.distribute`)
and the check of ``TF_CONFIG`` (`cluster_config`), so that a malformed one is
told before TensorFlow is imported. The flags are `keras_rnncells.flags.Flag`
records, from which ``rnncells train`` builds its parser."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from typing import Any

from keras_rnncells.flags import (
    BATCH_SIZE,
    CELL,
    EPOCHS,
    LIMIT,
    RUN_FLAGS,
    SEED,
    UNITS,
    Flag,
    decay_factor,
    non_negative_int,
    penalty_weight,
    positive_float,
    positive_int,
    rate,
)

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
# A feature task's sequences read as 2-D grids (`keras_rnncells.layers.grid_encoders`).
GRID_MODELS = ("mdrnn", "rowlstm")
MODELS = (*STACKS, *TREE_MODELS, *GRID_MODELS)


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything a run depends on besides the data and the package version."""

    cell: str = "gru"
    units: int = 64
    epochs: int = 10
    batch_size: int = 32
    learning_rate: float = 1e-3
    # the learning rate is divided by this factor every epoch after the first
    # `decay_after` epochs (1: constant; Zaremba et al. 2014 took 1.2 after 6)
    learning_rate_decay: float = 1.0
    decay_after: int = 0
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
    # adding: every sequence's length T (None: the task's default, T drawn from 50-55)
    length: int | None = None
    seed: int = 0
    limit: int | None = None
    # generated tasks: training examples to generate (None: the task's own number)
    train_size: int | None = None
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
    # ptb: what a word's input vector is read from (one of WORD_INPUTS)
    word_input: str = "words"


# The optimizers a task run may name (Keras' names).
OPTIMIZERS = ("adam", "rmsprop", "sgd")
# A language model's output-layer training losses (keras_rnncells.softmax), those of
# them that draw noise words, and the samplers they draw them from.
SOFTMAXES = ("full", "sampled", "nce", "class", "hierarchical", "blackout", "negative")
SAMPLED_SOFTMAXES = ("sampled", "nce", "blackout", "negative")
# Those that read the training counts whatever the sampler (the hierarchical
# softmax: its Huffman tree), and those whose outputs are normalized
# log-probabilities rather than logits (no |log Z| to report).
COUNTED_SOFTMAXES = ("hierarchical", "blackout", "negative")
NORMALIZED_SOFTMAXES = ("class", "hierarchical")
SAMPLERS = ("log_uniform", "unigram")


@dataclasses.dataclass(frozen=True)
class TaskDefaults:
    """A task's default `Settings`, what they follow, its one-line help and
    the flags of ``rnncells train`` it reads besides those every task reads
    (`task_flags`)."""

    settings: Settings
    source: str
    help: str
    flags: tuple[Flag, ...] = ()


# The flags some tasks read: the generated tasks' training size, the logic
# task's formulas, the text classification tasks' lengths, the language
# models' output layer and states.
SHAPE = Flag(
    "shape",
    "logic: formulas as chains (default, the MuFuRU paper's) or random binary trees",
    choices=("chain", "tree"),
)
GENERATED_FLAGS = (
    Flag(
        "train_size",
        "adding, logic, anbn, anbncn: generate N training examples (default: adding 10000, "
        "logic 1000, anbn and anbncn 2000; --limit caps it)",
        positive_int,
        metavar="N",
    ),
)
LENGTH = Flag(
    "length",
    "adding: every sequence has T = N steps, the two marked values one in each half "
    "(default: T drawn from 50-55 per sequence; at least 2)",
    positive_int,
    metavar="N",
)
TEXT_CLASSIFICATION_FLAGS = (
    Flag(
        "max_length",
        "imdb, sst2, sst1: keep each text's first N tokens (default: imdb 400, sst none)",
        positive_int,
        metavar="N",
    ),
)
LANGUAGE_MODEL_FLAGS = (
    Flag(
        "softmax",
        "language models (ptb, imdb_lm): the output layer's training loss: full "
        "(default); sampled, sampled softmax (Jean et al. 2015); nce, noise-contrastive "
        "estimation (Mnih & Teh 2012); class, a class-factored softmax over frequency bins; "
        "hierarchical, over the Huffman tree of the training counts (Morin & Bengio 2005); "
        "blackout (Ji et al. 2016); negative, negative sampling (Mikolov et al. 2013); "
        "validation and test use the exact one",
        choices=SOFTMAXES,
    ),
    Flag(
        "sampler",
        "language models, --softmax sampled or nce: the noise words' distribution, "
        "log_uniform (Zipfian by frequency rank, default) or unigram (the training counts)",
        choices=SAMPLERS,
    ),
    Flag(
        "num_sampled",
        "language models, --softmax sampled, nce, blackout or negative: noise words per "
        "batch (default 64)",
        positive_int,
        metavar="K",
    ),
    Flag(
        "self_normalization",
        "language models, --softmax full: add α·(log Z)² to the loss, so that the "
        "logits come out about normalized (Devlin et al. 2014; default 0)",
        penalty_weight,
        metavar="ALPHA",
    ),
    Flag(
        "unigram_bias",
        "language models: the output layer's bias starts at the log-probabilities of the "
        "training words' (add-one smoothed) frequencies in place of zeros, so that training "
        "does not first spend epochs learning them (default: zeros)",
        switch=True,
    ),
    Flag(
        "stateful",
        "language models: each recurrent layer carries every stream row's state from "
        "one batch to the next (truncated backpropagation through time, as Zaremba et al. "
        "2014); the streams start again every epoch and for each evaluation",
        switch=True,
    ),
)
# What ``rnncells train ptb --word-input`` reads a word's vector from
# (keras_rnncells.experiments.word_input_layer).
WORD_INPUTS = ("words", "chars", "words+chars")
WORD_INPUT = Flag(
    "word_input",
    "ptb: each word's input vector: words, an embedding (default); chars, built from its "
    "characters by a char-CNN with a highway layer (Kim et al. 2016); words+chars, the "
    "embedding and that vector mixed by a gate (Miyamoto & Cho 2016); --embedding-dim "
    "sizes each; the test perplexity on rare words (training frequency below 10) is reported",
    choices=WORD_INPUTS,
)
WORD_INPUT_FLAGS = (
    WORD_INPUT,
    Flag(
        "embedding_dim",
        "ptb: the size of each word's input vector (default 200): the embedding's, and the "
        "char-CNN's filters in all (--word-input chars, words+chars)",
        positive_int,
        metavar="N",
    ),
)
OURS = "our choice (no paper setting known to us)"
TASK_DEFAULTS: dict[str, TaskDefaults] = {
    "adding": TaskDefaults(
        Settings(units=100, bidirectional=True, epochs=50, batch_size=100),
        "MGU paper (Zhou et al. 2016), adding problem: bidirectional, 100 hidden units; "
        f"optimizer, learning rate, batch and epochs: {OURS}",
        "adding problem, T 50-55 (--length sets it): regress the sum of two marked values (MSE)",
        flags=(*GENERATED_FLAGS, LENGTH),
    ),
    "logic": TaskDefaults(
        Settings(units=8, embedding_dim=8, epochs=30, batch_size=32, learning_rate=1e-2),
        "MuFuRU paper (Weissenborn & Rocktäschel 2016) §4.1: 8 hidden units; embedding "
        f"size, optimizer, learning rate, batch and epochs: {OURS}",
        "truth value of propositional formulas in postfix order (MuFuRU paper §4.1)",
        flags=(*GENERATED_FLAGS, SHAPE),
    ),
    "anbn": TaskDefaults(
        Settings(units=16, embedding_dim=4, epochs=20, learning_rate=1e-2),
        OURS,
        "recognize a^n b^n against near misses; longer n at test",
        flags=GENERATED_FLAGS,
    ),
    "anbncn": TaskDefaults(
        Settings(units=16, embedding_dim=4, epochs=20, learning_rate=1e-2),
        OURS,
        "recognize a^n b^n c^n against near misses; longer n at test",
        flags=GENERATED_FLAGS,
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
        flags=TEXT_CLASSIFICATION_FLAGS,
    ),
    "sst2": TaskDefaults(
        Settings(units=100, embedding_dim=128, epochs=3, dropout=0.5, ema_momentum=0.999),
        "sizes of the IMDB setting; dropout, epochs, batch and the weight average: our "
        "choice, by validation accuracy over a few settings (no paper setting known to us)",
        "Stanford Sentiment Treebank, binary (trained on the GLUE SST-2 phrases)",
        flags=TEXT_CLASSIFICATION_FLAGS,
    ),
    "sst1": TaskDefaults(
        Settings(units=100, embedding_dim=128, epochs=10),
        f"sizes of the IMDB setting; the rest: {OURS}",
        "Stanford Sentiment Treebank, 5 classes",
        flags=TEXT_CLASSIFICATION_FLAGS,
    ),
    "ptb": TaskDefaults(
        Settings(units=200, layers=2, embedding_dim=200, epochs=13, batch_size=20, clipnorm=5.0),
        "Zaremba et al. (2014) small model: 2 layers of 200, embedding 200, batch 20, 35 "
        "steps, 13 epochs, clipnorm 5; Adam at 1e-3 in place of their SGD schedule, and "
        "stateless windows (no state carried across batches) unless --stateful",
        "Penn Treebank word-level language model (test perplexity)",
        flags=(*LANGUAGE_MODEL_FLAGS, *WORD_INPUT_FLAGS),
    ),
    "ptb_chars": TaskDefaults(
        Settings(units=256, embedding_dim=32, epochs=10, batch_size=32, clipnorm=5.0),
        f"one layer of 256, characters embedded in 32, windows of 100, clipnorm 5: {OURS}",
        "Penn Treebank character-level language model (test bits per character)",
        flags=LANGUAGE_MODEL_FLAGS,
    ),
    "imdb_lm": TaskDefaults(
        Settings(units=200, embedding_dim=200, epochs=2, batch_size=20, clipnorm=5.0),
        f"PTB's sizes and batches, one layer; the rest: {OURS}",
        "IMDB reviews as a word-level language model over 50,000 words (test perplexity)",
        flags=LANGUAGE_MODEL_FLAGS,
    ),
}
# The language-model tasks: the ones whose output layer --softmax chooses.
LANGUAGE_MODELS = ("ptb", "imdb_lm", "ptb_chars")
# The language models of characters: their test metric is bits per character.
CHARACTER_LANGUAGE_MODELS = ("ptb_chars",)

# Read by every task and by the sentiment application.
WORD_DROPOUT = Flag(
    "word_dropout",
    "sentiment: in training, each word piece becomes [UNK] with this probability; "
    "token tasks: each token's embedding becomes zero (word dropout, Iyyer et al. 2015; "
    "default 0)",
    rate,
    metavar="RATE",
)
# What every task reads besides `RUN_FLAGS`: the model's composition,
# regularization and optimizer.
TASK_FLAGS = (
    Flag(
        "model",
        "data tasks: rnn (default), --layers recurrent layers of --cell, stacked; "
        "residual or dense, the same joined by residual (Wu et al. 2016) or dense (Zhou et "
        "al. 2016) connections; gated_feedback, layers that read each other's last states "
        "through global reset gates (Chung et al. 2015); clockwork, --layers modules of "
        "periods 1, 2, 4, ... (Koutník et al. 2014); depth_gated, LSTM layers whose memory "
        "cells are gated across depth (Yao et al. 2015; --cell lstm); grid, a 2-D grid LSTM "
        "along time and depth (Kalchbrenner et al. 2015; --cell lstm); treelstm or spinn, a "
        "binary Tree-LSTM (Tai et al. 2015) or SPINN (Bowman et al. 2016) along the tree "
        "the tokens spell in postfix order (logic); mdrnn or rowlstm, the features read "
        "as a 2-D grid (steps × features) by a multi-dimensional RNN of --cell in four "
        "directions (Graves et al. 2007) or PixelRNN's row LSTM (van den Oord et al. 2016; "
        "--cell lstm)",
        choices=MODELS,
    ),
    Flag("layers", "data tasks: stacked recurrent layers", positive_int),
    Flag(
        "dropout",
        "data tasks: dropout on the input of every recurrent layer and of the output "
        "layer, the connections between layers and not those through time (Zaremba et al. "
        "2014; default: "
        + ", ".join(
            f"{defaults.settings.dropout} for {name}"
            for name, defaults in TASK_DEFAULTS.items()
            if defaults.settings.dropout
        )
        + ", 0 for the others)",
        rate,
        metavar="RATE",
    ),
    WORD_DROPOUT,
    *(
        Flag(
            name,
            f"data tasks: add {penalty} on every recurrent layer's hidden sequence "
            "(a language model's layers, or all but the last; default 0: none)",
            penalty_weight,
            metavar="BETA",
        )
        for name, penalty in (
            (
                "norm_stabilizer",
                "the norm-stabilizer, β·mean_t (‖h_t‖ − ‖h_t−1‖)², Krueger & Memisevic 2016",
            ),
            (
                "temporal_coherence",
                "temporal coherence, β·mean_t ‖h_t − h_t−1‖², Jonschkowski & Brock 2015",
            ),
        )
    ),
    Flag(
        "batch_norm",
        "data tasks: recurrent batch normalization in every recurrent layer "
        "(Cooijmans et al. 2016: the input and recurrent products, and an LSTM's cell state, "
        "normalized with per-step statistics; cells built on the dense-gates helper)",
        switch=True,
    ),
    Flag("optimizer", "data tasks: the optimizer (default adam)", choices=OPTIMIZERS),
    Flag(
        "learning_rate",
        "data tasks: the optimizer's learning rate (default 0.001)",
        positive_float,
        metavar="RATE",
    ),
    Flag(
        "learning_rate_decay",
        "data tasks: divide the learning rate by FACTOR every epoch after the first "
        "--decay-after epochs (Zaremba et al. 2014: 1.2 after 6, with --optimizer sgd; "
        "default 1: constant)",
        decay_factor,
        metavar="FACTOR",
    ),
    Flag(
        "decay_after",
        "data tasks: the epochs at the initial learning rate before --learning-rate-decay "
        "divides it (default 0)",
        non_negative_int,
        metavar="N",
        requires="learning_rate_decay",
    ),
    Flag(
        "patience",
        "data tasks: stop after N epochs without a new lowest validation loss and keep "
        "the best epoch's weights; --epochs is then the most (default: train every epoch)",
        positive_int,
        metavar="N",
    ),
)


def task_flags(task: str) -> tuple[Flag, ...]:
    """The flags ``rnncells train TASK`` reads, in the order a run's
    reproducing command writes them (`keras_rnncells.experiments`)."""
    return (*RUN_FLAGS, *TASK_FLAGS, *TASK_DEFAULTS[task].flags)


@dataclasses.dataclass(frozen=True)
class AppListing:
    """Where an application registers itself (``module`` calls
    `keras_rnncells.apps.registry.register_app` with the app's name), its
    one-line help and the flags of ``rnncells train`` it reads, known
    without importing the module."""

    module: str
    help: str
    flags: tuple[Flag, ...] = ()


# What every application reads: `RUN_FLAGS`, the cap on training examples
# setting the field an application's settings call `train_size`.
APP_RUN_FLAGS = (CELL, UNITS, EPOCHS, BATCH_SIZE, SEED, LIMIT.sets("train_size"))
# Read by the sentiment and seq2seq applications.
DATASET = Flag(
    "dataset",
    "sentiment: sst2 (default) or imdb; seq2seq: dates (default) or meetings, notes "
    "with a name to copy ('Meeting with Okonkwo on Nov 21, 2026' -> 'Okonkwo "
    "2026-11-21'), tested on names never seen in training and on the years 2100-2199",
    choices=("sst2", "imdb", "dates", "meetings"),
)
TOKENIZER = Flag(
    "tokenizer",
    "sentiment and seq2seq: the tokens the model reads (and seq2seq writes), learned "
    "from the training texts: wordpiece (BERT's subwords; sentiment's default), bpe or "
    "unigram (SentencePiece's byte-pair or unigram subwords, Sennrich et al. 2016, Kudo "
    "2018), char (characters; seq2seq's default)",
    choices=TOKENIZERS,
)
# Every application, by the name `rnncells train NAME` and the registry give
# it; a test holds each module to registering exactly its listed name.
APPS: dict[str, AppListing] = {
    "color-namer": AppListing(
        "keras_rnncells.apps.color_namer", "rgb -> color name, shipped XKCD list", APP_RUN_FLAGS
    ),
    "name-to-color": AppListing(
        "keras_rnncells.apps.name_to_color", "color name -> rgb, shipped XKCD list", APP_RUN_FLAGS
    ),
    "rnng": AppListing(
        "keras_rnncells.apps.grammar",
        "logic formulas as trees -> log p(formula, tree): a generative RNNG (Dyer et al. 2016)",
        (UNITS, EPOCHS, BATCH_SIZE, SEED, LIMIT.sets("train_size")),
    ),
    "sentiment": AppListing(
        "keras_rnncells.apps.sentiment",
        "text -> probability of positive; SST-2 (--dataset imdb: IMDB), tokenized in the model",
        (
            *APP_RUN_FLAGS,
            DATASET,
            TOKENIZER,
            WORD_DROPOUT,
            Flag(
                "pretrain",
                "sentiment: first pre-train the embedding and encoder on the training texts "
                "without labels, then fine-tune the classifier from them (Dai & Le 2015): lm, a "
                "language model predicting each next word piece; autoencoder, a sequence "
                "autoencoder reconstructing the text from the encoder's final state (default: "
                "no pre-training)",
                choices=("lm", "autoencoder"),
            ),
            Flag(
                "pretrain_epochs",
                "sentiment, with --pretrain: epochs of pre-training (default 1)",
                positive_int,
                metavar="N",
                requires="pretrain",
            ),
            Flag(
                "encoder",
                "sentiment: flat (default), one recurrence over the text's tokens; hierarchical, "
                "the tokens split into sentences at '.', '!' and '?', a recurrence over each "
                "sentence and one over the sentence vectors (Serban et al. 2016)",
                choices=("flat", "hierarchical"),
            ),
        ),
    ),
    "seq2seq": AppListing(
        "keras_rnncells.apps.seq2seq",
        "date normalization, 'Nov 21, 2026' -> '2026-11-21': a character-level "
        "encoder-decoder with attention",
        (
            *APP_RUN_FLAGS,
            DATASET,
            TOKENIZER,
            Flag(
                "typos",
                "seq2seq, dates: each letter of every source (held-out ones too) is dropped, "
                "doubled or replaced with this probability (default 0)",
                rate,
                metavar="RATE",
            ),
            Flag(
                "finetune",
                "seq2seq: after the teacher-forced epochs, --finetune-epochs of sequence-level "
                "training on the outputs' similarity to the targets: reinforce, REINFORCE with "
                "a baseline (Ranzato et al. 2016); mrt, minimum risk training (Shen et al. "
                "2016)",
                choices=("reinforce", "mrt"),
            ),
            Flag(
                "finetune_epochs",
                "seq2seq, with --finetune: epochs of fine-tuning (default 2)",
                positive_int,
                metavar="N",
                requires="finetune",
            ),
            Flag(
                "copy",
                "seq2seq: a copy mechanism, a switch mixing the decoder's vocabulary "
                "distribution with its attention over the source (Gulcehre et al. 2016, Gu et "
                "al. 2016, See et al. 2017)",
                switch=True,
            ),
        ),
    ),
    "multitask": AppListing(
        "keras_rnncells.apps.multitask",
        "written dates -> ISO date, the text back and the month: one encoder shared by a "
        "decoder or head per task (Luong et al. 2016)",
        (
            *APP_RUN_FLAGS,
            TOKENIZER,
            Flag(
                "tasks",
                "multitask: the tasks, separated by commas, of dates (to ISO 8601), autoencode "
                "(the source back) and month (its month, 12 classes) (default all three)",
                metavar="TASK,...",
            ),
            Flag(
                "ratios",
                "multitask: each task's mixing ratio, its share of the alternating batches, "
                "one positive number per task of --tasks (default 1,0.5,0.5)",
                metavar="R,...",
            ),
        ),
    ),
}


def train_flags(name: str) -> tuple[Flag, ...]:
    """The flags ``rnncells train NAME`` reads: the application's, or the task's."""
    return APPS[name].flags if name in APPS else task_flags(name)


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
