"""benchmarks/grid.py --quick: three runs, the section with its table."""

import pytest

pytestmark = pytest.mark.slow  # trains three models (minutes on 2 cores)


def test_quick_run_writes_the_section(load_script, tmp_path, require_data):
    require_data("mnist")
    grid = load_script("grid")
    path = grid.main(["--out", str(tmp_path), "--quick"])
    text = path.read_text(encoding="utf-8")
    assert text.startswith("## MNIST from the 28×28 grid")
    assert "- Target: No threshold: the numbers are reported" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert [row.split(" | ")[0] for row in rows[1:]] == [
        "| row-by-row LSTM",
        "| MD-RNN (gru, 4 directions)",
        "| RowLSTM (PixelRNN)",
    ]
    assert " | 1.00× | " in rows[1] and rows[1].endswith(" | 1.0× |")  # the reference
    counts = [int(row.split(" | ")[2].replace(",", "")) for row in rows[1:]]
    assert max(counts) / min(counts) < 1.15  # about equal parameters
    assert grid.main(["--out", str(tmp_path), "--quick"]) == path  # the runs reused
