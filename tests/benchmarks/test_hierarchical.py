"""benchmarks/hierarchical.py --quick: both encoders, both seeds, and the
section's table with ratios against the flat encoder of the same seed."""

import re

import pytest


@pytest.mark.slow  # four tiny training runs on IMDB
def test_quick_run_writes_the_section(load_script, require_data, tmp_path):
    require_data("imdb")
    script = load_script("hierarchical")
    script.main(["--out", str(tmp_path), "--quick"])
    section = (tmp_path / "section.md").read_text(encoding="utf-8")
    assert section.startswith("## Hierarchical encoder against a flat one, IMDB")
    assert "- Paper: Serban et al. (2016)" in section
    assert re.search(r"- Target: .*: (met|\*\*not met\*\*)", section)
    rows = [line for line in section.splitlines() if re.match(r"\| (flat|hierarchical) \|", line)]
    assert len(rows) == 4  # two encoders, two seeds
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert 0 <= float(cells[3].rstrip("%")) <= 100 and float(cells[4]) > 0
        if cells[0] == "flat":
            assert cells[5:] == ["1.000", "1.00"]  # each flat run is its own reference
    # a second run reads the finished runs instead of training them again
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert runs == ["flat-seed0", "flat-seed1", "hierarchical-seed0", "hierarchical-seed1"]
    script.main(["--out", str(tmp_path), "--quick"])
    assert (tmp_path / "section.md").read_text(encoding="utf-8") == section
