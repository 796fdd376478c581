"""benchmarks/multitask.py --quick: every run kept, the section's table."""

import json

import pytest


@pytest.mark.slow
def test_multitask_script_writes_its_section(load_script, tmp_path):
    load_script("multitask").main(["--out", str(tmp_path), "--quick"])
    section = (tmp_path / "section.md").read_text(encoding="utf-8")
    assert section.startswith("## Multi-task encoder-decoder (Luong et al. 2016)")
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[0] for row in rows] == ["| dates", "| autoencode", "| month"]
    assert all(len(row.split(" | ")) == 5 for row in rows)
    runs = sorted(path.parent.name for path in (tmp_path / "runs").glob("*/*/results.json"))
    assert len(runs) == 10 and "multi_same_own_0" in runs and "single_month_1" in runs
    own = json.loads(next((tmp_path / "runs").glob("*/multi_same_own_1/results.json")).read_text())
    assert own["settings"]["epochs"] == 3 and own["updates_per_epoch"] == {
        "dates": 2, "autoencode": 1, "month": 1}  # fmt: skip
    assert all(0.0 <= own[f"{t}_exact_match"] <= 1.0 for t in ("dates", "autoencode"))
