"""benchmarks/reproduce.py: runs reused or retrained by their settings, and the report."""

import dataclasses
import json

import pytest

pytestmark = pytest.mark.slow  # run by `pytest -m slow` (.ci/run), not by default


@pytest.fixture(scope="module")
def reproduce(load_script):
    return load_script("reproduce")


def test_reproduction_report_reads_the_runs(reproduce, tmp_path, require_data):
    require_data("mnist")
    runs = (reproduce.Run("gru"), reproduce.Run("mgu"))
    at_least_zero = reproduce.all_at_least(0.0, "gru", "mgu")
    mnist = reproduce.Experiment("mnist", "MNIST", "mnist_rows", runs, "p", "t", at_least_zero)
    waiting = reproduce.Experiment(
        "later", "Not run", "logic", (reproduce.Run("mufuru", 8),), "p", "t", lambda r: True
    )
    results = reproduce.run_experiment(mnist, tmp_path, quick=True)
    assert set(results) == {"gru", "mgu"}
    stamps = {p: p.stat().st_mtime_ns for p in tmp_path.glob("runs/mnist/*/results.json")}
    assert reproduce.run_experiment(mnist, tmp_path, quick=True) == results  # reused, not rerun
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps

    report = reproduce.write_report(tmp_path, experiments=(mnist, waiting)).read_text()
    for name, run in results.items():
        row = next(line for line in report.splitlines() if line.startswith(f"| {name} |"))
        assert f"{100 * run['test_metric']:.2f}%" in row and f"{run['parameters']:,}" in row
        assert run["command"] in report
    assert "- Target met." in report  # every accuracy is at least 0
    assert "**Not run yet:** mufuru-8." in report


def test_reproduction_over_seeds_reuses_runs_of_unchanged_settings(reproduce, tmp_path):
    runs = (reproduce.Run("gru", 2, seed=0), reproduce.Run("gru", 2, seed=1))
    assert [run.name for run in runs] == ["gru-2-s0", "gru-2-s1"]
    logic = reproduce.Experiment("logic", "Logic", "logic", runs, "p", "t", lambda r: True)
    results = reproduce.run_experiment(logic, tmp_path, quick=True)
    assert [results[run.name]["settings"]["seed"] for run in runs] == [0, 1]
    accuracies = [results[run.name]["test_metric"] for run in runs]
    assert reproduce.metric(results, "gru-2") == pytest.approx(sum(accuracies) / 2)

    report = reproduce.write_report(tmp_path, experiments=(logic,)).read_text()
    summary = next(line for line in report.splitlines() if line.startswith("| gru-2 |"))
    low, high = sorted(accuracies)
    mean = (low + high) / 2
    assert summary == f"| gru-2 | 2 | {100 * mean:.2f}% | {100 * low:.2f}% | {100 * high:.2f}% |"
    assert "seed 0, 1," in report

    stale, kept = (tmp_path / "runs" / "logic" / run.name / "results.json" for run in runs)
    stored = json.loads(stale.read_text())
    stored["settings"]["learning_rate"] = 0.5  # as if the task's default had changed since
    stale.write_text(json.dumps(stored))
    kept_stamp = kept.stat().st_mtime_ns
    results = reproduce.run_experiment(logic, tmp_path, quick=True)
    assert results["gru-2-s0"]["settings"]["learning_rate"] == 0.01  # trained again
    assert json.loads(stale.read_text())["settings"]["learning_rate"] == 0.01
    assert kept.stat().st_mtime_ns == kept_stamp  # up to date: reused


def test_report_draws_validation_against_time_and_lists_runs_still_training(reproduce, tmp_path):
    runs = (reproduce.Run("gru", 2), reproduce.Run("mgu", 2))
    logic = reproduce.Experiment(
        "logic", "Logic", "logic", runs, "p", "t", None, epochs=3, patience=2,
        paper_lines=(("GRU 90%", 90.0),),
    )  # fmt: skip
    reproduce.run_experiment(dataclasses.replace(logic, runs=runs[:1]), tmp_path, quick=True)
    interrupted = tmp_path / "runs" / "logic" / "mgu-2"  # two epochs done, a backup left
    (interrupted / "backup").mkdir(parents=True)
    (interrupted / "history.csv").write_text(
        "epoch,seconds,val_accuracy,val_loss\n0,60.0,0.5,0.7\n1,60.0,0.625,0.6\n"
    )
    report = reproduce.write_report(tmp_path, experiments=(logic,)).read_text()
    assert "- **Still training:** mgu-2." in report
    assert (
        "Still running: mgu-2, 2 epochs in 2 min, validation accuracy 62.50 after the last."
        in report
    )
    assert (
        "Early stopping: at most 3 epochs, ending after 2 without a lower validation loss" in report
    )
    assert "gru-2 trained 1 epoch, best (kept) 1." in report
    pytest.importorskip("matplotlib", reason="the figure needs the [plot] extra")
    assert "![validation against wall time](logic/validation.png)" in report
    assert (tmp_path / "logic" / "validation.png").read_bytes().startswith(b"\x89PNG")


def test_scripted_experiment_section_is_the_scripts_file(reproduce, tmp_path):
    scripted = reproduce.ScriptedExperiment("sets", "sets.py")
    assert scripted.section(tmp_path) == [
        "## sets",
        "",
        "Not run yet: `python benchmarks/sets.py`.",
        "",
    ]
    (tmp_path / "sets").mkdir()
    (tmp_path / "sets" / "section.md").write_text("## Sets\n\n| a |\n|---|\n", encoding="utf-8")
    report = reproduce.write_report(tmp_path, experiments=(scripted,)).read_text()
    assert "## Sets\n\n| a |\n|---|\n" in report
