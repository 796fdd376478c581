"""Bad input: a `ValueError` that names the argument and what was expected.

One table of cases; each case is a callable that must raise, and a regular
expression its message must contain (the argument's name and the expected
value).
"""

from __future__ import annotations

from collections.abc import Callable

import keras
import numpy as np
import pytest

import keras_rnncells as kr
from keras_rnncells.layers.rnn import gpu_available

BATCH, STEPS, FEATURES, UNITS = 2, 4, 3, 5
CELLS = kr.list_cells()
NAMED_LAYERS = [
    obj
    for obj in vars(kr).values()
    if isinstance(obj, type) and issubclass(obj, kr.CellLayer) and obj is not kr.CellLayer
]


def zeros(*shape: int) -> np.ndarray:
    return np.zeros(shape, dtype="float32")


def built_gru() -> kr.GRU:
    layer = kr.GRU(UNITS)
    layer(zeros(BATCH, STEPS, FEATURES))
    return layer


def symbolic_call_with_other_features() -> None:
    layer = built_gru()
    layer(keras.Input((STEPS, FEATURES + 1)))


def case(case_id: str, raises: Callable[[], object], match: str, **kwargs) -> pytest.param:
    return pytest.param(raises, match, id=case_id, **kwargs)


CASES = [
    # -- inputs
    case("rank-2", lambda: kr.GRU(UNITS)(zeros(BATCH, FEATURES)), r"inputs of rank 3"),
    case("rank-4", lambda: kr.GRU(UNITS)(zeros(BATCH, STEPS, FEATURES, 1)), r"inputs of rank 3"),
    case(
        "rank-2-symbolic",
        lambda: kr.GRU(UNITS)(keras.Input((FEATURES,))),
        r"inputs of rank 3",
    ),
    case(
        "features-differ",
        lambda: built_gru()(zeros(BATCH, STEPS, FEATURES + 1)),
        rf"built for inputs with {FEATURES} features",
    ),
    case(
        "features-differ-symbolic",
        symbolic_call_with_other_features,
        rf"built for inputs with {FEATURES} features",
    ),
    case(
        "features-unknown",
        lambda: kr.GRU(UNITS)(keras.Input((STEPS, None))),
        r"known input feature size",
    ),
    # -- initial_state
    case(
        "initial_state-shape",
        lambda: kr.GRU(UNITS)(
            zeros(BATCH, STEPS, FEATURES), initial_state=[zeros(BATCH, UNITS + 1)]
        ),
        rf"`initial_state`.*\[\({BATCH}, {UNITS}\)\]",
    ),
    case(
        "initial_state-batch",
        lambda: kr.GRU(UNITS)(
            zeros(BATCH, STEPS, FEATURES), initial_state=[zeros(BATCH + 1, UNITS)]
        ),
        rf"`initial_state`.*\[\({BATCH}, {UNITS}\)\]",
    ),
    case(
        "initial_state-count-lstm",
        lambda: kr.LSTM(UNITS)(zeros(BATCH, STEPS, FEATURES), initial_state=[zeros(BATCH, UNITS)]),
        r"`initial_state`.*2 tensor\(s\)",
    ),
    case(
        "initial_state-count-gru",
        lambda: kr.GRU(UNITS)(
            zeros(BATCH, STEPS, FEATURES), initial_state=[zeros(BATCH, UNITS)] * 2
        ),
        r"`initial_state`.*1 tensor\(s\)",
    ),
    case(
        "initial_state-symbolic",
        lambda: kr.LSTM(UNITS)(
            keras.Input((STEPS, FEATURES)), initial_state=[keras.Input((UNITS + 1,))] * 2
        ),
        rf"`initial_state`.*\(None, {UNITS}\)",
    ),
    # -- implementation
    case(
        "implementation-unknown",
        lambda: kr.GRU(UNITS, implementation="cuda"),
        r"`implementation` must be one of .*'auto'.*'cudnn'.*'fused'.*'generic'",
    ),
    case(
        "implementation-fused-foreign-cell",
        lambda: kr.RNN(keras.layers.GRUCell(UNITS), implementation="fused"),
        r"`implementation='fused'` needs a keras_rnncells.AbstractRNNCell",
    ),
    case(
        "unroll-fused",
        lambda: kr.GRU(UNITS, unroll=True, implementation="fused"),
        r"`unroll=True`.*implementation='generic'",
    ),
    *(
        case(
            f"cudnn-{name}",
            make,
            r"`implementation='cudnn'` needs a GRUCell\(reset_after=True\) or LSTMCell",
        )
        for name, make in [
            ("mgu", lambda: kr.MGU(UNITS, implementation="cudnn")),
            ("gru-reset-before", lambda: kr.GRU(UNITS, reset_after=False, implementation="cudnn")),
            ("lstm-relu", lambda: kr.LSTM(UNITS, activation="relu", implementation="cudnn")),
            ("rnn-mgu", lambda: kr.RNN(kr.MGUCell(UNITS), implementation="cudnn")),
        ]
    ),
    case(
        "cudnn-no-gpu",
        lambda: kr.GRU(UNITS, implementation="cudnn")(zeros(BATCH, STEPS, FEATURES)),
        r"`implementation='cudnn'` needs a GPU",
        marks=pytest.mark.skipif(gpu_available(), reason="a GPU is visible"),
    ),
    # -- layer and registry arguments
    case(
        "stateful-dynamic-batch",
        lambda: kr.GRU(UNITS, stateful=True)(keras.Input((STEPS, FEATURES))),
        r"`stateful=True`.*batch size must be static",
    ),
    case("get_cell-unknown", lambda: kr.get_cell("no-such-cell"), r"`name` must be one of \["),
    # -- units and dropout rates, for every cell and the named layers
    *(
        case(
            f"units={value!r}-{name}",
            lambda name=name, value=value: kr.get_cell(name)(value),
            rf"`units` must be a positive integer, received: {value!r}",
        )
        for name in CELLS
        for value in (0, -1, 2.5, True)
    ),
    *(
        case(
            f"units={value!r}-{layer.__name__}",
            lambda layer=layer, value=value: layer(value),
            rf"`units` must be a positive integer, received: {value!r}",
        )
        for layer in NAMED_LAYERS
        for value in (0, -1, 2.5, True)
    ),
    *(
        case(
            f"{argument}={value!r}-{name}",
            lambda name=name, argument=argument, value=value: kr.get_cell(name)(
                UNITS, **{argument: value}
            ),
            rf"`{argument}` must be a float in \[0, 1\), received: {value!r}",
        )
        for name in CELLS
        for argument, value in [
            ("dropout", -0.1),
            ("dropout", 1.0),
            ("recurrent_dropout", 1.5),
            ("recurrent_dropout", True),
        ]
    ),
    case(
        "dropout-layer",
        lambda: kr.GRU(UNITS, dropout=1.0),
        r"`dropout` must be a float in \[0, 1\), received: 1.0",
    ),
]


@pytest.mark.parametrize(("raises", "match"), CASES)
def test_bad_input_raises_a_clear_value_error(raises: Callable[[], object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        raises()
