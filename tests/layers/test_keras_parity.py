"""Our GRU, LSTM and SimpleRNN give Keras' numbers with Keras' weights, on
every execution path: outputs, states and gradients, with masks of every
padding pattern, ``go_backwards``, ``initial_state``, ``return_state``,
``return_sequences``, ``zero_output_for_mask`` and ``stateful``.

The reference is Keras' layer with ``use_cudnn=False``: its generic loop is
the semantics every path follows (Keras' own cuDNN path pads differently).
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_rnncells as krc

UNITS = 3

# name -> (our layer, Keras' layer, arguments of both)
SPECS = {
    "gru": (krc.GRU, keras.layers.GRU, {"reset_after": True}),
    "gru_reset_before": (krc.GRU, keras.layers.GRU, {"reset_after": False}),
    "lstm": (krc.LSTM, keras.layers.LSTM, {}),
    "simple_rnn": (krc.SimpleRNN, keras.layers.SimpleRNN, {}),
}
CUDNN_SPECS = ("gru", "lstm")

HAS_GPU = bool(tf.config.list_logical_devices("GPU"))
IMPLEMENTATIONS = [
    "fused",
    "generic",
    pytest.param("cudnn", marks=pytest.mark.skipif(not HAS_GPU, reason="no GPU visible")),
]

# Layer flags: each takes both values, in four different combinations.
FLAGS = ("go_backwards", "zero_output_for_mask", "return_sequences", "return_state")
CONFIGS = [
    dict(zip(FLAGS, values))
    for values in [
        (False, False, True, True),
        (True, True, True, True),
        (True, False, False, False),
        (False, True, False, True),
    ]
]
GRADIENT_CONFIG = CONFIGS[1]


def layer_pair(spec: str, implementation: str, sequences, rng, helpers, **kwargs):
    """Keras' layer with random weights and ours with the same weights."""
    ours_class, keras_class, spec_kwargs = SPECS[spec]
    if implementation in ("cudnn", "auto") and spec not in CUDNN_SPECS:
        pytest.skip(f"{spec} has no cuDNN kernel")
    reference_kwargs = {} if keras_class is keras.layers.SimpleRNN else {"use_cudnn": False}
    reference = keras_class(UNITS, **spec_kwargs, **kwargs, **reference_kwargs)
    ours = ours_class(UNITS, **spec_kwargs, **kwargs, implementation=implementation)
    reference.build(sequences.shape)
    ours.build(sequences.shape)
    helpers.randomize_weights(reference, rng)
    ours.set_weights(reference.get_weights())
    return reference, ours


def random_states(layer, batch: int, rng) -> list[np.ndarray]:
    sizes = keras.tree.flatten(layer.cell.state_size)
    return [rng.normal(size=(batch, size)).astype("float32") for size in sizes]


def paths_mask(implementation: str, mask, right_padded_mask):
    """cuDNN takes right padding only (see `test_cudnn_auto_falls_back`)."""
    return right_padded_mask if implementation == "cudnn" else mask


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("spec", SPECS)
def test_outputs_states_and_gradients_match_keras(
    spec, implementation, sequences, mask, right_padded_mask, rng, helpers
):
    mask = paths_mask(implementation, mask, right_padded_mask)
    for flags in CONFIGS:
        reference, ours = layer_pair(spec, implementation, sequences, rng, helpers, **flags)
        initial_state = random_states(reference, len(sequences), rng)
        what = f"{spec}/{implementation} {flags}"
        if flags == GRADIENT_CONFIG:
            expected = helpers.outputs_and_gradients(
                reference, sequences, mask=mask, initial_state=initial_state
            )
            actual = helpers.outputs_and_gradients(
                ours, sequences, mask=mask, initial_state=initial_state
            )
            helpers.assert_all_close(actual[1], expected[1], what=f"{what}: gradients")
            # inputs, initial states, kernel, recurrent kernel, bias: all reached
            assert len(actual[1]) == 1 + len(initial_state) + 3
            assert all(np.abs(g).max() > 0 for g in actual[1])
            calls = [(mask, initial_state)]
        else:
            calls = [(mask, initial_state), (mask, None)]
        if flags == CONFIGS[0]:
            calls.append((None, None))
        for call_mask, state in calls:
            expected = keras.tree.flatten(reference(sequences, mask=call_mask, initial_state=state))
            actual = keras.tree.flatten(ours(sequences, mask=call_mask, initial_state=state))
            helpers.assert_all_close(
                actual,
                expected,
                what=f"{what} mask={call_mask is not None} initial_state={state is not None}",
            )
        assert len(actual) == (1 + len(initial_state) if flags["return_state"] else 1)
        steps = (sequences.shape[1],) if flags["return_sequences"] else ()
        assert actual[0].shape == (len(sequences), *steps, UNITS)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("spec", SPECS)
def test_stateful_matches_keras(spec, implementation, sequences, right_padded_mask, rng, helpers):
    """Two calls carry the state from one to the next (as Keras' layer does);
    ``reset_states`` restarts from zeros."""
    flags = {"stateful": True, "return_sequences": True, "return_state": True}
    reference, ours = layer_pair(spec, implementation, sequences, rng, helpers, **flags)
    first, second = sequences, sequences[:, ::-1] * 0.5
    outputs = {}
    for name, layer in (("keras", reference), ("ours", ours)):
        layer.reset_states()
        calls = [layer(first, mask=right_padded_mask), layer(second, mask=right_padded_mask)]
        layer.reset_states()
        calls.append(layer(first, mask=right_padded_mask))
        outputs[name] = [keras.tree.flatten(c) for c in calls]
    for i, (actual, expected) in enumerate(zip(outputs["ours"], outputs["keras"])):
        helpers.assert_all_close(actual, expected, what=f"{spec}/{implementation} call {i}")
    helpers.assert_all_close(outputs["ours"][2], outputs["ours"][0], tol=0, what="after reset")


@pytest.mark.parametrize("spec", CUDNN_SPECS)
def test_the_cudnn_loop_reaches_keras_cudnn_kernel(spec, sequences, rng, helpers):
    """Our cells' ``cudnn_loop`` calls the ``gru``/``lstm`` of Keras' TensorFlow
    backend with arguments it takes. On a GPU that runs cuDNN's kernel (our
    layer's numbers against Keras' are checked above); on a CPU Keras raises
    ``NotImplementedError``, its "no cuDNN here", which only a call that got
    that far raises. (The first GPU run found the hook broken: the backend
    package binds the name ``rnn`` to a function, which hid the module.)"""
    _, ours = layer_pair(spec, "fused", sequences, rng, helpers, return_sequences=True)
    states = [tf.constant(s) for s in random_states(ours, len(sequences), rng)]
    call = (tf.constant(sequences), states, None, False, True)
    if not HAS_GPU:
        with pytest.raises(NotImplementedError):
            ours.cell.cudnn_loop(*call)
        return
    last, outputs, new_states = ours.cell.cudnn_loop(*call)
    assert outputs.shape == (len(sequences), sequences.shape[1], UNITS)
    helpers.assert_all_close(last, outputs[:, -1], what=f"{spec}: last output")
    assert len(new_states) == len(states)


@pytest.mark.skipif(not HAS_GPU, reason="no GPU visible")
@pytest.mark.parametrize("spec", CUDNN_SPECS)
def test_cudnn_auto_falls_back(spec, sequences, mask, rng, helpers):
    """``implementation="auto"`` selects cuDNN on a GPU and still gives Keras'
    numbers for masks cuDNN cannot take (left padding, holes, empty rows)."""
    reference, ours = layer_pair(
        spec, "auto", sequences, rng, helpers, return_sequences=True, return_state=True
    )
    assert ours.path() == "cudnn"
    expected = helpers.outputs_and_gradients(reference, sequences, mask=mask)
    actual = helpers.outputs_and_gradients(ours, sequences, mask=mask)
    helpers.assert_all_close(actual[0], expected[0], what=f"{spec} auto: outputs")
    helpers.assert_all_close(actual[1], expected[1], what=f"{spec} auto: gradients")
