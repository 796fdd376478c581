"""What a connection between stacked layers costs: `StackedRNN` with
"residual" and "dense" connections, and the gated-feedback, clockwork
(periods 1, 2, 4, ...) and, for the LSTM, the depth-gated and grid cells, against the
"plain" stack of the same cell, units and depth, in the same process
(medians of round-robin rounds).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/stacks.py                  # GRU and LSTM, 3 layers
    PYTHONPATH=. python benchmarks/stacks.py --quick          # seconds: tiny shapes
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf

from benchmarks.speed import Bench, prepare, time_round_robin
from keras_rnncells.layers.stacks import ALL_CONNECTIONS, LSTM_ONLY, connected_stack


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", default="gru,lstm", help="comma-separated registered cells")
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="tiny shapes, 2 rounds")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    if args.quick:
        args.units, args.batch, args.steps, args.features, args.repeats = 4, 2, 5, 3, 2
    x = tf.random.normal((args.batch, args.steps, args.features))
    timed = {}
    for cell in args.cells.split(","):
        for connection in ALL_CONNECTIONS:
            if connection in LSTM_ONLY and cell != "lstm":
                continue
            layer = connected_stack(connection, cell, args.units, args.layers)
            layer.build(x.shape)
            bench = Bench(f"{cell} {connection}", lambda layer=layer: layer)
            timed[cell, connection] = prepare(bench, layer, x, warmup=1)
    time_round_robin(list(timed.values()), x, args.repeats)
    rows = []
    for (cell, connection), entry in timed.items():
        plain = timed[cell, "plain"]
        medians = {key: statistics.median(entry.times[key]) for key in ("fwd", "train")}
        rows.append(
            {
                "cell": cell,
                "connection": connection,
                "parameters": entry.layer.count_params(),
                "fwd_ms": medians["fwd"],
                "train_ms": medians["train"],
                "fwd_vs_plain": medians["fwd"] / statistics.median(plain.times["fwd"]),
                "train_vs_plain": medians["train"] / statistics.median(plain.times["train"]),
            }
        )
    print(
        f"\nStackedRNN, {args.layers} layers of {args.units} units; batch {args.batch}, "
        f"T {args.steps}, {args.features} inputs; medians of {args.repeats} rounds\n"
    )
    print("| cell | connection | parameters | forward ms | train ms | vs plain (fwd / train) |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['cell']} | {r['connection']} | {r['parameters']:,} | {r['fwd_ms']:.2f} "
            f"| {r['train_ms']:.2f} | {r['fwd_vs_plain']:.2f}x / {r['train_vs_plain']:.2f}x |"
        )
    return rows


if __name__ == "__main__":
    main()
