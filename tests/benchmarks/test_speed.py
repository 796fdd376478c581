"""benchmarks/speed.py runs and derives its ratios and floors from one run (no timing asserted)."""

import json
import math

import pytest
import tensorflow as tf

pytestmark = pytest.mark.slow  # run by `pytest -m slow` (.ci/run), not by default


@pytest.fixture(scope="module")
def speed(load_script):
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


def prepared_mgu(speed, x, **options):
    """`speed.prepare` on a fresh ``rnncells.MGU(5)`` built for ``x``, with
    ``prepare``'s ``options`` and no warm-up."""
    import keras_rnncells

    layer = keras_rnncells.MGU(5)
    layer.build(tuple(x.shape))
    return speed.prepare(speed.Bench("rnncells.MGU", lambda: layer), layer, x, 0, **options)


def test_speed_any_shape_traces_the_forward_pass_once_for_every_shape(speed, capsys):
    """``--any-shape``: the forward pass of each layer is traced once, for any
    batch and steps (as a served model's signature), and the report says so;
    without it, another shape is another trace."""
    import keras

    x = tf.random.normal((3, 5, 4))
    for any_shape, traces in ((True, 1), (False, 2)):
        forward = prepared_mgu(speed, x, any_shape=any_shape).functions["fwd"]
        assert forward(tf.random.normal((2, 7, 4))).shape == (2, 5)
        assert forward.experimental_get_tracing_count() == traces
    keras.backend.clear_session()
    speed.main(["--quick", "--cells", "simple", "--any-shape"])
    assert "forward traced for any batch and steps (as served)" in capsys.readouterr().out


def test_speed_compiled_inference_times_the_compiled_loop(speed, capsys):
    """``--compiled-inference``: our fused layer's forward pass is traced inside
    ``keras_rnncells.compiled_inference()`` and holds an XLA-compiled function
    (the compiled loop); without it, none (the portable loop)."""
    import keras

    x = tf.random.normal((3, 5, 4))
    for compiled, xla_functions in ((True, 1), (False, 0)):
        forward = prepared_mgu(speed, x, compiled_inference=compiled).functions["fwd"]
        graph = forward.get_concrete_function(x).graph.as_graph_def()
        found = sum(f.attr["_XlaMustCompile"].b for f in graph.library.function)
        assert found == xla_functions, (compiled, found)
    keras.backend.clear_session()
    speed.main(["--quick", "--cells", "simple", "--compiled-inference"])
    assert "in compiled_inference()" in capsys.readouterr().out


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


def test_speed_rounds_take_every_function_once_in_varying_orders(speed):
    calls = []

    def function(key):
        def call(x):
            calls.append(key)
            return x

        return call

    functions = {key: function(key) for key in "abcd"}
    times = speed.round_robin(functions, tf.zeros(1), repeats=6, warmup=0)
    assert {key: len(each) for key, each in times.items()} == dict.fromkeys("abcd", 6)
    rounds = [tuple(calls[i : i + 4]) for i in range(0, len(calls), 4)]
    assert all(sorted(order) == list("abcd") for order in rounds)
    assert len(set(rounds)) > 1  # a fixed order puts each layer after the same one
    # drawn from a fixed seed: a run's orders are the next run's
    assert next(speed.round_orders("abcd")) == next(speed.round_orders("abcd"))
