"""benchmarks/sweep.py runs over its grid and derives its ratios from the same run."""

import importlib.util
import itertools
import json
import math

import pytest

pytestmark = pytest.mark.slow  # run by `pytest -m slow` (.ci/run), not by default


@pytest.fixture(scope="module")
def sweep(load_script):
    return load_script("sweep")


def test_sweep_quick_run(sweep, tmp_path, capsys):
    saved, png = tmp_path / "sweep.json", tmp_path / "sweep.png"
    plot = ["--plot", str(png)] if importlib.util.find_spec("matplotlib") else []
    # rounds past --repeats until a point's timed calls took --min-seconds
    timing = ["--repeats", "2", "--min-seconds", "0.2"]
    result = sweep.main(["--quick", "--steps", "3", "--json", str(saved), *timing, *plot])
    assert json.loads(saved.read_text()) == json.loads(json.dumps(result))
    points = result["points"]
    grid = itertools.product(("GRU", "LSTM"), (1, 2), (3,), (4,))
    assert {(p["layer"], p["batch"], p["steps"], p["units"]) for p in points} == set(grid)
    for point in points:
        assert point["path"] == "fused"
        # 8 timed calls a round of a few ms each: 0.2 s takes more than 2 rounds
        assert point["rounds"] > 2
        for mode in ("fwd", "train"):
            ours, theirs = point[f"ours_{mode}_ms"], point[f"keras_{mode}_ms"]
            assert math.isfinite(ours) and ours > 0 and theirs > 0
            assert point[f"{mode}_ratio"] == pytest.approx(ours / theirs)
    ratios = [point[f"{mode}_ratio"] for point in points for mode in ("fwd", "train")]
    assert result["goal"]["passed"] == (max(ratios) <= 1.0)
    assert len(result["summary"]) == 4  # GRU and LSTM, forward and training step
    printed = capsys.readouterr().out
    assert "| layer | batch | T | units | Keras fwd ms |" in printed
    assert printed.count("| GRU | ") == 2 and printed.count("| LSTM | ") == 2
    assert ("PASS: implementation='auto'" in printed) == result["goal"]["passed"]
    assert not plot or png.stat().st_size > 0

    # nothing left to measure
    again = sweep.main(["--quick", "--steps", "3", "--json", str(saved), *timing, "--resume"])
    assert again["points"] == points
    assert "(0 of 2 grid points measured in this run)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--batches", "1,x"], "--batches"),
        (["--units", "0"], "--units"),
        (["--layers", "gru,mgu"], "--layers"),
        (["--resume"], "--resume"),
        (["--json", "/no/such/folder/x.json"], "--json"),
        (["--min-seconds", "-1"], "--min-seconds"),
        (["--min-seconds", "nan"], "--min-seconds"),
    ],
)
def test_sweep_bad_arguments(sweep, argv, flag):
    with pytest.raises(ValueError, match=flag):
        sweep.parse_args(argv)
