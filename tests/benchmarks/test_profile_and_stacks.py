"""benchmarks/ptb_start.py, profile_step.py, stacks.py and softmax.py run and print their tables."""

import pytest

pytestmark = pytest.mark.slow  # run by `pytest -m slow` (.ci/run), not by default


def test_ptb_start_prints_window_perplexities(load_script, require_data, capsys):
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


def test_ptb_start_with_the_unigram_bias_starts_below_the_uniform_guess(load_script, require_data):
    require_data("ptb")
    argv = ["--steps", "2", "--window", "2", "--models", "mgu", "--units", "8", "--layers", "2"]
    curves = load_script("ptb_start").main([*argv, "--unigram-bias"])
    assert set(curves) == {"mgu", "mgu + unigram bias"}
    # zero biases: about the uniform 10,001; the unigram start: near its perplexity (687)
    assert curves["mgu"][0] > 5000 and curves["mgu + unigram bias"][0] < 2000, curves


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--models", "gru,nope"], "unknown"),
        (["--steps", "10", "--window", "20"], "--window"),
        (["--layers", "0"], "--units and --layers must be positive"),
    ],
)
def test_ptb_start_bad_arguments(load_script, argv, message, capsys):
    with pytest.raises(SystemExit):
        load_script("ptb_start").parse_args(argv)
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("layer, loop_part", [("mgu", 0), ("keras_gru", 0)])
def test_profile_step_puts_the_loop_matmuls_in_their_part(load_script, layer, loop_part, capsys):
    profile = load_script("profile_step")
    parts = profile.main(["--layer", layer, "--batch", "2", "--steps", "6", "--calls", "2"])
    assert list(parts) == list(profile.PARTS)
    assert all(value >= 0 for value in parts.values())
    assert parts[profile.PARTS[loop_part]] > 0  # per-step matmuls were found and counted
    printed = capsys.readouterr().out
    assert f"| {profile.PARTS[loop_part]} |" in printed and "ms unprofiled" in printed


def test_profile_step_bad_arguments(load_script):
    with pytest.raises(ValueError, match="--layer"):
        load_script("profile_step").parse_args(["--layer", "elman"])


def test_stacks_quick_run(load_script, capsys):
    rows = load_script("stacks").main(["--quick", "--cells", "mgu", "--layers", "2"])
    connections = ["plain", "residual", "dense", "gated_feedback", "clockwork"]
    assert [(r["cell"], r["connection"]) for r in rows] == [("mgu", c) for c in connections]
    plain, residual, dense, *_ = rows
    assert plain["train_vs_plain"] == 1.0 and residual["parameters"] == plain["parameters"]
    assert dense["parameters"] > plain["parameters"]  # the second layer reads 3 + 4 features
    for r in rows:
        assert r["fwd_vs_plain"] == pytest.approx(r["fwd_ms"] / plain["fwd_ms"])
    assert "| mgu | gated_feedback |" in capsys.readouterr().out


def test_softmax_quick_run(load_script, capsys):
    softmax = load_script("softmax")
    rows = softmax.main(["--quick"])
    assert [row["head"] for row in rows] == list(softmax.QUICK_HEADS)
    for row in rows:
        assert row["train_ms"] > 0 and row["fwd_ms"] > 0
        assert row["train_vs_full"] == pytest.approx(row["train_ms"] / rows[1]["train_ms"])
    printed = capsys.readouterr().out
    assert "| 300 | sampled, log-uniform |" in printed and "| vs our full |" in printed
