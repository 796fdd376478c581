"""benchmarks/scan.py runs at tiny shapes and writes its section (no timing asserted)."""

import json
import math

import pytest

pytestmark = pytest.mark.slow  # run by `pytest -m slow` (.ci/run), not by default


def test_scan_quick_run(load_script, tmp_path):
    scan = load_script("scan")
    result = scan.main(["--quick", "--out", str(tmp_path)])
    layers = {row["layer"] for row in result["rows"]}
    assert scan.REFERENCE in layers and "keras.layers.GRU" in layers
    for cell in ("MinGRU", "MinLSTM", "QRNN"):
        for path in ("scan", "fused", "generic"):
            assert f"rnncells.{cell} ({path})" in layers
    assert {row["steps"] for row in result["rows"]} == set(scan.QUICK_STEPS)
    for row in result["rows"]:
        assert math.isfinite(row["fwd_ms"]) and row["fwd_ms"] > 0
        assert math.isfinite(row["train_ms"]) and row["train_ms"] > 0
    reference = [r for r in result["rows"] if r["layer"] == scan.REFERENCE]
    assert all(r["train_vs_gru"] == 1.0 and r["fwd_vs_gru"] == 1.0 for r in reference)
    assert {(row["cell"], row["steps"]) for row in result["products"]} == {
        (cell, steps) for cell in (*scan.SCAN_CELLS, "GRU") for steps in scan.QUICK_STEPS
    }
    assert all(row["pct_peak"] > 0 for row in result["products"])
    memory = {(row["layer"], row["steps"]) for row in result["memory"]}
    assert memory == {(label, steps) for label in scan.MEMORY_ROWS for steps in scan.QUICK_STEPS}
    assert all(row["train_mb"] >= 0 for row in result["memory"])
    section = (tmp_path / "section.md").read_text()
    for heading in ("### Speed", "### The input product alone", "### Peak memory"):
        assert heading in section
    assert "| T | cell | forward: scan / fused |" in section and "Load average" in section
    assert section.startswith("## Scan cells")
    assert "- Paper:" in section and "- Target:" in section
    assert "| T | layer |" in section and "rnncells.MinGRU (scan)" in section
    assert json.loads((tmp_path / "rows.json").read_text())["rows"] == result["rows"]
