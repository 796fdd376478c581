"""benchmarks/complexity.py: the paper's examples met, the section's tables."""

import pytest


@pytest.mark.slow
def test_complexity_script_writes_its_section(load_script, tmp_path):
    script = load_script("complexity")
    script.main(["--out", str(tmp_path), "--quick"])
    section = (tmp_path / "section.md").read_text(encoding="utf-8")
    assert section.startswith("## Architectural complexity measures")
    assert "equal the paper's values: met." in section
    rows = {line.split(" | ")[0].strip("| "): line for line in section.splitlines()}
    assert rows["td"].endswith("| 2 | 2 | d_r = 2, d_f = 3, s = 1 | met |")
    assert rows["skip k=8"].endswith("| 8 | 8 | d_r = 1, d_f = 2, s = 8 | met |")
    assert "| gated_feedback | lstm | 3 | 3 | 4 | 1 |" in section
    assert "| jordan | 2 | 3 | 1/2 |" in section
