"""Early stopping (`ResumableRun` with ``patience``): training ends after
``patience`` epochs without a lower validation loss and keeps the best
epoch's weights; a run interrupted on the way, or after its last epoch but
before it ended, resumes to the same epochs and weights, and every process
that trained it is recorded as a session."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_rnncells.cli import main
from keras_rnncells.experiments import task_settings
from keras_rnncells.training import BACKUP, EpochTimes, ResumableRun

# Trained toward y = x and validated on y = -x: the validation loss rises
# from the first epoch on, so the first epoch stays the best.
X = np.linspace(-1, 1, 32, dtype="float32").reshape(-1, 1)
TRAIN, VALIDATION = (X, X), (X, -X)


class Interrupt(keras.callbacks.Callback):
    """Raises at the start of epoch ``at`` (from 0), or at the end of training."""

    def __init__(self, at: int | None = None) -> None:
        super().__init__()
        self.at = at

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.at:
            raise KeyboardInterrupt

    def on_train_end(self, logs=None):
        if self.at is None:
            raise KeyboardInterrupt


class Weights(keras.callbacks.Callback):
    """The kernel after every epoch."""

    def __init__(self) -> None:
        super().__init__()
        self.epochs: list[np.ndarray] = []

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append(self.model.layers[0].kernel.numpy().copy())


def model() -> keras.Model:
    keras.utils.set_random_seed(0)
    net = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    net.compile(keras.optimizers.SGD(0.1), "mse")
    return net


def fit(run_dir, *callbacks, epochs=20, patience=2):
    net = model()
    resumable = ResumableRun(run_dir, EpochTimes(), patience=patience)
    net.fit(
        *TRAIN,
        validation_data=VALIDATION,
        epochs=epochs,
        batch_size=8,
        shuffle=False,
        verbose=0,
        callbacks=[*callbacks, resumable],
    )
    return net, resumable


def test_stops_after_patience_epochs_and_keeps_the_best_weights(tmp_path):
    weights = Weights()
    net, resumable = fit(tmp_path, weights, patience=3)
    assert len(resumable.rows) == 4 and resumable.best_epoch() == 1  # 1 + patience epochs
    losses = [row["val_loss"] for row in resumable.rows]
    assert losses == sorted(losses)  # rising: the stop is the patience's, not the epochs'
    np.testing.assert_array_equal(net.layers[0].kernel.numpy(), weights.epochs[0])
    assert not (tmp_path / BACKUP).exists()
    assert [s["epochs"] for s in resumable.sessions] == [4]


@pytest.mark.parametrize("interrupted_at", [2, None], ids=["mid-run", "after-the-stop"])
def test_a_resumed_run_stops_where_an_uninterrupted_one_does(tmp_path, interrupted_at):
    uninterrupted, expected = fit(tmp_path / "whole")
    with pytest.raises(KeyboardInterrupt):
        fit(tmp_path / "resumed", Interrupt(interrupted_at))
    assert (tmp_path / "resumed" / BACKUP / "best.npz").is_file()
    resumed, resumable = fit(tmp_path / "resumed")
    assert [r["val_loss"] for r in resumable.rows] == [r["val_loss"] for r in expected.rows]
    np.testing.assert_array_equal(
        resumed.layers[0].kernel.numpy(), uninterrupted.layers[0].kernel.numpy()
    )
    # one record per process: the second trains what the first left (nothing, after the stop)
    assert [s["epochs"] for s in resumable.sessions] == ([2, 1] if interrupted_at == 2 else [3, 0])
    assert resumable.sessions[-1]["first_epoch"] == 1 + resumable.sessions[0]["epochs"]


@pytest.mark.parametrize(
    "setting, value",
    [("patience", 0), ("optimizer", "lbfgs"), ("learning_rate", 0.0), ("learning_rate", np.nan)],
)
def test_bad_training_settings_are_named(setting, value):
    with pytest.raises(ValueError, match=f"`{setting}`"):
        task_settings("adding", **{setting: value})


def test_the_training_flags_apply_to_the_data_tasks_only(capsys):
    with pytest.raises(SystemExit):
        main(["train", "color-namer", "--patience", "2", "--out", "unused"])
    assert "--patience applies to the data tasks, not to color-namer" in capsys.readouterr().err


def test_patience_is_refused_with_a_weight_average():
    with pytest.raises(ValueError, match="`patience` keeps the best epoch's weights"):
        task_settings("sst2", patience=2)  # its default averages the weights


def test_max_length_applies_to_the_text_tasks(capsys):
    assert task_settings("imdb", max_length=128).max_length == 128
    with pytest.raises(ValueError, match="`max_length` applies to the text classification"):
        task_settings("adding", max_length=128)
    with pytest.raises(SystemExit):
        main(["train", "adding", "--max-length", "128", "--out", "unused"])
    assert "--max-length applies to the imdb task" in capsys.readouterr().err
