"""Copying from the source: the date normalizer on meeting notes, with and
without the decoder's copy mechanism.

The notes carry a name to copy ("Meeting with Okonkwo on Nov 21, 2026" ->
"Okonkwo 2026-11-21"; `keras_rnncells.data.dates.meeting_splits`). Each run is
``rnncells train seq2seq --dataset meetings`` with the app's defaults (GRU 128,
bidirectional encoder, "general" attention, 20,000 notes, 5 epochs), once
without and once with ``--copy``, and the table gives exact match on 2,000
notes whose 500 names never occur in training (greedy and beam 4) and, greedy,
on 2,000 notes of training names dated 2100-2199 (training dates end in 2099).
A finished run in ``--out`` is reused when its settings are the ones it would
get now; an interrupted one resumes.

Usage::

    python benchmarks/copying.py --out runs/copying            # the two runs, then the table
    python benchmarks/copying.py --out /tmp/c --quick          # tiny: checks the script runs
    python benchmarks/copying.py --out runs/copying --tokenizer bpe
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from keras_rnncells.apps.seq2seq import TOKENIZERS, DateSettings, train_date_normalizer

QUICK = {"units": 8, "epochs": 1, "train_size": 200, "validation_size": 20, "test_size": 40}


def settings_of(copy: bool, tokenizer: str, quick: bool) -> DateSettings:
    return DateSettings(
        dataset="meetings", copy=copy, tokenizer=tokenizer, **(QUICK if quick else {})
    )


def train(run_dir: Path, settings: DateSettings) -> dict:
    """The run's results: trained now unless ``run_dir`` holds the run of these settings."""
    finished = run_dir / "results.json"
    if finished.exists():
        results = json.loads(finished.read_text(encoding="utf-8"))
        if results["settings"] == json.loads(json.dumps(asdict(settings))):
            return results
    return train_date_normalizer(run_dir, settings, verbose=2, overwrite=finished.exists())


def table(rows: list[tuple[str, dict]]) -> list[str]:
    lines = [
        "| run | held-out names, greedy | held-out names, beam 4 | years 2100-2199, greedy "
        "| parameters | training s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, results in rows:
        lines.append(
            f"| {name} | {results['exact_match_greedy']:.2%} | {results['exact_match_beam4']:.2%} "
            f"| {results['exact_match_greedy_test_years']:.2%} | {results['parameters']:,} "
            f"| {results['training_seconds']:.0f} |"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="directory of the runs")
    parser.add_argument("--tokenizer", choices=TOKENIZERS, default="char")
    parser.add_argument("--quick", action="store_true", help="tiny runs: not a measurement")
    args = parser.parse_args(argv)
    rows = []
    for copy in (False, True):
        name = f"{args.tokenizer}, {'copy' if copy else 'no copy'}"
        run_dir = Path(args.out) / f"{args.tokenizer}-{'copy' if copy else 'no-copy'}"
        rows.append((name, train(run_dir, settings_of(copy, args.tokenizer, args.quick))))
    print("\n".join(table(rows)))
    for name, results in rows:
        errors = results["test_errors"][:3]
        shown = "; ".join(
            f"{e['source']!r} -> {e['output']!r} (not {e['target']!r})" for e in errors
        )
        print(f"\n{name}, first held-out errors: {shown or 'none'}")


if __name__ == "__main__":
    main()
