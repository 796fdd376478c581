"""Sorting numbers with read-process-write against a sequence-to-sequence
Pointer Network ("Order matters", Vinyals, Bengio & Kudlur 2016, Table 1).

For each set size n (5, 10, 15) two `keras_rnncells.sets.PointerSorter` models
learn to output the indices of n uniform random floats in increasing order:
``set`` (the `SetEncoder`'s read and process blocks, then the pointer
decoder: read-process-write) and ``sequence`` (an LSTM reading the numbers in
the given order, then the same pointer decoder: the paper's reference). Both
train with teacher forcing on the same generated sets
(`keras_rnncells.data.sorting.sorting_arrays`), same sizes, same epochs; the
table gives the exact-match accuracy of the greedy decoding (every index of
the row right) on held-out sets, the mean over seeds 0 and 1 (data and
initialization), and set/sequence ratios measured in the same run.

Each run writes ``OUT/runs/ENCODER-nN-seedS/results.json`` (atomically) and is
skipped when it exists with the same settings, so an interrupted run
resumes. ``OUT/section.md`` is the report's section.

Usage::

    python benchmarks/sets.py --out results/sets_sorting
    python benchmarks/sets.py --out /tmp/sets --quick       # tiny: a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np

from keras_rnncells.data.sorting import sorting_arrays
from keras_rnncells.files import write_json
from keras_rnncells.sets import PointerSorter, exact_match

ENCODERS = ("set", "sequence")
PAPER = (
    "Vinyals, Bengio & Kudlur 2016 (Table 1): on sorting, read-process-write beats a "
    "Pointer Network reading the numbers as a sequence at every n, with the accuracy "
    "falling as n grows (from our memory of the table, unverified: about 94% / 57% / "
    "10% at n = 5 / 10 / 15 for the best number of process steps)."
)


@dataclass(frozen=True)
class Settings:
    """The scale of a run (the paper trains far longer, on far more sets)."""

    sizes: tuple[int, ...] = (5, 10, 15)
    train: int = 20000
    test: int = 1000
    epochs: int = 10
    units: int = 32
    steps: int = 5
    batch: int = 64
    learning_rate: float = 3e-3
    seeds: tuple[int, ...] = (0, 1)


QUICK = Settings(train=128, test=32, epochs=1, units=8, steps=2, batch=32, seeds=(0,))


def train_one(encoder: str, size: int, seed: int, settings: Settings, run_dir: Path) -> dict:
    """Trains one model (or reads its finished run) and returns its results."""
    path = run_dir / "results.json"
    wanted = {**asdict(settings), "sizes": list(settings.sizes), "encoder": encoder, "n": size}
    del wanted["seeds"]
    wanted["seed"] = seed
    if path.exists():
        done = json.loads(path.read_text(encoding="utf-8"))
        if done["settings"] == wanted:
            return done
    keras.utils.set_random_seed(seed)
    numbers, order = sorting_arrays(settings.train, size, seed=1000 * seed + size)
    test_numbers, test_order = sorting_arrays(settings.test, size, seed=10_000 + size)
    model = PointerSorter(encoder, units=settings.units, steps=settings.steps)
    model.compile(
        keras.optimizers.Adam(settings.learning_rate, clipnorm=1.0),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    started = time.perf_counter()
    history = model.fit(
        {"numbers": numbers, "targets": order},
        order,
        batch_size=settings.batch,
        epochs=settings.epochs,
        verbose=0,
    )
    seconds = time.perf_counter() - started
    pointers = model.sort(test_numbers)
    results = {
        "settings": wanted,
        "exact_match": exact_match(pointers, test_order),
        "index_accuracy": float(np.mean(pointers == test_order)),
        "train_loss": [float(v) for v in history.history["loss"]],
        "seconds": seconds,
        "parameters": int(model.count_params()),
    }
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json(path, results)
    print(
        f"{encoder:>8} n={size:<2} seed {seed} exact {100 * results['exact_match']:5.1f}%  "
        f"per index {100 * results['index_accuracy']:5.1f}%  {seconds:6.0f} s",
        flush=True,
    )
    return results


def percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def mean_of(runs: list[dict], key: str) -> float:
    return float(np.mean([run[key] for run in runs]))


def exact_cell(runs: list[dict]) -> str:
    """The mean exact match, and each seed's where there are several."""
    mean = percent(mean_of(runs, "exact_match"))
    if len(runs) == 1:
        return mean
    return f"{mean} ({', '.join(percent(run['exact_match']) for run in runs)})"


def ratio(value: float, reference: float) -> str:
    return f"{value / reference:.2f}" if reference > 0 else "n/a (reference 0)"


def section(
    results: dict[tuple[str, int], list[dict]], settings: Settings, quick: bool, command: str
) -> list[str]:
    """The report's section: ``results`` holds the runs (one per seed) of each
    encoder and size."""
    met = all(
        mean_of(results["set", n], "exact_match") > mean_of(results["sequence", n], "exact_match")
        for n in settings.sizes
    )
    parameters = {e: results[e, settings.sizes[0]][0]["parameters"] for e in ENCODERS}
    seeds = ", ".join(map(str, settings.seeds))
    lines = [
        "## Sets: sorting numbers with read-process-write (Vinyals et al. 2016)",
        "",
        f"- Paper: {PAPER}",
        "- Target: the set encoder's exact-match accuracy (mean over seeds) above the "
        f"sequence-to-sequence reference's at every n: {'met' if met else '**not met**'}.",
        "",
        "| n | read-process-write (exact) | seq2seq (exact) | ratio set/seq2seq "
        "| set (per index) | seq2seq (per index) |",
        "|---|---|---|---|---|---|",
    ]
    for n in settings.sizes:
        s, q = results["set", n], results["sequence", n]
        exact = [mean_of(runs, "exact_match") for runs in (s, q)]
        lines.append(
            f"| {n} | {exact_cell(s)} | {exact_cell(q)} | {ratio(*exact)} | "
            f"{percent(mean_of(s, 'index_accuracy'))} | {percent(mean_of(q, 'index_accuracy'))} |"
        )
    seconds = sum(run["seconds"] for runs in results.values() for run in runs)
    lines += [
        "",
        f"Scale{' (--quick, a smoke run)' if quick else ''}: {settings.train} training sets "
        f"per n, {settings.epochs} epochs, batch {settings.batch}, Adam "
        f"{settings.learning_rate} (clipnorm 1), {settings.units} units, "
        f"{settings.steps} process steps; {settings.test} held-out sets per n; "
        f"parameters: set {parameters['set']}, seq2seq {parameters['sequence']}; greedy "
        "decoding, which may point at an element twice (as the papers' decoders may); "
        f"{seconds / 60:.0f} min of training on a shared 2-core CPU; seeds {seeds} (the "
        "data and the initialization), their mean, each seed's in parentheses. Exact: the "
        "whole order right; per index: the steps right.",
        "",
        f"Command: `{command}` (or `python benchmarks/reproduce.py --only sets_sorting`; "
        "finished runs are reused).",
        "",
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the section and the runs")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    parser.add_argument("--sizes", help="comma-separated set sizes (default 5,10,15)")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else Settings()
    if args.sizes:
        try:
            sizes = tuple(int(s) for s in args.sizes.split(","))
        except ValueError:
            parser.error(f"--sizes: comma-separated integers expected, received {args.sizes!r}")
        if not sizes or min(sizes) < 2:
            parser.error(f"--sizes: sizes of at least 2 expected, received {args.sizes!r}")
        settings = replace(settings, sizes=sizes)
    out = Path(args.out)
    results = {
        (encoder, n): [
            train_one(encoder, n, seed, settings, out / "runs" / f"{encoder}-n{n}-seed{seed}")
            for seed in settings.seeds
        ]
        for n in settings.sizes
        for encoder in ENCODERS
    }
    command = f"python benchmarks/sets.py --out {args.out}"
    command += (" --quick" if args.quick else "") + (f" --sizes {args.sizes}" if args.sizes else "")
    lines = section(results, settings, args.quick, command)
    print("\n".join(lines))
    out.mkdir(parents=True, exist_ok=True)
    (out / "section.md").write_text("\n".join(lines), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
