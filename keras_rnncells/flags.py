"""The flags of ``rnncells train`` as data, importable without TensorFlow.

Each trainer (a data task, `keras_rnncells.defaults.TASK_DEFAULTS`, or an
application, `keras_rnncells.defaults.APPS`) declares the flags it reads as
`Flag` records: the flag's name and help, how its value is read and the
settings field it sets. The command (`keras_rnncells.cli.train`) builds its
parser from them, refuses a flag that the named trainer does not declare,
names the flags of the settings a resumed run changed, and hands each trainer
the settings its flags gave (`given_settings`).

The value types of the flags (argparse ``type`` functions: `integer`,
`rate`, `penalty_weight`, `positive_float`, `positive_int`,
`non_negative_int` and `decay_factor`, made by `value_type`, and
`cell_names`) and the flags every trainer reads (`RUN_FLAGS`) are here too.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable, Iterable
from typing import Any


@dataclasses.dataclass(frozen=True)
class Flag:
    """One flag of ``rnncells train``: ``name`` (``--name-with-dashes`` on
    the command line, ``name`` in the parsed arguments), its ``help``, how
    its value is read (``type`` and ``choices``; a ``switch`` takes no
    value), its ``metavar``, the field of the trainer's settings it sets
    (``setting``, by default ``name``) and the flag it ``requires`` to be
    given with it.

    A flag not given is None (a switch too), which keeps the setting's
    default. Two trainers declare one flag alike, but for ``setting``, which
    is each trainer's own (an application's ``--limit`` sets its
    ``train_size``) and takes no part in comparing flags."""

    name: str
    help: str
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    switch: bool = False
    setting: str | None = dataclasses.field(default=None, compare=False)
    requires: str | None = None

    def __post_init__(self) -> None:
        if self.setting is None:
            object.__setattr__(self, "setting", self.name)

    @property
    def option(self) -> str:
        """The flag as written on the command line: ``--word-dropout``."""
        return "--" + self.name.replace("_", "-")

    def sets(self, setting: str) -> Flag:
        """This flag, setting the field ``setting`` of a trainer's settings."""
        return dataclasses.replace(self, setting=setting)

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """Adds the flag to ``parser`` (its value None when not given)."""
        if self.switch:
            parser.add_argument(self.option, action="store_true", default=None, help=self.help)
            return
        parser.add_argument(
            self.option, type=self.type, choices=self.choices, metavar=self.metavar, help=self.help
        )


def distinct_flags(flags: Iterable[Flag]) -> list[Flag]:
    """Each flag of ``flags`` once, in the order of its first declaration;
    a ValueError where two declarations of one name differ."""
    seen: dict[str, Flag] = {}
    for flag in flags:
        first = seen.setdefault(flag.name, flag)
        if first != flag:
            raise ValueError(
                f"Flag {flag.option} is declared twice, differently: {first!r} and {flag!r}"
            )
    return list(seen.values())


def given_settings(args: argparse.Namespace, flags: Iterable[Flag]) -> dict[str, Any]:
    """The settings that ``flags`` set in the parsed ``args``, by field name:
    those of the flags given (not None)."""
    values = {flag.setting: getattr(args, flag.name, None) for flag in flags}
    return {setting: value for setting, value in values.items() if value is not None}


# -- value types ----------------------------------------------------------------------
def value_type(
    convert: Callable[[str], Any], accepts: Callable[[Any], bool], expected: str
) -> Callable[[str], Any]:
    """An argparse type: ``convert(text)`` where that value ``accepts``, else
    the error "expected ``expected``, received 'text'"."""

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not accepts(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, received {text!r}")
        return value

    parse.__doc__ = f"An argparse type: {expected}."
    return parse


integer = value_type(int, lambda value: True, "an integer")
rate = value_type(float, lambda value: 0.0 <= value < 1.0, "a rate in [0, 1)")
# a penalty's β
penalty_weight = value_type(float, lambda value: 0.0 <= value < math.inf, "a float >= 0")
positive_float = value_type(float, lambda value: 0.0 < value < math.inf, "a positive number")
positive_int = value_type(int, lambda value: value > 0, "a positive integer")
non_negative_int = value_type(int, lambda value: value >= 0, "an integer >= 0")
# a factor that divides a learning rate
decay_factor = value_type(float, lambda value: 1.0 <= value < math.inf, "a number >= 1")


def cell_name(text: str) -> str:
    """An argparse type: a registered cell's name (the one type that imports
    TensorFlow: the registry is filled by importing the cells)."""
    from keras_rnncells.cli_runtime import import_tensorflow_quietly

    import_tensorflow_quietly()
    from keras_rnncells.cells.registry import list_cells

    if text not in list_cells():
        raise argparse.ArgumentTypeError(
            f"unknown cell {text!r}; registered cells: {', '.join(list_cells())}"
        )
    return text


def cell_names(text: str) -> str:
    """An argparse type: one registered cell's name, or a comma list of them
    (one per layer)."""
    for name in text.split(","):
        cell_name(name)
    return text


# -- the flags of every run -----------------------------------------------------------
CELL = Flag(
    "cell",
    "registered cell name (rnncells cells); data tasks with --layers N may name one per layer, "
    "bottom first (--cell gru,mgu --layers 2)",
    cell_names,
)
UNITS = Flag("units", "units per recurrent layer", positive_int)
EPOCHS = Flag("epochs", "training epochs", positive_int)
BATCH_SIZE = Flag("batch_size", "examples per batch", positive_int)
SEED = Flag("seed", "random seed", integer)
LIMIT = Flag("limit", "use at most this many training examples (smoke runs)", positive_int)
# What every trainer reads: the model's cell and size, the epochs, batches,
# seed and a cap on the training examples.
RUN_FLAGS = (CELL, UNITS, EPOCHS, BATCH_SIZE, SEED, LIMIT)
