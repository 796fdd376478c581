"""``rnncells train adding --length N``: every sequence of the run has N
steps; without it the task keeps its 50-55; a bad length is a one-line error."""

from __future__ import annotations

import pytest

from keras_rnncells.cli import main
from keras_rnncells.cli.train import every_train_flag, readers
from keras_rnncells.data.synthetic import ADDING_STEPS
from keras_rnncells.experiments import reproduce_command, task_data, task_settings


def sequence_lengths(settings) -> set[int]:
    import tensorflow as tf

    data = task_data("adding", settings, tf.distribute.get_strategy())
    splits = (data.task.train, data.task.validation, data.task.test)
    return {int(inputs.shape[1]) for split in splits for inputs, _ in split}


def test_length_sets_every_adding_sequence_and_is_in_the_command(tmp_path):
    settings = task_settings("adding", length=7, limit=12, batch_size=4)
    assert sequence_lengths(settings) == {7}
    assert "--length 7 --out" in reproduce_command("adding", tmp_path, settings)


def test_without_length_the_adding_problem_keeps_its_lengths(tmp_path):
    settings = task_settings("adding", limit=40, batch_size=4)
    assert settings.length is None
    lengths = sequence_lengths(settings)
    assert len(lengths) > 1 and lengths <= set(range(ADDING_STEPS[0], ADDING_STEPS[1] + 1))
    assert "--length" not in reproduce_command("adding", tmp_path, settings)


def test_a_bad_length_is_a_one_line_error(tmp_path, capsys):
    with pytest.raises(
        ValueError, match=r"^Argument `length` must be an integer >= 2, received: 1$"
    ):
        task_settings("adding", length=1)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match=r"`length` must be an integer >= 2, received: "):
            task_settings("adding", length=bad)
    with pytest.raises(ValueError, match=r"`length` applies to the adding task, not to 'logic'"):
        task_settings("logic", length=20)
    flag = next(flag for flag in every_train_flag() if flag.name == "length")
    assert readers(flag) == "the adding task"
    for argv, message in (
        (["adding", "--length", "1"], "Argument `length` must be an integer >= 2, received: 1"),
        (["adding", "--length", "0"], "argument --length: expected a positive integer"),
        (["logic", "--length", "9"], "--length applies to the adding task, not to logic"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(["train", *argv, "--out", str(tmp_path / "run")])
        assert exit_info.value.code == 2, argv
        assert message in capsys.readouterr().err, argv
    assert not any(tmp_path.iterdir())  # nothing written before the arguments are checked
