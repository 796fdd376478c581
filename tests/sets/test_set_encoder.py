"""`SetEncoder` against a NumPy read-process-write; order invariance, masks
(padding and empty sets), `.keras` round trip, export (SavedModel served as
stock TF Serving serves it, ONNX in onnxruntime) and argument errors."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import keras_rnncells as kr
from keras_rnncells.export import servable_from_model, write_onnx, write_saved_models

UNITS, FEATURES, ELEMENTS, STEPS = 4, 3, 6, 3
SIZES = [6, 3, 1, 0, 5]  # elements per row; 0: an empty set


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def reference(layer: kr.SetEncoder, elements: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Read-process-write's read and process blocks, one set at a time."""
    read_kernel, read_bias = (w.numpy() for w in layer.read.weights)
    kernel, recurrent, bias = (w.numpy() for w in layer.cell.weights)
    n = UNITS
    outputs = []
    for row, keep in zip(elements, mask):
        memories = np.tanh(row[keep] @ read_kernel + read_bias)  # only the set's elements
        h, c, q_star = np.zeros(n), np.zeros(n), np.zeros(2 * n)
        for _ in range(STEPS):
            z = q_star @ kernel + h @ recurrent + bias
            i, f, g, o = np.split(z, 4)
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h = sigmoid(o) * np.tanh(c)
            if len(memories):
                e = memories @ h
                a = np.exp(e - e.max()) / np.exp(e - e.max()).sum()
                read = a @ memories
            else:
                read = np.zeros(n)
            q_star = np.concatenate([h, read])
        outputs.append(q_star)
    return np.array(outputs)


@pytest.fixture
def batch(rng):
    elements = rng.normal(size=(len(SIZES), ELEMENTS, FEATURES)).astype("float32")
    mask = np.arange(ELEMENTS)[None, :] < np.array(SIZES)[:, None]
    return elements, mask


@pytest.fixture
def encoder(rng, helpers):
    layer = kr.SetEncoder(UNITS, steps=STEPS)
    layer.build((None, None, FEATURES))
    helpers.randomize_weights(layer, rng)
    return layer


def test_matches_numpy_read_process_write(encoder, batch):
    elements, mask = batch
    np.testing.assert_allclose(
        encoder(elements, mask=mask), reference(encoder, elements, mask), atol=1e-5
    )


def test_permuting_the_set_leaves_the_output_equal(encoder, batch, rng):
    elements, mask = batch
    expected = np.asarray(encoder(elements, mask=mask))
    for _ in range(3):
        order = np.stack([rng.permutation(ELEMENTS) for _ in SIZES])
        permuted = np.take_along_axis(elements, order[:, :, None], axis=1)
        permuted_mask = np.take_along_axis(mask, order, axis=1)
        found = np.asarray(encoder(permuted, mask=permuted_mask))
        assert np.abs(found - expected).max() <= 1e-6


def test_padding_is_never_read_and_empty_sets_share_one_output(encoder, batch):
    elements, mask = batch
    expected = np.asarray(encoder(elements, mask=mask))
    noisy = np.where(mask[:, :, None], elements, np.float32(np.nan))  # padding: NaN
    np.testing.assert_array_equal(encoder(noisy, mask=mask), expected)
    alone = np.asarray(encoder(elements[1:2, :3]))  # row 1 without its padding
    np.testing.assert_allclose(alone[0], expected[1], atol=1e-6)
    empty = np.asarray(encoder(elements[:2], mask=np.zeros((2, ELEMENTS), bool)))
    assert np.isfinite(empty).all() and (empty[0] == empty[1]).all()
    np.testing.assert_allclose(empty[0], expected[SIZES.index(0)], atol=1e-6)
    assert (empty[0, UNITS:] == 0).all()  # nothing read


def test_takes_the_keras_mask_of_the_layer_before(encoder, batch):
    elements, mask = batch
    padded = np.where(mask[:, :, None], elements, 0.0).astype("float32")
    masked = keras.layers.Masking(0.0)(padded)
    np.testing.assert_allclose(encoder(masked), encoder(elements, mask=mask), atol=1e-6)


def test_return_state_gives_memories_and_the_cells_states(encoder, batch):
    elements, mask = batch
    encoder.return_state = True
    q_star, memories, h, c = encoder(elements, mask=mask)
    assert memories.shape == (len(SIZES), ELEMENTS, UNITS)
    np.testing.assert_array_equal(q_star[:, :UNITS], h)
    assert c.shape == h.shape


def functional_model(rng, helpers) -> keras.Model:
    elements = keras.Input((None, FEATURES), name="elements")
    mask = keras.Input((None,), dtype="bool", name="mask")
    layer = kr.SetEncoder(UNITS, steps=STEPS, score="general", memory_units=5)
    outputs = keras.layers.Dense(2)(layer(elements, mask=mask))
    model = keras.Model({"elements": elements, "mask": mask}, outputs, name="set-encoder")
    helpers.randomize_weights(model, rng)
    return model


def test_keras_file_round_trip(rng, helpers, batch, tmp_path):
    elements, mask = batch
    model = functional_model(rng, helpers)
    model.save(tmp_path / "sets.keras")
    loaded = keras.saving.load_model(tmp_path / "sets.keras")
    inputs = {"elements": elements, "mask": mask}
    np.testing.assert_array_equal(loaded(inputs), model(inputs))
    assert loaded.layers[-2].get_config() == model.layers[-2].get_config()


@pytest.mark.slow  # two exports and their checks: over a minute
def test_exports_serve_as_tf_serving_and_onnx_do(
    rng, helpers, batch, tmp_path, serve_like_tf_serving, run_onnx_in_child
):
    elements, mask = batch
    model = functional_model(rng, helpers)
    inputs = {"elements": elements, "mask": mask}
    expected = np.asarray(model(inputs))
    servable = servable_from_model(model)
    (directory,) = write_saved_models([servable], tmp_path / "export")
    (served,) = serve_like_tf_serving([(directory, inputs)], tmp_path / "serve")
    assert isinstance(served, dict), served
    np.testing.assert_allclose(served["output_0"], expected, atol=1e-5)
    write_onnx(servable, tmp_path / "onnx" / "model.onnx")
    (ran,) = run_onnx_in_child([(tmp_path / "onnx" / "model.onnx", inputs)], tmp_path / "run")
    assert isinstance(ran, dict), ran
    np.testing.assert_allclose(ran["output_0"], expected, atol=1e-4)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"units": 0}, "Argument `units` must be a positive integer, received: 0"),
        ({"steps": 0}, "Argument `steps` must be a positive integer, received: 0"),
        ({"memory_units": -1}, "Argument `memory_units` must be a positive integer"),
        ({"score": "cosine"}, "Argument `score` must be one of"),
        ({"cell": "nope"}, "Argument `cell` must be one of"),
        ({"cell_options": 3}, "Argument `cell_options`"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(arguments, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")) as error:
        kr.SetEncoder(**{"units": UNITS, **arguments})
    assert "\n" not in str(error.value)


def test_bad_inputs_are_refused_in_one_line(encoder, batch):
    elements, mask = batch
    with pytest.raises(ValueError, match=r"Input `elements` of layer .* must be of rank 3"):
        encoder(elements[:, 0])
    with pytest.raises(ValueError, match=r"Input `mask` of layer .* must be of shape"):
        encoder(elements, mask=mask[:, :2])
    with pytest.raises(ValueError, match="needs the query size"):
        kr.SetEncoder(UNITS, memory_units=UNITS + 1)(elements)
