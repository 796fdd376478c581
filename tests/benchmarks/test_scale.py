"""benchmarks/scale.py: time and peak memory against T, each in a child process."""

import json
import math

import pytest

pytestmark = pytest.mark.slow  # run by `pytest -m slow` (.ci/run), not by default


@pytest.fixture(scope="module")
def scale(load_script):
    return load_script("scale")


def test_scale_quick_run(scale, tmp_path, capsys):
    saved = tmp_path / "scale.json"
    result = scale.main(["--quick", "--layers", "gru", "--json", str(saved)])  # + keras_gru
    assert json.loads(saved.read_text()) == json.loads(json.dumps(result))
    rows = {(row["name"], row["steps"]): row for row in result["rows"]}
    assert set(rows) == {(name, steps) for name in ("keras_gru", "gru") for steps in (5, 10)}
    for (name, steps), row in rows.items():
        assert row["error"] is None, row["error"]
        assert row["path"] == ("keras" if name == "keras_gru" else "fused")
        # Linux syncs per-thread RSS counters lazily (a few pages): a step of
        # the quick sizes, which allocates little, can read a few KiB below 0.
        assert row["train_ms"] > 0 and row["peak_mib"] > -0.25 and row["base_mib"] > 0
        assert row["ms_per_step"] == pytest.approx(row["train_ms"] / steps)
        reference = rows[("keras_gru", steps)]["peak_mib"]
        if reference > 0:
            assert row["peak_vs_keras"] == pytest.approx(row["peak_mib"] / reference)
    assert [check["quantity"] for check in result["linearity"]] == ["time", "memory"] * 2
    assert [goal["text"] for goal in result["goals"]] == [
        "rnncells.GRU: peak memory <= 1.2x keras.layers.GRU at every T"
    ]
    printed = capsys.readouterr().out
    assert "| rnncells.GRU | 10 |" in printed and "Peak memory at most 1.2x Keras'" in printed


def test_scale_memory_is_the_median_of_several_children(scale):
    args = scale.parse_args(["--quick", "--memory-runs", "3"])
    row = scale.run_child("gru", 10, args)
    assert row.error is None, row.error
    assert row.peak_low_mib <= row.peak_mib <= row.peak_high_mib
    line = scale.table_line(row)
    if row.peak_low_mib < row.peak_high_mib:
        assert f"({row.peak_low_mib:.1f}-{row.peak_high_mib:.1f})" in line
    assert args.memory_runs == 3 and scale.parse_args(["--quick"]).memory_runs == 1
    assert scale.parse_args([]).memory_runs == 3


def test_scale_child_timeout_becomes_a_row(scale):
    args = scale.parse_args(["--quick", "--timeout", "1"])  # TensorFlow alone takes longer
    row = scale.run_child("gru", 5, args)
    assert row.error == "timed out after 1 s" and math.isnan(row.train_ms)
    assert "timed out after 1 s" in scale.table_line(row)


def test_scale_linearity_checks(scale):
    def rows(name, time_ms, memory_mib):
        return [
            scale.Row(name, scale.LAYERS[name].label, t, time_ms(t), memory_mib(t))
            for t in (100, 250, 500, 1000, 2000)
        ]

    linear = rows("gru", lambda t: 20 + 2 * t, lambda t: 50 + 0.5 * t)
    check = scale.linearity(linear, "memory")
    assert (check.slope, check.intercept) == (pytest.approx(0.5), pytest.approx(50))
    assert check.passed and check.per_step_ratio == pytest.approx(1.0)
    assert check.middle_steps == 500 and check.growth == pytest.approx(1050 / 100)
    assert scale.linearity(linear, "time").passed
    quadratic = rows("gru", lambda t: 20 + 2 * t + 0.01 * t * t, lambda t: 50 + 0.5 * t)
    assert not scale.linearity(quadratic, "time").passed


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--steps", "100,x"], "--steps"),
        (["--layers", "gru,nope"], "--layers"),
        (["--repeats", "0"], "--repeats"),
        (["--memory-runs", "0"], "--memory-runs"),
        (["--child", "gru"], "--child"),  # needs one --steps value
    ],
)
def test_scale_bad_arguments(scale, argv, flag):
    with pytest.raises(ValueError, match=flag):
        scale.parse_args(argv)
