"""benchmarks/softmax_methods.py --quick trains the four PTB runs, times the
new heads and writes its section with both tables (no number asserted)."""

import re

import pytest

pytestmark = pytest.mark.slow  # four PTB runs and the step-cost rounds


def test_softmax_methods_quick_section(load_script, tmp_path, require_data):
    require_data("ptb")
    script = load_script("softmax_methods")
    text = script.main(["--out", str(tmp_path), "--quick"])
    assert (tmp_path / "section.md").read_text() == text
    assert text.startswith("## Hierarchical softmax, BlackOut and negative sampling")
    assert "- Paper:" in text and "- Target:" in text
    assert re.search(r"words: (met|\*\*not met\*\*)\. Perplexity", text)
    rows = [line.split(" | ") for line in text.split("\n") if line.startswith("| ")]
    methods = [row[0][2:] for row in rows if row[0][2:] in script.METHODS]
    assert methods == list(script.METHODS)
    full = next(row for row in rows if row[0] == "| full" and len(row) == 5)
    assert full[2] == "1.00x"  # the reference, against itself
    hierarchical = next(row for row in rows if row[0] == "| hierarchical" and len(row) == 5)
    assert hierarchical[3] == "0 (normalized)"
    heads = {row[1] for row in rows if len(row) == 7}
    assert {"full", "hierarchical", "blackout", "negative sampling"} <= heads
    for method in script.METHODS:
        assert method == "full" or f"--softmax {method}" in text
        assert (tmp_path / "runs" / method / "results.json").exists()
    # a second run reads the finished runs and the step costs: the same section
    assert script.main(["--out", str(tmp_path), "--quick"]) == text
