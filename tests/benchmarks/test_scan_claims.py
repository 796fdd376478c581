"""benchmarks/scan_claims.py: its verdicts on made-up results, and --quick:
every part's table, the verdicts, and the runs reused when run again."""

from __future__ import annotations

import pytest


def run(metric: str, value: float, seconds: float = 1.0) -> dict:
    """A finished run's results as the section reads them."""
    return {"metric": metric, "test_metric": value, "seconds_per_epoch": [seconds],
            "parameters": 10, "history": []}  # fmt: skip


def adding_results(means: dict[str, float]) -> dict[str, dict[int, dict]]:
    return {cell: {0: run("mse", value)} for cell, value in means.items()}


def test_the_adding_verdict_needs_a_reference_past_the_baseline(load_script):
    script = load_script("scan_claims")
    row = script.adding(200, 1, 10, ("gru", "lstm", "min_gru"), (0,))
    learned = {"gru": 0.010, "lstm": 0.050, "min_gru": 0.0105}
    verdict, notes = script.match_verdict(row, adding_results(learned), learned)
    assert verdict.startswith("met (best reference gru, mean mse 0.0100)")
    assert notes[0].endswith("standard error of 0.006): gru 0.0100, lstm 0.0500, min_gru 0.0105.")
    behind = {**learned, "min_gru": 0.012}  # 1.2x the GRU's
    verdict, _ = script.match_verdict(row, adding_results(behind), behind)
    assert verdict.startswith("**not met**") and verdict.endswith("1.1x in error: min_gru)")
    stuck = {"gru": 0.170, "lstm": 0.160, "min_gru": 0.168}  # at the baseline, within noise
    verdict, notes = script.match_verdict(row, adding_results(stuck), stuck)
    assert verdict.startswith("**not met** (best reference lstm")
    assert "none." in notes[0] and "No reference learned past the baseline" in notes[1]


def test_an_accuracy_is_compared_as_an_error(load_script):
    script = load_script("scan_claims")
    row = script.Row("logic", "logic", ("gru", "min_gru"), (0, 1), {})
    results = {"gru": {0: run("accuracy", 0.90), 1: run("accuracy", 0.90)},
               "min_gru": {0: run("accuracy", 0.89), 1: run("accuracy", 0.89)}}  # fmt: skip
    means = {"gru": 0.90, "min_gru": 0.89}  # errors 0.10 and 0.11: within 1.1x
    assert script.match_verdict(row, results, means)[0].startswith("met")
    chance = {"gru": {0: run("accuracy", 0.55)}, "min_gru": {0: run("accuracy", 0.55)}}
    verdict, notes = script.match_verdict(row, chance, {"gru": 0.55, "min_gru": 0.55})
    assert (
        verdict.startswith("**not met**") and "No reference reached an accuracy of 0.6" in notes[0]
    )
    table, _ = script.comparison_table(row, results)
    assert table[0].startswith("| cell | test accuracy (seed 0 / 1) | mean | vs GRU |")
    assert table[3] == "| min_gru | 0.8900 / 0.8900 | 0.8900 | 0.99x | 10 | 1.0 | 1.00x |"


def test_a_finished_run_of_other_settings_is_refused(load_script, tmp_path):
    script = load_script("scan_claims")
    script.check_settings(tmp_path, {"units": 32, "cell": "gru"}, {"units": 32})
    with pytest.raises(
        ValueError, match=r"holds a finished run of other settings .*'units': \(32, 8\)"
    ):
        script.check_settings(tmp_path, {"units": 32}, {"units": 8})


def test_time_to_accuracy_counts_the_epochs_until_the_threshold(load_script):
    script = load_script("scan_claims")
    history = [{"seconds": 5.0, "val_accuracy": 0.2}, {"seconds": 3.0, "val_accuracy": 0.5}]
    assert script.time_to_accuracy({"history": history}, 0.5) == 8.0
    assert script.time_to_accuracy({"history": history}, 0.6) is None


@pytest.mark.slow  # 8 tiny training runs
def test_scan_claims_quick_writes_every_part(load_script, tmp_path):
    script = load_script("scan_claims")
    script.main(["--out", str(tmp_path), "--quick"])
    section = (tmp_path / "section.md").read_text(encoding="utf-8")
    assert section.startswith(script.TITLE)
    parts = [line for line in section.splitlines() if line.startswith("### ")]
    assert parts == ["### The adding problem at T=12", "### The logic task (chains)",
                     "### Pixel MNIST (T=784): time to accuracy",
                     "### PTB word level at equal parameters"]  # fmt: skip
    targets = [line for line in section.splitlines() if line.startswith("- Target:")]
    assert len(targets) == 4 and all(" met" in t or "**not met**" in t for t in targets)
    tables = [line for line in section.splitlines() if line.startswith("| ")]
    cells = [line.split(" | ")[0][2:] for line in tables if not line.startswith("| cell")]
    assert cells == ["gru", "min_gru"] * 2 + ["mgu", "min_gru"] + ["gru", "min_gru"]
    assert "| gru | 8 |" in section  # the PTB GRU's units, the others matched to its parameters
    assert "seeds below 0.167" in section and "rnncells train adding" in section
    finished = sorted((tmp_path / "runs" / "quick").glob("*/*/results.json"))
    assert len(finished) == 8
    stamps = [path.stat().st_mtime_ns for path in finished]
    script.main(["--out", str(tmp_path), "--quick", "--rows", "adding_12"])  # reused, not trained
    assert [path.stat().st_mtime_ns for path in finished] == stamps
    assert "Not run (`--rows logic`)." in (tmp_path / "section.md").read_text(encoding="utf-8")
