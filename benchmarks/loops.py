"""One loop per core against one loop: the fused path's ``loop_count`` rule;
and the portable loop's unrolling against none.

On a CPU, ``keras_rnncells.RNN``'s fused path runs a batch as one loop per
core, each over its own rows, with at least ``LOOP_MIN_ROWS`` rows per loop
(``keras_rnncells/layers/fused.py: loop_count``). This script measures that rule
against a single loop over the whole batch, for our GRU, LSTM and MGU, at
several batch sizes, with Keras' own GRU and LSTM as references and, for the
forward pass, Keras' loop over our cell (``implementation="generic"``), in one
process.

Each layer is traced as ``speed.py`` traces it: ``fwd`` is ``layer(x,
training=False)`` in a ``tf.function`` (the portable loop, no XLA: what
``model.predict`` and SavedModels run), ``train`` is forward, mean-square loss,
backward and an Adam update (the XLA-compiled loop). The single loop is traced
with ``LOOP_MIN_ROWS`` set above the batch size for that layer's tracing; the
rule's loops with the shipped value. The forward pass is also traced with
``fused.PORTABLE_UNROLL`` set to 1 (one step an iteration of the portable
loop, as before the unrolling) beside the shipped value, and with the
recurrent products in column blocks in every loop (``portable_loop.ColumnBlocks``,
which a layer made with ``column_blocks=True`` takes in a loop that runs alone;
off by default). Within each batch
size, ``--repeats`` round-robin rounds call every function once; the table
shows the medians.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/loops.py                          # batches 1..128, T 100
    PYTHONPATH=. python benchmarks/loops.py --batches 32,128 --steps 500 --json loops.json
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
from collections.abc import Callable, Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import tensorflow as tf

import keras_rnncells
from benchmarks.speed import int_list, layer_functions, output_path, save_json, time_call
from keras_rnncells.layers import fused, rnn

OURS = {"GRU": keras_rnncells.GRU, "LSTM": keras_rnncells.LSTM, "MGU": keras_rnncells.MGU}
REFERENCE = {"GRU": "GRU", "LSTM": "LSTM", "MGU": "GRU"}  # Keras' layer each is compared with


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", default="1,4,8,16,32,64,128", help="comma list")
    parser.add_argument("--steps", type=int, default=100, help="sequence length T")
    parser.add_argument("--input", type=int, default=64, help="input features")
    parser.add_argument("--units", type=int, default=128, help="units")
    parser.add_argument("--repeats", type=int, default=9, help="timed rounds per batch size")
    parser.add_argument("--quick", action="store_true", help="tiny shapes, 2 rounds")
    parser.add_argument("--json", metavar="PATH", help="also save the rows as JSON")
    args = parser.parse_args(argv)
    args.batches = int_list("--batches", args.batches, least=1)
    for key in ("steps", "input", "units", "repeats"):
        if getattr(args, key) < 1:
            raise ValueError(f"Argument `--{key}` must be >= 1, received: {getattr(args, key)}")
    output_path("--json", args.json)
    if args.quick:
        args.batches, args.steps, args.input, args.units, args.repeats = [2, 16], 5, 4, 4, 2
    return args


def traced(
    make: Callable, x: tf.Tensor, one_loop: bool, unrolled: bool = True, blocked: bool = False
) -> dict[str, Callable]:
    """The layer's two functions, traced and warmed up; ``one_loop``: traced
    with a least row count per loop above the batch size; not ``unrolled``
    or ``blocked``: the forward alone, traced with one step an iteration of
    the portable loop, or with column blocks in each of its loops."""
    shipped = (fused.LOOP_MIN_ROWS, fused.PORTABLE_UNROLL, rnn.fused_recurrence)
    fused.LOOP_MIN_ROWS = x.shape[0] + 1 if one_loop else shipped[0]
    fused.PORTABLE_UNROLL = shipped[1] if unrolled else 1
    if blocked:
        rnn.fused_recurrence = functools.partial(blocked_recurrence, shipped[2])
    try:
        layer = make()
        layer.build(x.shape)
        functions = layer_functions(layer)
        if not unrolled or blocked:
            functions = {"fwd": functions["fwd"]}
        for function in functions.values():
            for _ in range(2):
                function(x).numpy()
    finally:
        fused.LOOP_MIN_ROWS, fused.PORTABLE_UNROLL, rnn.fused_recurrence = shipped
    return functions


def blocked_recurrence(recurrence: Callable, *args, **kwargs):
    """``recurrence`` (``fused.fused_recurrence``) with column blocks in every
    loop, whatever the layer's ``column_blocks``."""
    return recurrence(*args, **{**kwargs, "blocked": True})


def measure(batch: int, args: argparse.Namespace) -> list[dict]:
    """One row per layer of ours at this batch size: ms of each variant."""
    x = tf.random.normal((batch, args.steps, args.input))
    units = args.units
    variants: dict[tuple[str, str], dict[str, Callable]] = {}
    for name in ("GRU", "LSTM"):
        layer_class = getattr(keras.layers, name)
        variants["keras", name] = traced(lambda c=layer_class: c(units), x, False)
    for name, layer_class in OURS.items():
        variants[name, "one loop"] = traced(lambda c=layer_class: c(units), x, True)
        variants[name, "per core"] = traced(lambda c=layer_class: c(units), x, False)
        variants[name, "not unrolled"] = traced(lambda c=layer_class: c(units), x, False, False)
        variants[name, "blocked"] = traced(lambda c=layer_class: c(units), x, False, True, True)
        variants[name, "keras loop"] = traced(
            lambda c=layer_class: c(units, implementation="generic"), x, False
        )
    times = {key: {mode: [] for mode in functions} for key, functions in variants.items()}
    for _ in range(args.repeats):
        for key, functions in variants.items():
            for mode, function in functions.items():
                times[key][mode].append(time_call(function, x))
    ms = {key: {m: statistics.median(v) for m, v in modes.items()} for key, modes in times.items()}
    rows = []
    for name in OURS:
        keras_ms = ms["keras", REFERENCE[name]]
        rows.append(
            {
                "batch": batch,
                "layer": name,
                "loops": loops_in_a_graph(batch, args.steps),
                "keras": keras_ms,
                **{
                    variant: ms[name, variant]
                    for variant in ("one loop", "per core", "keras loop", "not unrolled", "blocked")
                },
            }
        )
    return rows


def loops_in_a_graph(batch: int, steps: int) -> dict[str, int]:
    """How many loops the rule runs this batch as in a traced forward pass
    (portable loops) and training step (compiled loops); eagerly, one."""
    with tf.Graph().as_default():
        return {
            mode: fused.loop_count(batch, steps, compiled=mode == "train")
            for mode in ("fwd", "train")
        }


def table_line(row: dict) -> str:
    one, per_core, keras_loop, keras_ms = (
        row["one loop"],
        row["per core"],
        row["keras loop"],
        row["keras"],
    )
    not_unrolled, blocked = row["not unrolled"]["fwd"], row["blocked"]["fwd"]
    cells = [
        str(row["batch"]),
        f"rnncells.{row['layer']}",
        f"{row['loops']['fwd']} / {row['loops']['train']}",
        f"{one['fwd']:.2f}",
        f"{per_core['fwd']:.2f}",
        f"{keras_loop['fwd']:.2f}",
        f"{one['fwd'] / per_core['fwd']:.2f}x",
        f"{per_core['fwd'] / keras_ms['fwd']:.2f}x",
        f"{not_unrolled:.2f}",
        f"{not_unrolled / per_core['fwd']:.2f}x",
        f"{not_unrolled / keras_ms['fwd']:.2f}x",
        f"{blocked:.2f}",
        f"{blocked / per_core['fwd']:.2f}x",
        f"{one['train']:.2f}",
        f"{per_core['train']:.2f}",
        f"{one['train'] / per_core['train']:.2f}x",
        f"{per_core['train'] / keras_ms['train']:.2f}x",
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| batch | layer | loops (fwd / train) | fwd ms, one loop | fwd ms, per core "
    "| fwd ms, Keras' loop | fwd speed-up | fwd vs Keras | fwd ms, not unrolled "
    "| unrolling speed-up | not unrolled vs Keras | fwd ms, blocks in every loop "
    "| blocks in every loop vs shipped | train ms, one loop | train ms, per core "
    "| train speed-up | train vs Keras |\n|---:|---|" + "---:|" * 15
)


def main(argv: Sequence[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    print(
        f"T {args.steps}, input {args.input}, units {args.units}, float32, "
        f"{fused.executor_cores()} executor cores, LOOP_MIN_ROWS {fused.LOOP_MIN_ROWS}, "
        f"PORTABLE_MIN_ROW_STEPS {fused.PORTABLE_MIN_ROW_STEPS}, "
        f"PORTABLE_UNROLL {fused.PORTABLE_UNROLL}, "
        f"median of {args.repeats} rounds; vs Keras: per core over keras.layers.GRU "
        "(GRU, MGU) or keras.layers.LSTM (LSTM)\n"
    )
    print(HEADER, flush=True)
    rows = []
    for batch in args.batches:
        for row in measure(batch, args):
            rows.append(row)
            print(table_line(row), flush=True)
    if args.json:
        save_json(args.json, {"config": vars(args), "rows": rows})
    return rows


if __name__ == "__main__":
    main()
