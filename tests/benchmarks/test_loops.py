"""benchmarks/loops.py: one loop per core against one loop, and the portable loop's
unrolling against none and column blocks in every loop against the shipped rule, in
one run."""

import json
import math

import pytest

from keras_rnncells.layers.portable_loop import PORTABLE_UNROLL

pytestmark = pytest.mark.slow  # run by `pytest -m slow` (.ci/run), not by default


@pytest.fixture(scope="module")
def loops(load_script):
    return load_script("loops")


def test_loops_quick_run(loops, tmp_path, capsys):
    saved = tmp_path / "loops.json"
    rows = loops.main(["--quick", "--json", str(saved)])
    assert json.loads(saved.read_text())["rows"] == json.loads(json.dumps(rows))
    assert [(row["batch"], row["layer"]) for row in rows] == [
        (batch, layer) for batch in (2, 16) for layer in ("GRU", "LSTM", "MGU")
    ]
    for row in rows:
        assert row["loops"] == loops.loops_in_a_graph(row["batch"], 5)  # --quick: T 5
        for variant in ("keras", "one loop", "per core", "keras loop"):
            for mode in ("fwd", "train"):
                assert math.isfinite(row[variant][mode]) and row[variant][mode] > 0
        for variant in ("not unrolled", "blocked"):  # the portable loop's
            assert list(row[variant]) == ["fwd"]
            assert math.isfinite(row[variant]["fwd"]) and row[variant]["fwd"] > 0
    # under LOOP_MIN_ROWS; at 16 rows of 5 steps, under PORTABLE_MIN_ROW_STEPS for the forward
    assert [row["loops"] for row in rows if row["batch"] == 2] == [{"fwd": 1, "train": 1}] * 3
    assert {row["loops"]["fwd"] for row in rows if row["batch"] == 16} == {1}
    printed = capsys.readouterr().out
    assert "| batch | layer | loops (fwd / train) |" in printed
    assert f"PORTABLE_UNROLL {PORTABLE_UNROLL}," in printed
    assert printed.count("| rnncells.") == len(rows)


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--batches", "0"], "--batches"),
        (["--steps", "0"], "--steps"),
        (["--json", "/no/such/folder/x.json"], "--json"),
    ],
)
def test_loops_bad_arguments(loops, argv, flag):
    with pytest.raises(ValueError, match=flag):
        loops.parse_args(argv)
