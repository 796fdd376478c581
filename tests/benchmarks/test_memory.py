"""benchmarks/memory.py: the quick run's section (a table row per task and
model), and its runs reused on a second call."""

import pytest

pytestmark = pytest.mark.slow  # trains eight tiny models: minutes on 2 shared cores


def test_quick_run_writes_the_section(load_script, tmp_path):
    memory = load_script("memory")
    memory.main(["--out", str(tmp_path), "--quick"])
    section = (tmp_path / "section.md").read_text()
    assert section.startswith(f"## {memory.TITLE}\n")
    assert "- Paper: Sukhbaatar et al. 2015" in section and "- Target: No threshold" in section
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| single |")]
    rows += [line.split(" | ") for line in section.splitlines() if line.startswith("| two |")]
    assert [(row[1], row[2]) for row in rows] == [
        (model, hops)
        for _ in ("single", "two")
        for model, hops in [("LSTM", "-"), ("MemN2N", "1"), ("MemN2N", "2"), ("MemN2N", "3")]
    ]
    for row in rows:
        accuracy = float(row[3].rstrip("%"))
        assert 0 <= accuracy <= 100 and row[4] == f"{100 - accuracy:.1f}%"
    for row in rows:  # the ratio to the LSTM of the same task ("n/a" where it scored 0)
        lstm = next(r for r in rows if r[0] == row[0] and r[1] == "LSTM")
        reference = float(lstm[3].rstrip("%"))
        expected = f"{float(row[3].rstrip('%')) / reference:.2f}" if reference else "n/a"
        assert row[5] == expected or abs(float(row[5]) - float(expected)) <= 0.01, row
    stamps = {p: p.stat().st_mtime_ns for p in tmp_path.glob("runs/*/results.json")}
    assert len(stamps) == 8
    memory.main(["--out", str(tmp_path), "--quick"])  # reused, not retrained
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
