"""benchmarks/char_words.py and benchmarks/ptb_chars.py: the size search
(cheap), and each script's ``--quick`` run writing its section (slow)."""

from __future__ import annotations

import re

import pytest

from benchmarks.equal_parameters import matching_size


def test_matching_size_finds_the_nearest_count():
    def count(size: int) -> int:
        return 3 * size * size + 10

    assert matching_size(count, count(17), 1, 100) == 17
    assert matching_size(count, count(17) + 40, 1, 100) == 17  # 17 is nearer than 18
    assert matching_size(count, 0, 1, 100) == 1 and matching_size(count, 10**9, 1, 100) == 100


def table_rows(section: str) -> list[list[str]]:
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[1:]]


@pytest.mark.slow  # three tiny PTB runs (minutes on 2 shared cores)
def test_char_words_quick_writes_its_section(load_script, require_data, tmp_path):
    require_data("ptb")
    rows = load_script("char_words").main(["--quick", "--out", str(tmp_path)])
    section = (tmp_path / "section.md").read_text()
    assert section.startswith("## Words from characters")
    assert "- Paper: Kim et al. (2016)" in section and re.search(r"met|\*\*not met\*\*", section)
    table = table_rows(section)
    assert [row[0] for row in table] == ["`words`", "`chars`", "`words+chars`"]
    assert table[0][3] == "1.000" and table[0][5] == "1.000"
    for row in rows:  # equal parameters: within 2% of the words model's
        assert abs(row["parameters"] / rows[0]["parameters"] - 1) < 0.02, row
        assert row["rare_tokens"] > 0 and row["perplexity"] > 1
    assert "rnncells train ptb --cell gru" in section and "--word-input chars" in section


@pytest.mark.slow  # four tiny character-level PTB runs (minutes on 2 shared cores)
def test_ptb_chars_quick_writes_its_section(load_script, require_data, tmp_path):
    require_data("ptb")
    rows = load_script("ptb_chars").main(["--quick", "--out", str(tmp_path)])
    section = (tmp_path / "section.md").read_text()
    assert section.startswith("## Character-level PTB") and "No threshold" in section
    assert [row[0] for row in table_rows(section)] == ["GRU", "LSTM", "MGU", "MuFuRU"]
    for row in rows:
        assert abs(row["parameters"] / rows[0]["parameters"] - 1) < 0.1, row
        assert 0 < row["bits_per_character"] < 7
