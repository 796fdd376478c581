"""The learning-rate decay of the data tasks (``--learning-rate-decay FACTOR
--decay-after N``, Zaremba et al. 2014): each epoch's rate, recorded in the
run's history, and the same rates after a resume."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_rnncells.cli import main
from keras_rnncells.experiments import decayed_learning_rate, learning_rate_decay, task_settings
from keras_rnncells.training import EpochTimes, ResumableRun


def test_the_rate_is_constant_then_divided_every_epoch():
    rates = [decayed_learning_rate(1.0, 1.2, 6, epoch) for epoch in range(9)]
    np.testing.assert_allclose(rates, [1.0] * 6 + [1 / 1.2, 1 / 1.2**2, 1 / 1.2**3])
    assert [decayed_learning_rate(0.5, 2.0, 0, epoch) for epoch in range(3)] == [
        0.25,
        0.125,
        0.0625,
    ]


def fit(run_dir, epochs: int) -> list[float]:
    """A tiny model trained with the decay of ``--optimizer sgd --learning-rate
    0.1 --learning-rate-decay 2 --decay-after 1`` (resuming ``run_dir``);
    each epoch's rate from the run's history."""
    settings = task_settings(
        "adding", optimizer="sgd", learning_rate=0.1, learning_rate_decay=2.0, decay_after=1
    )
    keras.utils.set_random_seed(0)
    net = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    net.compile(keras.optimizers.SGD(settings.learning_rate), "mse")
    x = np.linspace(-1, 1, 16, dtype="float32").reshape(-1, 1)
    resumable = ResumableRun(run_dir, EpochTimes())
    net.fit(
        x,
        x,
        validation_data=(x, x),
        epochs=epochs,
        verbose=0,
        callbacks=[*learning_rate_decay(settings), resumable],
    )
    return [row["learning_rate"] for row in resumable.rows]


def test_a_run_records_each_epochs_rate_and_resumes_at_it(tmp_path):
    np.testing.assert_allclose(fit(tmp_path, epochs=2), [0.1, 0.05])
    # resumed for two more epochs: at the rates an uninterrupted run has
    np.testing.assert_allclose(fit(tmp_path, epochs=4), [0.1, 0.05, 0.025, 0.0125])


def test_no_decay_adds_no_callback():
    assert learning_rate_decay(task_settings("adding")) == ()


@pytest.mark.parametrize(
    "setting, value", [("learning_rate_decay", 0.5), ("decay_after", -1), ("decay_after", 1.5)]
)
def test_bad_decay_settings_are_named(setting, value):
    with pytest.raises(ValueError, match=f"`{setting}`"):
        task_settings("adding", **{setting: value})


def test_decay_after_needs_the_decay(capsys):
    with pytest.raises(SystemExit):
        main(["train", "adding", "--decay-after", "3", "--out", "unused"])
    assert "--learning-rate-decay" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "adding", "--learning-rate-decay", "0.5", "--out", "unused"])
    assert "expected a number >= 1, received '0.5'" in capsys.readouterr().err
