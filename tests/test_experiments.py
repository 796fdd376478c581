"""``rnncells train TASK`` and ``rnncells compare TASK`` (keras_rnncells.experiments).

Tiny runs (a few examples, one epoch, a few units) through the command line;
the numbers checked are the ones the runs record, recomputed independently.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import shlex
import subprocess
import sys

import keras
import numpy as np
import pytest

import keras_rnncells  # noqa: F401 (registers the layers model.keras needs)
from keras_rnncells.cli import TRAINABLE, build_parser, main
from keras_rnncells.data import list_tasks, load_task, size_options
from keras_rnncells.data.logic import VOCABULARY
from keras_rnncells.experiments import (
    PLOT_NOTE,
    TASK_DEFAULTS,
    build_model,
    reproduce_command,
    task_data,
    task_settings,
    train_task,
)
from keras_rnncells.metrics import TokenCrossEntropy
from keras_rnncells.regularizers import norm_stabilizer, temporal_coherence
from keras_rnncells.training import EpochTimes, run_callbacks

HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
TINY = ["--epochs", "1", "--batch-size", "4", "--limit", "8"]


def read_results(run_dir) -> dict:
    return json.loads((run_dir / "results.json").read_text(encoding="utf-8"))


def check_plots(results: dict, run_dir, names: tuple[str, ...]) -> None:
    """The PNGs ``names`` were written, or, without matplotlib, the note says why not."""
    if not HAS_MATPLOTLIB:
        assert results["plots"] == {"note": PLOT_NOTE}
        return
    for name in names:
        assert results["plots"][name] == f"{name}.png"
        assert (run_dir / f"{name}.png").read_bytes().startswith(b"\x89PNG")


def check_reloaded_model(results: dict, run_dir, metric: str) -> None:
    """model.keras loads back and scores the recorded test metric on the same test split."""
    settings = results["settings"]
    task = load_task(
        results["task"],
        batch_size=settings["batch_size"],
        seed=settings["seed"],
        **size_options(results["task"], settings["limit"]),
    )
    model = keras.saving.load_model(run_dir / "model.keras")
    scores = model.evaluate(task.test, return_dict=True, verbose=0)
    assert float(scores[metric]) == pytest.approx(results["test_metric"], rel=1e-5, abs=1e-6)


def test_every_task_is_trainable_with_defaults():
    assert set(list_tasks()) == set(TASK_DEFAULTS)
    for name in list_tasks():
        assert TRAINABLE[name] == ("keras_rnncells.experiments", TASK_DEFAULTS[name].help)


def test_train_size_sets_how_many_examples_a_generated_task_trains_on(tmp_path):
    import tensorflow as tf

    for task, size, limit, expected in (("logic", 40, None, 40), ("adding", 30, 10, 10)):
        settings = task_settings(task, train_size=size, limit=limit, batch_size=8)
        data = task_data(task, settings, tf.distribute.get_strategy())
        assert sum(int(targets.shape[0]) for _, targets in data.task.train) == expected
        assert f"--train-size {size} --out" in reproduce_command(task, tmp_path, settings)
    with pytest.raises(ValueError, match=r"`train_size` applies to the generated tasks .*'ptb'"):
        task_settings("ptb", train_size=5)


@pytest.mark.slow  # a training run (17 s of the default run)
def test_train_adding_writes_a_run_that_reloads_and_reproduces(tmp_path, capsys):
    out = tmp_path / "adding"
    main(["train", "adding", "--cell", "mgu", "--units", "3", *TINY, "--out", str(out)])
    results = read_results(out)
    assert f"test mse {results['test_metric']:.4f}" in capsys.readouterr().out
    assert results["task"] == "adding" and results["kind"] == "regression"
    assert results["metric"] == "mse" and results["test"]["loss"] == results["test_metric"]
    # The MGU paper's adding setting: bidirectional. Per direction, MGU on 2 features:
    # two blocks (f, h) of kernel 2x3, recurrent kernel 3x3 and bias 3; Dense(1) on 2 x 3.
    assert results["settings"]["bidirectional"] is True
    mgu = 2 * (2 * 3 + 3 * 3 + 3)
    assert results["recurrent_parameters"] == 2 * mgu
    assert results["parameters"] == 2 * mgu + 2 * 3 + 1
    assert len(results["seconds_per_epoch"]) == 1 and results["seconds_per_epoch"][0] > 0
    assert results["training_seconds"] >= results["seconds_per_epoch"][0]
    with open(out / "history.csv", encoding="utf-8") as f:
        history = list(csv.DictReader(f))
    assert [row["epoch"] for row in history] == ["0"]
    assert {"loss", "val_loss"} <= set(history[0])
    assert (out / "logs").is_dir() and not (out / "backup").exists()
    command = shlex.split(results["command"])
    assert command[:2] == ["rnncells", "train"]
    again = build_parser().parse_args(command[1:])
    assert (again.name, again.cell, again.units, again.out) == ("adding", "mgu", 3, str(out))
    assert (again.epochs, again.batch_size, again.limit, again.seed) == (1, 4, 8, 0)
    check_plots(results, out, ("learning_curve",))
    check_reloaded_model(results, out, "loss")
    with pytest.raises(SystemExit, match="--overwrite"):
        main(["train", "adding", "--cell", "mgu", "--units", "3", *TINY, "--out", str(out)])


@pytest.mark.slow  # a grid of training runs (22 s of the default run)
def test_compare_logic_over_cells_then_sizes(tmp_path, capsys):
    out = tmp_path / "compare"
    tiny = ["--epochs", "1", "--batch-size", "4", "--limit", "4", "--out", str(out)]
    # (several names in one comparison: tests/test_task_models.py)
    main(["compare", "logic", "--cells", "mufuru", "--units", "3", *tiny])
    printed = capsys.readouterr().out
    comparison = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert comparison["task"] == "logic" and comparison["metric"] == "accuracy"
    runs = comparison["runs"]
    assert [(r["cell"], r["units"]) for r in runs] == [("mufuru", 3)]
    assert "plots" not in comparison and not (out / "hidden_size.png").exists()
    for run in runs:
        run_dir = out / f"{run['cell']}-3"
        results = read_results(run_dir)
        assert run["run_dir"] == str(run_dir)
        assert run["accuracy"] == results["test_metric"] == results["test"]["accuracy"]
        assert 0.0 <= run["accuracy"] <= 1.0
        assert run["parameters"] == results["parameters"]
        assert run["seconds_per_epoch"] == results["seconds_per_epoch"][0]
        row = rf"^{run['cell']} +3 +{run['parameters']} +{run['accuracy']:.4f} +"
        assert re.search(row + rf"{run['seconds_per_epoch']:.2f}$", printed, re.MULTILINE), printed
    # MuFuRU's operation weights per input symbol: a softmax over the operations
    # at every step and unit, so each symbol's averages sum to 1.
    mufuru = read_results(out / "mufuru-3")
    weights = mufuru["operation_weights"]
    assert {"F", "T"} <= set(weights) <= set(VOCABULARY[1:])
    for symbol, by_operation in weights.items():
        assert list(by_operation) == ["keep", "replace", "max", "min", "mul", "diff", "forget"]
        assert sum(by_operation.values()) == pytest.approx(1.0, abs=1e-5), symbol
    check_plots(mufuru, out / "mufuru-3", ("learning_curve", "operation_weights"))
    check_reloaded_model(mufuru, out / "mufuru-3", "accuracy")
    # Over several sizes: the finished mufuru-3 is reused, mufuru-2 trained, and
    # the test metric plotted against the hidden size.
    stamp = (out / "mufuru-3" / "results.json").stat().st_mtime_ns
    main(["compare", "logic", "--cells", "mufuru", "--units", "2,3", *tiny])
    assert (out / "mufuru-3" / "results.json").stat().st_mtime_ns == stamp
    comparison = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert [(r["cell"], r["units"]) for r in comparison["runs"]] == [("mufuru", 2), ("mufuru", 3)]
    assert comparison["runs"][1]["accuracy"] == mufuru["test_metric"]
    if HAS_MATPLOTLIB:
        assert comparison["plots"] == {"hidden_size": "hidden_size.png"}
        assert (out / "hidden_size.png").read_bytes().startswith(b"\x89PNG")
    else:
        assert comparison["plots"] == {"note": PLOT_NOTE}


@pytest.mark.slow  # an SST-2 training run (15 s of the default run)
def test_train_sst2_from_the_data_folder(require_data, tmp_path):
    require_data("sst2")
    out = tmp_path / "sst2"
    main(["train", "sst2", "--cell", "mgu", "--units", "3", *TINY, "--out", str(out)])
    results = read_results(out)
    assert results["kind"] == "binary" and results["metric"] == "accuracy"
    assert 0.0 <= results["test_metric"] <= 1.0
    assert "Stanford Sentiment Treebank" in results["description"]
    check_reloaded_model(results, out, "accuracy")


def test_bad_arguments_give_clear_errors(tmp_path, capsys):
    for argv, message in (
        (["train", "nope", "--out", str(tmp_path)], "invalid choice: 'nope'"),
        (["train", "logic", "--cell", "nope", "--out", str(tmp_path)], "unknown cell 'nope'"),
        (["compare", "logic", "--cells", "gru,nope", "--out", str(tmp_path)], "unknown cell"),
        (["compare", "logic", "--units", "4,0", "--out", str(tmp_path)], "positive integer"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2, argv
        assert message in capsys.readouterr().err, argv
    with pytest.raises(ValueError, match="`task` must be one of"):
        train_task("nope", tmp_path)
    with pytest.raises(ValueError, match="`name` must be one of"):
        train_task("logic", tmp_path, cell="nope")
    with pytest.raises(ValueError, match="`units`"):
        train_task("logic", tmp_path, units=0)
    assert not any(tmp_path.iterdir())  # nothing written before the arguments are checked


@pytest.mark.slow  # two training runs (42 s of the default run)
@pytest.mark.parametrize("ema_momentum", [None, 0.5])
def test_ema_momentum_validates_tests_and_saves_the_averaged_weights(tmp_path, ema_momentum):
    task = load_task("logic", batch_size=8, train_size=32, validation_size=16, test_size=16)
    model = build_model(task, "gru", 4, learning_rate=0.05, ema_momentum=ema_momentum)
    raw = {}

    class RawWeights(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):  # after validation, before averaging
            raw["weights"] = [w.numpy() for w in self.model.trainable_weights]

    callbacks = [*run_callbacks(tmp_path, EpochTimes(), ema=ema_momentum is not None)]
    history = model.fit(
        task.train,
        validation_data=task.validation,
        epochs=2,
        verbose=0,
        callbacks=[*callbacks, RawWeights()],
    )
    final = [w.numpy() for w in model.trainable_weights]
    averaged = not all(np.array_equal(a, b) for a, b in zip(final, raw["weights"]))
    assert averaged == (ema_momentum is not None)
    # The last validation ran on the weights the model ends with.
    val_loss = model.evaluate(task.validation, return_dict=True, verbose=0)["loss"]
    assert val_loss == pytest.approx(history.history["val_loss"][-1], rel=1e-5)


def test_ema_momentum_is_checked():
    with pytest.raises(ValueError, match="`ema_momentum` must be"):
        task_settings("sst2", ema_momentum=1.0)


@pytest.mark.slow  # a training run (30 s, most of it XLA compiling)
def test_dropout_between_layers(tmp_path):
    out = tmp_path / "adding"
    arguments = ["--units", "3", "--layers", "2", "--dropout", "0.25"]
    main(["train", "adding", *arguments, *TINY, "--out", str(out)])
    results = read_results(out)
    assert results["settings"]["dropout"] == 0.25
    assert "--dropout 0.25" in results["command"]
    model = keras.saving.load_model(out / "model.keras")
    rates = [layer.rate for layer in model.layers if isinstance(layer, keras.layers.Dropout)]
    assert rates == [0.25]  # one layer, called on each recurrent layer's input and the head's
    check_reloaded_model(results, out, "loss")  # inference: dropout is the identity
    with pytest.raises(ValueError, match="`dropout` must be"):
        task_settings("adding", dropout=1.0)


@pytest.mark.slow  # a training run (13 s of the default run)
def test_word_dropout_on_a_token_task(tmp_path):
    out = tmp_path / "logic"
    main(
        [
            "train",
            "logic",
            "--cell",
            "gru",
            "--units",
            "3",
            *TINY,
            "--word-dropout",
            "0.5",
            "--out",
            str(out),
        ]
    )
    results = read_results(out)
    assert results["settings"]["word_dropout"] == 0.5
    assert "--word-dropout 0.5" in results["command"]
    check_reloaded_model(results, out, "accuracy")  # inference: the layer is the identity
    model = keras.saving.load_model(out / "model.keras")
    layer = model.get_layer("word_dropout")
    embedded = np.ones((64, 20, 3), "float32")
    dropped = np.asarray(layer(embedded, training=True))
    zeroed = np.all(dropped == 0, axis=-1)
    assert np.all(zeroed | np.all(dropped == 1, axis=-1))  # whole embeddings dropped
    assert 0.4 < zeroed.mean() < 0.6  # 1280 tokens at rate 0.5
    with pytest.raises(ValueError, match="`word_dropout`"):
        task_settings("logic", word_dropout=1.0)
    with pytest.raises(ValueError, match="`word_dropout` applies to token tasks"):
        build_model(load_task("adding", batch_size=4, train_size=8), "gru", 2, word_dropout=0.1)


@pytest.mark.slow  # a training run (18 s of the default run)
def test_penalties_on_the_hidden_sequences_of_a_token_task(tmp_path, capsys):
    out = tmp_path / "logic"
    penalties = ["--temporal-coherence", "0.5", "--norm-stabilizer", "2"]
    main(["train", "logic", "--units", "3", "--layers", "2", *TINY, *penalties, "--out", str(out)])
    results = read_results(out)
    assert results["settings"]["temporal_coherence"] == 0.5
    assert results["settings"]["norm_stabilizer"] == 2.0
    assert "--norm-stabilizer 2.0 --temporal-coherence 0.5" in results["command"]
    model = keras.saving.load_model(out / "model.keras")
    tokens = np.array([[3, 4, 5, 6, 0], [4, 4, 0, 0, 0]], "int32")
    embedded = model.get_layer("embedding")(tokens)
    hidden = model.get_layer("recurrent_1")(embedded, mask=tokens != 0)
    model(tokens)
    expected = [
        temporal_coherence(hidden, 0.5, tokens != 0),
        norm_stabilizer(hidden, 2.0, tokens != 0),
    ]
    assert sorted(float(v) for v in model.losses) == pytest.approx(
        sorted(float(v) for v in expected), rel=1e-5
    )
    assert min(float(v) for v in expected) > 0
    # The last layer returns no sequence: a one-layer classifier has none to penalize.
    with pytest.raises(SystemExit):
        main(["train", "logic", *TINY, "--temporal-coherence", "0.5", "--out", str(tmp_path / "1")])
    message = capsys.readouterr().err.strip().splitlines()[-1]
    assert (
        "--temporal-coherence needs a recurrent layer that returns its hidden sequence" in message
    )
    with pytest.raises(ValueError, match="Argument `norm_stabilizer` must be a float >= 0"):
        task_settings("logic", norm_stabilizer=-1.0)


@pytest.mark.slow  # a PTB training run (28 s of the default run)
def test_language_model_perplexity_leaves_the_penalties_out(require_data, tmp_path):
    require_data("ptb")
    out = tmp_path / "ptb"
    penalty = ["--temporal-coherence", "100"]
    main(["train", "ptb", "--units", "3", *TINY[:4], "--limit", "300", *penalty, "--out", str(out)])
    test = read_results(out)["test"]
    assert test["loss"] > test["cross_entropy"] + 1e-3  # the penalty counts in the loss
    # A fresh `rnncells` process (the package imported lazily) loads the model
    # with its penalty layer and metric.
    done = subprocess.run(
        [sys.executable, "-m", "keras_rnncells.cli", "inspect", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "inspect" / "saturation.png").is_file()
    assert test["perplexity"] == pytest.approx(np.exp(test["cross_entropy"]))
    tokens = np.array([[5, 7, 0]], "int32")
    logits = np.log(np.array([[[0.2, 0.3, 0.5], [0.6, 0.3, 0.1], [1, 1, 1]]], "float32"))
    metric = TokenCrossEntropy()
    metric.update_state(tokens.clip(max=2) * (tokens != 0), logits)
    assert float(metric.result()) == pytest.approx(-(np.log(0.5) + np.log(0.1)) / 2, rel=1e-5)


@pytest.mark.slow  # a training run (13 s of the default run)
def test_batch_norm_on_a_task(tmp_path, capsys):
    out = tmp_path / "logic"
    main(
        [
            "train",
            "logic",
            "--cell",
            "lstm",
            "--units",
            "3",
            *TINY,
            "--batch-norm",
            "--out",
            str(out),
        ]
    )
    results = read_results(out)
    assert results["settings"]["batch_norm"] is True
    assert results["command"].endswith(f"--limit 8 --batch-norm --out {out}")
    cell = keras.saving.load_model(out / "model.keras").get_layer("recurrent_1").cell
    assert cell.batch_norm
    moving = np.asarray(cell.input_moving_mean)
    assert np.any(moving[0] != 0) and np.all(moving[-1] == 0)  # trained steps only
    task = load_task("logic", batch_size=4, seed=0, **size_options("logic", 8))
    assert results["batch_norm_reestimated_over"] == len(list(task.train))  # every batch
    with pytest.raises(SystemExit):
        main(["train", "logic", "--cell", "scrn", *TINY, "--batch-norm", "--out", str(out / "x")])
    assert (
        capsys.readouterr()
        .err.strip()
        .splitlines()[-1]
        .startswith("rnncells train: error: --batch-norm needs a cell")
    )
