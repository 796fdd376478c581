"""`StackedRNN`: each connection against the same layers composed by hand,
masks, a `.keras` round trip, and what it refuses."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import keras_rnncells as kr
from keras_rnncells.layers.stacks import StackedRNN

UNITS, FEATURES = 3, 4


def by_hand(stack: StackedRNN, x: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """The stack's equations (module docstring), calling its layers one by one."""
    inputs = x
    for index, layer in enumerate(stack.recurrent_layers):
        h = np.asarray(layer(inputs, mask=mask))
        if stack.connection == "dense" and index < stack.depth - 1:
            inputs = np.concatenate([inputs, h], axis=-1)
        elif stack.connection == "residual" and index > 0:
            inputs = h + inputs
        else:
            inputs = h
    return inputs


@pytest.mark.parametrize("connection", ["plain", "residual", "dense"])
def test_connections_follow_their_equations(connection, sequences, mask):
    stack = StackedRNN("mgu", UNITS, layers=3, connection=connection, return_sequences=True)
    found = np.asarray(stack(sequences, mask=mask))
    widths = [layer.cell.kernel.shape[0] for layer in stack.recurrent_layers]
    assert widths == ([FEATURES, 7, 10] if connection == "dense" else [FEATURES, 3, 3])
    np.testing.assert_allclose(found, by_hand(stack, sequences, mask), atol=1e-6)
    last = StackedRNN.from_config(stack.get_config() | {"return_sequences": False})
    last(sequences)
    last.set_weights(stack.get_weights())
    np.testing.assert_allclose(last(sequences, mask=mask), found[:, -1], atol=1e-6)


def test_a_plain_stack_is_the_stacked_layers(sequences):
    stack = StackedRNN("gru", UNITS, layers=2, cell_options={"reset_after": False})
    stack(sequences)
    first, second = (
        kr.GRU(UNITS, reset_after=False, return_sequences=True),
        kr.GRU(UNITS, reset_after=False),
    )
    model = keras.Sequential([keras.Input((None, FEATURES)), first, second])
    model.set_weights(stack.get_weights())
    np.testing.assert_allclose(stack(sequences), model(sequences), atol=1e-6)


def test_rows_do_not_mix_under_masks(sequences, mask, helpers):
    stack = StackedRNN("lstm", UNITS, layers=2, connection="dense")
    helpers.assert_rows_independent(stack, sequences, mask)


def test_keras_file_round_trip(tmp_path, sequences):
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((None, FEATURES)),
            StackedRNN("mufuru", UNITS, layers=2, connection="residual"),
        ]
    )
    model.save(tmp_path / "stack.keras")
    loaded = keras.saving.load_model(tmp_path / "stack.keras")
    np.testing.assert_allclose(loaded(sequences), model(sequences), atol=1e-6)
    assert loaded.layers[0].get_config() == model.layers[0].get_config()


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="Argument `connection` must be one of"):
        StackedRNN("gru", UNITS, connection="highway")
    with pytest.raises(ValueError, match="Argument `layers`"):
        StackedRNN("gru", UNITS, layers=0)
    with pytest.raises(ValueError, match="Argument `cell`"):
        StackedRNN("nope", UNITS)
