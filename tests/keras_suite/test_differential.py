"""Differential grid: our GRU, LSTM, SimpleRNN and RNN against Keras' own,
over every constructor and call argument Keras' layers take.

Each `Case` sets some arguments; it runs for every Keras class that takes
them all (`applies_to`). Keras' layer and ours get the same arguments and,
through ``set_weights``, Keras' (randomized) weights; their outputs, states
and gradients (inputs, initial states, every weight) must agree to 1e-5
(float64: 1e-9; mixed precision: looser, see `TOLERANCES`). Arguments that
outputs cannot show are checked by what they do: initializers by the initial
weights, regularizers by the losses, constraints by an optimizer step,
``stateful`` by successive calls, ``name`` by the weight paths,
``trainable`` by the weight lists, ``input_shape`` by a Sequential model.

The argument list comes from Keras' signatures (``__init__`` and ``call`` of
each class, ``keras.layers.Layer.__init__``) and from the keywords their
``__init__`` pops from ``**kwargs`` (Keras' legacy ``implementation``,
Layer's ``input_shape``): `test_every_keras_argument_is_in_the_grid` fails
for an argument Keras adds until a case covers it or `NOT_APPLICABLE` gives
the reason.

The reference is Keras' layer with ``use_cudnn=False`` (its generic loop,
the semantics every path of ours follows); ours runs its default path
(``implementation="auto"``: fused on a CPU, cuDNN on a GPU where it applies).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import re
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_rnncells as krc

pytestmark = pytest.mark.keras_suite

UNITS = 3
HAS_GPU = bool(tf.config.list_logical_devices("GPU"))

KERAS = {
    "GRU": keras.layers.GRU,
    "LSTM": keras.layers.LSTM,
    "SimpleRNN": keras.layers.SimpleRNN,
    "RNN": keras.layers.RNN,
}
OURS = {name: getattr(krc, name) for name in KERAS}
CELLS = {"GRU": "GRUCell", "LSTM": "LSTMCell", "SimpleRNN": "SimpleRNNCell"}


# -- the arguments Keras takes ------------------------------------------------------
def parameters(function: Any) -> list[str]:
    return [
        p.name
        for p in inspect.signature(function).parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    ]


@functools.cache
def popped_keywords(cls: type) -> list[str]:
    """The keywords ``cls.__init__`` reads out of ``**kwargs`` itself."""
    source = inspect.getsource(cls.__init__)
    return re.findall(r"kwargs\.pop\(\s*[\"'](\w+)[\"']", source)


LAYER_ARGUMENTS = parameters(keras.layers.Layer.__init__) + popped_keywords(keras.layers.Layer)
RNN_LAYER_ARGUMENTS = parameters(keras.layers.RNN.__init__) + LAYER_ARGUMENTS


@functools.cache
def keras_arguments(name: str) -> dict[str, list[str]]:
    """Every argument of Keras' ``name``: constructor, keywords its
    ``__init__`` pops, call, and keras.layers.Layer's."""
    cls = KERAS[name]
    popped = list(popped_keywords(cls))
    if name in CELLS:
        popped += popped_keywords(getattr(keras.layers, CELLS[name]))
    return {
        "constructor": [p for p in parameters(cls.__init__) if p != "cell" or name == "RNN"],
        "popped from **kwargs": sorted(set(popped)),
        "call": parameters(cls.call),
        "keras.layers.Layer": LAYER_ARGUMENTS,
    }


@functools.cache
def accepted(name: str) -> set[str]:
    """What Keras' ``name`` accepts: its arguments, and keras.layers.RNN's,
    which GRU, LSTM and SimpleRNN pass on (``zero_output_for_mask``)."""
    names = {a for group in keras_arguments(name).values() for a in group}
    return names | set(RNN_LAYER_ARGUMENTS) - {"cell"}


# -- the grid ---------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Case:
    """Constructor arguments ``init`` (both layers; for ``RNN`` those that are
    not keras.layers.RNN's go to the cell), call arguments ``call`` (``mask``:
    "mixed" for every padding pattern of conftest's MASK_ROWS, "right" for
    right padding; ``initial_state``: random states; ``sequences``: a dtype),
    what is compared (``check``), whether gradients are, and for ``RNN`` the
    cell (``cell``: GRU, LSTM, SimpleRNN, stacked, keras_cell, our_cell)."""

    id: str
    init: dict = dataclasses.field(default_factory=dict)
    call: dict = dataclasses.field(default_factory=dict)
    check: str = "call"
    gradients: bool = False
    cell: str = "GRU"
    only: tuple = ()  # restrict to these Keras classes

    def applies_to(self) -> list[str]:
        names = self.only or tuple(KERAS)
        wanted = set(self.init) | set(self.call)
        return [n for n in names if wanted <= accepted(n) | accepted_by_cell(self.cell, n)]


def accepted_by_cell(kind: str, name: str) -> set[str]:
    """The arguments Keras' cell(s) of a ``kind`` case take, for ``RNN``."""
    if name != "RNN":
        return set()
    kinds = ("GRU", "LSTM") if kind == "stacked" else (kind if kind in CELLS else "GRU",)
    classes = [getattr(keras.layers, CELLS[k]) for k in kinds]
    return set.intersection(
        *(set(parameters(c.__init__)) | set(popped_keywords(c)) for c in classes)
    )


def initializer(name: str, seed: int) -> dict:
    return {"class_name": name, "config": {"seed": seed}}


SEQS = {"return_sequences": True, "return_state": True}
CASES = [
    Case("defaults"),
    Case("masks_states", dict(SEQS), {"mask": "mixed", "initial_state": True}, gradients=True),
    Case(
        "backwards_zero_output",
        {**SEQS, "go_backwards": True, "zero_output_for_mask": True},
        {"mask": "mixed", "initial_state": True},
        gradients=True,
    ),
    Case(
        "last_output",
        {"go_backwards": True, "zero_output_for_mask": True, "return_state": True},
        {"mask": "mixed"},
    ),
    Case(
        "unroll",
        {**SEQS, "unroll": True},
        {"mask": "mixed", "initial_state": True},
        gradients=True,
    ),
    Case(
        "activations",
        {"activation": "relu", "recurrent_activation": "hard_sigmoid", "use_bias": False},
        {"mask": "mixed"},
        gradients=True,
    ),
    Case(
        "activation_elman",
        {"activation": "relu", "use_bias": False, "return_sequences": True},
        {"mask": "mixed"},
        gradients=True,
        cell="SimpleRNN",
        only=("SimpleRNN", "RNN"),
    ),
    Case(
        "reset_before",
        {"reset_after": False, "return_sequences": True},
        {"mask": "mixed", "initial_state": True},
        gradients=True,
    ),
    Case(
        "initializers",
        {
            "kernel_initializer": initializer("GlorotNormal", 1),
            "recurrent_initializer": initializer("Orthogonal", 2),
            "bias_initializer": initializer("RandomUniform", 3),
        },
        check="initial_weights",
    ),
    Case(
        "initializers_lstm",
        {
            "unit_forget_bias": False,
            "kernel_initializer": initializer("HeUniform", 5),
            "recurrent_initializer": initializer("Orthogonal", 6),
            "bias_initializer": initializer("RandomNormal", 4),
        },
        check="initial_weights",
        cell="LSTM",
    ),
    Case(
        "regularizers",
        {
            "kernel_regularizer": "l2",
            "recurrent_regularizer": "l1",
            "bias_regularizer": {"class_name": "L1L2", "config": {"l1": 0.1, "l2": 0.2}},
            "activity_regularizer": "l2",
        },
        check="losses",
    ),
    Case(
        "constraints",
        {
            "kernel_constraint": "non_neg",
            "recurrent_constraint": {"class_name": "MaxNorm", "config": {"max_value": 0.5}},
            "bias_constraint": "unit_norm",
        },
        check="constraints",
    ),
    Case(
        "dropout",
        {"dropout": 0.5, "seed": 7, "return_sequences": True},
        {"mask": "mixed", "training": True},
        gradients=True,
    ),
    Case(
        "recurrent_dropout",
        {"dropout": 0.3, "recurrent_dropout": 0.5, "seed": 7, "return_sequences": True},
        {"mask": "mixed", "training": True},
        check="recurrent_dropout",
    ),
    Case("stateful", {**SEQS, "stateful": True}, {"mask": "mixed"}, check="stateful"),
    Case(
        "use_cudnn_false",
        {"use_cudnn": False, "return_sequences": True},
        {"mask": "mixed", "initial_state": True},
    ),
    Case("use_cudnn_true", {"use_cudnn": True, **SEQS}, {"mask": "right"}, check="same_outcome"),
    Case("legacy_implementation", {"implementation": 1, "return_sequences": True}),
    Case(
        "float64",
        {**SEQS, "dtype": "float64"},
        {"mask": "mixed", "initial_state": True, "sequences": "float64"},
        gradients=True,
    ),
    Case(
        "mixed_float16",
        {**SEQS, "dtype": "mixed_float16"},
        {"mask": "mixed", "initial_state": True},
        gradients=True,
    ),
    Case(
        "mixed_bfloat16",
        {**SEQS, "dtype": "mixed_bfloat16"},
        {"mask": "mixed"},
        only=("GRU", "LSTM"),
    ),
    Case(
        "autocast_false",
        {"dtype": "mixed_float16", "autocast": False, "return_sequences": True},
        {"mask": "mixed"},
        check="same_outcome",
    ),
    Case("int_sequences", {"return_sequences": True}, {"sequences": "int32"}),
    Case("name_trainable", {"name": "encoder", "trainable": False}, check="weights_lists"),
    Case("input_shape", {"input_shape": (5, 4)}, check="sequential"),
    Case("input_dim", {"input_dim": 4}, check="sequential"),
    # keras.layers.RNN over other cells
    Case(
        "cell_lstm",
        dict(SEQS),
        {"mask": "mixed", "initial_state": True},
        gradients=True,
        cell="LSTM",
        only=("RNN",),
    ),
    Case(
        "cell_stacked",
        dict(SEQS),
        {"mask": "mixed", "initial_state": True},
        cell="stacked",
        only=("RNN",),
    ),
    Case("cell_keras_in_ours", dict(SEQS), {"mask": "mixed"}, cell="keras_cell", only=("RNN",)),
    Case("cell_ours_in_keras", dict(SEQS), {"mask": "mixed"}, cell="our_cell", only=("RNN",)),
]
CASES_BY_ID = {case.id: case for case in CASES}
assert len(CASES_BY_ID) == len(CASES)
GRID = [(case.id, name) for case in CASES for name in case.applies_to()]

NOT_APPLICABLE: dict[str, str] = {}  # argument -> why no case covers it (none today)

# Where ours does not do what Keras does, on purpose (README.md reproduces it).
KNOWN_DIFFERENCES = {
    "recurrent_dropout, implementation=1 (GRU, LSTM)": (
        "with `recurrent_dropout` (or a cell's legacy `implementation=1`) Keras 3 "
        "draws its dropout masks per gate (3 for GRU, 4 for LSTM, input and "
        "recurrent); ours draws one input and one recurrent mask for all gates, as "
        "Keras 2's `implementation=2` did, so that each goes through one fused "
        "matmul: the same rates and seed give other draws. Inference agrees "
        "(`check_recurrent_dropout`); `dropout` alone, and SimpleRNN's masks, "
        "agree draw for draw"
    ),
    "activity_regularizer (SimpleRNN)": (
        "Keras 3.15's SimpleRNN accepts `activity_regularizer` but never passes it "
        "on (its `activity_regularizer` stays None: not applied, not saved), a Keras "
        "bug; ours applies it, as Keras' GRU and LSTM do (`check_losses` fails once "
        "Keras fixes it)"
    ),
}

TOLERANCES = {"float64": 1e-9, "mixed_float16": 2e-2, "mixed_bfloat16": 6e-2}


def covered(name: str) -> set[str]:
    """The arguments of Keras' ``name`` some applicable case sets (``units``,
    ``cell`` and ``sequences`` are in every case)."""
    names = {"units", "sequences"} if name != "RNN" else {"cell", "sequences"}
    for case in CASES:
        if name in case.applies_to():
            names |= set(case.init) | set(case.call)
    return names


@pytest.mark.parametrize("name", KERAS)
def test_every_keras_argument_is_in_the_grid(name):
    missing = {
        group: [a for a in arguments if a not in covered(name) and a not in NOT_APPLICABLE]
        for group, arguments in keras_arguments(name).items()
    }
    assert not any(missing.values()), f"Keras' {name} takes arguments the grid lacks: {missing}"


def test_readme_lists_exactly_the_known_differences():
    readme = (Path(__file__).parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Known differences", 1)[1].split("\n## ")[0]
    rows = dict(re.findall(r"^\| (.+?) \| (.+) \|$", section, re.MULTILINE))
    del rows["difference"]  # the header
    expected = "\n".join(f"| {name} | {why} |" for name, why in KNOWN_DIFFERENCES.items())
    assert rows == KNOWN_DIFFERENCES, f"README.md's table should read:\n{expected}"


def test_keywords_keras_pops_are_found():
    """The source reading above finds what Keras 3.15 reads from ``**kwargs``."""
    assert {"input_shape", "input_dim"} <= set(LAYER_ARGUMENTS)
    for name in ("GRU", "LSTM"):
        assert "implementation" in keras_arguments(name)["popped from **kwargs"]


@pytest.mark.parametrize("name", CELLS.values())
def test_every_keras_cell_argument_is_in_the_grid(name):
    """A cell's arguments are its layer's (the grid passes them through the
    named layer, and through RNN to the cell); its call is `test_cells_step_like_keras`."""
    cls = getattr(keras.layers, name)
    layer = next(layer for layer, cell in CELLS.items() if cell == name)
    arguments = set(parameters(cls.__init__)) | set(popped_keywords(cls))
    assert arguments <= covered(layer) | set(NOT_APPLICABLE), arguments - covered(layer)
    assert arguments <= covered("RNN") | {"units"} | set(NOT_APPLICABLE)


# -- building pairs -------------------------------------------------------------------
def cell_pair(kind: str, cell_kwargs: dict) -> tuple[Any, Any]:
    """Keras' cell (or list of cells) for ``kind``, and ours."""
    if kind == "stacked":
        return (
            [keras.layers.GRUCell(UNITS, **cell_kwargs), keras.layers.LSTMCell(2, **cell_kwargs)],
            [krc.GRUCell(UNITS, **cell_kwargs), krc.LSTMCell(2, **cell_kwargs)],
        )
    if kind == "keras_cell":  # keras.layers.RNN replaced by ours, the cell left Keras'
        return keras.layers.GRUCell(UNITS, **cell_kwargs), keras.layers.GRUCell(
            UNITS, **copy.deepcopy(cell_kwargs)
        )
    name = CELLS.get(kind, "GRUCell")
    theirs = getattr(keras.layers, name)(UNITS, **cell_kwargs)
    return theirs, getattr(krc, name)(UNITS, **copy.deepcopy(cell_kwargs))


def make_pair(case: Case, name: str) -> tuple[keras.layers.Layer, keras.layers.Layer]:
    """Keras' layer and ours, unbuilt, with the case's arguments."""
    init = copy.deepcopy(case.init)
    if name != "RNN":
        reference = dict(init)
        if name in ("GRU", "LSTM") and "use_cudnn" not in init:
            reference["use_cudnn"] = False
        return KERAS[name](UNITS, **reference), OURS[name](UNITS, **copy.deepcopy(init))
    layer_kwargs = {k: v for k, v in init.items() if k in RNN_LAYER_ARGUMENTS}
    cell_kwargs = {k: v for k, v in init.items() if k not in RNN_LAYER_ARGUMENTS}
    if "dtype" in init:
        cell_kwargs["dtype"] = init["dtype"]
    theirs, ours = cell_pair(case.cell, cell_kwargs)
    our_layer = keras.layers.RNN if case.cell == "our_cell" else krc.RNN
    return (
        keras.layers.RNN(theirs, **layer_kwargs),
        our_layer(ours, **copy.deepcopy(layer_kwargs)),
    )


def built_pair(case, name, shape, rng, helpers):
    reference, ours = make_pair(case, name)
    reference.build(shape)
    ours.build(shape)
    helpers.randomize_weights(reference, rng)
    ours.set_weights(reference.get_weights())
    return reference, ours


class Inputs:
    """The case's call arguments, made from conftest's fixtures."""

    def __init__(self, case, reference, sequences, mask, right_padded_mask, rng):
        dtype = case.call.get("sequences", "float32")
        if dtype == "int32":  # token-like ids, cast by both layers
            sequences = rng.integers(0, 50, size=sequences.shape)
        self.sequences = sequences.astype(dtype)
        self.kwargs = {}
        if case.call.get("mask"):
            self.kwargs["mask"] = mask if case.call["mask"] == "mixed" else right_padded_mask
        if case.call.get("initial_state"):
            state_dtype = "float64" if dtype == "float64" else "float32"
            structure = reference.cell.state_size  # nested for stacked cells
            states = [
                rng.normal(size=(len(sequences), size)).astype(state_dtype)
                for size in keras.tree.flatten(structure)
            ]
            if isinstance(structure, (list, tuple)) and len(structure) > 1:
                states = keras.tree.pack_sequence_as(list(structure), states)
            self.kwargs["initial_state"] = states
        if case.call.get("training"):
            self.kwargs["training"] = True


def run(layer, inputs: Inputs, gradients: bool, helpers):
    if gradients:
        return helpers.outputs_and_gradients(layer, inputs.sequences, **dict(inputs.kwargs))
    return keras.tree.flatten(layer(inputs.sequences, **inputs.kwargs)), []


def tolerance(case: Case) -> float:
    return TOLERANCES.get(case.init.get("dtype"), 1e-5)


def assert_same_numbers(actual, expected, case, what, helpers):
    assert [str(a.dtype) for a in actual] == [str(e.dtype) for e in expected], what
    assert [tuple(a.shape) for a in actual] == [tuple(e.shape) for e in expected], what
    as64 = [np.asarray(a, dtype="float64") for a in actual]
    helpers.assert_all_close(
        as64, [np.asarray(e, dtype="float64") for e in expected], tolerance(case), what
    )


# -- the checks -------------------------------------------------------------------------
def check_call(case, name, fixtures, helpers):
    sequences, mask, right_padded_mask, rng = fixtures
    reference, ours = built_pair(case, name, sequences.shape, rng, helpers)
    assert_default_path(case, ours)
    inputs = Inputs(case, reference, sequences, mask, right_padded_mask, rng)
    expected = run(reference, inputs, case.gradients, helpers)
    actual = run(ours, inputs, case.gradients, helpers)
    what = f"{case.id}/{name}"
    assert_same_numbers(actual[0], expected[0], case, f"{what}: outputs", helpers)
    states = len(keras.tree.flatten(reference.cell.state_size))
    assert len(actual[0]) == 1 + (states if case.init.get("return_state") else 0)
    if case.gradients:
        assert_same_numbers(actual[1], expected[1], case, f"{what}: gradients", helpers)
        sources = [inputs.sequences, *keras.tree.flatten(inputs.kwargs.get("initial_state", []))]
        assert len(actual[1]) == len(sources) + len(reference.trainable_weights)
        assert all(np.abs(np.asarray(g, dtype="float64")).max() > 0 for g in actual[1])
    return reference, ours, inputs


def assert_default_path(case, ours) -> None:
    """Ours runs its own loop (fused, or cuDNN on a GPU), not Keras' (which it
    takes, by design, for ``unroll=True`` and for cells not ours)."""
    if not isinstance(ours, krc.RNN):  # keras.layers.RNN over our cell
        return
    ours_cell = isinstance(ours.cell, krc.AbstractRNNCell)
    expected = ("generic",) if case.init.get("unroll") or not ours_cell else ("fused", "cudnn")
    assert ours.path() in expected, (case.id, ours.path())


def check_initial_weights(case, name, fixtures, helpers):
    sequences = fixtures[0]
    reference, ours = make_pair(case, name)
    reference.build(sequences.shape)
    ours.build(sequences.shape)
    expected, actual = reference.get_weights(), ours.get_weights()
    helpers.assert_all_close(actual, expected, tol=1e-7, what=f"{case.id}/{name}: initial weights")
    assert all(np.abs(w).max() > 0 for w in actual)  # every initializer drew values
    check_call(case, name, fixtures, helpers)


def check_losses(case, name, fixtures, helpers):
    reference, ours, _ = check_call(case, name, fixtures, helpers)
    expected = sorted(float(loss) for loss in reference.losses)
    actual = sorted(float(loss) for loss in ours.losses)
    assert len(actual) == 4  # three weights and the activity
    if name == "SimpleRNN":  # see KNOWN_DIFFERENCES
        assert reference.activity_regularizer is None, "Keras' SimpleRNN bug is fixed"
        assert ours.activity_regularizer is not None
        expected.append(float(ours.activity_regularizer(ours(fixtures[0]))) / len(fixtures[0]))
        expected.sort()
    np.testing.assert_allclose(actual, expected, rtol=1e-5)


def check_constraints(case, name, fixtures, helpers):
    sequences, mask, right_padded_mask, rng = fixtures
    reference, ours = built_pair(case, name, sequences.shape, rng, helpers)
    inputs = Inputs(case, reference, sequences, mask, right_padded_mask, rng)
    after = []
    for layer in (reference, ours):
        _, gradients = helpers.outputs_and_gradients(layer, inputs.sequences, **inputs.kwargs)
        optimizer = keras.optimizers.SGD(learning_rate=0.5)
        optimizer.apply(gradients[1:], layer.trainable_weights)
        after.append(layer.get_weights())
    helpers.assert_all_close(after[1], after[0], what=f"{case.id}/{name}: after a step")
    kernel, recurrent, bias = after[1][:3]
    assert kernel.min() >= 0
    np.testing.assert_allclose(np.linalg.norm(bias, axis=0), 1, rtol=1e-5)
    assert np.linalg.norm(recurrent, axis=0).max() <= 0.5 + 1e-6


def check_recurrent_dropout(case, name, fixtures, helpers):
    """Keras' SimpleRNN draws one recurrent mask, as ours: same seed, same
    numbers. Keras 3's GRU and LSTM draw one per gate (3, 4; its cells switch
    to ``implementation=1``), ours one for all gates (the masked state goes
    through one fused matmul, as Keras 2's ``implementation=2`` did): not the
    same draws by design. Both then agree in inference, and each drops in
    training."""
    if name == "SimpleRNN" or case.cell == "SimpleRNN":
        check_call(case, name, fixtures, helpers)
        return
    sequences, mask, right_padded_mask, rng = fixtures
    reference, ours = built_pair(case, name, sequences.shape, rng, helpers)
    inputs = Inputs(case, reference, sequences, mask, right_padded_mask, rng)
    inference = {key: value for key, value in inputs.kwargs.items() if key != "training"}
    expected, actual = reference(sequences, **inference), ours(sequences, **inference)
    assert_same_numbers([actual], [expected], case, f"{case.id}/{name}: inference", helpers)
    for layer, at_inference in ((reference, expected), (ours, actual)):
        trained = layer(sequences, **inputs.kwargs)
        assert np.abs(np.asarray(trained) - np.asarray(at_inference)).max() > 1e-2


def check_stateful(case, name, fixtures, helpers):
    """Two calls carry the states over; ``reset_state`` starts from zeros."""
    sequences, mask, _, rng = fixtures
    reference, ours = built_pair(case, name, sequences.shape, rng, helpers)
    results = []
    for layer in (reference, ours):
        calls = [layer(sequences, mask=mask), layer(sequences[:, ::-1] * 0.5, mask=mask)]
        layer.reset_state()
        calls.append(layer(sequences, mask=mask))
        results.append([keras.tree.flatten(c) for c in calls])
    for i, (actual, expected) in enumerate(zip(results[1], results[0])):
        assert_same_numbers(actual, expected, case, f"{case.id}/{name}: call {i}", helpers)
    helpers.assert_all_close(results[1][2], results[1][0], tol=0, what="after reset_state")
    helpers.assert_all_close(
        [s.value for s in ours.states], [s.value for s in reference.states], what="states"
    )


def outcome(function) -> tuple[str, Any]:
    try:
        return "returned", function()
    except Exception as error:  # the outcome is what is compared
        return "raised", error


def check_same_outcome(case, name, fixtures, helpers):
    """Where Keras' layer raises, ours raises the same kind of error;
    where it computes, ours computes the same numbers."""
    sequences, mask, right_padded_mask, rng = fixtures
    reference, ours = make_pair(case, name)
    inputs = Inputs(case, reference, sequences, mask, right_padded_mask, rng)
    status, error = outcome(lambda: reference(inputs.sequences, **inputs.kwargs))
    if status == "returned":
        check_call(case, name, fixtures, helpers)
        return
    our_status, our_error = outcome(lambda: ours(inputs.sequences, **inputs.kwargs))
    assert our_status == "raised", f"{case.id}/{name}: Keras' layer raised {error!r}, ours did not"
    assert isinstance(our_error, type(error)), (our_error, error)
    if case.id == "use_cudnn_true":  # Keras' cuDNN-or-raise, on a CPU
        assert not HAS_GPU and isinstance(our_error, ValueError), our_error


def check_weights_lists(case, name, fixtures, helpers):
    reference, ours, _ = check_call(case, name, fixtures, helpers)
    if "name" in case.init:
        assert ours.name == reference.name == case.init["name"]
    for what in ("weights", "trainable_weights", "non_trainable_weights"):
        assert len(getattr(ours, what)) == len(getattr(reference, what)), what
    assert len(ours.trainable_weights) == (0 if case.init.get("trainable") is False else 3)
    if name != "RNN" and "name" in case.init:  # unnamed: Keras' session-wide counter
        assert [w.path for w in ours.weights] == [w.path for w in reference.weights]


def check_sequential(case, name, fixtures, helpers):
    """``input_shape``/``input_dim`` as a Sequential model's first layer."""
    sequences, _, _, rng = fixtures
    results = [
        outcome(lambda layer=layer: keras.Sequential([layer])) for layer in make_pair(case, name)
    ]
    assert results[1][0] == results[0][0], results
    if results[0][0] == "raised":  # input_dim: a 2-D input, which no recurrent layer takes
        assert isinstance(results[1][1], type(results[0][1])), results
        return
    reference, ours = results[0][1], results[1][1]
    assert ours.built and reference.built
    assert ours.input_shape == reference.input_shape == (None, 5, 4)
    helpers.randomize_weights(reference, rng)
    ours.set_weights(reference.get_weights())
    assert_same_numbers([ours(sequences)], [reference(sequences)], case, case.id, helpers)


CHECKS = {
    "call": check_call,
    "initial_weights": check_initial_weights,
    "losses": check_losses,
    "constraints": check_constraints,
    "recurrent_dropout": check_recurrent_dropout,
    "stateful": check_stateful,
    "same_outcome": check_same_outcome,
    "weights_lists": check_weights_lists,
    "sequential": check_sequential,
}


@pytest.mark.parametrize("case_id, name", GRID, ids=[f"{c}-{n}" for c, n in GRID])
def test_grid(case_id, name, sequences, mask, right_padded_mask, rng, helpers):
    case = CASES_BY_ID[case_id]
    CHECKS[case.check](case, name, (sequences, mask, right_padded_mask, rng), helpers)


# -- Bidirectional ----------------------------------------------------------------------
BIDIRECTIONAL = {  # merge_mode -> the wrapped layer's flags (merging is Keras' code)
    "concat": {"return_sequences": True, "return_state": True},
    None: {"return_sequences": True, "zero_output_for_mask": True},
    "ave": {"zero_output_for_mask": True, "return_state": True},
}


@pytest.mark.parametrize(
    "name, merge_mode",
    [
        ("GRU", "concat"),
        ("LSTM", "concat"),
        ("SimpleRNN", "concat"),
        ("GRU", None),
        ("LSTM", "ave"),
    ],
)
def test_bidirectional_matches_keras(name, merge_mode, sequences, mask, rng, helpers):
    """keras.layers.Bidirectional over ours gives what it gives over Keras'
    layer: outputs, states and gradients, masks of every pattern, initial
    states for both directions."""
    flags = BIDIRECTIONAL[merge_mode]
    case = Case(f"bidirectional_{merge_mode}", flags)
    reference, ours = (
        keras.layers.Bidirectional(layer, merge_mode=merge_mode) for layer in make_pair(case, name)
    )
    for layer in (reference, ours):
        layer.build(sequences.shape)
    helpers.randomize_weights(reference, rng)
    ours.set_weights(reference.get_weights())
    kwargs = {"mask": mask}
    if flags.get("return_state"):
        sizes = keras.tree.flatten(reference.forward_layer.cell.state_size) * 2
        kwargs["initial_state"] = [rng.normal(size=(len(sequences), n)).astype("f4") for n in sizes]
    expected = helpers.outputs_and_gradients(reference, sequences, **dict(kwargs))
    actual = helpers.outputs_and_gradients(ours, sequences, **kwargs)
    assert len(actual[0]) == len(expected[0]) > 0
    assert_same_numbers(actual[0], expected[0], case, f"{name}: outputs", helpers)
    assert_same_numbers(actual[1], expected[1], case, f"{name}: gradients", helpers)
    assert isinstance(ours.forward_layer, OURS[name]) and isinstance(
        ours.backward_layer, OURS[name]
    )


@pytest.mark.parametrize("name", ["GRU", "LSTM"])
def test_bidirectional_keeps_use_cudnn(name):
    """The GRU/LSTM half of Keras' ``test_keeps_use_cudnn`` (README.md)."""
    for use_cudnn in (True, False, "auto"):
        bidirectional = keras.layers.Bidirectional(OURS[name](1, use_cudnn=use_cudnn))
        assert bidirectional.forward_layer.use_cudnn == use_cudnn
        assert bidirectional.backward_layer.use_cudnn == use_cudnn
        assert bidirectional.backward_layer.go_backwards


# -- configs, properties and saved files ---------------------------------------------------
KERAS_CONFIGS = {  # non-default arguments, for configs and properties
    "GRU": {"reset_after": False, "recurrent_activation": "hard_sigmoid", "use_cudnn": False},
    "LSTM": {"unit_forget_bias": False, "recurrent_activation": "hard_sigmoid"},
    "SimpleRNN": {},
}
COMMON_CONFIG = {
    "activation": "relu",
    "use_bias": True,
    "kernel_initializer": "he_normal",
    "recurrent_initializer": "identity",
    "bias_initializer": "ones",
    "kernel_regularizer": "l2",
    "recurrent_regularizer": "l1",
    "bias_regularizer": None,
    "kernel_constraint": "non_neg",
    "recurrent_constraint": None,
    "bias_constraint": "unit_norm",
    "dropout": 0.25,
    "recurrent_dropout": 0.5,
    "seed": 3,
    "return_sequences": True,
    "return_state": True,
    "go_backwards": True,
    "name": "encoder",
    "dtype": "float64",
}


def keras_layer(name: str) -> keras.layers.Layer:
    extra = {} if name == "SimpleRNN" else {"activity_regularizer": "l1"}
    return KERAS[name](UNITS, **COMMON_CONFIG, **extra, **KERAS_CONFIGS[name])


def same_value(a, b) -> bool:
    """Equal, Keras objects by their serialized form, functions by name."""
    if callable(a) and hasattr(a, "__name__"):
        return getattr(b, "__name__", None) == a.__name__
    if hasattr(a, "get_config"):
        return type(a) is type(b) and a.get_config() == b.get_config()
    return a == b


@pytest.mark.parametrize("name", ["GRU", "LSTM", "SimpleRNN"])
def test_keras_config_loads_into_ours(name, sequences, rng, helpers):
    """``keras.layers.GRU(...).get_config()`` into our ``GRU.from_config``:
    every key reads back the same from ours' config; given Keras' weights,
    ours computes what Keras' layer does; our config loads into our class."""
    theirs = keras_layer(name)
    config = theirs.get_config()
    ours = OURS[name].from_config(copy.deepcopy(config))
    our_config = ours.get_config()
    differing = {k: (v, our_config.get(k)) for k, v in config.items() if our_config.get(k) != v}
    assert not differing
    again = OURS[name].from_config(copy.deepcopy(our_config))
    assert again.get_config() == our_config
    x = sequences.astype("float64")
    for layer in (theirs, ours, again):
        layer.build(x.shape)
    helpers.randomize_weights(theirs, rng)
    ours.set_weights(theirs.get_weights())
    again.set_weights(theirs.get_weights())
    expected = keras.tree.flatten(theirs(x))
    case = Case("config", {"dtype": "float64"})
    assert_same_numbers(keras.tree.flatten(ours(x)), expected, case, name, helpers)
    assert_same_numbers(keras.tree.flatten(again(x)), expected, case, name, helpers)


def test_keras_rnn_config_loads_into_our_rnn(sequences, rng, helpers):
    """A keras.layers.RNN config (a Keras cell inside) loads into our RNN,
    which then runs Keras' cell on Keras' loop, as Keras' RNN does."""
    theirs = keras.layers.RNN(
        keras.layers.LSTMCell(UNITS, unit_forget_bias=False), return_sequences=True, unroll=True
    )
    ours = krc.RNN.from_config(copy.deepcopy(theirs.get_config()))
    assert isinstance(ours.cell, keras.layers.LSTMCell)
    config = ours.get_config()
    assert {k: config[k] for k in theirs.get_config()} == theirs.get_config()
    for layer in (theirs, ours):
        layer.build(sequences.shape)
    helpers.randomize_weights(theirs, rng)
    ours.set_weights(theirs.get_weights())
    helpers.assert_all_close([ours(sequences)], [theirs(sequences)], what="RNN from Keras' config")


@pytest.mark.parametrize("name", ["GRU", "LSTM", "SimpleRNN"])
def test_layer_properties_read_as_keras(name):
    """Every property of Keras' layer class (``layer.dropout``,
    ``layer.kernel_initializer``, ...) reads the same on ours."""
    theirs = keras_layer(name)
    ours = OURS[name].from_config(copy.deepcopy(theirs.get_config()))
    properties = [k for k, v in vars(KERAS[name]).items() if isinstance(v, property)]
    assert len(properties) >= 14
    for attribute in properties:
        expected, actual = getattr(theirs, attribute), getattr(ours, attribute)
        assert same_value(expected, actual), (attribute, expected, actual)
    assert ours.cell.dropout == ours.dropout == 0.25


def rnn_stack(api) -> keras.Model:
    """One model of every layer kind, built from ``api`` (keras.layers or
    keras_rnncells): what a user swaps."""
    cells = keras.layers if api is keras.layers else krc
    inputs = keras.Input((5, 4))
    x = keras.layers.Masking()(inputs)
    x = api.GRU(3, return_sequences=True, reset_after=False)(x)
    x = keras.layers.Bidirectional(api.LSTM(3, return_sequences=True))(x)
    x = api.SimpleRNN(3, return_sequences=True, go_backwards=True)(x)
    x = api.RNN(cells.GRUCell(2))(x)
    return keras.Model(inputs, keras.layers.Dense(1)(x))


def test_saved_files_both_ways(sequences, rng, helpers, tmp_path):
    """A ``.keras`` file of a Keras model gives its weights to the same model
    made of our layers (``load_weights``), and the other way round; our
    model's ``.keras`` file loads back as ours with the same numbers."""
    x = sequences.copy()
    x[MASKED_ROWS] = 0.0  # whole masked steps for Masking
    theirs, ours = rnn_stack(keras.layers), rnn_stack(krc)
    helpers.randomize_weights(theirs, rng)
    expected = np.asarray(theirs(x))
    theirs.save(tmp_path / "keras.keras")
    ours.load_weights(tmp_path / "keras.keras")
    helpers.assert_all_close([ours(x)], [expected], what="Keras' file into our model")
    ours.save(tmp_path / "ours.keras")
    loaded = keras.saving.load_model(tmp_path / "ours.keras")
    assert [type(layer) for layer in loaded.layers] == [type(layer) for layer in ours.layers]
    kinds = {type(layer) for layer in loaded.layers}
    assert {krc.GRU, krc.SimpleRNN, krc.RNN, keras.layers.Bidirectional} <= kinds
    wrapper = next(la for la in loaded.layers if isinstance(la, keras.layers.Bidirectional))
    assert isinstance(wrapper.forward_layer, krc.LSTM)
    helpers.assert_all_close([loaded(x)], [expected], what="our file loaded")
    fresh = rnn_stack(keras.layers)
    fresh.load_weights(tmp_path / "ours.keras")
    helpers.assert_all_close([fresh(x)], [expected], what="our file into Keras' model")


MASKED_ROWS = (np.array([1, 2, 4]), np.array([4, 3, 0]))


# -- cells ---------------------------------------------------------------------------
CELL_CASES = {
    "GRUCell": {"reset_after": True},
    "GRUCell-reset_before": {"reset_after": False, "implementation": 2},
    "LSTMCell": {"unit_forget_bias": False, "implementation": 2},
    "SimpleRNNCell": {"activation": "relu"},
}


@pytest.mark.parametrize("case", CELL_CASES)
def test_cells_step_like_keras(case, rng, helpers):
    """One step of our cell on Keras' weights: outputs and states, in
    inference and in training with input dropout (same seed, same mask)."""
    name = case.split("-")[0]
    kwargs = {**CELL_CASES[case], "dropout": 0.5, "seed": 11}
    theirs = getattr(keras.layers, name)(UNITS, **kwargs)
    ours = getattr(krc, name)(UNITS, **kwargs)
    x = rng.normal(size=(6, 4)).astype("float32")
    for cell in (theirs, ours):
        cell.build(x.shape)
    helpers.randomize_weights(theirs, rng)
    ours.set_weights(theirs.get_weights())
    initial = [ours.get_initial_state(6), theirs.get_initial_state(6)]
    helpers.assert_all_close(*initial, tol=0, what="initial states")
    states = [
        rng.normal(size=(6, n)).astype("float32") for n in keras.tree.flatten(theirs.state_size)
    ]
    results = {}
    for training in (False, True):
        expected = keras.tree.flatten(theirs(x, states, training=training))
        actual = keras.tree.flatten(ours(x, states, training=training))
        helpers.assert_all_close(actual, expected, what=f"{case} training={training}")
        results[training] = actual
    assert np.abs(results[True][0] - results[False][0]).max() > 1e-3  # dropout acted
    keras_config = {k: v for k, v in theirs.get_config().items() if k != "name"}
    assert ours.get_config() | keras_config == ours.get_config()  # Keras' keys, same values


def test_cells_take_keras_legacy_implementation_only_where_keras_does():
    for name in ("GRUCell", "LSTMCell"):
        for implementation in (0, 1, 2):
            getattr(keras.layers, name)(2, implementation=implementation)
            assert (
                "implementation"
                not in getattr(krc, name)(2, implementation=implementation).get_config()
            )
        with pytest.raises(ValueError, match=r"`implementation`.*legacy"):
            getattr(krc, name)(2, implementation="cudnn")
    for cls in (keras.layers.SimpleRNNCell, krc.SimpleRNNCell):
        with pytest.raises(ValueError, match="implementation"):
            cls(2, implementation=1)
