"""benchmarks/seq2seq.py, serving.py and seq2seq_variants.py run; the first two derive
their ratios from the same run."""

import json

import pytest

pytestmark = pytest.mark.slow  # run by `pytest -m slow` (.ci/run), not by default


def test_seq2seq_quick_run(load_script, tmp_path, capsys):
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


def test_serving_quick_run(load_script, tmp_path, capsys):
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
def test_serving_bad_arguments(load_script, argv, flag):
    with pytest.raises(ValueError, match=flag):
        load_script("serving").parse_args(argv)


def test_seq2seq_variants_quick_run_and_its_reuse(load_script, tmp_path, capsys):
    script = load_script("seq2seq_variants")
    done = script.main(["--out", str(tmp_path), "--quick"])
    out = capsys.readouterr().out
    for experiment, runs in script.EXPERIMENTS.items():
        assert [name for name, _ in done[experiment]] == [name for name, _ in runs]
        for name, _ in runs:
            assert f"| {name} |" in out
    copy = json.loads((tmp_path / "copying" / "char-copy" / "results.json").read_text())
    assert copy["settings"]["copy"] and "exact_match_greedy_test_years" in copy
    mrt = json.loads((tmp_path / "sequence_level" / "mrt" / "results.json").read_text())
    assert mrt["settings"]["finetune"] == "mrt" and len(mrt["seconds_per_epoch"]) == 2
    stamp = (tmp_path / "copying" / "char-copy" / "results.json").stat().st_mtime_ns
    script.main(["--out", str(tmp_path), "--quick", "--only", "copying"])  # reused
    assert (tmp_path / "copying" / "char-copy" / "results.json").stat().st_mtime_ns == stamp
