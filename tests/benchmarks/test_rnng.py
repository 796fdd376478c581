"""benchmarks/rnng.py: the generator's floor is a probability distribution,
and a quick run writes its section (then reads its finished runs back)."""

import itertools
import math
import re

import pytest

from keras_rnncells.data.logic import GATES


def trees_with(gates: int):
    """Every logic tree with ``gates`` gates."""
    if gates == 0:
        yield from ("F", "T")
        return
    for left_gates in range(gates):
        lefts, rights = trees_with(left_gates), list(trees_with(gates - 1 - left_gates))
        yield from itertools.product(GATES, lefts, rights)


def test_the_generators_probabilities_sum_to_one(load_script):
    rnng = load_script("rnng")
    for gates in (1, 2, 3):
        total = sum(
            math.exp(rnng.generator_log_probability(t, (gates, gates))) for t in trees_with(gates)
        )
        assert total == pytest.approx(1.0, abs=1e-9)
    # Over a range of gate counts, each count weighs 1 / (number of counts).
    total = sum(math.exp(rnng.generator_log_probability(t, (1, 2))) for t in trees_with(2))
    assert total == pytest.approx(0.5, abs=1e-9)


@pytest.mark.slow  # trains two tiny models
def test_a_quick_run_writes_its_section(load_script, tmp_path, capsys):
    rnng = load_script("rnng")
    rows = rnng.main(["--out", str(tmp_path), "--quick"])
    assert [row["model"] for row in rows] == ["RNNG", "LSTM LM", "generator (floor)"]
    by_name = {row["model"]: row for row in rows}
    # Untrained models are worse than the generator's own probabilities.
    for name in ("RNNG", "LSTM LM"):
        for split in ("validation", "test"):
            assert (
                by_name[name][f"{split}_actions"] > by_name["generator (floor)"][f"{split}_actions"]
            )
    # The two models are of about one size.
    assert abs(by_name["RNNG"]["parameters"] / by_name["LSTM LM"]["parameters"] - 1) < 0.1
    section = (tmp_path / "section.md").read_text()
    assert section.startswith("## Recurrent Neural Network Grammars")
    assert re.search(r"^- Target: .*: (met|\*\*not met\*\*)\.$", section, re.MULTILINE)
    assert "| RNNG | " in section and "| LSTM LM | " in section and "| 1.000 / 1.000 |" in section
    capsys.readouterr()
    again = rnng.main(["--out", str(tmp_path), "--quick"])  # finished runs are read back
    assert "RNNG: finished run" in capsys.readouterr().out
    assert again == rows
