"""What Keras' recurrent layers accept, ours accept: integer and bool
sequences (cast, as Keras casts them), Keras 3's ``use_cudnn`` and Keras 2's
``implementation=1|2``; and a sequence of zero steps gets a clear error, or,
in a graph traced for any length, the answer to a fully masked sequence."""

from __future__ import annotations

import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_rnncells as kr
from keras_rnncells.layers import rnn


@pytest.mark.parametrize("name", ["GRU", "LSTM", "SimpleRNN"])
def test_integer_and_bool_sequences_are_cast_as_keras_casts_them(name):
    ids = np.array([[[101, 202], [303, 404]], [[1, 0], [0, 1]]])
    ours, theirs = getattr(kr, name)(3), getattr(keras.layers, name)(3)
    ours.build((None, None, 2))
    theirs.build((None, None, 2))
    theirs.set_weights(ours.get_weights())
    for sequences in (ids, ids.astype("int8"), ids > 100):
        expected = theirs(sequences)
        found = ours(sequences)
        assert found.dtype == expected.dtype == "float32"
        np.testing.assert_allclose(found, expected, atol=1e-5)
    bidirectional = keras.layers.Bidirectional(getattr(kr, name)(3, return_sequences=True))
    assert bidirectional(ids).shape == (2, 2, 6)  # Keras' Bidirectional output-shape case


def test_string_sequences_are_refused_with_the_argument_named():
    with pytest.raises(ValueError, match=r"`sequences`.*a float, integer or bool tensor.*string"):
        kr.GRU(2)(tf.constant([[["a", "b"]]]))


@pytest.mark.parametrize(
    "use_cudnn, implementation, expected",
    [
        ("auto", "auto", "auto"),
        (False, "auto", "auto"),
        (False, "fused", "fused"),
        (True, "auto", "cudnn"),
        (True, "cudnn", "cudnn"),
        ("auto", "generic", "generic"),
    ],
)
def test_use_cudnn_maps_onto_implementation(use_cudnn, implementation, expected):
    layer = kr.GRU(2, use_cudnn=use_cudnn, implementation=implementation)
    assert (layer.implementation, layer.use_cudnn) == (expected, use_cudnn)
    restored = kr.GRU.from_config(layer.get_config())
    assert (restored.implementation, restored.use_cudnn) == (expected, use_cudnn)
    if use_cudnn is False:
        assert not layer.uses_cudnn()


@pytest.mark.parametrize(
    "use_cudnn, implementation",
    [(True, "fused"), (True, "generic"), (False, "cudnn")],
)
def test_contradictions_name_both_arguments(use_cudnn, implementation):
    with pytest.raises(ValueError, match=r"`use_cudnn=.*`implementation=.*contradict"):
        kr.LSTM(2, use_cudnn=use_cudnn, implementation=implementation)


def test_bad_use_cudnn_and_implementation_are_refused():
    with pytest.raises(ValueError, match="`use_cudnn` must be one of"):
        kr.GRU(2, use_cudnn="yes")
    with pytest.raises(ValueError, match="`implementation` must be one of"):
        kr.GRU(2, implementation=3)


def test_keras_legacy_implementation_warns_once_and_means_auto(monkeypatch):
    monkeypatch.setattr(rnn, "_warned_legacy", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        layers = [kr.GRU(2, implementation=1), kr.LSTM(2, implementation=2)]
    assert [layer.implementation for layer in layers] == ["auto", "auto"]
    messages = [str(w.message) for w in caught if "Keras 2's kernel choice" in str(w.message)]
    assert len(messages) == 1 and "implementation='auto'" in messages[0]


def test_zero_steps_raise_naming_the_time_axis():
    with pytest.raises(ValueError, match=r"0 timesteps \(axis 1\)"):
        kr.GRU(2)(np.zeros((2, 0, 3), "float32"))


@pytest.mark.cell_sweep
@pytest.mark.parametrize("cell", kr.list_cells())
def test_zero_steps_in_a_graph_answer_as_a_fully_masked_sequence(cell):
    """A serving graph traced for any length gets 0 steps at run time: initial
    states back and no outputs, with no error, at a batch of one loop's rows
    and at one of several loops' (layers/rnn.py, ``loop_count``)."""
    layer = kr.RNN(kr.get_cell(cell)(3), return_sequences=True, return_state=True)
    layer.build((None, None, 3))
    for batch in (2, 20):  # a graph traced for a known batch, and any length
        serve = tf.function(layer, input_signature=[tf.TensorSpec((batch, None, 3))])
        outputs, *states = serve(tf.zeros((batch, 0, 3)))
        assert outputs.shape == (batch, 0, layer.cell.output_size)
        for state in states:
            np.testing.assert_array_equal(state, np.zeros(state.shape))
