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
    runs = sorted(path.stem for path in (tmp_path / "runs").glob("*/*.json"))
    assert len(runs) == 8 and "multi_0" in runs and "single_month_1" in runs
    scores = json.loads(next((tmp_path / "runs").glob("*/multi_1.json")).read_text())["scores"]
    assert set(scores) == {"dates", "autoencode", "month"}
    assert all(0.0 <= value <= 1.0 for value in scores.values())
