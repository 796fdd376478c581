"""The ``rnncells`` command.

Each subcommand is one entry of ``COMMANDS``: its one-line help, a function
adding its arguments to its parser and the function running it. ``run``
functions import what they need themselves, so parsing stays light: this
module imports no TensorFlow (nor does ``keras_rnncells`` in this command, see
its docstring), and ``rnncells --help`` or a mistyped argument answers at once.

`main` runs a command under `keras_rnncells.cli_runtime`: paths made
absolute where they enter, TensorFlow's C++ log and the libraries' known noise
kept out of the output, and every anticipated error (`fail`, a missing
optional module, or a ``ValueError`` or ``OSError`` of the package naming an
argument or a path) one line on standard error with exit status 2, as
argparse's own errors, leaving no empty output directory behind.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from keras_rnncells.cli_runtime import (
    QUIET,
    CommandExit,
    anticipated_message,
    check_out,
    fail,
    import_tensorflow_quietly,
    make_paths_absolute,
    no_new_empty_directories,
    quiet_libraries,
)
from keras_rnncells.defaults import (
    APPS,
    LANGUAGE_MODELS,
    MODELS,
    OPTIMIZERS,
    SAMPLERS,
    SOFTMAXES,
    STRATEGIES,
    TASK_DEFAULTS,
    TOKENIZERS,
    TREE_MODELS,
    cluster_config,
)


@dataclass(frozen=True)
class Command:
    """One subcommand: its one-line help, its arguments, what it runs and,
    optionally, the checks of its arguments that need no TensorFlow (run
    before TensorFlow is imported, so a mistake is told at once) and the
    exceptions that, wherever raised, mean a bad input (``anticipated``: for
    `export` and `verify`, every ``ValueError`` is about the file given)."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], None]
    check: Callable[[argparse.Namespace], None] | None = None
    anticipated: tuple[type[Exception], ...] = ()


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table: columns left-aligned, two spaces apart."""
    cells = [[str(value) for value in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(value.ljust(width) for value, width in zip(row, widths)) for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(line.rstrip() for line in lines)


def integer(text: str) -> int:
    """An argparse type: an integer, or an error that says so."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, received {text!r}") from None


def rate(text: str) -> float:
    """An argparse type: a probability in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a rate in [0, 1), received {text!r}")
    return value


def penalty_weight(text: str) -> float:
    """An argparse type: a penalty's β, a float >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0.0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a float >= 0, received {text!r}")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a finite float > 0."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0.0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, received {text!r}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, received {text!r}")
    return value


# The largest version number (keras_rnncells.export.saved_model.MAX_VERSION, not
# imported here: that module needs TensorFlow): TF Serving reads versions as int64.
MAX_VERSION = 2**63 - 1


def version_number(text: str) -> int:
    """An argparse type: an export's version, 1 to `MAX_VERSION`."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_VERSION:
        raise argparse.ArgumentTypeError(
            "expected a positive integer of at most 2**63 - 1 (TF Serving reads versions "
            f"as int64), received {text!r}"
        )
    return value


# -- rnncells cells --------------------------------------------------------------
def cells_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input-dim", type=positive_int, default=64, help="input features (default 64)"
    )
    parser.add_argument("--units", type=positive_int, default=128, help="units (default 128)")


def cell_sizes(cls: type, input_dim: int, units: int) -> tuple[int, object]:
    """Parameters and state size of ``cls(units)`` built for ``input_dim`` features."""
    cell = cls(units)
    cell.build((None, input_dim))
    return sum(math.prod(w.shape) for w in cell.weights), cell.state_size


def cells_run(args: argparse.Namespace) -> None:
    from keras_rnncells import get_cell, list_cells

    rows, notes = [], []
    for name in list_cells():
        cls = get_cell(name)
        try:
            parameters, state_size = cell_sizes(cls, args.input_dim, args.units)
        except (TypeError, ValueError) as error:
            parameters, state_size = "n/a", "n/a"
            notes.append(f"{name}: {error}")
        blocks = " ".join(getattr(cls(args.units), "blocks", ())) or "-"
        row = (name, cls.__name__, cls.__module__, blocks, parameters, state_size)
        rows.append((*row, cls.citation or "-"))
    headers = ("name", "class", "module", "blocks", "parameters", "state size", "citation")
    print(f"Registered cells; parameters for input {args.input_dim}, units {args.units}:")
    print(format_table(headers, rows))
    if notes:
        print("\nn/a: cannot be built at this shape:")
        print("\n".join(notes))


# -- rnncells demo ---------------------------------------------------------------
def demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--units", type=positive_int, default=32, help="units (default 32)")
    parser.add_argument("--epochs", type=positive_int, default=5, help="epochs (default 5)")
    parser.add_argument(
        "--samples", type=positive_int, default=4000, help="training sequences (default 4000)"
    )
    parser.add_argument("--seed", type=integer, default=0, help="random seed (default 0)")


def demo_run(args: argparse.Namespace) -> None:
    from keras_rnncells.demo import STEPS, run_demo

    results, baseline = run_demo(
        units=args.units, epochs=args.epochs, samples=args.samples, seed=args.seed
    )
    headers = ("cell", "parameters", "s/epoch", "test MSE", "baseline MSE")
    rows = [
        (r.cell, r.parameters, f"{r.seconds_per_epoch:.2f}", f"{r.test_mse:.4f}", f"{baseline:.4f}")
        for r in results
    ]
    print(f"\nAdding problem, T={STEPS}, {args.samples} training sequences, {args.epochs} epochs")
    print("(baseline: predicting the mean training target; s/epoch: median over epochs)")
    print(format_table(headers, rows))


# -- rnncells train ----------------------------------------------------------------
# What `rnncells train NAME` trains: NAME -> (module with `train_from_arguments`, help):
# the applications (`defaults.APPS`, registered in keras_rnncells.apps.registry)
# and the data tasks.
TRAINABLE: dict[str, tuple[str, str]] = {
    **{name: (listing.module, listing.help) for name, listing in APPS.items()},
    **{
        name: ("keras_rnncells.experiments", defaults.help)
        for name, defaults in TASK_DEFAULTS.items()
    },
}


def cell_name(text: str) -> str:
    import_tensorflow_quietly()  # the registry is filled by importing the cells
    from keras_rnncells import list_cells

    if text not in list_cells():
        raise argparse.ArgumentTypeError(
            f"unknown cell {text!r}; registered cells: {', '.join(list_cells())}"
        )
    return text


def cell_names(text: str) -> str:
    """One registered cell's name, or a comma list of them (one per layer)."""
    for name in text.split(","):
        cell_name(name)
    return text


def cell_or_tree_model(text: str) -> str:
    """A registered cell's name, or a tree model of `TREE_MODELS` (``rnncells compare``)."""
    return text if text in TREE_MODELS else cell_name(text)


def shape_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--shape",
        choices=("chain", "tree"),
        help="logic: formulas as chains (default, the MuFuRU paper's) or random binary trees",
    )


def train_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name",
        choices=sorted(TRAINABLE),
        help="; ".join(f"{name}: {help}" for name, (_, help) in sorted(TRAINABLE.items())),
    )
    parser.add_argument(
        "--cell",
        type=cell_names,
        help="registered cell name (rnncells cells); data tasks with --layers N may name one "
        "per layer, bottom first (--cell gru,mgu --layers 2)",
    )
    parser.add_argument(
        "--model",
        choices=MODELS,
        help="data tasks: rnn (default), --layers recurrent layers of --cell, stacked; "
        "residual or dense, the same joined by residual (Wu et al. 2016) or dense (Zhou et "
        "al. 2016) connections; gated_feedback, layers that read each other's last states "
        "through global reset gates (Chung et al. 2015); clockwork, --layers modules of "
        "periods 1, 2, 4, ... (Koutník et al. 2014); depth_gated, LSTM layers whose memory "
        "cells are gated across depth (Yao et al. 2015; --cell lstm); grid, a 2-D grid LSTM "
        "along time and depth (Kalchbrenner et al. 2015; --cell lstm); treelstm or spinn, a "
        "binary Tree-LSTM (Tai et al. 2015) or SPINN (Bowman et al. 2016) along the tree "
        "the tokens spell in postfix order (logic)",
    )
    shape_argument(parser)
    parser.add_argument("--units", type=positive_int, help="units per recurrent layer")
    parser.add_argument("--layers", type=positive_int, help="data tasks: stacked recurrent layers")
    parser.add_argument(
        "--dataset",
        choices=("sst2", "imdb", "dates", "meetings"),
        help="sentiment: sst2 (default) or imdb; seq2seq: dates (default) or meetings, notes "
        "with a name to copy ('Meeting with Okonkwo on Nov 21, 2026' -> 'Okonkwo "
        "2026-11-21'), tested on names never seen in training and on the years 2100-2199",
    )
    parser.add_argument(
        "--typos",
        type=rate,
        metavar="RATE",
        help="seq2seq, dates: each letter of every source (held-out ones too) is dropped, "
        "doubled or replaced with this probability (default 0)",
    )
    parser.add_argument(
        "--finetune",
        choices=("reinforce", "mrt"),
        help="seq2seq: after the teacher-forced epochs, --finetune-epochs of sequence-level "
        "training on the outputs' similarity to the targets: reinforce, REINFORCE with a "
        "baseline (Ranzato et al. 2016); mrt, minimum risk training (Shen et al. 2016)",
    )
    parser.add_argument(
        "--finetune-epochs",
        type=positive_int,
        metavar="N",
        help="seq2seq, with --finetune: epochs of fine-tuning (default 2)",
    )
    parser.add_argument(
        "--copy",
        action="store_true",
        default=None,
        help="seq2seq: a copy mechanism, a switch mixing the decoder's vocabulary "
        "distribution with its attention over the source (Gulcehre et al. 2016, Gu et al. "
        "2016, See et al. 2017)",
    )
    parser.add_argument(
        "--tokenizer",
        choices=TOKENIZERS,
        help="sentiment and seq2seq: the tokens the model reads (and seq2seq writes), learned "
        "from the training texts: wordpiece (BERT's subwords; sentiment's default), bpe or "
        "unigram (SentencePiece's byte-pair or unigram subwords, Sennrich et al. 2016, Kudo "
        "2018), char (characters; seq2seq's default)",
    )
    parser.add_argument(
        "--pretrain",
        choices=("lm", "autoencoder"),
        help="sentiment: first pre-train the embedding and encoder on the training texts "
        "without labels, then fine-tune the classifier from them (Dai & Le 2015): lm, a "
        "language model predicting each next word piece; autoencoder, a sequence autoencoder "
        "reconstructing the text from the encoder's final state (default: no pre-training)",
    )
    parser.add_argument(
        "--pretrain-epochs",
        type=positive_int,
        metavar="N",
        help="sentiment, with --pretrain: epochs of pre-training (default 1)",
    )
    parser.add_argument(
        "--dropout",
        type=rate,
        metavar="RATE",
        help="data tasks: dropout on the input of every recurrent layer and of the output "
        "layer, the connections between layers and not those through time (Zaremba et al. "
        "2014; default: "
        + ", ".join(
            f"{defaults.settings.dropout} for {name}"
            for name, defaults in TASK_DEFAULTS.items()
            if defaults.settings.dropout
        )
        + ", 0 for the others)",
    )
    parser.add_argument(
        "--word-dropout",
        type=rate,
        metavar="RATE",
        help="sentiment: in training, each word piece becomes [UNK] with this probability; "
        "token tasks: each token's embedding becomes zero (word dropout, Iyyer et al. 2015; "
        "default 0)",
    )
    for flag, penalty in (
        (
            "--norm-stabilizer",
            "the norm-stabilizer, β·mean_t (‖h_t‖ − ‖h_t−1‖)², Krueger & Memisevic 2016",
        ),
        (
            "--temporal-coherence",
            "temporal coherence, β·mean_t ‖h_t − h_t−1‖², Jonschkowski & Brock 2015",
        ),
    ):
        parser.add_argument(
            flag,
            type=penalty_weight,
            metavar="BETA",
            help=f"data tasks: add {penalty} on every recurrent layer's hidden sequence "
            "(a language model's layers, or all but the last; default 0: none)",
        )
    parser.add_argument(
        "--optimizer",
        choices=OPTIMIZERS,
        help="data tasks: the optimizer (default adam)",
    )
    parser.add_argument(
        "--learning-rate",
        type=positive_float,
        metavar="RATE",
        help="data tasks: the optimizer's learning rate (default 0.001)",
    )
    parser.add_argument(
        "--max-length",
        type=positive_int,
        metavar="N",
        help="imdb, sst2, sst1: keep each text's first N tokens (default: imdb 400, sst none)",
    )
    parser.add_argument(
        "--patience",
        type=positive_int,
        metavar="N",
        help="data tasks: stop after N epochs without a new lowest validation loss and keep "
        "the best epoch's weights; --epochs is then the most (default: train every epoch)",
    )
    parser.add_argument(
        "--softmax",
        choices=SOFTMAXES,
        help="language models (ptb, imdb_lm): the output layer's training loss: full "
        "(default); sampled, sampled softmax (Jean et al. 2015); nce, noise-contrastive "
        "estimation (Mnih & Teh 2012); class, a class-factored softmax over frequency bins; "
        "validation and test use the exact one",
    )
    parser.add_argument(
        "--sampler",
        choices=SAMPLERS,
        help="language models, --softmax sampled or nce: the noise words' distribution, "
        "log_uniform (Zipfian by frequency rank, default) or unigram (the training counts)",
    )
    parser.add_argument(
        "--num-sampled",
        type=positive_int,
        metavar="K",
        help="language models, --softmax sampled or nce: noise words per batch (default 64)",
    )
    parser.add_argument(
        "--self-normalization",
        type=penalty_weight,
        metavar="ALPHA",
        help="language models, --softmax full: add α·(log Z)² to the loss, so that the "
        "logits come out about normalized (Devlin et al. 2014; default 0)",
    )
    parser.add_argument(
        "--unigram-bias",
        action="store_true",
        default=None,
        help="language models: the output layer's bias starts at the log-probabilities of the "
        "training words' (add-one smoothed) frequencies in place of zeros, so that training "
        "does not first spend epochs learning them (default: zeros)",
    )
    parser.add_argument(
        "--stateful",
        action="store_true",
        default=None,
        help="language models: each recurrent layer carries every stream row's state from "
        "one batch to the next (truncated backpropagation through time, as Zaremba et al. "
        "2014); the streams start again every epoch and for each evaluation",
    )
    parser.add_argument(
        "--batch-norm",
        action="store_true",
        default=None,
        help="data tasks: recurrent batch normalization in every recurrent layer "
        "(Cooijmans et al. 2016: the input and recurrent products, and an LSTM's cell state, "
        "normalized with per-step statistics; cells built on the dense-gates helper)",
    )
    run_arguments(parser)
    parser.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="none",
        help="data tasks: none (one device, default), mirrored (every local GPU, or the "
        "--cpu-devices), multiworker (one process per machine, cluster from TF_CONFIG)",
    )
    parser.add_argument(
        "--cpu-devices",
        type=positive_int,
        help="with --strategy mirrored: split the CPU into N logical devices, one replica each",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        help="with --strategy multiworker: start N worker processes on 127.0.0.1 "
        "(each its own TF_CONFIG) instead of reading TF_CONFIG",
    )


def run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every training run takes (None: the trainer's default)."""
    parser.add_argument("--out", required=True, help="run directory (created)")
    parser.add_argument("--epochs", type=positive_int, help="training epochs")
    parser.add_argument("--batch-size", type=positive_int, help="examples per batch")
    parser.add_argument("--seed", type=integer, help="random seed")
    parser.add_argument(
        "--limit", type=positive_int, help="use at most this many training examples (smoke runs)"
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a finished run in --out, or an interrupted one started with other "
        "arguments (the same arguments resume it)",
    )


# The flags of `rnncells train` that only some trainers read (the others
# would ignore them): who reads each, the data tasks ("tasks") or apps.
FLAG_READERS = {
    **dict.fromkeys(("layers", "dropout", "norm_stabilizer", "temporal_coherence"), ("tasks",)),
    "model": ("tasks",),
    "shape": ("logic",),
    **{name: ("tasks",) for name in ("batch_norm", "optimizer", "learning_rate", "patience")},
    "max_length": ("imdb", "sst2", "sst1"),
    **dict.fromkeys(
        ("softmax", "sampler", "num_sampled", "self_normalization", "unigram_bias", "stateful"),
        LANGUAGE_MODELS,
    ),
    "word_dropout": ("tasks", "sentiment"),
    **{name: ("sentiment",) for name in ("pretrain", "pretrain_epochs")},
    **dict.fromkeys(("dataset", "tokenizer"), ("sentiment", "seq2seq")),
    **dict.fromkeys(("copy", "typos", "finetune", "finetune_epochs"), ("seq2seq",)),
}


def train_check(args: argparse.Namespace) -> None:
    """No finished run in ``--out`` unless ``--overwrite``; no flag the
    trainer would ignore (`FLAG_READERS`); distribution flags that go together."""
    if (Path(args.out) / "results.json").exists() and not args.overwrite:
        fail(
            f"--out {args.out} already holds a finished run (results.json); "
            "pass --overwrite to replace it, or choose another --out"
        )
    trainer = args.name if args.name in APPS else "tasks"
    for name, readers in FLAG_READERS.items():
        if getattr(args, name, None) is not None and not {trainer, args.name} & set(readers):
            named = " and ".join(
                "the data tasks"
                if reader == "tasks"
                else f"the {reader} {'app' if reader in APPS else 'task'}"
                for reader in readers
            )
            fail(f"--{name.replace('_', '-')} applies to {named}, not to {args.name}")
    check_distribution(args)


def train_run(args: argparse.Namespace) -> None:
    from keras_rnncells.training import ChangedSettings

    if args.name in APPS:
        from keras_rnncells.apps.registry import get_app

        train = get_app(args.name).train_from_arguments
    else:
        train = importlib.import_module(TRAINABLE[args.name][0]).train_from_arguments
    if args.workers is not None:
        from keras_rnncells.distribute import launch_local_workers, worker_command

        raise SystemExit(launch_local_workers(worker_command(args.argv), args.workers))
    if args.cpu_devices is not None:
        from keras_rnncells.distribute import split_cpu

        split_cpu(args.cpu_devices)
    try:
        train(args)
    except ChangedSettings as error:
        listed = "; ".join(
            error.describe(name, SETTING_FLAGS.get(name, name)) for name in error.changes
        )
        fail(
            f"--out {args.out} holds an unfinished run started with other arguments: {listed}. "
            "Give the run's arguments to resume it, --overwrite to start afresh, "
            "or choose another --out"
        )


# The flag of `rnncells train` setting each field of a run's settings (the
# applications call --limit `train_size`).
SETTING_FLAGS = {
    "train_size": "--limit",
    **{
        name: "--" + name.replace("_", "-")
        for name in (
            "cell",
            "units",
            "layers",
            "dataset",
            "pretrain",
            "pretrain_epochs",
            "epochs",
            "batch_size",
            "seed",
            "limit",
            "dropout",
            "word_dropout",
            "norm_stabilizer",
            "temporal_coherence",
            "batch_norm",
            "optimizer",
            "learning_rate",
            "patience",
            "max_length",
            "softmax",
            "sampler",
            "num_sampled",
            "self_normalization",
            "unigram_bias",
            "stateful",
            "tokenizer",
            "copy",
            "typos",
            "finetune",
            "finetune_epochs",
        )
    },
}


def check_distribution(args: argparse.Namespace) -> None:
    """``--strategy``, ``--cpu-devices`` and ``--workers`` go together, and a
    multi-worker run that starts no workers of its own has a valid ``TF_CONFIG``."""
    if args.strategy != "none" and args.name not in TASK_DEFAULTS:
        fail(
            f"--strategy is supported for the data tasks ({', '.join(TASK_DEFAULTS)}), "
            f"not for the application {args.name}"
        )
    if args.cpu_devices is not None and args.strategy != "mirrored":
        fail("--cpu-devices needs --strategy mirrored")
    if args.workers is not None and args.strategy != "multiworker":
        fail("--workers needs --strategy multiworker")
    if args.workers is not None and "TF_CONFIG" in os.environ:
        fail(
            "--workers starts its own cluster on 127.0.0.1, but TF_CONFIG is set: "
            "unset it, or drop --workers to join the cluster it names"
        )
    if args.strategy == "multiworker" and args.workers is None:
        cluster_config()  # a missing or malformed TF_CONFIG, told before TensorFlow loads


# -- rnncells compare --------------------------------------------------------------
def comma_list(item: Callable[[str], object]) -> Callable[[str], list]:
    """An argparse type: comma-separated values, each parsed by ``item``."""

    def parse(text: str) -> list:
        values = [item(value.strip()) for value in text.split(",") if value.strip()]
        if not values:
            raise argparse.ArgumentTypeError(f"expected comma-separated values, received {text!r}")
        return values

    return parse


def compare_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "task",
        choices=sorted(TASK_DEFAULTS),
        help="; ".join(f"{name}: {d.help}" for name, d in sorted(TASK_DEFAULTS.items())),
    )
    parser.add_argument(
        "--cells",
        type=comma_list(cell_or_tree_model),
        default=["gru", "mgu"],
        help="e.g. gru,mgu,mufuru; on logic also the tree models treelstm and spinn",
    )
    shape_argument(parser)
    parser.add_argument(
        "--units",
        type=comma_list(positive_int),
        help="hidden sizes, e.g. 4,8,16 (several: also test metric against size)",
    )
    run_arguments(parser)


def compare_run(args: argparse.Namespace) -> None:
    from keras_rnncells.experiments import compare_cells

    options = ("units", "epochs", "batch_size", "seed", "limit", "overwrite", "shape")
    comparison = compare_cells(
        args.task, args.out, args.cells, **{name: getattr(args, name) for name in options}
    )
    metric = comparison["metric"]
    rows = [
        (
            r["cell"],
            r["units"],
            r["parameters"],
            f"{r[metric]:.4f}",
            f"{r['seconds_per_epoch']:.2f}",
        )
        for r in comparison["runs"]
    ]
    print(f"\n{args.task}: test {metric}; s/epoch: median over epochs")
    print(format_table(("cell", "units", "parameters", f"test {metric}", "s/epoch"), rows))
    print(f"Runs and compare.json in {args.out}")


# -- rnncells inspect ---------------------------------------------------------------
def inspect_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir",
        metavar="MODEL",
        help="a run directory written by `rnncells train` (any application or task)",
    )
    parser.add_argument(
        "--text",
        action="append",
        help="a text to show one by one (repeat the flag for more; default: the first "
        "held-out rows); color-namer: a name of its color list, or 'name #rrggbb'",
    )


def inspect_command(args: argparse.Namespace) -> None:
    from keras_rnncells.analysis.inspect import inspect_run

    try:
        written = inspect_run(args.run_dir, args.text)
    except ValueError as error:
        raise ValueError(str(error).replace("Argument `texts`", "--text")) from None
    note = written.pop("note", None)
    print(f"Views of {args.run_dir} written:")
    for path in written.values():
        print(f"  {path}")
    if note is not None:
        print(f"No PNGs: {note}")


# -- rnncells export ----------------------------------------------------------------
def export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir",
        metavar="MODEL",
        help="a run directory written by `rnncells train`, or any .keras file (a model "
        "of the applications serves text; any other model its own inputs, named after it)",
    )
    parser.add_argument("--out", default="export", help="export root (default ./export)")
    parser.add_argument(
        "--version",
        type=version_number,
        help="version number, 1 to 2**63 - 1 (default: one more than the last)",
    )
    parser.add_argument(
        "--format",
        default="savedmodel,onnx",
        help="comma-separated formats among savedmodel, onnx and litert, or all "
        "(default savedmodel,onnx)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing version")
    parser.add_argument(
        "--key-file",
        help="sign each manifest.json with HMAC-SHA256 under the key in this file "
        "(manifest.json.hmac, written before the version is published)",
    )
    parser.add_argument(
        "--streaming",
        action="store_true",
        help="also write each format's step form, for feeding a few steps at a time: "
        "the model's inputs (ids for the applications) and its states in, its outputs and "
        "new states out (SavedModel signature 'step', model_step.onnx, "
        "model_step.tflite); manifest.json lists the states",
    )
    limits = parser.add_argument_group(
        "request limits",
        "a model on text refuses a request past these (InvalidArgument, naming the limit) "
        'before tokenizing it; recorded in manifest.json under "limits". Defaults: 256 texts, '
        "16384 characters a text (name-to-color and seq2seq: 256), 1048576 in all",
    )
    limits.add_argument("--max-batch", type=positive_int, help="the most texts a request holds")
    limits.add_argument(
        "--max-chars", type=positive_int, help="the most characters (code points) in one text"
    )
    limits.add_argument(
        "--max-total-chars", type=positive_int, help="the most characters in all of a request"
    )


def export_command(args: argparse.Namespace) -> None:
    from keras_rnncells.apps.runs import export_run
    from keras_rnncells.export.command import parse_formats
    from keras_rnncells.export.limits import RequestLimits

    given = (args.max_batch, args.max_chars, args.max_total_chars)
    limits = None if given == (None, None, None) else RequestLimits(*given)
    paths = export_run(
        args.run_dir,
        args.out,
        args.version,
        parse_formats(args.format),
        args.overwrite,
        args.key,
        limits=limits,
        streaming=args.streaming,
    )
    signed = " and its signature" if args.key is not None else ""
    for fmt, path in paths.items():
        print(f"{fmt:<10} {path} (checked; manifest.json{signed} beside it)")


# The fewest bytes a key may hold (keras_rnncells.export.manifest.MIN_KEY_BYTES,
# not imported here: that module needs TensorFlow).
MIN_KEY_BYTES = 16


def read_key_file(args: argparse.Namespace) -> None:
    """``--key-file``: the key into ``args.key`` (None without the flag), read
    before TensorFlow is imported. The key is the file's bytes without their
    trailing line breaks (as ``$(cat FILE)`` gives them to ``openssl``)."""
    args.key = None
    if args.key_file is None:
        return
    try:
        key = Path(args.key_file).read_bytes().rstrip(b"\r\n")
    except OSError as error:
        fail(f"--key-file {args.key_file}: {error.strerror or error}; give the file of the key")
    if len(key) < MIN_KEY_BYTES:
        fail(
            f"--key-file {args.key_file} holds {len(key)} bytes; a key needs at least "
            f"{MIN_KEY_BYTES} (make one with `openssl rand -hex 32 > FILE`)"
        )
    args.key = key


# -- rnncells verify ----------------------------------------------------------------
def verify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directories",
        nargs="+",
        help="exported version directories (EXPORT/<model>/<version>, "
        "EXPORT/onnx/<model>/<version>), each with its manifest.json",
    )
    parser.add_argument(
        "--key-file",
        help="also check each manifest's signature (manifest.json.hmac, written by "
        "`rnncells export --key-file`) under the key in this file; an unsigned one is refused",
    )


def verify_run(args: argparse.Namespace) -> None:
    from keras_rnncells.export.manifest import SIGNATURE, verify_manifest

    for directory in args.directories:
        manifest = verify_manifest(directory, args.key)
        if args.key is not None:
            signature = "; signed with the key given"
        elif Path(directory, SIGNATURE).exists():
            signature = f"; {SIGNATURE} not checked (no --key-file)"
        else:
            signature = "; not signed"
        print(f"ok  {directory}: {len(manifest['files'])} files match manifest.json{signature}")


# -- rnncells quickstart ------------------------------------------------------------
def quickstart_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="rnncells-quickstart", help="where runs and exports go")
    parser.add_argument("--epochs", type=positive_int, help="training epochs of both models")


def quickstart_run(args: argparse.Namespace) -> None:
    from keras_rnncells.apps.quickstart import quickstart

    quickstart(args.out, args.epochs)


COMMANDS: dict[str, Command] = {
    "quickstart": Command(
        "train the color namer both ways on the shipped colors, export and query it (~1 min)",
        quickstart_arguments,
        quickstart_run,
    ),
    "cells": Command("list the registered cells and their sizes", cells_arguments, cells_run),
    "demo": Command(
        "train MGU and GRU on the adding problem (no download, under a minute)",
        demo_arguments,
        demo_run,
    ),
    "train": Command(
        "train an application or task, write model, results.json and logs into --out",
        train_arguments,
        train_run,
        train_check,
    ),
    "export": Command(
        "export a trained run or .keras model as SavedModel (TF Serving layout) and ONNX, checked",
        export_arguments,
        export_command,
        read_key_file,
        anticipated=(ValueError,),
    ),
    "inspect": Command(
        "write the analysis views of a run directory MODEL into MODEL/inspect/: units "
        "coloured over the text, gate saturation, hidden units (sentiment and seq2seq: "
        "omission scores too)",
        inspect_arguments,
        inspect_command,
        anticipated=(ValueError,),
    ),
    "verify": Command(
        "check exported artifacts against their manifest.json (and its signature, with a key)",
        verify_arguments,
        verify_run,
        read_key_file,
        anticipated=(ValueError,),
    ),
    "compare": Command(
        "train several cells (and hidden sizes) on one task, write compare.json, print a table",
        compare_arguments,
        compare_run,
    ),
}


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, as every anticipated
    error of the command: the argument, what is wrong, where help is."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="rnncells",
        description="Recurrent cells for Keras 3: train, export, serve. New here? "
        "`rnncells quickstart` runs the whole path in about a minute.",
        epilog="Environment: RNNCELLS_DATA, the folder of the benchmark data sets (nothing "
        "is downloaded); TF_CPP_MIN_LOG_LEVEL, TensorFlow's C++ log (quiet unless set, "
        "e.g. 0 to see it all).",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="command")
    for name, command in COMMANDS.items():
        subparser = subparsers.add_parser(name, help=command.help, description=command.help)
        command.add_arguments(subparser)
        subparser.set_defaults(command_to_run=command)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """``rnncells``: parses ``argv`` (default ``sys.argv[1:]``) and runs the command."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", QUIET)  # read when TensorFlow loads
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what local workers run again
    make_paths_absolute(args)
    command = args.command_to_run
    try:
        check_out(getattr(args, "out", None))
        if command.check is not None:
            command.check(args)
        with no_new_empty_directories(getattr(args, "out", None)):
            quiet_libraries()
            import_tensorflow_quietly()
            command.run(args)
    except KeyboardInterrupt:
        print(f"rnncells {args.command}: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    except Exception as error:
        message = anticipated_message(error, command.anticipated, getattr(args, "out", None))
        if message is None:
            raise
        print(f"rnncells {args.command}: error: {message}", file=sys.stderr)
        raise CommandExit(message) from None


if __name__ == "__main__":
    main()
