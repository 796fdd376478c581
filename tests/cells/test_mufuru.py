"""MuFuRU: a numpy step from the published equations, its reductions to the
Elman cell and to the GRU's form, the operation weights, custom operations
and the argument errors."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import keras_rnncells as krc
from keras_rnncells.cells.mufuru import MuFuRUCell, list_operations, register_operation

UNITS, FEATURES, BATCH, STEPS = 4, 3, 3, 5
CUSTOM = "test_mufuru_mean"  # registered once, at import, as a user would


def _mean(s, v):
    return 0.5 * (s + v)


register_operation(CUSTOM, _mean)

NUMPY_OPERATIONS = {
    "keep": lambda s, v: s,
    "replace": lambda s, v: v,
    "max": np.maximum,
    "min": np.minimum,
    "mul": lambda s, v: s * v,
    "diff": lambda s, v: 0.5 * np.abs(s - v),
    "forget": lambda s, v: np.zeros_like(s),
    CUSTOM: lambda s, v: 0.5 * (s + v),
}


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def numpy_step(cell: MuFuRUCell, x: np.ndarray, s: np.ndarray):
    """``(s', p)`` of one step from the paper's equations, with the weights read
    by the documented layout: kernel / recurrent_kernel / bias column blocks
    ``r, v, p_1..p_l`` (or ``r, v, c`` then operation_kernel, operation_bias)."""
    u, n_ops = cell.units, len(cell.operations)
    kernel, recurrent, bias, *controller = (np.float64(w) for w in cell.get_weights())

    def dense(columns, state):  # W [x; state] + b for a column range
        return x @ kernel[:, columns] + state @ recurrent[:, columns] + bias[columns]

    r = sigmoid(dense(slice(0, u), s))
    v = np.tanh(dense(slice(u, 2 * u), r * s))
    selector = dense(slice(2 * u, None), s)
    if controller:
        operation_kernel, operation_bias = controller
        selector = np.tanh(selector) @ operation_kernel + operation_bias
    logits = np.stack([selector[:, j * u : (j + 1) * u] for j in range(n_ops)], axis=1)
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    results = np.stack([NUMPY_OPERATIONS[name](s, v) for name in cell.operations], axis=1)
    return (p * results).sum(axis=1), p


def random_inputs(rng, steps=STEPS):
    return rng.normal(size=(BATCH, steps, FEATURES)).astype("float32")


@pytest.mark.parametrize("controller_units", [None, 2])
def test_one_step_matches_numpy(controller_units, rng, helpers) -> None:
    cell = MuFuRUCell(UNITS, controller_units=controller_units)
    x = rng.normal(size=(BATCH, FEATURES)).astype("float32")
    s = rng.normal(size=(BATCH, UNITS)).astype("float32")
    cell(x, [s])
    helpers.randomize_weights(cell, rng)
    expected, _ = numpy_step(cell, x, s)
    output, [state] = cell(x, [s])
    np.testing.assert_allclose(output, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(state, output)
    assert cell.blocks[:2] == ("r", "v") and len(cell.blocks) == (3 if controller_units else 9)


def test_sequence_and_operation_weights_match_numpy(rng, helpers) -> None:
    """Every step of the fused layer (a mask with holes) and every step's
    operation weights equal the numpy step from the layer's previous state."""
    cell = MuFuRUCell(UNITS, operations=["keep", "replace", "max", "min", "mul", "diff", CUSTOM])
    layer = krc.RNN(cell, return_sequences=True, implementation="fused")
    x = random_inputs(rng)
    mask = np.array([[1, 0, 1, 1, 0], [0, 1, 1, 0, 1], [0, 0, 0, 0, 0]], dtype=bool)
    layer(x)
    helpers.randomize_weights(layer, rng)
    outputs = np.asarray(layer(x, mask=mask))
    p, states = (np.asarray(t) for t in cell.operation_weights(x, mask, return_states=True))

    assert p.shape == (BATCH, STEPS, len(cell.operations), UNITS)
    np.testing.assert_allclose(states, outputs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        p.sum(axis=2), np.broadcast_to(mask[:, :, None], (BATCH, STEPS, UNITS)), atol=1e-6
    )
    previous = np.zeros((BATCH, UNITS))
    for t in range(STEPS):
        expected, expected_p = numpy_step(cell, x[:, t], previous)
        keep = mask[:, t, None]
        expected = np.where(keep, expected, previous)
        np.testing.assert_allclose(outputs[:, t], expected, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(p[:, t], expected_p * keep[:, None], rtol=1e-5, atol=1e-6)
        previous = outputs[:, t]


@pytest.mark.filterwarnings("ignore:You are using a softmax over axis 1:UserWarning")
def test_replace_with_open_reset_gate_is_elman(rng) -> None:
    """Only `replace` and r ≡ 1 (zero r weights, bias 60: σ(60) is 1 in
    float32): v, hence the state, is tanh(W x + U s + b), an Elman cell."""
    x = random_inputs(rng)
    mufuru = krc.RNN(MuFuRUCell(UNITS, operations=["replace"]), return_sequences=True)
    elman = krc.RNN(krc.SimpleRNNCell(UNITS), return_sequences=True)
    mufuru(x), elman(x)
    kernel, recurrent, bias = (rng.uniform(-0.6, 0.6, size=w.shape) for w in mufuru.get_weights())
    kernel[:, :UNITS] = recurrent[:, :UNITS] = 0.0
    bias[:UNITS] = 60.0
    mufuru.set_weights([kernel, recurrent, bias])
    v = slice(UNITS, 2 * UNITS)
    elman.set_weights([kernel[:, v], recurrent[:, v], bias[v]])
    np.testing.assert_allclose(mufuru(x), elman(x), rtol=1e-5, atol=1e-6)


def test_keep_and_replace_is_gru_form(rng, helpers) -> None:
    """s' = z ⊙ s + (1 − z) ⊙ v with z = softmax weight of keep = σ(p̂_keep − p̂_replace)."""
    cell = MuFuRUCell(UNITS, operations=["keep", "replace"])
    layer = krc.RNN(cell, return_sequences=True, implementation="fused")
    x = random_inputs(rng)
    layer(x)
    helpers.randomize_weights(layer, rng)
    kernel, recurrent, bias = (np.float64(w) for w in layer.get_weights())
    r_, v_, keep_, replace_ = (slice(j * UNITS, (j + 1) * UNITS) for j in range(4))

    s = np.zeros((BATCH, UNITS))
    expected = []
    for t in range(STEPS):
        xt = x[:, t]
        z = sigmoid(
            xt @ (kernel[:, keep_] - kernel[:, replace_])
            + s @ (recurrent[:, keep_] - recurrent[:, replace_])
            + bias[keep_]
            - bias[replace_]
        )
        r = sigmoid(xt @ kernel[:, r_] + s @ recurrent[:, r_] + bias[r_])
        v = np.tanh(xt @ kernel[:, v_] + (r * s) @ recurrent[:, v_] + bias[v_])
        s = z * s + (1.0 - z) * v
        expected.append(s)
    np.testing.assert_allclose(layer(x), np.stack(expected, axis=1), rtol=1e-5, atol=1e-5)

    # The same step as the library's GRU (reset before the matmul) with z's
    # weights the difference of keep's and replace's.
    gru = krc.GRUCell(UNITS, reset_after=False)
    h = rng.normal(size=(BATCH, UNITS)).astype("float32")
    gru(x[:, 0], [h])
    difference = slice(2 * UNITS, 3 * UNITS), slice(3 * UNITS, None)
    gru.set_weights(
        [
            np.concatenate([w[..., difference[0]] - w[..., difference[1]], w[..., : 2 * UNITS]], -1)
            for w in (kernel, recurrent, bias)
        ]
    )
    np.testing.assert_allclose(gru(x[:, 0], [h])[0], cell(x[:, 0], [h])[0], rtol=1e-5, atol=1e-5)


def test_custom_operation_and_controller_save_and_load(tmp_path, rng, helpers) -> None:
    cell = MuFuRUCell(UNITS, operations=["keep", CUSTOM, "forget"], controller_units=2)
    inputs = keras.Input((STEPS, FEATURES))
    model = keras.Model(inputs, krc.RNN(cell, return_sequences=True)(inputs))
    helpers.randomize_weights(model, rng)
    x = random_inputs(rng)
    expected = np.asarray(model(x))
    path = tmp_path / "mufuru.keras"
    model.save(path)

    loaded = keras.saving.load_model(path)
    loaded_cell = loaded.layers[-1].cell
    assert loaded_cell.operations == ("keep", CUSTOM, "forget")
    assert loaded_cell.operation_fns[1] is _mean
    assert loaded_cell.controller_units == 2
    np.testing.assert_array_equal(loaded(x), expected)
    step, _ = numpy_step(loaded_cell, x[:, 0], np.zeros((BATCH, UNITS)))
    np.testing.assert_allclose(expected[:, 0], step, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"operations": ["keep", "nope"]}, "unknown operation 'nope'"),
        ({"operations": []}, "at least one operation"),
        ({"operations": ["keep", "max", "keep"]}, r"must not repeat .*\['keep'\]"),
        ({"operations": "keep"}, "list of operation names"),
        ({"controller_units": 0}, "`controller_units` must be a positive integer"),
    ],
)
def test_bad_cell_arguments(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        MuFuRUCell(UNITS, **kwargs)


@pytest.mark.parametrize(
    ("name", "fn", "message"),
    [
        ("keep", _mean, "'keep' is already registered"),
        (CUSTOM, _mean, "already registered"),
        ("", _mean, "`name` must be a non-empty string"),
        ("not_callable", 0.5, "`fn` must be callable"),
    ],
)
def test_bad_registrations(name, fn, message) -> None:
    with pytest.raises(ValueError, match=message):
        register_operation(name, fn)
    assert list_operations().count(name) == (1 if name in ("keep", CUSTOM) else 0)
