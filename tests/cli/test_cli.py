"""The ``rnncells`` command: help, the cell table, the demo and its data;
parsing without TensorFlow, and anticipated errors as one line with exit 2."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import keras_rnncells
from keras_rnncells.cli import COMMANDS, main
from keras_rnncells.demo import adding_problem

# The installed console script, as a user runs it (else the module).
MODULE = [sys.executable, "-m", "keras_rnncells.cli"]
RNNCELLS = [shutil.which("rnncells")] if shutil.which("rnncells") else MODULE


def parse_table(text: str) -> list[dict[str, str]]:
    """The rows of the last table ``format_table`` printed in ``text``."""
    lines = text.splitlines()
    rule = max(i for i, line in enumerate(lines) if re.fullmatch(r"-+( +-+)*", line))
    starts = [m.start() for m in re.finditer(r"-+", lines[rule])] + [None]
    spans = list(itertools.pairwise(starts))
    headers = [lines[rule - 1][a:b].strip() for a, b in spans]
    rows = []
    for line in lines[rule + 1 :]:
        if not line.strip():
            break
        rows.append({h: line[a:b].strip() for h, (a, b) in zip(headers, spans)})
    return rows


def test_help_lists_every_subcommand():
    done = subprocess.run([*RNNCELLS, "--help"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for name in ("cells", "demo", *COMMANDS):
        assert re.search(rf"^\s+{name}\s+\S", done.stdout, re.MULTILINE), done.stdout


def test_bad_arguments_are_one_line_pointing_to_help(capsys):
    for argv, prog in (
        (["demo", "--epochs", "0"], "rnncells demo"),
        (["cells", "--units", "x"], "rnncells cells"),
        (["nope"], "rnncells"),
        ([], "rnncells"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2, argv
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"{prog}: error: ") and f"(see `{prog} --help`)" in lines[0]


def test_cells_table_lists_every_cell_with_its_parameters(capsys):
    main(["cells"])
    rows = {row["name"]: row for row in parse_table(capsys.readouterr().out)}
    assert set(keras_rnncells.list_cells()) <= set(rows)
    m, n = 64, 128
    gru_reset_before = 3 * (m * n + n * n + n)
    mgu = int(rows["mgu"]["parameters"])
    assert mgu == 2 * (m * n + n * n + n)
    assert 3 * mgu == 2 * gru_reset_before
    # GRU defaults to reset_after=True: a second (recurrent) bias row.
    assert int(rows["gru"]["parameters"]) == gru_reset_before + 3 * n
    assert int(rows["lstm"]["parameters"]) == 4 * (m * n + n * n + n)
    assert rows["lstm"]["state size"] == f"[{n}, {n}]"
    assert rows["mgu"]["blocks"] == "f h"
    assert rows["mgu"]["class"] == "MGUCell"
    assert rows["mgu"]["module"] == "keras_rnncells.cells.mgu"
    assert "Zhou" in rows["mgu"]["citation"]


def test_adding_problem_marks_one_value_per_half_and_sums_them():
    steps = 9
    x, y = adding_problem(300, steps=steps, seed=3)
    assert x.shape == (300, steps, 2) and y.shape == (300, 1)
    assert x.dtype == np.float32 and y.dtype == np.float32
    values, markers = x[..., 0], x[..., 1]
    assert values.min() >= 0.0 and values.max() <= 1.0
    assert set(np.unique(markers)) == {0.0, 1.0}
    half = steps // 2
    assert np.all(markers[:, :half].sum(axis=1) == 1)
    assert np.all(markers[:, half:].sum(axis=1) == 1)
    for row in range(len(x)):
        marked = [values[row, t] for t in range(steps) if markers[row, t] == 1.0]
        assert y[row, 0] == pytest.approx(marked[0] + marked[1], abs=1e-6)
    again, _ = adding_problem(300, steps=steps, seed=3)
    other, _ = adding_problem(300, steps=steps, seed=4)
    np.testing.assert_array_equal(x, again)
    assert not np.array_equal(x, other)
    for kwargs in ({"samples": 0}, {"samples": 5, "steps": 1}):
        with pytest.raises(ValueError, match="samples" if "steps" not in kwargs else "steps"):
            adding_problem(**kwargs)


def test_tiny_demo_prints_its_table(capsys):
    units, features = 4, 2
    main(["demo", "--epochs", "1", "--samples", "64", "--units", str(units)])
    rows = {row["cell"]: row for row in parse_table(capsys.readouterr().out)}
    assert set(rows) == {"MGU", "GRU"}
    dense = units + 1
    recurrent = units * (features + units + 1)
    assert int(rows["MGU"]["parameters"]) == 2 * recurrent + dense
    assert int(rows["GRU"]["parameters"]) == 3 * recurrent + 3 * units + dense
    for row in rows.values():
        assert float(row["s/epoch"]) > 0
        assert np.isfinite(float(row["test MSE"]))
        assert 0 < float(row["baseline MSE"]) < 1


@pytest.mark.parametrize("command", [RNNCELLS, MODULE], ids=["script", "module"])
@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["--help"], 0),
        (["export", "--help"], 0),
        (["train", "nope"], 2),
        (["demo", "--units", "0"], 2),
        (["train", "adding", "--strategy", "multiworker", "--out", "run"], 2),  # TF_CONFIG
        (["verify", "nothing", "--key-file", "missing"], 2),
    ],
)
def test_help_and_argument_errors_import_no_tensorflow(command, argv, code, tmp_path):
    # TF_CPP_MIN_LOG_LEVEL 0: TensorFlow imported quietly would hide its import profile
    environ = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1", "TF_CPP_MIN_LOG_LEVEL": "0"}
    environ["TF_CONFIG"] = "{not json"
    done = subprocess.run(
        [*command, *argv], cwd=tmp_path, capture_output=True, text=True, env=environ, timeout=300
    )
    assert done.returncode == code, done.stderr[-2000:]
    imported = [
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    ]
    assert "keras_rnncells.defaults" in imported  # the profile covers the command's imports
    heavy = [name for name in imported if name.split(".")[0] in {"tensorflow", "keras"}]
    assert not heavy, heavy


# Each case: the arguments, then what the one line on standard error says
# after "rnncells COMMAND: error: " (a regular expression). Run in a directory
# holding "file" (a file) and "done/results.json" (a finished run), with
# RNNCELLS_DATA naming a folder that does not exist and the variables of
# `ENVIRONMENTS` (None: unset).
TF_CONFIG_EXPECTED = r'; expected JSON like \{"cluster": \{"worker"'
MULTIWORKER = ["train", "adding", "--strategy", "multiworker", "--out", "run"]
ANTICIPATED_ERRORS = {
    "out-is-a-file": (
        ["quickstart", "--out", "file"],
        r"--out /\S*/file is a file, not a directory; choose another --out",
    ),
    "file-on-the-way-to-out": (
        ["train", "adding", "--out", "file/run"],
        r"--out /\S*/file/run: /\S*/file is a file, not a directory; choose another --out",
    ),
    "finished-run": (
        ["train", "adding", "--out", "done"],
        r"--out /\S*/done already holds a finished run \(results.json\); pass --overwrite",
    ),
    "strategy-of-an-application": (
        ["train", "color-namer", "--out", "run", "--strategy", "mirrored"],
        r"--strategy is supported for the data tasks \(.*\), not for the application",
    ),
    "flag-an-app-ignores": (
        ["train", "color-namer", "--word-dropout", "0.2", "--out", "run"],
        r"--word-dropout applies to the data tasks and the sentiment app, not to color-namer$",
    ),
    "dropout-of-an-app": (
        ["train", "seq2seq", "--dropout", "0.2", "--out", "run"],
        r"--dropout applies to the data tasks, not to seq2seq$",
    ),
    "dropout-of-one": (
        ["train", "ptb", "--dropout", "1", "--out", "run"],
        r"argument --dropout: expected a rate in \[0, 1\), received '1'",
    ),
    "flag-a-task-ignores": (
        ["train", "ptb", "--pretrain", "lm", "--out", "run"],
        r"--pretrain applies to the sentiment app, not to ptb$",
    ),
    "tokenizer-of-an-app-without-text": (
        ["train", "color-namer", "--tokenizer", "bpe", "--out", "run"],
        r"--tokenizer applies to the sentiment app and the seq2seq app and the multitask app, not "
        r"to color-namer$",
    ),
    "tokenizer-that-cannot-write-dates": (
        ["train", "seq2seq", "--tokenizer", "wordpiece", "--out", "run"],
        r"Argument `tokenizer` must be one of \('char', 'bpe', 'unigram'\), received: 'wordpiece'$",
    ),
    "copy-for-an-app-without-a-decoder": (
        ["train", "sentiment", "--copy", "--out", "run"],
        r"--copy applies to the seq2seq app, not to sentiment$",
    ),
    "finetune-epochs-without-finetune": (
        ["train", "seq2seq", "--finetune-epochs", "3", "--out", "run"],
        r"--finetune-epochs needs --finetune reinforce or --finetune mrt$",
    ),
    "missing-data": (
        ["train", "sst2", "--out", "runs/sst2", "--epochs", "1"],
        r"No benchmark data folder at /\S*/no-data\. Set \$RNNCELLS_DATA to the folder",
    ),
    "missing-model": (["export", "runs/nothing"], r"MODEL: /\S*/runs/nothing\b"),
    "unknown-format": (["export", "done", "--format", "tflite"], r"--format must name"),
    "not-an-export": (["verify", "done"], r"/\S*/done holds no manifest.json"),
    "export-out-is-a-file": (
        ["export", "done", "--out", "file"],
        r"--out /\S*/file is a file, not a directory; choose another --out",
    ),
    "no-tf-config": (
        MULTIWORKER,
        rf"Environment variable `TF_CONFIG` is not set{TF_CONFIG_EXPECTED}",
    ),
    "malformed-tf-config": (
        MULTIWORKER,
        rf"Environment variable `TF_CONFIG` is not JSON \(.*\){TF_CONFIG_EXPECTED}",
    ),
    "tf-config-without-task": (
        MULTIWORKER,
        rf"Environment variable `TF_CONFIG` lacks `cluster` or `task`{TF_CONFIG_EXPECTED}",
    ),
    "tf-config-task-outside-the-cluster": (
        MULTIWORKER,
        r"Environment variable `TF_CONFIG`: `task` must name a role of the cluster",
    ),
    "unknown-cell": (
        ["train", "adding", "--cell", "nope", "--out", "run"],
        r"argument --cell: unknown cell 'nope'; registered cells: .*gru.* "
        r"\(see `rnncells train --help`\)",
    ),
    "not-a-number": (
        ["train", "adding", "--units", "x", "--out", "run"],
        r"argument --units: expected a positive integer, received 'x' "
        r"\(see `rnncells train --help`\)",
    ),
    "not-in-a-list": (
        ["compare", "adding", "--units", "4,x", "--out", "run"],
        r"argument --units: expected a positive integer, received 'x'",
    ),
    "not-an-integer": (
        ["demo", "--seed", "1.5"],
        r"argument --seed: expected an integer, received '1.5'",
    ),
    "no-out": (
        ["train", "adding"],
        r"the following arguments are required: --out \(see `rnncells train --help`\)",
    ),
    "unknown-command": (["nope"], r"argument command: invalid choice: 'nope'"),
    "missing-key-file": (
        ["verify", "done", "--key-file", "nokey"],
        r"--key-file /\S*/nokey: No such file or directory; give the file of the key",
    ),
    "short-key": (
        ["export", "done", "--key-file", "file"],
        r"--key-file /\S*/file holds 15 bytes; a key needs at least 16",
    ),
}
ENVIRONMENTS = {
    "no-tf-config": {"TF_CONFIG": None},
    "malformed-tf-config": {"TF_CONFIG": '{"cluster": '},
    "tf-config-without-task": {"TF_CONFIG": '{"cluster": {"worker": ["localhost:1"]}}'},
    "tf-config-task-outside-the-cluster": {
        "TF_CONFIG": '{"cluster": {"worker": ["localhost:1"]}, "task": {"type": "worker", '
        '"index": 1}}'
    },
}


@pytest.mark.parametrize("case", ANTICIPATED_ERRORS)
def test_anticipated_errors_are_one_line_and_exit_2(tmp_path, case):
    argv, expected = ANTICIPATED_ERRORS[case]
    (tmp_path / "file").write_text("not a directory\n")
    (tmp_path / "done").mkdir()
    (tmp_path / "done" / "results.json").write_text("{}\n")
    environ = {**os.environ, "RNNCELLS_DATA": str(tmp_path / "no-data")}
    for name, value in ENVIRONMENTS.get(case, {}).items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    done = subprocess.run(
        [*RNNCELLS, *argv], cwd=tmp_path, capture_output=True, text=True, env=environ, timeout=300
    )
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr[-2000:]
    command = "rnncells" if argv[0] not in COMMANDS else f"rnncells {argv[0]}"
    assert re.fullmatch(rf"{command}: error: {expected}.*", lines[0]), lines[0]
    # nothing left behind: no empty run or export directory
    assert sorted(p.name for p in tmp_path.iterdir()) == ["done", "file"]
    assert [p.name for p in Path(tmp_path, "done").iterdir()] == ["results.json"]
