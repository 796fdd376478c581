"""benchmarks/sets.py --quick: the section's table, and finished runs reused."""

import pytest

pytestmark = pytest.mark.slow  # trains four tiny models: minutes


def test_quick_run_writes_the_section_and_resumes(load_script, tmp_path, capsys):
    sets = load_script("sets")
    out = tmp_path / "sets"
    assert sets.main(["--out", str(out), "--quick", "--sizes", "3,4"]) == 0
    section = (out / "section.md").read_text(encoding="utf-8")
    lines = section.splitlines()
    assert lines[0].startswith("## Sets: sorting numbers")
    assert lines[2].startswith("- Paper: ") and lines[3].startswith("- Target: ")
    assert lines[3].endswith(("met.", "**not met**."))
    rows = [line for line in lines if line.startswith("| 3 |") or line.startswith("| 4 |")]
    assert len(rows) == 2 and all(len(row.split("|")) == 8 for row in rows)
    assert all(row.split("|")[2].strip().endswith("%") for row in rows)
    assert f"`python benchmarks/sets.py --out {out} --quick --sizes 3,4`" in section
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("runs/*/results.json")}
    assert len(stamps) == 4
    capsys.readouterr()
    assert sets.main(["--out", str(out), "--quick", "--sizes", "3,4"]) == 0
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # reused, not retrained
    assert (out / "section.md").read_text(encoding="utf-8") == section


def test_bad_sizes_are_refused(load_script, tmp_path, capsys):
    sets = load_script("sets")
    with pytest.raises(SystemExit) as exit_info:
        sets.main(["--out", str(tmp_path), "--sizes", "5,x"])
    assert exit_info.value.code == 2
    assert "--sizes: comma-separated integers expected" in capsys.readouterr().err
