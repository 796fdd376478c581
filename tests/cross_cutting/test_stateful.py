"""Stateful language models (`rnncells train ptb --stateful`): the windows of
the stream layout read in order with carried states give what one pass over
each whole stream row gives; the flag's run, its kept stateless model, and
its one-line refusals."""

from __future__ import annotations

import json
import shlex

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.cli import main
from keras_rnncells.data.ptb import stream_windows
from keras_rnncells.data.tasks import Task
from keras_rnncells.experiments import build_model, evaluate, reset_stream_states

BATCH, STEPS, VOCABULARY = 3, 5, 12


def random_stream_task(rng: np.random.Generator) -> tuple[Task, np.ndarray]:
    """A language-model task over one random stream (every split the same),
    and that stream's rows ``(BATCH, windows * STEPS + 1)``."""
    ids = rng.integers(1, VOCABULARY, size=BATCH * 4 * STEPS + BATCH)
    inputs, targets = stream_windows(ids, BATCH, STEPS)
    data = tf.data.Dataset.from_tensor_slices((inputs, targets))
    task = Task(
        name="stream",
        kind="language_model",
        train=data,
        validation=data,
        test=data,
        num_classes=VOCABULARY,
        vocabulary_size=VOCABULARY,
        description="a random stream",
    )
    rows = np.concatenate([*inputs, targets[-1][:, -1:]], axis=1)
    return task, rows


@pytest.mark.parametrize("cell", ["gru", "lstm", "mgu"])
def test_windows_in_order_with_carried_states_equal_whole_rows(rng, cell):
    keras.utils.set_random_seed(0)
    task, rows = random_stream_task(rng)
    stateful = build_model(task, cell, 6, layers=2, stateful=True, batch_size=BATCH)
    stateless = build_model(task, cell, 6, layers=2)
    stateless.set_weights(stateful.get_weights())
    reset_stream_states(stateful)
    windows = [stateful.predict_on_batch(x) for x, _ in task.test]
    whole = stateless.predict_on_batch(rows[:, :-1])
    np.testing.assert_allclose(np.concatenate(windows, axis=1), whole, rtol=1e-4, atol=1e-5)
    # the test loss is the whole rows' loss, read from the start of the stream
    stateful.predict_on_batch(rows[:, :STEPS])  # leave a state behind
    scores = evaluate(stateful, task)
    log_probs = tf.nn.log_softmax(whole).numpy()
    targets = rows[:, 1:]
    expected = -np.take_along_axis(log_probs, targets[..., None], axis=-1).mean()
    assert scores["cross_entropy"] == pytest.approx(expected, rel=1e-4)


@pytest.mark.slow  # a PTB training run (16 s of the default run)
def test_train_ptb_stateful_keeps_a_model_for_any_batch(tmp_path, capsys, require_data):
    require_data("ptb")
    out = tmp_path / "run"
    flags = ["--units", "4", "--layers", "1", "--epochs", "2", "--limit", "2000"]
    main(["train", "ptb", "--cell", "gru", *flags, "--stateful", "--out", str(out)])
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["settings"]["stateful"] is True
    assert "--stateful" in shlex.split(results["command"])
    model = keras.saving.load_model(out / "model.keras")
    assert model.inputs[0].shape == (None, None)
    assert not any(getattr(layer, "stateful", False) for layer in model.layers)
    assert int(model.optimizer.iterations) == 2 * 2  # kept: 2 epochs of 2 windows of 20 x 35
    batch = np.arange(1, 8, dtype="int32")[None]
    assert model.predict_on_batch(batch).shape == (1, 7, model.outputs[0].shape[-1])


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["train", "adding", "--stateful"],
            "--stateful applies to the ptb task and the ptb_chars task and the imdb_lm",
        ),
        (
            ["train", "ptb", "--stateful", "--model", "residual"],
            "Argument `stateful` applies to model 'rnn'",
        ),
    ],
    ids=["not-a-language-model", "other-connection"],
)
def test_what_stateful_refuses_is_one_line(refused_in_one_line, argv, message):
    refused_in_one_line(argv, message)
