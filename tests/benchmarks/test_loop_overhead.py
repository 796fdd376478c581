"""benchmarks/loop_overhead.py: the cost of a while loop's iteration, every variant timed."""

import math


def test_loop_overhead_quick_run(load_script, capsys):
    rows = load_script("loop_overhead").main(["--steps", "3", "--repeats", "1"])
    assert [(row["ops"], row["extra"]) for row in rows] == [
        (2, 0),
        (2, 10),
        (2, 20),
        (10, 0),
        (20, 0),
        (40, 0),
        (80, 0),
    ]
    assert all(math.isfinite(row["us"]) and row["us"] > 0 for row in rows)
    printed = capsys.readouterr().out
    assert printed.count("\n| ") == len(rows) + 1  # the header and one line a variant
