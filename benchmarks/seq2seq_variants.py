"""The date normalizer's variants against its plain form, trained in the same
way: copying from the source, and sequence-level fine-tuning.

* ``copying``: meeting notes with a name to copy ("Meeting with Okonkwo on
  Nov 21, 2026" -> "Okonkwo 2026-11-21"; `keras_rnncells.data.dates.meeting_splits`),
  ``rnncells train seq2seq --dataset meetings`` with the app's defaults (GRU
  128, bidirectional encoder, "general" attention, 20,000 notes, 5 epochs),
  on characters and on SentencePiece BPE pieces (``--tokenizer bpe``, at most
  1,000 per side), each without and with ``--copy``. Exact match on 2,000
  notes whose 500 names never occur in training (greedy, beam 4) and,
  greedy, on 2,000 notes of training names dated 2100-2199 (training dates
  end in 2099).
* ``sequence_level``: the dates task made harder (1,000 training dates, and
  typos in 15% of the letters of every source, held-out ones too), 8 epochs
  of teacher forcing, then 2 more of teacher forcing, of REINFORCE with a
  baseline or of minimum risk training (``--finetune``, 8 samples per date).
  Exact match (greedy, beam 4) and mean character edit distance (greedy) on
  2,000 held-out dates. (At 3,000 clean dates teacher forcing alone reached
  100%: nothing left to gain.)

A finished run in ``--out`` is reused when its settings are the ones it would
get now (a setting added since keeps its default); an interrupted one resumes.

Usage::

    python benchmarks/seq2seq_variants.py --out runs/variants        # both, then the tables
    python benchmarks/seq2seq_variants.py --out runs/variants --only copying
    python benchmarks/seq2seq_variants.py --out /tmp/v --quick       # tiny: checks the script runs
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from keras_rnncells.apps.seq2seq import DateSettings, train_date_normalizer

HARDER = {"train_size": 1000, "typos": 0.15, "epochs": 8}
EXPERIMENTS = {
    "copying": tuple(
        (f"{tokenizer}-{'copy' if copy else 'no-copy'}", {"dataset": "meetings", **options})
        for tokenizer in ("char", "bpe")
        for copy in (False, True)
        for options in [{"tokenizer": tokenizer, **({"copy": True} if copy else {})}]
    ),
    "sequence_level": (
        ("teacher-forcing", {**HARDER, "epochs": 10}),
        ("reinforce", {**HARDER, "finetune": "reinforce"}),
        ("mrt", {**HARDER, "finetune": "mrt"}),
    ),
}
QUICK = {"units": 8, "epochs": 1, "train_size": 200, "validation_size": 20, "test_size": 40}
# The columns of each experiment's table: (header, results key, format).
PERCENT, NUMBER = "{:.2%}", "{:.3f}"
COLUMNS = {
    "copying": (
        ("held-out names, greedy", "exact_match_greedy", PERCENT),
        ("held-out names, beam 4", "exact_match_beam4", PERCENT),
        ("years 2100-2199, greedy", "exact_match_greedy_test_years", PERCENT),
    ),
    "sequence_level": (
        ("exact match, greedy", "exact_match_greedy", PERCENT),
        ("exact match, beam 4", "exact_match_beam4", PERCENT),
        ("mean edit distance, greedy", "mean_edit_distance_greedy", NUMBER),
    ),
}


def settings_of(options: dict, quick: bool) -> DateSettings:
    tiny = QUICK if quick else {}
    if quick and "finetune" in options:
        tiny = {**tiny, "finetune_epochs": 1}
    return DateSettings(**{**options, **tiny})


def train(run_dir: Path, settings: DateSettings) -> dict:
    """The run's results: trained now unless ``run_dir`` holds the run of these settings."""
    finished = run_dir / "results.json"
    if finished.exists():
        results = json.loads(finished.read_text(encoding="utf-8"))
        wanted = json.loads(json.dumps(asdict(settings)))
        if {**wanted, **results["settings"]} == wanted:
            return results
    return train_date_normalizer(run_dir, settings, verbose=2, overwrite=finished.exists())


def table(experiment: str, rows: list[tuple[str, dict]]) -> list[str]:
    columns = COLUMNS[experiment]
    header = " | ".join(name for name, _, _ in columns)
    lines = [
        f"| run | {header} | parameters | training s |",
        "|---|" + "---:|" * (len(columns) + 2),
    ]
    for name, results in rows:
        cells = " | ".join(form.format(results[key]) for _, key, form in columns)
        lines.append(
            f"| {name} | {cells} | {results['parameters']:,} | {results['training_seconds']:.0f} |"
        )
    return lines


def main(argv: list[str] | None = None) -> dict[str, list[tuple[str, dict]]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="directory of the runs")
    parser.add_argument("--only", choices=tuple(EXPERIMENTS), help="one experiment")
    parser.add_argument("--quick", action="store_true", help="tiny runs: not a measurement")
    args = parser.parse_args(argv)
    done = {}
    for experiment, runs in EXPERIMENTS.items():
        if args.only not in (None, experiment):
            continue
        rows = []
        for name, options in runs:
            run_dir = Path(args.out) / experiment / name
            rows.append((name, train(run_dir, settings_of(options, args.quick))))
        done[experiment] = rows
        print(f"\n{experiment}\n" + "\n".join(table(experiment, rows)))
    return done


if __name__ == "__main__":
    main()
