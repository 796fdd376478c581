"""The ``rnncells`` command: help, the cell table, the demo and its data."""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import keras_rnncells
from keras_rnncells.cli import COMMANDS, main
from keras_rnncells.demo import adding_problem


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
    script = shutil.which("rnncells")
    command = [script] if script else [sys.executable, "-m", "keras_rnncells.cli"]
    done = subprocess.run([*command, "--help"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for name in ("cells", "demo", *COMMANDS):
        assert re.search(rf"^\s+{name}\s+\S", done.stdout, re.MULTILINE), done.stdout


def test_bad_arguments_exit_with_usage(capsys):
    for argv in (["demo", "--epochs", "0"], ["cells", "--units", "x"], ["nope"], []):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2, argv
        assert "usage: rnncells" in capsys.readouterr().err


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
