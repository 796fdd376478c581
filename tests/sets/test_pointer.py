"""`PointerDecoder` against a NumPy pointer network (teacher forcing), greedy
decoding, masks, argument errors; `PointerSorter`'s `.keras` round trip and
export (SavedModel served as stock TF Serving serves it, ONNX in onnxruntime)."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_rnncells as kr
from keras_rnncells.data.sorting import sorting_arrays
from keras_rnncells.export import servable_from_model, write_onnx, write_saved_models
from keras_rnncells.sets import exact_match

UNITS, MEMORY, ELEMENTS = 4, 3, 5
SIZES = [5, 3, 0]


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def reference(layer, memories, h, c, mask, targets):
    """Teacher-forced logits, one row and one step at a time."""
    kernel, recurrent, bias = (w.numpy() for w in layer.cell.weights)
    w_query, w_memory, v = (
        w.numpy()
        for w in (
            layer.attention.query_kernel,
            layer.attention.memory_kernel,
            layer.attention.score_vector,
        )
    )
    logits = np.full((len(memories), targets.shape[1], ELEMENTS), -1e9)
    for b in range(len(memories)):
        x, hb, cb = layer.first_input.numpy(), h[b], c[b]
        for t, target in enumerate(targets[b]):
            i, f, g, o = np.split(x @ kernel + hb @ recurrent + bias, 4)
            cb = sigmoid(f) * cb + sigmoid(i) * np.tanh(g)
            hb = sigmoid(o) * np.tanh(cb)
            for j in np.flatnonzero(mask[b]):
                logits[b, t, j] = v @ np.tanh(memories[b, j] @ w_memory + hb @ w_query)
            x = memories[b, target] if target >= 0 else np.zeros(MEMORY)
    return logits


@pytest.fixture
def case(rng, helpers):
    decoder = kr.PointerDecoder(UNITS)
    decoder.build((None, ELEMENTS, MEMORY))
    helpers.randomize_weights(decoder, rng)
    memories = rng.normal(size=(len(SIZES), ELEMENTS, MEMORY)).astype("float32")
    h, c = (rng.normal(size=(len(SIZES), UNITS)).astype("float32") for _ in range(2))
    mask = np.arange(ELEMENTS)[None, :] < np.array(SIZES)[:, None]
    targets = np.where(mask, rng.integers(0, 3, size=mask.shape), -1).astype("int32")
    return decoder, memories, [h, c], mask, targets


def test_teacher_forcing_matches_numpy(case):
    decoder, memories, states, mask, targets = case
    logits = decoder(memories, states, mask=mask, targets=targets)
    np.testing.assert_allclose(logits, reference(decoder, memories, *states, mask, targets), 2e-5)


def test_greedy_decoding_is_teacher_forcing_on_its_own_pointers(case):
    decoder, memories, states, mask, _ = case
    pointers, logits = decoder(memories, states, mask=mask)
    pointers = np.asarray(pointers)
    assert (pointers[~mask] == -1).all() and (pointers[mask] >= 0).all()
    assert (np.take_along_axis(mask, np.maximum(pointers, 0), 1) | (pointers < 0)).all()
    np.testing.assert_array_equal(np.argmax(logits, -1)[mask], pointers[mask])
    forced = decoder(memories, states, mask=mask, targets=pointers)
    np.testing.assert_allclose(forced, logits, atol=1e-6)


def test_exclude_chosen_points_at_each_element_once(case, rng, helpers):
    _, memories, states, mask, _ = case
    decoder = kr.PointerDecoder(UNITS, exclude_chosen=True)
    decoder.build(memories.shape)
    helpers.randomize_weights(decoder, rng)
    pointers, _ = decoder(memories, states, mask=mask)
    for row, size in zip(np.asarray(pointers), SIZES):
        assert sorted(row[:size]) == list(range(size)) and (row[size:] == -1).all()


def test_refusals_in_one_line(case):
    decoder, memories, states, _, targets = case

    @tf.function(input_signature=[tf.TensorSpec((None, None, MEMORY))])
    def unknown_elements(memories):
        return decoder(memories, states)

    with pytest.raises(ValueError, match="decodes one step per element: `memories` needs a"):
        unknown_elements(memories)
    given = kr.PointerDecoder(UNITS, learned_first_input=False)
    with pytest.raises(ValueError, match="`first_input` must be given"):
        given(memories, states, targets=targets)
    with pytest.raises(ValueError, match=r"Input `targets` of layer .* must be of shape"):
        decoder(memories, states, targets=targets[:2])
    for arguments, message in [
        ({"units": 0}, "Argument `units` must be a positive integer, received: 0"),
        ({"exclude_chosen": "yes"}, "Argument `exclude_chosen` must be"),
        ({"attention_units": 0}, "Argument `attention_units` must be a positive integer"),
    ]:
        with pytest.raises(ValueError, match=message) as error:
            kr.PointerDecoder(**{"units": UNITS, **arguments})
        assert "\n" not in str(error.value)


@pytest.mark.parametrize("encoder", ["set", "sequence"])
def test_sorter_round_trips_through_a_keras_file(encoder, tmp_path):
    numbers, order = sorting_arrays(4, 5, seed=3)
    keras.utils.set_random_seed(0)
    model = kr.PointerSorter(encoder, units=4, steps=2)
    forced = np.asarray(model({"numbers": numbers, "targets": order}))
    model.save(tmp_path / "sorter.keras")
    loaded = keras.saving.load_model(tmp_path / "sorter.keras")
    np.testing.assert_array_equal(loaded({"numbers": numbers, "targets": order}), forced)
    np.testing.assert_array_equal(loaded.sort(numbers), model.sort(numbers))
    assert loaded.get_config() == model.get_config()


def test_sorter_refuses_an_unknown_encoder():
    expected = r"Argument `encoder` must be one of \('set', 'sequence'\), received: 'tree'"
    with pytest.raises(ValueError, match=expected):
        kr.PointerSorter("tree")


def test_exact_match_counts_whole_rows():
    targets = np.array([[0, 1, 2], [2, 1, 0]])
    assert exact_match(np.array([[0, 1, 2], [2, 0, 1]]), targets) == 0.5


@pytest.mark.slow  # trains for a minute
def test_read_process_write_learns_to_sort_five_numbers():
    numbers, order = sorting_arrays(4000, 5, seed=0)
    test_numbers, test_order = sorting_arrays(300, 5, seed=1)
    keras.utils.set_random_seed(0)
    model = kr.PointerSorter("set", units=16, steps=3)
    model.compile(
        keras.optimizers.Adam(3e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    model.fit({"numbers": numbers, "targets": order}, order, batch_size=64, epochs=4, verbose=0)
    assert exact_match(model.sort(test_numbers), test_order) > 0.3


@pytest.mark.slow  # two exports and their checks: minutes
def test_sorter_exports_serve_as_tf_serving_and_onnx_do(
    tmp_path, serve_like_tf_serving, run_onnx_in_child
):
    """The greedy decoding's logits, for sets of a static size (the decoder
    unrolls one step per element)."""
    numbers, _ = sorting_arrays(3, 5, seed=8)
    keras.utils.set_random_seed(0)
    model = kr.PointerSorter("set", units=4, steps=2)
    expected = np.asarray(model({"numbers": numbers}))
    spec = {"numbers": tf.TensorSpec((None, 5, 1), tf.float32)}
    servable = servable_from_model(model, name="sorter", input_signature=[spec])
    inputs = {"numbers": numbers}
    (directory,) = write_saved_models([servable], tmp_path / "export")
    (served,) = serve_like_tf_serving([(directory, inputs)], tmp_path / "serve")
    assert isinstance(served, dict), served
    np.testing.assert_allclose(served["output_0"], expected, atol=1e-5)
    write_onnx(servable, tmp_path / "onnx" / "model.onnx")
    (ran,) = run_onnx_in_child([(tmp_path / "onnx" / "model.onnx", inputs)], tmp_path / "run")
    assert isinstance(ran, dict), ran
    np.testing.assert_allclose(ran["output_0"], expected, atol=1e-4)
