"""Property-based tests over every registered cell (hypothesis).

* Fused equals generic: for random shapes (batch 1-3, 1-6 steps, 1-4 features,
  1-4 units), masks (none; rows fully valid, right- or left-padded, with holes
  or fully masked), dtypes (float32, float64, mixed_float16, bfloat16) and the
  flags ``go_backwards``, ``return_sequences``, ``return_state``,
  ``zero_output_for_mask``, ``stateful`` (two calls carrying the state) and
  ``training``, ``RNN(cell, implementation="fused")`` and
  ``implementation="generic"`` with the same random weights give the same
  outputs, states and gradients (inputs, initial states, every trainable weight).
* No NaN or Inf over 2000 steps with default initializations, forward and
  backward, on the fused path.
* Non-float dtype policies are refused with a ``ValueError`` naming ``dtype``.

Every distinct layer compiles its own XLA loop (about a second of CPU with its
gradient), so examples are few and small: one fixed rich case per cell (flags
and dtypes taken from the bits of the cell's index, so that across the cells
every flag is on and off), then ``RANDOM_EXAMPLES`` drawn cases over all cells,
derandomized (the same in every run).
"""

from __future__ import annotations

from dataclasses import dataclass

import keras
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

import keras_rnncells as krc

CELLS = krc.list_cells()
RANDOM_EXAMPLES = 10
DTYPES = ("float32", "float64", "mixed_float16", "bfloat16")
# (outputs and states, gradients): absolute and relative tolerances per dtype.
TOLERANCES = {
    "float32": (1e-5, 1e-5),
    "float64": (1e-10, 1e-10),
    "mixed_float16": (1e-2, 3e-2),
    "bfloat16": (5e-2, 1e-1),
}
MASK_KINDS = ("full", "right", "left", "holes", "empty")


@dataclass(frozen=True)
class Case:
    """One configuration of a layer and its inputs."""

    name: str
    batch: int
    steps: int
    features: int
    units: int
    masks: tuple  # one (batch, steps) boolean array, or None, per call
    dtype: str
    go_backwards: bool
    return_sequences: bool
    return_state: bool
    zero_output_for_mask: bool
    stateful: bool  # two calls, the second starting from the first's states
    training: bool
    initial_state: bool  # random initial states (not with stateful)
    seed: int


def needs_input_dim_equal_units(name: str) -> bool:
    """Cells that add the input itself to a units-sized pre-activation (MUT1, MUT3)."""
    return bool(getattr(krc.get_cell(name)(1), "input_dim_must_equal_units", False))


def mask_row(kind: str, steps: int, length: int, holes: list[bool]) -> np.ndarray:
    """One row of a mask: ``length`` valid steps (right or left padding), the
    pattern ``holes``, all valid or none."""
    positions = np.arange(steps)
    rows = {
        "full": positions >= 0,
        "right": positions < length,
        "left": positions >= steps - length,
        "holes": np.array(holes, bool),
        "empty": positions < 0,
    }
    return rows[kind]


@st.composite
def masks(draw, batch: int, steps: int) -> np.ndarray | None:
    if draw(st.booleans()):
        return None
    rows = [
        mask_row(
            draw(st.sampled_from(MASK_KINDS)),
            steps,
            draw(st.integers(1, steps)),
            draw(st.lists(st.booleans(), min_size=steps, max_size=steps)),
        )
        for _ in range(batch)
    ]
    return np.stack(rows)


@st.composite
def cases(draw) -> Case:
    batch, steps = draw(st.integers(1, 3)), draw(st.integers(1, 6))
    stateful = draw(st.booleans())
    return Case(
        name=draw(st.sampled_from(CELLS)),
        batch=batch,
        steps=steps,
        features=draw(st.integers(1, 4)),
        units=draw(st.integers(1, 4)),
        masks=tuple(draw(masks(batch, steps)) for _ in range(2 if stateful else 1)),
        dtype=draw(st.sampled_from(DTYPES)),
        go_backwards=draw(st.booleans()),
        return_sequences=draw(st.booleans()),
        return_state=draw(st.booleans()),
        zero_output_for_mask=draw(st.booleans()),
        stateful=stateful,
        training=draw(st.booleans()),
        initial_state=not stateful and draw(st.booleans()),
        seed=draw(st.integers(0, 2**16)),
    )


def fixed_case(index: int) -> Case:
    """The rich case of cell ``CELLS[index]``: 3 rows, 5 steps, masks mixing
    three row kinds; flags from the bits of ``index``, sizes, dtype and the
    other options cycling with other periods (so that they do not go together)."""
    go_backwards, return_sequences, return_state, stateful = (
        bool(index >> bit & 1) for bit in range(4)
    )
    rng = np.random.default_rng(index)
    batch, steps = 3, 5
    call_masks = tuple(
        np.stack(
            [
                mask_row(
                    MASK_KINDS[(index + call + row) % len(MASK_KINDS)],
                    steps,
                    int(rng.integers(1, steps + 1)),
                    list(rng.random(steps) < 0.5),
                )
                for row in range(batch)
            ]
        )
        for call in range(2 if stateful else 1)
    )
    return Case(
        name=CELLS[index],
        batch=batch,
        steps=steps,
        features=1 + index % 4,
        units=1 + (index // 4) % 4,
        masks=call_masks,
        dtype=DTYPES[(index + index // 4) % len(DTYPES)],
        go_backwards=go_backwards,
        return_sequences=return_sequences,
        return_state=return_state,
        zero_output_for_mask=index % 3 == 1,
        stateful=stateful,
        training=index % 5 in (0, 2, 3),
        initial_state=not stateful and index % 3 != 2,
        seed=index,
    )


def make_layers(case: Case, features: int) -> tuple[krc.RNN, krc.RNN]:
    """The cell under both paths, built, with the same random weights (biases
    included, so that a misplaced bias cannot hide behind zeros)."""
    layers = []
    for implementation in ("fused", "generic"):
        cell = krc.get_cell(case.name)(case.units, dtype=case.dtype)
        layer = krc.RNN(
            cell,
            implementation=implementation,
            go_backwards=case.go_backwards,
            return_sequences=case.return_sequences,
            return_state=case.return_state,
            zero_output_for_mask=case.zero_output_for_mask,
            stateful=case.stateful,
            dtype=case.dtype,
        )
        layer.build((case.batch, case.steps, features))
        layers.append(layer)
    fused, generic = layers
    assert (fused.path(), generic.path()) == ("fused", "generic")
    rng = np.random.default_rng(case.seed)
    for weight in fused.trainable_weights:
        weight.assign(rng.uniform(-0.6, 0.6, size=weight.shape).astype(weight.dtype))
    generic.set_weights(fused.get_weights())
    return fused, generic


def run(layer: krc.RNN, inputs: tf.Tensor, states: list, mask, training: bool) -> tuple:
    """Outputs (flat list) of one call, and the gradients of a fixed random
    linear function of them w.r.t. the inputs, the initial states and every
    trainable weight."""
    with tf.GradientTape() as tape:
        tape.watch([inputs, *states])
        kwargs = {"initial_state": states} if states else {}
        outputs = keras.tree.flatten(layer(inputs, mask=mask, training=training, **kwargs))
        flat = tf.concat([tf.reshape(tf.cast(o, "float64"), [-1]) for o in outputs], 0)
        loss = tf.reduce_sum(flat * np.random.default_rng(1).normal(size=flat.shape))
    sources = [inputs, *states, *layer.trainable_weights]
    return outputs, tape.gradient(loss, sources, unconnected_gradients="zero")


def assert_close(actual: list, expected: list, tol: float, what: str) -> None:
    assert len(actual) == len(expected), what
    for i, (a, e) in enumerate(zip(actual, expected)):
        a, e = (np.asarray(keras.ops.convert_to_numpy(t), "float64") for t in (a, e))
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol, err_msg=f"{what} [tensor {i}]")


def check_fused_equals_generic(case: Case) -> None:
    features = case.features
    if needs_input_dim_equal_units(case.name) and features != case.units:
        # The cell's own limit: a clear ValueError naming the sizes, then the
        # property on the sizes it takes.
        with pytest.raises(ValueError, match="must equal `units`"):
            make_layers(case, features)
        features = case.units
    fused, generic = make_layers(case, features)
    rng = np.random.default_rng(case.seed + 1)
    input_dtype = "float64" if case.dtype == "float64" else "float32"
    value_tol, grad_tol = TOLERANCES[case.dtype]
    state_dtype = fused.cell.compute_dtype
    states = []
    if case.initial_state:
        states = [
            tf.constant(rng.normal(size=(case.batch, size)), state_dtype)
            for size in keras.tree.flatten(fused.cell.state_size)
        ]
    for call, mask in enumerate(case.masks):
        inputs = tf.constant(rng.normal(size=(case.batch, case.steps, features)), input_dtype)
        results = [run(layer, inputs, states, mask, case.training) for layer in (fused, generic)]
        (outputs, grads), (expected_outputs, expected_grads) = results
        what = f"{case} call {call}"
        assert_close(outputs, expected_outputs, value_tol, f"outputs/states of {what}")
        assert_close(grads, expected_grads, grad_tol, f"gradients of {what}")
        if case.stateful:
            assert_close(fused.states, generic.states, value_tol, f"carried states of {what}")


@pytest.mark.parametrize("index", range(len(CELLS)), ids=CELLS)
def test_fused_equals_generic_every_cell(index: int) -> None:
    check_fused_equals_generic(fixed_case(index))


@pytest.mark.slow  # random cases beyond the fixed ones (25 s of the default run)
@settings(max_examples=RANDOM_EXAMPLES, deadline=None, derandomize=True, database=None)
@given(cases())
def test_fused_equals_generic_random_cases(case: Case) -> None:
    # deadline=None: the first call of each layer compiles its XLA loop.
    check_fused_equals_generic(case)


def test_non_float_dtypes_are_refused() -> None:
    for name in CELLS:
        for dtype in ("int32", "bool"):
            with pytest.raises(ValueError, match=f"Argument `dtype` .*received: '{dtype}'"):
                krc.get_cell(name)(2, dtype=dtype)


# -- long sequences --------------------------------------------------------------
LONG_STEPS, LONG_BATCH, LONG_FEATURES, LONG_UNITS = 2000, 2, 4, 8


@pytest.mark.cell_sweep
@pytest.mark.parametrize("name", CELLS)
def test_long_sequences_stay_finite(name: str) -> None:
    """Default initialization, standard normal inputs, 2000 steps on the fused
    path (in training: the gradient is back-propagation through time as in
    ``fit``): every output, final state and input gradient is finite, and the
    gradient reaches the inputs (it is not all zero)."""
    features = LONG_UNITS if needs_input_dim_equal_units(name) else LONG_FEATURES
    layer = krc.RNN(
        krc.get_cell(name)(LONG_UNITS),
        return_sequences=True,
        return_state=True,
        implementation="fused",
    )
    inputs = tf.constant(
        np.random.default_rng(0).normal(size=(LONG_BATCH, LONG_STEPS, features)), "float32"
    )
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        outputs = keras.tree.flatten(layer(inputs, training=True))
        loss = sum(tf.reduce_sum(o) for o in outputs)
    grad = tape.gradient(loss, inputs).numpy()
    assert layer.path() == "fused"
    for i, tensor in enumerate([*outputs, grad]):
        values = keras.ops.convert_to_numpy(tensor)
        assert np.all(np.isfinite(values)), f"{name}: tensor {i} has NaN or Inf"
    assert np.any(grad[:, -1] != 0), f"{name}: no gradient reaches the last inputs"
