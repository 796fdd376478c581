"""``rnncells train NAME``: an application or a data task, trained into ``--out``.

The flags are the trainers' own: each data task and each application
declares the flags it reads (`keras_rnncells.defaults.train_flags`, records
of `keras_rnncells.flags.Flag`), and the parser takes every one of them once.
A flag the named trainer does not declare is refused in one line naming who
reads it; a flag given without the one it requires is refused too. The
trainer gets the settings its flags gave (`keras_rnncells.flags.given_settings`);
a resumed run of other settings is refused naming the flags that differ.
``--strategy``, ``--cpu-devices`` and ``--workers`` choose how a data task's
run is distributed (`keras_rnncells.distribute`).
"""

from __future__ import annotations

import argparse
import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from keras_rnncells.cli.arguments import out_argument, overwrite_argument
from keras_rnncells.cli.command import Command
from keras_rnncells.cli_runtime import fail
from keras_rnncells.defaults import (
    APPS,
    STRATEGIES,
    TASK_DEFAULTS,
    cluster_config,
    train_flags,
)
from keras_rnncells.flags import Flag, distinct_flags, given_settings, positive_int

# What `rnncells train NAME` trains: NAME -> (module with `train_from_arguments`, help):
# the applications (`defaults.APPS`, registered in keras_rnncells.apps.registry)
# and the data tasks.
TRAINABLE: dict[str, tuple[str, str]] = {
    **{name: (listing.module, listing.help) for name, listing in APPS.items()},
    **{
        name: ("keras_rnncells.experiments", defaults.help)
        for name, defaults in TASK_DEFAULTS.items()
    },
}


def every_train_flag() -> list[Flag]:
    """The flags of every trainer, each once: the data tasks' first."""
    return distinct_flags(flag for name in (*TASK_DEFAULTS, *APPS) for flag in train_flags(name))


def train_arguments(parser: argparse.ArgumentParser) -> None:
    """The trainer's name, ``--out``, every trainer's flags (`every_train_flag`),
    ``--overwrite`` and the distribution flags."""
    parser.add_argument(
        "name",
        choices=sorted(TRAINABLE),
        help="; ".join(f"{name}: {help}" for name, (_, help) in sorted(TRAINABLE.items())),
    )
    out_argument(parser)
    for flag in every_train_flag():
        flag.add_to(parser)
    overwrite_argument(parser)
    parser.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="none",
        help="data tasks: none (one device, default), mirrored (every local GPU, or the "
        "--cpu-devices), multiworker (one process per machine, cluster from TF_CONFIG)",
    )
    parser.add_argument(
        "--cpu-devices",
        type=positive_int,
        help="with --strategy mirrored: split the CPU into N logical devices, one replica each",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        help="with --strategy multiworker: start N worker processes on 127.0.0.1 "
        "(each its own TF_CONFIG) instead of reading TF_CONFIG",
    )


def readers(flag: Flag) -> str:
    """Who reads ``flag``: "the data tasks and the sentiment app", "the logic task"."""
    tasks = [name for name in TASK_DEFAULTS if flag in train_flags(name)]
    apps = [name for name in APPS if flag in train_flags(name)]
    words = ["the data tasks"] if tasks == list(TASK_DEFAULTS) else [f"the {t} task" for t in tasks]
    return " and ".join([*words, *(f"the {app} app" for app in apps)])


def refuse_unread_flags(args: argparse.Namespace) -> None:
    """Every flag given is one the trainer ``args.name`` reads."""
    read = train_flags(args.name)
    for flag in every_train_flag():
        if getattr(args, flag.name) is not None and flag not in read:
            fail(f"{flag.option} applies to {readers(flag)}, not to {args.name}")


def refuse_missing_requirements(args: argparse.Namespace) -> None:
    """A flag given that requires another comes with it."""
    read = {flag.name: flag for flag in train_flags(args.name)}
    for flag in read.values():
        needed = read.get(flag.requires)
        if needed is not None and getattr(args, flag.name) is not None:
            if getattr(args, needed.name) is None:
                values = [f"{needed.option} {choice}" for choice in needed.choices or ()]
                fail(f"{flag.option} needs {' or '.join(values) or needed.option}")


def check_distribution(args: argparse.Namespace) -> None:
    """``--strategy``, ``--cpu-devices`` and ``--workers`` go together, and a
    multi-worker run that starts no workers of its own has a valid ``TF_CONFIG``."""
    if args.strategy != "none" and args.name not in TASK_DEFAULTS:
        fail(
            f"--strategy is supported for the data tasks ({', '.join(TASK_DEFAULTS)}), "
            f"not for the application {args.name}"
        )
    if args.cpu_devices is not None and args.strategy != "mirrored":
        fail("--cpu-devices needs --strategy mirrored")
    if args.workers is not None and args.strategy != "multiworker":
        fail("--workers needs --strategy multiworker")
    if args.workers is not None and "TF_CONFIG" in os.environ:
        fail(
            "--workers starts its own cluster on 127.0.0.1, but TF_CONFIG is set: "
            "unset it, or drop --workers to join the cluster it names"
        )
    if args.strategy == "multiworker" and args.workers is None:
        cluster_config()  # a missing or malformed TF_CONFIG, told before TensorFlow loads


def train_check(args: argparse.Namespace) -> None:
    """No finished run in ``--out`` unless ``--overwrite``; no flag the
    trainer would ignore; distribution flags that go together; no flag
    without the flag it requires."""
    if (Path(args.out) / "results.json").exists() and not args.overwrite:
        fail(
            f"--out {args.out} already holds a finished run (results.json); "
            "pass --overwrite to replace it, or choose another --out"
        )
    refuse_unread_flags(args)
    check_distribution(args)
    refuse_missing_requirements(args)


def trainer(name: str) -> Callable[[argparse.Namespace, dict[str, Any]], None]:
    """The ``train_from_arguments`` of ``name``: its application's, or the data tasks'."""
    if name in APPS:
        from keras_rnncells.apps.registry import get_app

        return get_app(name).train_from_arguments
    return importlib.import_module(TRAINABLE[name][0]).train_from_arguments


def train_run(args: argparse.Namespace) -> None:
    """Trains (in local workers, with ``--workers``); a resumed run of other
    settings is refused naming the flags that differ."""
    from keras_rnncells.training import ChangedSettings

    train = trainer(args.name)
    if args.workers is not None:
        from keras_rnncells.distribute import launch_local_workers, worker_command

        raise SystemExit(launch_local_workers(worker_command(args.argv), args.workers))
    if args.cpu_devices is not None:
        from keras_rnncells.distribute import split_cpu

        split_cpu(args.cpu_devices)
    flags = train_flags(args.name)
    try:
        train(args, given_settings(args, flags))
    except ChangedSettings as error:
        named = {flag.setting: flag.option for flag in flags}
        listed = "; ".join(error.describe(name, named.get(name, name)) for name in error.changes)
        fail(
            f"--out {args.out} holds an unfinished run started with other arguments: {listed}. "
            "Give the run's arguments to resume it, --overwrite to start afresh, "
            "or choose another --out"
        )


COMMAND = Command(
    "train an application or task, write model, results.json and logs into --out",
    train_arguments,
    train_run,
    train_check,
)
