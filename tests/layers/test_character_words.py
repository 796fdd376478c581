"""CharacterWordEmbedding (char-CNN with highway layers, Kim et al. 2016;
character BiLSTM, Ling et al. 2015) and GatedWordCharacterEmbedding (Miyamoto
& Cho 2016):

* NumPy references of the equations, written here from the papers, on small
  random weights;
* padding characters (a longer table) and padding words change nothing;
* ``.keras`` round trips; bad arguments as one-line errors;
* export: a model reading word ids through each layer, as a SavedModel
  served as stock TF Serving serves it and as ONNX in onnxruntime without
  TensorFlow, compared with the model.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

import keras_rnncells as kr
from keras_rnncells.layers.character_words import (
    SpelledWords,
    proportional_filters,
    spell_words,
)

WORDS = ("<pad>", "the", "cat", "<unk>", "a", "catalogue")
IDS = np.array([[1, 2, 5, 0], [3, 4, 1, 2]], "int32")


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def randomize(layer, seed=0):
    """Every trainable weight drawn at random (the table kept)."""
    rng = np.random.default_rng(seed)
    for weight in layer.trainable_weights:
        weight.assign(rng.normal(scale=0.5, size=weight.shape).astype("float32"))


def cnn_reference(layer, ids):
    """Kim et al.: narrow convolutions of each width over the embedded
    characters, tanh, max over windows starting on a character, highway."""
    table = np.asarray(layer.table)
    q = np.asarray(layer.character_embedding.embeddings)
    out = np.zeros((*ids.shape, layer.output_dim), "float32")
    for b, t in np.ndindex(ids.shape):
        chars = [c for c in table[ids[b, t]] if c != 0]  # none for padding: y = 0
        e = np.concatenate([q[chars], np.zeros((8, q.shape[1]))])  # zeros past the word
        y = []
        for conv, w in zip(layer.convolutions, layer.widths):
            kernel, bias = (np.asarray(v) for v in conv.weights)
            windows = [
                np.tanh(np.einsum("wd,wdf->f", e[i : i + w], kernel) + bias)
                for i in range(len(chars))
            ]
            y.append(np.max(windows, axis=0) if chars else np.zeros(bias.shape))
        y = np.concatenate(y)
        for transform, gate in zip(layer.transforms, layer.gates):
            (wh, bh), (wt, bt) = ([np.asarray(v) for v in d.weights] for d in (transform, gate))
            t_gate = sigmoid(y @ wt + bt)
            y = t_gate * np.maximum(y @ wh + bh, 0) + (1 - t_gate) * y
        if layer.projected:
            wp, bp = (np.asarray(v) for v in layer.projection.weights)
            y = y @ wp + bp
        out[b, t] = y
    return out


def lstm_reference(rnn, x):
    """h after reading the rows of ``x`` (Keras' LSTM, blocks i, f, c, o)."""
    kernel, recurrent, bias = (np.asarray(v) for v in rnn.cell.weights)
    units = recurrent.shape[0]
    h, c = np.zeros(units), np.zeros(units)
    for step in x:
        z = step @ kernel + h @ recurrent + bias
        i, f, g, o = (z[k * units : (k + 1) * units] for k in range(4))
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
    return h


def bilstm_reference(layer, ids):
    """Ling et al.'s C2W: x = D^f s^f + D^b s^b + b_d."""
    table = np.asarray(layer.table)
    q = np.asarray(layer.character_embedding.embeddings)
    wp, bp = (np.asarray(v) for v in layer.projection.weights)
    out = np.zeros((*ids.shape, layer.output_dim), "float32")
    for b, t in np.ndindex(ids.shape):
        e = q[[c for c in table[ids[b, t]] if c != 0]]
        forward = lstm_reference(layer.forward, e)
        backward = lstm_reference(layer.backward, e[::-1])
        out[b, t] = np.concatenate([forward, backward]) @ wp + bp
    return out


def character_layer(kind, table=None, **options):
    table = spell_words(WORDS).table if table is None else table
    sizes = {"widths": (1, 2, 3), "filters": (2, 3, 4), "units": 5, "character_dim": 4}
    layer = kr.CharacterWordEmbedding(table, kind, **(sizes | options))
    layer(IDS)
    randomize(layer)
    return layer


def test_spell_words_marks_and_pads():
    spelled = spell_words(WORDS, max_chars=6)
    assert isinstance(spelled, SpelledWords) and spelled.table.shape == (6, 6)
    assert spelled.characters[:3] == ("<pad>", "<w>", "</w>")
    chars = {c: i for i, c in enumerate(spelled.characters)}
    assert spelled.table[0].tolist() == [0] * 6
    assert spelled.table[2].tolist() == [1, chars["c"], chars["a"], chars["t"], 2, 0]
    assert spelled.table[5].tolist() == [1, *(chars[c] for c in "cata"), 2]  # cut to 6
    assert spell_words(WORDS).table.shape == (6, len("catalogue") + 2)
    assert proportional_filters(200) == (10, 19, 29, 38, 48, 56)
    assert sum(proportional_filters(37, (1, 2))) == 37


@pytest.mark.parametrize("highway_layers", [0, 2])
@pytest.mark.parametrize("output_dim", [None, 3])
def test_cnn_matches_numpy(highway_layers, output_dim):
    layer = character_layer("cnn", highway_layers=highway_layers, output_dim=output_dim)
    expected = cnn_reference(layer, IDS)
    assert expected.shape == (2, 4, output_dim or 9)
    np.testing.assert_allclose(layer(IDS), expected, atol=1e-5)


@pytest.mark.parametrize("output_dim", [None, 3])
def test_bilstm_matches_numpy(output_dim):
    layer = character_layer("bilstm", output_dim=output_dim)
    expected = bilstm_reference(layer, IDS)
    assert expected.shape == (2, 4, output_dim or 5)
    np.testing.assert_allclose(layer(IDS), expected, atol=1e-5)


def test_gated_mix_matches_numpy():
    characters = character_layer("cnn", output_dim=6)
    layer = kr.GatedWordCharacterEmbedding(characters)
    layer(IDS)
    randomize(layer, seed=1)
    word = np.asarray(layer.words.embeddings)[IDS]
    g = sigmoid(word @ np.asarray(layer.gate_vector) + float(layer.gate_bias))[..., None]
    expected = (1 - g) * word + g * cnn_reference(characters, IDS)
    np.testing.assert_allclose(layer(IDS), expected, atol=1e-5)
    np.testing.assert_allclose(layer.gate(IDS), g, atol=1e-6)
    assert 0 < g.min() and g.max() < 1


@pytest.mark.parametrize("kind", ["cnn", "bilstm"])
def test_padding_characters_and_words_change_nothing(kind):
    short = character_layer(kind)
    longer = character_layer(kind, table=spell_words(WORDS, max_chars=16).table)
    for mine, theirs in zip(short.trainable_weights, longer.trainable_weights):
        theirs.assign(mine)
    np.testing.assert_allclose(longer(IDS), short(IDS), atol=1e-6)
    mask = np.asarray(short.compute_mask(IDS))
    assert mask.tolist() == (IDS != 0).tolist()
    # a recurrent layer over the words: padding words give the unpadded numbers
    tokens = keras.Input((None,), dtype="int32")
    model = keras.Model(tokens, kr.GRU(3)(kr.GatedWordCharacterEmbedding(short)(tokens)))
    padded = np.array([[1, 2, 5, 0, 0, 0]], "int32")
    np.testing.assert_allclose(model(padded), model(padded[:, :3]), atol=1e-6)


def word_model(kind, gated):
    keras.utils.set_random_seed(4)
    layer = character_layer(kind)
    if gated:
        layer = kr.GatedWordCharacterEmbedding(layer)
    tokens = keras.Input((None,), dtype="int32", name="tokens")
    hidden = kr.GRU(3, return_sequences=True)(layer(tokens))
    name = f"words-{kind}{'-gated' if gated else ''}"
    return keras.Model(tokens, keras.layers.Dense(2)(hidden), name=name)


@pytest.mark.parametrize("kind", ["cnn", pytest.param("bilstm", marks=pytest.mark.slow)])
@pytest.mark.parametrize("gated", [False, True])
def test_keras_round_trip(kind, gated, tmp_path):
    model = word_model(kind, gated)
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(loaded(IDS), model(IDS))
    layer = loaded.layers[1]
    characters = layer.characters if gated else layer
    np.testing.assert_array_equal(characters.table, spell_words(WORDS).table)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"kind": "rnn"}, r"Argument `kind` must be one of \('cnn', 'bilstm'\), received: 'rnn'"),
        ({"character_table": None}, "Argument `character_table` is required"),
        ({"character_table": np.ones((3,), "int32")}, "Argument `character_table` must be a 2-D"),
        ({"widths": (1, 0)}, "Argument `widths` must be a non-empty sequence of positive"),
        ({"filters": (2,)}, r"Argument `filters` must give a positive integer per width \(6\)"),
        ({"highway_layers": -1}, "Argument `highway_layers` must be an integer >= 0"),
        ({"num_characters": 2}, "Argument `num_characters` must exceed the table's largest id"),
        ({"max_chars": 3}, r"Argument `max_chars` must match `character_table` \(11\)"),
    ],
)
def test_bad_arguments(arguments, message):
    given = {"character_table": spell_words(WORDS).table} | arguments
    with pytest.raises(ValueError, match=message) as error:
        kr.CharacterWordEmbedding(**given)
    assert "\n" not in str(error.value)


def test_bad_inputs_and_mix_arguments():
    with pytest.raises(ValueError, match="Argument `characters` must be a CharacterWordEmbedding"):
        kr.GatedWordCharacterEmbedding(keras.layers.Embedding(6, 4))
    with pytest.raises(ValueError, match="Argument `max_chars` must be at least 3"):
        spell_words(WORDS, max_chars=2)
    with pytest.raises(ValueError, match="Argument `total` must be at least 6"):
        proportional_filters(4)
    layer = character_layer("cnn")
    with pytest.raises(ValueError, match=r"Input `word_ids` of layer .* must be an integer tensor"):
        layer(IDS.astype("float32"))


@pytest.mark.slow  # three exports, each checked in a fresh process (minutes on 2 cores)
def test_exports_serve_and_run_in_onnx(tmp_path, serve_like_tf_serving, run_onnx_in_child):
    from keras_rnncells.export import servable_from_model, write_onnx, write_saved_models

    ids = np.array([[4, 5, 2, 1, 3], [2, 1, 0, 0, 0]], "int32")  # other than the examples
    models = [word_model("cnn", True), word_model("bilstm", True), word_model("bilstm", False)]
    servables = [servable_from_model(model) for model in models]
    expected = [np.asarray(model(ids)) for model in models]
    directories = write_saved_models(servables, tmp_path / "export")
    served = serve_like_tf_serving([(d, {"tokens": ids}) for d in directories], tmp_path / "s")
    paths = [tmp_path / "onnx" / model.name / "model.onnx" for model in models]
    for servable, path in zip(servables, paths):
        write_onnx(servable, path)
    ran = run_onnx_in_child([(path, {"tokens": ids}) for path in paths], tmp_path / "o")
    for model, want, by_server, by_onnx in zip(models, expected, served, ran):
        assert isinstance(by_server, dict), f"{model.name}: {by_server}"
        assert isinstance(by_onnx, dict), f"{model.name}: {by_onnx}"
        np.testing.assert_allclose(by_server["output_0"], want, atol=1e-5, err_msg=model.name)
        np.testing.assert_allclose(by_onnx["output_0"], want, atol=1e-4, err_msg=model.name)
