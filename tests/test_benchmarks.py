"""The benchmark scripts run and derive their ratios from the same run (no timing asserted)."""

import importlib.util
import itertools
import json
import math
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def speed():
    return load_script("speed")


def test_speed_quick_run(speed, tmp_path, capsys):
    saved = tmp_path / "rows.json"
    # mut1 needs input features == units: the quick shape (4 features, 5 units) skips it.
    result = speed.main(["--quick", "--cells", "mgu,simple,mut1", "--json", str(saved)])
    assert json.loads(saved.read_text()) == json.loads(json.dumps(result))
    rows = {row["layer"]: row for row in result["rows"]}
    counterparts = {  # our layer: its Keras counterpart
        "rnncells.RNN(mgu)": "keras.layers.RNN(mgu)",
        "rnncells.RNN(simple)": "keras.layers.SimpleRNN",
        "rnncells.MGU": "keras.layers.RNN(mgu)",
        "rnncells.MGU(reset_after=True)": "keras.layers.RNN(mgu, reset_after=True)",
        "rnncells.SimpleRNN": "keras.layers.SimpleRNN",
    }
    assert set(rows) == set(counterparts) | {
        "keras.layers.GRU",
        "keras.layers.LSTM",
        "keras.layers.SimpleRNN",
        "keras.layers.RNN(mgu)",
        "keras.layers.RNN(simple)",
        "keras.layers.RNN(mgu, reset_after=True)",
    }
    assert set(result["skipped"]) == {"rnncells.RNN(mut1)", "keras.layers.RNN(mut1)"}
    peak = result["peak_gflops"]
    assert math.isfinite(peak) and peak > 0
    gru = rows["keras.layers.GRU"]
    for row in rows.values():
        for key in ("fwd_ms", "train_ms", "fwd_gflops", "train_gflops"):
            assert math.isfinite(row[key]) and row[key] > 0, (row["layer"], key)
        assert row["traces"] == 2, row["layer"]  # each function traced once
        assert row["fwd_vs_gru"] == pytest.approx(row["fwd_ms"] / gru["fwd_ms"])
        assert row["train_vs_gru"] == pytest.approx(row["train_ms"] / gru["train_ms"])
        assert row["fwd_pct_peak"] == pytest.approx(100 * row["fwd_gflops"] / peak)
        assert row["train_pct_peak"] == pytest.approx(100 * row["train_gflops"] / peak)
        counterpart = counterparts.get(row["layer"])
        assert row["counterpart"] == counterpart, row["layer"]
        if counterpart is None:  # Keras' own layers
            assert row["fwd_vs_counterpart"] is None and row["fwd_speedup"] is None
        else:
            ratio = row["fwd_ms"] / rows[counterpart]["fwd_ms"]
            assert row["fwd_vs_counterpart"] == pytest.approx(ratio), row["layer"]
    # MGU: 2 blocks of 5 units, kernel (4, 10) + recurrent (5, 10); B=3, T=5.
    assert rows["rnncells.MGU"]["flops"] == 2 * 3 * 5 * (4 * 10 + 5 * 10)
    assert rows["rnncells.MGU"]["fwd_gflops"] == pytest.approx(
        rows["rnncells.MGU"]["flops"] / rows["rnncells.MGU"]["fwd_ms"] / 1e6
    )
    assert rows["rnncells.RNN(mgu)"]["path"] == "fused"
    for ours, plain in (
        ("rnncells.RNN(mgu)", "keras.layers.RNN(mgu)"),
        ("rnncells.SimpleRNN", "keras.layers.RNN(simple)"),
        ("rnncells.MGU(reset_after=True)", "keras.layers.RNN(mgu, reset_after=True)"),
    ):
        assert rows[ours]["plain"] == plain
        plain = rows[plain]
        assert rows[ours]["fwd_speedup"] == pytest.approx(plain["fwd_ms"] / rows[ours]["fwd_ms"])
        assert rows[ours]["train_speedup"] == pytest.approx(
            plain["train_ms"] / rows[ours]["train_ms"]
        )

    goals = {goal["text"]: goal for goal in result["goals"]}
    mgu = rows["rnncells.MGU"]
    mgu_goal = goals["rnncells.MGU: forward <= 0.35x and train <= 0.45x of keras.layers.GRU"]
    assert mgu_goal["passed"] == (mgu["fwd_vs_gru"] <= 0.35 and mgu["train_vs_gru"] <= 0.45)
    assert mgu_goal["measured"] == f"{mgu['fwd_vs_gru']:.2f}x / {mgu['train_vs_gru']:.2f}x"
    assert "rnncells.MGU(reset_after=True): forward <= 0.35x and train <= 0.45x" in " ".join(goals)
    forward = {text: goal for text, goal in goals.items() if " forward <= 1.0x of " in text}
    assert len(forward) == len(counterparts) == len(goals) - 2  # + the two MGU floors
    for layer, counterpart in counterparts.items():
        row = rows[layer]
        text = (
            f"{layer} (fused): forward <= 1.0x of {counterpart} at batch 3, steps 5 "
            "(meant for batch 1, steps 20)"
        )
        assert forward[text]["passed"] == (row["fwd_vs_counterpart"] <= 1.0), layer
    printed = capsys.readouterr().out
    assert "| rnncells.MGU(reset_after=True) |" in printed
    assert "| fwd vs Keras counterpart |" in printed
    assert "| % of peak (fwd) | % of peak (train) |" in printed
    for text, goal in goals.items():
        assert f"- {'PASS' if goal['passed'] else 'FAIL'}: {text}: {goal['measured']}" in printed


@pytest.mark.parametrize("slower", [1.0, 1.01])
def test_speed_goals_are_the_floors(speed, slower):
    """Our times at exactly the floors pass; 1% slower, each floor fails."""

    def make(layer, fwd_ms, train_ms, counterpart=None):
        path = "keras" if layer.startswith("keras.") else "fused"
        return speed.Row(layer, path, None, counterpart, 1, 1000, fwd_ms, train_ms, 2)

    s = slower
    rows = [
        make("keras.layers.GRU", 10, 10),
        make("keras.layers.LSTM", 10, 20),
        make("keras.layers.RNN(mgu)", 10, 10),
        make("keras.layers.RNN(mufuru)", 20, 50),
        make("rnncells.RNN(mgu)", 5, 10, "keras.layers.RNN(mgu)"),  # not slowed
        make("rnncells.RNN(mufuru)", 20 * s, 45 * s, "keras.layers.RNN(mufuru)"),
        make("rnncells.GRU", 10 * s, 7 * s, "keras.layers.GRU"),
        # 0.80x Keras' LSTM, 1.6x Keras' GRU: the LSTM floor is against Keras' LSTM.
        make("rnncells.LSTM", 10 * s, 16 * s, "keras.layers.LSTM"),
        make("rnncells.MGU", 3.5 * s, 4.5 * s, "keras.layers.RNN(mgu)"),
    ]
    speed.derive(rows, 1.0)
    goals = speed.goals(rows, 1, 20)
    at_floor = slower == 1.0
    assert {goal.text: goal.passed for goal in goals} == {
        "rnncells.MGU: forward <= 0.35x and train <= 0.45x of keras.layers.GRU": at_floor,
        "rnncells.GRU (fused): train <= 0.70x of keras.layers.GRU": at_floor,
        "rnncells.LSTM (fused): train <= 0.80x of keras.layers.LSTM": at_floor,
        "rnncells.RNN(mufuru): train <= 4.5x of rnncells.RNN(mgu)": at_floor,
        # At the serving shape the text names it once.
        "rnncells.RNN(mgu) (fused): forward <= 1.0x of keras.layers.RNN(mgu) at batch 1, "
        "steps 20": True,
        "rnncells.RNN(mufuru) (fused): forward <= 1.0x of keras.layers.RNN(mufuru) at batch 1, "
        "steps 20": at_floor,
        "rnncells.GRU (fused): forward <= 1.0x of keras.layers.GRU at batch 1, steps 20": at_floor,
        "rnncells.LSTM (fused): forward <= 1.0x of keras.layers.LSTM at batch 1, steps 20": (
            at_floor
        ),
        "rnncells.MGU (fused): forward <= 1.0x of keras.layers.RNN(mgu) at batch 1, steps 20": (
            True  # 0.35x
        ),
    }
    measured = {goal.text: goal.measured for goal in goals}
    mgu = "rnncells.MGU: forward <= 0.35x and train <= 0.45x of keras.layers.GRU"
    assert measured[mgu] == f"{3.5 * s / 10:.2f}x / {4.5 * s / 10:.2f}x"
    lstm = "rnncells.LSTM (fused): train <= 0.80x of keras.layers.LSTM"
    assert measured[lstm] == f"{16 * s / 20:.2f}x"


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--cells", "gru,nope"], "--cells"),
        (["--repeats", "0"], "--repeats"),
        (["--units", "-1"], "--units"),
        (["--dtype", "int8"], "--dtype"),
    ],
)
def test_speed_bad_arguments(speed, argv, flag):
    with pytest.raises(ValueError, match=flag):
        speed.parse_args(argv)


def test_seq2seq_quick_run(tmp_path, capsys):
    saved = tmp_path / "rows.json"
    rows = load_script("seq2seq").main(["--quick", "--cells", "mgu", "--json", str(saved)])
    assert json.loads(saved.read_text())["rows"] == json.loads(json.dumps(rows))
    by_model = {row["model"]: row for row in rows}
    assert set(by_model) == {"keras GRU + keras Attention", "Seq2Seq(mgu)"}
    reference = by_model["keras GRU + keras Attention"]
    assert reference["train vs reference"] == 1.0 and reference["greedy 1"] is None
    for row in rows[1:]:
        assert row["train vs reference"] == pytest.approx(row["train"] / reference["train"])
        assert all(row[column] > 0 for column in ("greedy 1", "greedy 3", "beam4 3"))
    assert "| Seq2Seq(mgu) |" in capsys.readouterr().out


def test_serving_quick_run(tmp_path, capsys):
    saved = tmp_path / "rows.json"
    arguments = ["--rows", "keras-gru,mgu", "--repeats", "3", "--steps", "4"]
    arguments += ["--threads", "2", "--requests", "5", "--json", str(saved)]
    result = load_script("serving").main(arguments)
    assert json.loads(saved.read_text()) == json.loads(json.dumps(result))
    latency = ("SavedModel, JIT off", "tf.function, XLA loop", "ONNX Runtime")
    assert {(row["model"], row["runtime"], row["batch"]) for row in result["latency"]} == {
        (model, runtime, batch)
        for model in ("keras-gru", "mgu")
        for runtime in latency
        for batch in (1, 64)
    }
    for row in result["latency"]:
        assert row["p50_ms"] <= row["p99_ms"]
        assert row["per_second"] == pytest.approx(1000 * row["batch"] / row["p50_ms"])
    runtimes = ("SavedModel", "ONNX Runtime")
    load = {(row["model"], row["runtime"]): row for row in result["load"]}
    assert set(load) == {(model, runtime) for model in ("keras-gru", "mgu") for runtime in runtimes}
    for (_, runtime), row in load.items():
        assert (row["threads"], row["requests"], row["errors"], row["wrong"]) == (2, 10, 0, 0)
        assert 0 < row["p50_ms"] <= row["p99_ms"]
        reference = load[("keras-gru", runtime)]
        assert row["p50_vs_keras_gru"] == pytest.approx(row["p50_ms"] / reference["p50_ms"])
        assert row["per_second_vs_keras_gru"] == pytest.approx(
            row["per_second"] / reference["per_second"]
        )
    printed = capsys.readouterr().out
    assert "| mgu | ONNX Runtime | 64 |" in printed
    assert "| mgu | SavedModel, JIT off | 1 |" in printed
    assert "Under load: 2 threads x 5 requests" in printed
    assert "| keras-gru | SavedModel |" in printed and "| 0 | 0 | 1.00x | 1.00x |" in printed


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--threads", "0"], "--threads"),
        (["--requests", "-2"], "--requests"),
        (["--rows", "gru,x"], "--rows"),
    ],
)
def test_serving_bad_arguments(argv, flag):
    with pytest.raises(ValueError, match=flag):
        load_script("serving").parse_args(argv)


# -- sweep.py -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sweep():
    return load_script("sweep")


def test_sweep_quick_run(sweep, tmp_path, capsys):
    saved, png = tmp_path / "sweep.json", tmp_path / "sweep.png"
    plot = ["--plot", str(png)] if importlib.util.find_spec("matplotlib") else []
    result = sweep.main(["--quick", "--steps", "3", "--json", str(saved), *plot])
    assert json.loads(saved.read_text()) == json.loads(json.dumps(result))
    points = result["points"]
    grid = itertools.product(("GRU", "LSTM"), (1, 2), (3,), (4,))
    assert {(p["layer"], p["batch"], p["steps"], p["units"]) for p in points} == set(grid)
    for point in points:
        assert point["path"] == "fused"
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
    again = sweep.main(["--quick", "--steps", "3", "--json", str(saved), "--resume"])
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
    ],
)
def test_sweep_bad_arguments(sweep, argv, flag):
    with pytest.raises(ValueError, match=flag):
        sweep.parse_args(argv)


# -- scale.py -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def scale():
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
        (["--child", "gru"], "--child"),  # needs one --steps value
    ],
)
def test_scale_bad_arguments(scale, argv, flag):
    with pytest.raises(ValueError, match=flag):
        scale.parse_args(argv)


# -- reproduce.py -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def reproduce():
    return load_script("reproduce")


def test_reproduction_report_reads_the_runs(reproduce, tmp_path, require_data):
    require_data("mnist")
    runs = (reproduce.Run("gru"), reproduce.Run("mgu"))
    at_least_zero = reproduce.all_at_least(0.0, "gru", "mgu")
    mnist = reproduce.Experiment("mnist", "MNIST", "mnist_rows", runs, "p", "t", at_least_zero)
    waiting = reproduce.Experiment(
        "later", "Not run", "logic", (reproduce.Run("mufuru", 8),), "p", "t", lambda r: True
    )
    results = reproduce.run_experiment(mnist, tmp_path, quick=True)
    assert set(results) == {"gru", "mgu"}
    stamps = {p: p.stat().st_mtime_ns for p in tmp_path.glob("runs/mnist/*/results.json")}
    assert reproduce.run_experiment(mnist, tmp_path, quick=True) == results  # reused, not rerun
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps

    report = reproduce.write_report(tmp_path, experiments=(mnist, waiting)).read_text()
    for name, run in results.items():
        row = next(line for line in report.splitlines() if line.startswith(f"| {name} |"))
        assert f"{100 * run['test_metric']:.2f}%" in row and f"{run['parameters']:,}" in row
        assert run["command"] in report
    assert "- Target met." in report  # every accuracy is at least 0
    assert "**Not run yet:** mufuru-8." in report


def test_reproduction_over_seeds(reproduce, tmp_path):
    runs = (reproduce.Run("gru", 2, seed=0), reproduce.Run("gru", 2, seed=1))
    assert [run.name for run in runs] == ["gru-2-s0", "gru-2-s1"]
    logic = reproduce.Experiment("logic", "Logic", "logic", runs, "p", "t", lambda r: True)
    results = reproduce.run_experiment(logic, tmp_path, quick=True)
    assert [results[run.name]["settings"]["seed"] for run in runs] == [0, 1]
    accuracies = [results[run.name]["test_metric"] for run in runs]
    assert reproduce.metric(results, "gru-2") == pytest.approx(sum(accuracies) / 2)

    report = reproduce.write_report(tmp_path, experiments=(logic,)).read_text()
    summary = next(line for line in report.splitlines() if line.startswith("| gru-2 |"))
    low, high = sorted(accuracies)
    mean = (low + high) / 2
    assert summary == f"| gru-2 | 2 | {100 * mean:.2f}% | {100 * low:.2f}% | {100 * high:.2f}% |"
    assert "seed 0, 1," in report


def test_reproduction_trains_again_when_the_settings_changed(reproduce, tmp_path):
    runs = (reproduce.Run("gru", 2, seed=0), reproduce.Run("mgu", 2, seed=0))
    logic = reproduce.Experiment("logic", "Logic", "logic", runs, "p", "t", lambda r: True)
    reproduce.run_experiment(logic, tmp_path, quick=True)
    stale, kept = (tmp_path / "runs" / "logic" / run.name / "results.json" for run in runs)
    stored = json.loads(stale.read_text())
    stored["settings"]["learning_rate"] = 0.5  # as if the task's default had changed since
    stale.write_text(json.dumps(stored))
    kept_stamp = kept.stat().st_mtime_ns

    results = reproduce.run_experiment(logic, tmp_path, quick=True)
    assert results["gru-2-s0"]["settings"]["learning_rate"] == 0.01  # trained again
    assert json.loads(stale.read_text())["settings"]["learning_rate"] == 0.01
    assert kept.stat().st_mtime_ns == kept_stamp  # up to date: reused


# -- ptb_start.py -------------------------------------------------------------------------
def test_ptb_start_prints_window_perplexities(require_data, capsys):
    require_data("ptb")
    curves = load_script("ptb_start").main(
        ["--steps", "4", "--window", "2", "--models", "gru,keras_gru"]
    )
    assert set(curves) == {"gru", "keras_gru"}
    for curve in curves.values():  # untrained: near the 10,001-word vocabulary's uniform guess
        assert len(curve) == 2 and all(1000 < p < 20000 for p in curve)
    table = capsys.readouterr().out
    assert "| model | 2 | 4 | last vs keras_gru |" in table
    assert (
        f"| keras_gru | {curves['keras_gru'][0]:.0f} | {curves['keras_gru'][1]:.0f} | 1.00x |"
        in table
    )


@pytest.mark.parametrize(
    "argv, message",
    [(["--models", "gru,nope"], "unknown"), (["--steps", "10", "--window", "20"], "--window")],
)
def test_ptb_start_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit):
        load_script("ptb_start").parse_args(argv)
    assert message in capsys.readouterr().err


# -- profile_step.py ----------------------------------------------------------------------
@pytest.mark.parametrize("layer, loop_part", [("mgu", 0), ("keras_gru", 0)])
def test_profile_step_puts_the_loop_matmuls_in_their_part(layer, loop_part, capsys):
    profile = load_script("profile_step")
    parts = profile.main(["--layer", layer, "--batch", "2", "--steps", "6", "--calls", "2"])
    assert list(parts) == list(profile.PARTS)
    assert all(value >= 0 for value in parts.values())
    assert parts[profile.PARTS[loop_part]] > 0  # per-step matmuls were found and counted
    printed = capsys.readouterr().out
    assert f"| {profile.PARTS[loop_part]} |" in printed and "ms unprofiled" in printed


def test_profile_step_bad_arguments():
    with pytest.raises(ValueError, match="--layer"):
        load_script("profile_step").parse_args(["--layer", "elman"])


# -- stacks.py ----------------------------------------------------------------------------
def test_stacks_quick_run(capsys):
    rows = load_script("stacks").main(["--quick", "--cells", "mgu", "--layers", "2"])
    connections = ["plain", "residual", "dense", "gated_feedback", "clockwork"]
    assert [(r["cell"], r["connection"]) for r in rows] == [("mgu", c) for c in connections]
    plain, residual, dense, *_ = rows
    assert plain["train_vs_plain"] == 1.0 and residual["parameters"] == plain["parameters"]
    assert dense["parameters"] > plain["parameters"]  # the second layer reads 3 + 4 features
    for r in rows:
        assert r["fwd_vs_plain"] == pytest.approx(r["fwd_ms"] / plain["fwd_ms"])
    assert "| mgu | gated_feedback |" in capsys.readouterr().out
