"""The flags of ``rnncells train`` as the trainers declare them
(`keras_rnncells.flags`, `keras_rnncells.defaults`): each sets a field of
its trainer's settings, declarations of one flag agree, and the command
builds its parser, refusals and resume messages from them."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from keras_rnncells.cli.train import every_train_flag, readers
from keras_rnncells.defaults import APPS, LIMIT, TASK_DEFAULTS, Settings, train_flags
from keras_rnncells.flags import Flag, distinct_flags, given_settings, positive_int


def app_settings() -> dict[str, type]:
    """Each application's settings class (importing the applications)."""
    from keras_rnncells.apps.color_namer import NamerSettings
    from keras_rnncells.apps.grammar import GrammarSettings
    from keras_rnncells.apps.multitask import MultiTaskSettings
    from keras_rnncells.apps.name_to_color import NameToColorSettings
    from keras_rnncells.apps.sentiment import SentimentSettings
    from keras_rnncells.apps.seq2seq import DateSettings

    return {
        "color-namer": NamerSettings,
        "name-to-color": NameToColorSettings,
        "rnng": GrammarSettings,
        "sentiment": SentimentSettings,
        "seq2seq": DateSettings,
        "multitask": MultiTaskSettings,
    }


def test_every_flag_sets_a_field_of_its_trainers_settings():
    classes = {**dict.fromkeys(TASK_DEFAULTS, Settings), **app_settings()}
    assert set(classes) == {*TASK_DEFAULTS, *APPS}
    for name, cls in classes.items():
        fields = {field.name for field in dataclasses.fields(cls)}
        flags = train_flags(name)
        assert len({flag.name for flag in flags}) == len(flags), name
        for flag in flags:
            assert flag.setting in fields, (name, flag.option, flag.setting)
            if flag.requires is not None:
                assert flag.requires in {other.name for other in flags}, (name, flag.option)


def test_the_parser_takes_every_flag_once_and_the_applications_limit_sets_train_size():
    names = [flag.name for flag in every_train_flag()]
    assert len(names) == len(set(names))
    assert {flag.name for name in (*TASK_DEFAULTS, *APPS) for flag in train_flags(name)} == set(
        names
    )
    args = argparse.Namespace(limit=5, units=None, cell="gru")
    assert given_settings(args, train_flags("color-namer")) == {"train_size": 5, "cell": "gru"}
    assert given_settings(args, train_flags("logic")) == {"limit": 5, "cell": "gru"}


def test_a_flag_declared_twice_must_be_declared_alike():
    flag = Flag("depth", "how deep", positive_int)
    assert flag.setting == "depth" and flag.option == "--depth"
    renamed = flag.sets("layers")
    assert renamed == flag and renamed.setting == "layers"  # the setting is the trainer's own
    assert distinct_flags([flag, renamed, LIMIT]) == [flag, LIMIT]
    with pytest.raises(ValueError, match="--depth is declared twice, differently"):
        distinct_flags([flag, Flag("depth", "how deep, in layers", positive_int)])


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        ("dropout", "the data tasks"),
        ("word_dropout", "the data tasks and the sentiment app"),
        ("shape", "the logic task"),
        ("max_length", "the imdb task and the sst2 task and the sst1 task"),
        ("stateful", "the ptb task and the ptb_chars task and the imdb_lm task"),
        ("word_input", "the ptb task"),
        ("tokenizer", "the sentiment app and the seq2seq app and the multitask app"),
        ("copy", "the seq2seq app"),
        ("train_size", "the adding task and the logic task and the anbn task and the anbncn task"),
    ],
)
def test_a_refusal_names_who_reads_the_flag(flag, expected):
    assert readers(next(f for f in every_train_flag() if f.name == flag)) == expected


def test_the_train_size_help_gives_the_generated_tasks_default_sizes():
    from keras_rnncells.data import task_options

    generated = [name for name in TASK_DEFAULTS if "train_size" in task_options(name)]
    sizes = {name: task_options(name)["train_size"] for name in generated}
    assert sizes["anbn"] == sizes["anbncn"]
    (flag,) = [flag for flag in train_flags("logic") if flag.name == "train_size"]
    expected = f"adding {sizes['adding']}, logic {sizes['logic']}, anbn and anbncn {sizes['anbn']}"
    assert expected in flag.help
    assert generated == [name for name in TASK_DEFAULTS if flag in train_flags(name)]
