"""The color applications: data, the namer (rgb -> name), name -> color, serving."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.apps import servable_for
from keras_rnncells.apps.color_namer import ColorNamer
from keras_rnncells.apps.colors import (
    FEATURES,
    check_rgb,
    color_features,
    load_color_list,
    load_colors,
    read_color_counts,
)
from keras_rnncells.apps.name_to_color import NameToColor, soft_bins
from keras_rnncells.cli import main
from keras_rnncells.seq2seq import beam_search, greedy_search
from keras_rnncells.text import END_ID, START_ID, WordTokenizer

# Names held out of the name -> color training: known words, unseen compositions.
HELD_OUT = ("light blue", "dark blue", "red", "light green", "dark green")


def test_shipped_color_list():
    colors = load_color_list()
    assert len(colors) == 949 == len(set(colors.names))
    assert colors.rgb.shape == (949, 3) and colors.rgb.dtype == np.float32
    assert colors.rgb.min() == 0.0 and colors.rgb.max() == 1.0
    xkcd = pytest.importorskip("matplotlib._color_data").XKCD_COLORS
    for name, rgb in zip(colors.names, colors.rgb):
        assert f"#{''.join(f'{round(v * 255):02x}' for v in rgb)}" == xkcd[f"xkcd:{name}"]
    features = color_features(colors.rgb[:4]).numpy()
    assert features.shape == (4, FEATURES) and np.all(np.isfinite(features))
    with pytest.raises(ValueError, match="`source`"):
        load_colors("paint")


def test_counts_reader(require_data):
    counts = read_color_counts(require_data("xkcd_color").parent)
    assert len(set(counts.names)) == 153 and np.all(counts.weights > 0)
    assert counts.rgb.min() >= 0 and counts.rgb.max() <= 1

    def mean_color(name):
        rows = np.array([n == name for n in counts.names])
        return np.average(counts.rgb[rows], axis=0, weights=counts.weights[rows])

    red, green, blue = mean_color("red"), mean_color("green"), mean_color("blue")
    assert np.argmax(red) == 0 and np.argmax(green) == 1 and np.argmax(blue) == 2


def test_color_namer_trains_names_decodes_saves_and_serves(tmp_path):
    run = tmp_path / "run"
    keras.utils.set_random_seed(0)
    main(["train", "color-namer", "--out", str(run), "--limit", "12", "--epochs", "60"])
    results = json.loads((run / "results.json").read_text())
    assert results["train_examples"] == 12
    # Measured: 1.0 with seed 0 (12 training colors, 60 epochs).
    assert results["train_exact_match_greedy"] >= 0.8
    model = keras.saving.load_model(run / "model.keras")
    assert isinstance(model, ColorNamer)

    rgb = tf.constant([[0.1, 0.2, 0.9], [0.95, 0.9, 0.2], [0.5, 0.5, 0.5]])
    names, scores = model.describe(rgb, beam_width=1)
    _, beam_scores = model.describe(rgb, beam_width=3)
    assert np.all(beam_scores.numpy() >= scores.numpy() - 1e-5)  # beam finds no worse
    # Beam search of width 1 is greedy search, on the model's own step function.
    features = color_features(check_rgb(rgb))
    states = model.decoder.initial_state(3, model.summarize(features))
    ends = (START_ID, END_ID)
    greedy = greedy_search(
        model.decoder.log_prob_step(prompt=features), states, 3, model.max_length, *ends
    )
    beam = beam_search(
        model.decoder.log_prob_step(prompt=features), states, 3, 1, model.max_length, *ends
    )
    np.testing.assert_array_equal(beam.tokens[:, 0], greedy.tokens)
    np.testing.assert_allclose(beam.scores[:, 0], greedy.scores, rtol=1e-5)
    np.testing.assert_array_equal(model.tokenizer.detokenize(greedy.tokens), names)

    servable = servable_for(model)
    served = servable.serve(rgb=np.array([[-0.5, 0.2, 1.7], [0.0, 0.2, 1.0]], "float32"))
    assert served["names"].numpy()[0] == served["names"].numpy()[1]  # clipped to [0, 1]
    served = servable.serve(**servable.examples)
    np.testing.assert_array_equal(served["names"], model.describe(servable.examples["rgb"], 3)[0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="finite"):
        servable.serve(rgb=np.array([[np.nan, 0.0, 0.0]], "float32"))
    function, examples = servable.onnx()
    tokens = function(**examples)
    np.testing.assert_array_equal(model.tokenizer.detokenize(tokens["tokens"]), served["names"])


@pytest.fixture(scope="module")
def name_to_color():
    colors = load_color_list()
    kept = [i for i, name in enumerate(colors.names) if name not in HELD_OUT]
    names = [colors.names[i] for i in kept]
    keras.utils.set_random_seed(0)
    tokenizer = WordTokenizer.from_corpus(names, lowercase=True)
    model = NameToColor(tokenizer, units=32, embedding_dim=16, bins=12)
    model.compile(keras.optimizers.Adam(1e-2), keras.losses.CategoricalCrossentropy(True))
    ids = tokenizer(tf.constant(names)).numpy()
    model.fit(ids, soft_bins(colors.rgb[kept], 12), batch_size=32, epochs=15, verbose=0)
    return model


def test_name_to_color_composes_unseen_names(name_to_color):
    rgb, distribution = (t.numpy() for t in name_to_color.colors(tf.constant(HELD_OUT)))
    assert distribution.shape == (5, 3, 12)
    np.testing.assert_allclose(distribution.sum(-1), 1.0, rtol=1e-5)
    light_blue, dark_blue, red, light_green, dark_green = rgb
    assert light_blue.sum() > dark_blue.sum() + 0.3 and light_green.sum() > dark_green.sum() + 0.3
    assert light_blue[2] - light_blue[0] > red[2] - red[0] + 0.5  # bluer than red
    assert light_green[1] > light_green[0] and red[0] > red[1] + 0.3


def test_name_to_color_saves_and_serves(name_to_color, tmp_path):
    name_to_color.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    names = tf.constant(["light greenish blue", "", "no such color"])
    rgb, _ = name_to_color.colors(names)
    np.testing.assert_allclose(loaded.colors(names)[0], rgb, rtol=1e-6)
    servable = servable_for(loaded)
    served = servable.serve(name=names)
    np.testing.assert_allclose(served["rgb"], rgb, rtol=1e-6)
    # The empty name gets the prior: the distribution of the output bias.
    prior = tf.nn.softmax(tf.reshape(loaded.head.bias, (3, 12))).numpy()
    np.testing.assert_allclose(served["distribution"][1], prior, rtol=1e-5)
    function, examples = servable.onnx()
    np.testing.assert_allclose(
        function(**examples)["rgb"], servable.serve(**servable.examples)["rgb"], rtol=1e-6
    )
    with pytest.raises(ValueError, match="`tokenizer`"):
        NameToColor("not a tokenizer")


def test_color_namer_artifacts_both_refuse_nan_and_infinity(
    tmp_path, serve_like_tf_serving, run_onnx_in_child
):
    """The SavedModel (served as TF Serving serves it) and the ONNX model (in
    onnxruntime, no TensorFlow) fail a NaN or infinite color alike, and agree
    on finite ones, an empty batch included."""
    from keras_rnncells.export import write_onnx, write_saved_model

    keras.utils.set_random_seed(0)
    words = WordTokenizer.from_corpus(["light blue", "dark red"], lowercase=True)
    servable = servable_for(ColorNamer(words, "gru", units=4, embedding_dim=4, max_length=4))
    saved = write_saved_model(servable, tmp_path / "export", check=False)
    onnx_file = tmp_path / "onnx" / "model.onnx"
    write_onnx(servable, onnx_file)
    batches = {
        "finite": np.array([[0.9, 0.1, 0.1], [0.5, 0.75, 0.95], [-1.0, 0.5, 2.0]], "float32"),
        "empty": np.zeros((0, 3), "float32"),
        "nan": np.array([[0.1, 0.2, 0.3], [np.nan, 0.0, 0.0]], "float32"),
        "inf": np.array([[np.inf, 0.0, 0.0]], "float32"),
        "-inf": np.array([[0.2, -np.inf, 0.0]], "float32"),
    }
    served = serve_like_tf_serving([(saved, {"rgb": b}) for b in batches.values()], tmp_path / "s")
    ran = run_onnx_in_child([(onnx_file, {"rgb": b}) for b in batches.values()], tmp_path / "o")
    for kind, saved_answer, onnx_answer in zip(batches, served, ran):
        if kind in ("nan", "inf", "-inf"):
            assert isinstance(saved_answer, str) and "finite" in saved_answer, saved_answer
            assert isinstance(onnx_answer, str) and "rgb_must_be_finite" in onnx_answer, onnx_answer
            continue
        assert isinstance(saved_answer, dict) and isinstance(onnx_answer, dict), kind
        names = words.detokenize(tf.constant(onnx_answer["tokens"])).numpy()
        assert list(names) == list(saved_answer["names"]), kind
        np.testing.assert_allclose(onnx_answer["scores"], saved_answer["scores"], atol=1e-4)
