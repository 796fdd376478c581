"""Multi-task encoder-decoder (Luong et al. 2016) against single-task models at
the same budget, on written dates: date normalization ("dates"), autoencoding
of the source ("autoencode") and the date's month ("month", 12 classes).

    python benchmarks/multitask.py --out results/multitask [--quick]

For each seed, one `MultiTaskSeq2Seq` trains ``steps`` steps on alternating
batches (mixing ratios dates 1, autoencode 0.5, month 0.5) and one
single-task model per task trains ``steps`` steps on that task alone (the
same number of updates and batch size: the same budget). Held-out dates
(never seen in training): exact match of the greedy output for the sequence
tasks, accuracy for the month. Finished runs are kept as
``OUT/runs/SCALE/NAME.json`` and not run again. Writes ``OUT/section.md``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

import keras
import numpy as np

from keras_rnncells.data.multitask_dates import (
    CLASS_TASKS,
    MONTH_CLASSES,
    SEQUENCE_TASKS,
    endless_batches,
    multitask_date_splits,
    task_arrays,
)
from keras_rnncells.files import write_atomically, write_json
from keras_rnncells.seq2seq.multitask import MultiTaskSeq2Seq, fit_tasks, task_schedule

RATIOS = {"dates": 1.0, "autoencode": 0.5, "month": 0.5}
SEEDS = (0, 1)
FULL = {"train": 1500, "test": 200, "steps": 200, "units": 32, "batch": 32}
QUICK = {"train": 200, "test": 20, "steps": 6, "units": 8, "batch": 8}


def build(tasks: list[str], size: int, units: int) -> MultiTaskSeq2Seq:
    """A model with ``tasks`` (sequence tasks decode characters)."""
    sequence = {t: size for t in tasks if t in SEQUENCE_TASKS}
    classes = {t: MONTH_CLASSES for t in tasks if t in CLASS_TASKS}
    return MultiTaskSeq2Seq(
        size, sequence, classes, units=units, embedding_dim=32, max_output_length=32
    )


def evaluate(model: MultiTaskSeq2Seq, task: str, data: dict) -> float:
    """Exact match (sequence tasks) or accuracy (month) on the test pairs."""
    arrays = task_arrays(task, data["test"], data["ids"])
    if task in CLASS_TASKS:
        predicted = np.argmax(np.asarray(model(arrays[0], task=task)), axis=-1)
        return float(np.mean(predicted == arrays[1]))
    tokens = np.asarray(model.generate(arrays[0], task).tokens)
    wanted = [iso if task == "dates" else source for source, iso in data["test"]]
    return float(np.mean([data["ids"].decode(t) == w for t, w in zip(tokens, wanted)]))


def scale_name(scale: dict) -> str:
    """A run directory's name for ``scale``: runs of another scale are not reused."""
    return "_".join(f"{key}{value}" for key, value in sorted(scale.items()))


def run(name: str, tasks: list[str], seed: int, scale: dict, out: Path) -> dict:
    """One training run (or its kept result)."""
    path = out / "runs" / scale_name(scale) / f"{name}.json"
    if path.exists():
        return json.loads(path.read_text())
    data = multitask_date_splits(scale["train"], scale["test"], seed=seed)
    keras.utils.set_random_seed(seed)
    model = build(tasks, data["ids"].size, scale["units"])
    batches = {
        t: endless_batches(task_arrays(t, data["train"], data["ids"]), scale["batch"], seed)
        for t in tasks
    }
    start = time.time()
    fit_tasks(model, batches, {t: RATIOS[t] for t in tasks}, scale["steps"])
    result = {
        "seconds": time.time() - start,
        "scores": {t: evaluate(model, t, data) for t in tasks},
        "parameters": int(model.count_params()),
    }
    write_json(path, result)
    print(name, result, flush=True)
    return result


def section(results: dict, scale: dict, quick: bool) -> str:
    """``section.md``: per task, the multi-task score against the single-task one."""
    rows = []
    for task in RATIOS:
        multi = [results[f"multi_{s}"]["scores"][task] for s in SEEDS]
        single = [results[f"single_{task}_{s}"]["scores"][task] for s in SEEDS]
        ratio = np.mean(multi) / np.mean(single) if np.mean(single) else float("nan")
        metric = "accuracy" if task in CLASS_TASKS else "exact match"
        rows.append(
            f"| {task} | {metric} | {' / '.join(f'{v:.3f}' for v in multi)} | "
            f"{' / '.join(f'{v:.3f}' for v in single)} | {ratio:.2f} |"
        )
    lines = [
        "## Multi-task encoder-decoder (Luong et al. 2016)",
        "",
        "- Paper: Luong, Le, Sutskever, Vinyals & Kaiser 2016, Multi-task Sequence to "
        "Sequence Learning: sharing the encoder with auxiliary tasks (one-to-many setting: "
        "parsing, autoencoding) improves translation over single-task models.",
        "- Target: No threshold: the numbers are reported (each task's multi-task score "
        "against its single-task model at the same budget, 2 seeds).",
        "",
        "| task | metric | multi-task (seed 0 / 1) | single-task (seed 0 / 1) | ratio of means |",
        "|---|---|---|---|---|",
        *rows,
        "",
        "Same budget: the same number of updates (and batch size) per model, so within the "
        "multi-task model each task gets its mixing ratio's share of them ("
        + ", ".join(
            f"{task} {count}"
            for task, count in Counter(task_schedule(RATIOS, scale["steps"])).items()
        )
        + "). Scores near zero mean the task is not learned at this scale, which then "
        "says nothing for or against the paper's claim.",
        "",
        f"Scale{' (--quick: a smoke run, not a result)' if quick else ''}: {scale['train']} "
        f"training dates, {scale['test']} held-out dates, GRU units {scale['units']}, "
        f"batch {scale['batch']}, {scale['steps']} updates per model (multi-task: mixing "
        "ratios dates 1, autoencode 0.5, month 0.5), Adam 1e-3, greedy decoding; CPU, 2 "
        "shared cores. Reproduce: `python benchmarks/multitask.py --out results/multitask "
        f"--steps {scale['steps']}`.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/multitask"))
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    parser.add_argument("--steps", type=int, help="updates per model (default 200)")
    args = parser.parse_args(argv)
    scale = dict(QUICK if args.quick else FULL)
    if args.steps:
        scale["steps"] = args.steps
    results = {}
    for seed in SEEDS:
        results[f"multi_{seed}"] = run(f"multi_{seed}", list(RATIOS), seed, scale, args.out)
        for task in RATIOS:
            name = f"single_{task}_{seed}"
            results[name] = run(name, [task], seed, scale, args.out)
    text = section(results, scale, args.quick)
    print(text)
    write_atomically(args.out / "section.md", lambda path: Path(path).write_text(text, "utf-8"))


if __name__ == "__main__":
    main()
