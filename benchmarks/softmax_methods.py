"""The hierarchical softmax, BlackOut and negative sampling on the Penn
Treebank language model, against the full softmax trained in the same run at
the same small budget, and the cost of their training step against the full
softmax's at 10k and 50k words (`benchmarks/softmax.py`).

Each PTB run is ``rnncells train ptb --softmax METHOD`` through the library
(`keras_rnncells.experiments.train_task`), into ``OUT/runs/METHOD``; a run
with a ``results.json`` is read, not trained again, and the step costs
saved in ``OUT/runs/step_costs.json`` are read, not timed again. The test perplexity is
the exact one: the full softmax over the trained scores for blackout and
negative, the tree's own normalized probabilities for hierarchical. The
mean |log Z| over the test targets is reported where the outputs are scores
(full, blackout, negative); the tree's are log-probabilities (log Z = 0).

Usage (from the repository root)::

    PYTHONPATH=. nice -n 5 python benchmarks/softmax_methods.py --out results/ptb_softmaxes
    PYTHONPATH=. python benchmarks/softmax_methods.py --out /tmp/softmaxes --quick
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from keras_rnncells.experiments import train_task
from keras_rnncells.files import write_atomically, write_json

# The methods trained, the reference first.
METHODS = ("full", "hierarchical", "blackout", "negative")
# The heads of benchmarks/softmax.py timed for the step-cost table (with its references).
TIMED_HEADS = ("hierarchical", "blackout", "negative sampling")
# The PTB budget: (units, epochs, training tokens) at full scale and --quick.
BUDGET = {"full": (64, 2, 60_000), "quick": (4, 1, 1500)}
NUM_SAMPLED = 64
# The |log Z| column where a run reports none: normalized outputs, or the
# full softmax, whose logits any shift leaves the same model (log Z is no target).
LOG_Z_NOT_SHOWN = {"hierarchical": "0 (normalized)", "full": "— (shift-free)"}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the section and its runs")
    parser.add_argument("--quick", action="store_true", help="seconds: tiny runs and shapes")
    parser.add_argument("--repeats", type=int, default=5, help="step-cost rounds (medians)")
    return parser.parse_args(argv)


def train(method: str, run_dir: Path, units: int, epochs: int, limit: int) -> dict:
    """The finished run of ``method`` (trained now unless ``run_dir`` holds it)."""
    finished = run_dir / "results.json"
    if finished.exists():
        return json.loads(finished.read_text(encoding="utf-8"))
    options = {"num_sampled": NUM_SAMPLED} if method in ("blackout", "negative") else {}
    return train_task(
        "ptb",
        run_dir,
        cell="gru",
        units=units,
        layers=1,
        epochs=epochs,
        limit=limit,
        softmax=method,
        unigram_bias=True,
        verbose=0,
        **options,
    )


def step_costs(quick: bool, repeats: int) -> list[dict]:
    """`benchmarks/softmax.py`'s rows for the new heads and its references."""
    path = Path(__file__).parent / "softmax.py"
    spec = importlib.util.spec_from_file_location("benchmarks_softmax", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    argv = ["--heads", ",".join(TIMED_HEADS), "--repeats", str(repeats)]
    return module.main([*argv, *(["--quick"] if quick else [])])


def timed_rows(path: Path, quick: bool, repeats: int) -> list[dict]:
    """The step-cost rows saved at ``path`` by an earlier run, or measured now
    (and saved there)."""
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    rows = step_costs(quick, 2 if quick else repeats)
    write_json(path, rows)
    return rows


def perplexity_table(results: dict[str, dict]) -> list[str]:
    reference = results["full"]["test"]["perplexity"]
    lines = [
        "| training loss | test perplexity (exact) | vs full | mean abs log Z (test) "
        "| seconds per epoch |",
        "|---|---:|---:|---:|---:|",
    ]
    for method, result in results.items():
        test = result["test"]
        log_z = test.get("mean_abs_log_z")
        lines.append(
            f"| {method} | {test['perplexity']:.1f} | {test['perplexity'] / reference:.2f}x "
            f"| {f'{log_z:.2f}' if log_z is not None else LOG_Z_NOT_SHOWN[method]} "
            f"| {statistics.median(result['seconds_per_epoch']):.1f} |"
        )
    return lines


def cost_table(rows: list[dict]) -> list[str]:
    lines = [
        "| words | head | train step ms | vs full | vs Keras Dense | forward ms "
        "| forward vs Keras |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['vocabulary']:,} | {r['head']} | {r['train_ms']:.1f} "
            f"| {r['train_vs_full']:.2f}x | {r['train_vs_keras']:.2f}x | {r['fwd_ms']:.1f} "
            f"| {r['fwd_vs_keras']:.2f}x |"
        )
    return lines


def cheaper_than_full(rows: list[dict]) -> bool:
    """Every new head's training step below the full softmax's, at every size."""
    return all(r["train_vs_full"] < 1.0 for r in rows if r["head"] in TIMED_HEADS)


def section(
    results: dict[str, dict], rows: list[dict], budget: tuple, quick: bool, out: Path
) -> str:
    units, epochs, limit = budget
    met = cheaper_than_full(rows)
    vocabularies = sorted({r["vocabulary"] for r in rows})
    commands = [f"    {results[m]['command']}" for m in results]
    return "\n".join(
        [
            "## Hierarchical softmax, BlackOut and negative sampling on the Penn Treebank",
            "",
            "- Paper: the hierarchical softmax (Morin & Bengio 2005; over a Huffman tree, "
            "Mikolov et al. 2013) trains at O(log V) per token and stays an exact, normalized "
            "model; BlackOut (Ji et al. 2016) trains large-vocabulary RNN language models with "
            "weighted sampling and a discriminative loss, close to the full softmax's "
            "perplexity at a fraction of its cost; negative sampling (Mikolov et al. 2013) "
            "learns word vectors cheaply but is not a consistent estimator of the softmax.",
            f"- Target: each new method's training step cheaper than the full softmax's at "
            f"{' and '.join(f'{v:,}' for v in vocabularies)} words: "
            f"{'met' if met else '**not met**'}. Perplexity: no threshold, the numbers are "
            "reported (negative sampling's full-softmax perplexity as it comes out: the "
            "method does not estimate the softmax).",
            "",
            f"PTB test perplexity after {epochs} epoch{'s' * (epochs > 1)} on the first "
            f"{limit:,} training tokens (validation and test whole), one GRU layer of "
            f"{units}, embedding 200, batch 20 × 35 steps, Adam 1e-3, output biases started at "
            f"the unigram log-probabilities (`--unigram-bias`; for the tree, its node biases), "
            f"{NUM_SAMPLED} noise words per batch from unigram^0.75 for BlackOut and negative "
            "sampling, one seed, the full softmax trained at the same budget as the reference"
            + (" (--quick: a smoke test, not a measurement)" if quick else "")
            + ":",
            "",
            *perplexity_table(results),
            "",
            "A training step's cost (`benchmarks/softmax.py`: embedding and GRU of "
            f"{200 if not quick else 8}, the head; batch 20 × 35 steps; Zipfian counts for the "
            "tree and the samplers; medians of round-robin rounds in one process; forward: "
            "every word's logits, the tree's log-probabilities):",
            "",
            *cost_table(rows),
            "",
            "The seconds per epoch (which include the epoch's validation: the full softmax's "
            "for every method but the tree) and the step costs were taken on 2 CPU cores shared "
            "with other jobs (`nice -n 5`; load above 20): the seconds per epoch are no "
            "method's cost, the step costs' ratios, timed round-robin in one process, are.",
            "",
            "Commands (the runs, then the whole section):",
            "",
            *commands,
            f"    PYTHONPATH=. nice -n 5 python benchmarks/softmax_methods.py --out {out}"
            + (" --quick" if quick else ""),
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> str:
    args = parse_args(argv)
    budget = BUDGET["quick" if args.quick else "full"]
    results = {}
    for method in METHODS:
        print(f"== ptb, --softmax {method}", flush=True)
        results[method] = train(method, args.out / "runs" / method, *budget)
        print(f"   test perplexity {results[method]['test']['perplexity']:.1f}", flush=True)
    rows = timed_rows(args.out / "runs" / "step_costs.json", args.quick, args.repeats)
    text = section(results, rows, budget, args.quick, args.out)
    write_atomically(args.out / "section.md", lambda path: Path(path).write_text(text))
    print(text)
    return text


if __name__ == "__main__":
    main()
