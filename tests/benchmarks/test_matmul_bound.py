"""benchmarks/matmul_bound.py: the recurrent-matmul bound of a forward pass."""

import math

import numpy as np
import pytest
import tensorflow as tf


@pytest.mark.slow
def test_matmul_bound_quick_run(load_script, capsys):
    args = ["--batch", "9", "--steps", "6", "--input", "5", "--units", "8", "--repeats", "1"]
    bound = load_script("matmul_bound")
    result = bound.main(args)
    rows = result["forward"]
    assert [row["forward"] for row in rows] == [
        "keras.layers.GRU",
        "rnncells.GRU",
        "rnncells.MGU",
        "rnncells.MGU(reset_after=True)",
        "MGU: recurrent matmuls only",
        "MGU(reset_after=True): recurrent matmuls only",
        "GRU: recurrent matmuls only",
        "MGU written plainly in TensorFlow ops",
    ]
    assert all(math.isfinite(row["ms"]) and row["ms"] > 0 for row in rows)
    assert rows[0]["vs"] == 1.0
    # each op of a step at 1 row, the batch's 9 rows (one loop at this shape), and
    # at the most rows the portable loop runs in column blocks and twice that
    sizes = (1, 9, bound.BLOCK_ROWS, 2 * bound.BLOCK_ROWS)
    assert [(op["op"], op["rows"]) for op in result["ops"]] == [
        (name, rows) for rows in sizes for name in bound.STEP_OPS
    ]
    assert all(math.isfinite(op["us"]) for op in result["ops"])
    printed = capsys.readouterr().out
    # two tables: their headers, one line a forward pass, one line an op
    assert printed.count("\n| ") == len(rows) + 1 + len(bound.STEP_OPS) + 1
    assert "MGU forward floor 0.35x keras.layers.GRU: rnncells.MGU" in printed


def test_bound_loops_and_plain_mgu_run_every_step_of_every_row(load_script):
    bound = load_script("matmul_bound")
    # one loop, and (on 2 cores or more) a loop per core; steps left over by the unroll
    for batch, steps in ((9, 7), (32, 10)):
        x = tf.random.normal((batch, steps, 5))
        for chain in bound.BOUND_CHAINS.values():
            states = bound.bound_loop(chain, batch, steps, 8)(x).numpy()
            # orthogonal products keep each row's unit norm, however many steps ran
            np.testing.assert_allclose(np.linalg.norm(states, axis=1), 1.0, rtol=1e-4)
        outputs = bound.bare_mgu(batch, steps, 5, 8)(x).numpy()
        assert outputs.shape == (batch, steps, 8)
        assert np.all(np.isfinite(outputs)) and np.all(np.abs(outputs) < 1)
        assert not np.allclose(outputs[:, -1], outputs[:, -2])  # the last steps ran
