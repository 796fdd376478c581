"""The hierarchical softmax, BlackOut and negative sampling of
`keras_rnncells.softmax`: the Huffman code (prefix-free, of least expected
length), each loss against a direct NumPy computation on fixed samples, the
tree's normalized probabilities, the sampler, masks, the `.keras` round trip,
a language-model run with each method, and one-line errors."""

from __future__ import annotations

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.experiments import language_model_for_serving, train_task
from keras_rnncells.softmax import VocabularySoftmax, start_at_unigram, token_mean
from keras_rnncells.softmax.huffman import huffman_tree

V, D = 23, 8
COUNTS = np.concatenate([[0.0], 1000.0 / np.arange(1, V) ** 1.1]).round()  # id 0: padding


def log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


@pytest.fixture
def batch():
    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(2, 5, D))
    targets = rng.integers(1, V, size=(2, 5))
    targets[0, -2:] = 0  # padding
    return hidden, targets


def built(method: str, **options) -> VocabularySoftmax:
    layer = VocabularySoftmax(V, method, unigram_counts=COUNTS, dtype="float64", **options)
    layer.build((None, None, D))
    rng = np.random.default_rng(1)
    for weight in layer.weights:  # nonzero biases too
        weight.assign(rng.normal(size=weight.shape, scale=0.5))
    return layer


# -- the Huffman code -------------------------------------------------------------------
def least_expected_length(counts: list[float]) -> float:
    """The least Σ n_i l_i / Σ n_i over code lengths l with Σ 2^-l_i <= 1
    (Kraft: exactly the lengths of prefix-free binary codes), by brute force."""
    best = np.inf
    for lengths in itertools.product(range(1, len(counts)), repeat=len(counts)):
        if sum(2.0**-length for length in lengths) <= 1:
            best = min(best, float(np.dot(counts, lengths)))
    return best / sum(counts)


@pytest.mark.parametrize("counts", [[5, 9, 12, 13, 16, 45], [1, 1, 1, 1, 1], [0, 3, 3, 7, 1, 2]])
def test_the_huffman_code_is_prefix_free_and_of_least_expected_length(counts):
    tree = huffman_tree(counts)
    codes = tree.codes()
    assert [len(code) for code in codes] == list(tree.lengths)
    for a, b in itertools.permutations(codes, 2):
        assert not b.startswith(a), (a, b)
    assert sum(2.0 ** -len(code) for code in codes) == 1.0  # a full binary tree
    expected_length = np.dot(counts, tree.lengths) / sum(counts)
    assert expected_length == pytest.approx(least_expected_length(counts), rel=1e-12)
    if counts[0] == 5:  # Cormen et al.'s example: 224 bits per 100 characters
        assert expected_length == pytest.approx(2.24)
    # each word's path: distinct nodes, from the root (the last node)
    assert (tree.nodes[:, 0] == len(counts) - 2).all()


def test_the_huffman_tree_is_the_same_for_the_same_counts():
    first, second = huffman_tree(COUNTS), huffman_tree(list(COUNTS))
    for name in ("nodes", "bits", "lengths"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name))


# -- the hierarchical softmax -----------------------------------------------------------
def tree_log_probabilities(layer: VocabularySoftmax, hidden: np.ndarray) -> np.ndarray:
    """log p(w|h) of every word: the product of σ(±(h·u_n + c_n)) over the
    word's code, step by step."""
    tree = layer.tree
    kernel, bias = layer.node_kernel.numpy(), layer.node_bias.numpy()
    flat = hidden.reshape(-1, hidden.shape[-1])
    out = np.zeros((len(flat), V))
    for word, code in enumerate(tree.codes()):
        for step, bit in enumerate(code):
            node = tree.nodes[word, step]
            score = flat @ kernel[node] + bias[node]
            out[:, word] += np.log(sigmoid(score) if bit == "1" else 1.0 - sigmoid(score))
    return out.reshape(*hidden.shape[:-1], V)


def test_the_hierarchical_softmax_gives_the_path_products_normalized(batch):
    hidden, targets = batch
    layer = built("hierarchical")
    expected = tree_log_probabilities(layer, hidden)
    log_p = layer(hidden).numpy()
    np.testing.assert_allclose(log_p, expected, rtol=1e-10)
    np.testing.assert_allclose(np.exp(log_p).sum(-1), 1.0, rtol=1e-12)
    nll = -np.take_along_axis(expected, targets[..., None], -1)[..., 0]
    nll[targets == 0] = 0
    for training in (False, True):  # training reads the path: the same exact loss
        np.testing.assert_allclose(layer([hidden, targets], training=training), nll, rtol=1e-10)


def test_the_hierarchical_softmax_sums_to_one_in_float32():
    layer = VocabularySoftmax(2000, "hierarchical", unigram_counts=np.arange(2000.0) ** 0.5)
    hidden = np.random.default_rng(2).normal(size=(3, 4, 16)).astype("float32") * 3
    total = np.exp(layer(hidden).numpy().astype("float64")).sum(-1)
    np.testing.assert_allclose(total, 1.0, atol=1e-5)


def test_training_the_tree_reads_only_the_targets_path(batch):
    hidden, targets = batch
    layer = built("hierarchical")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer([hidden, targets], training=True))
    gradient = tf.convert_to_tensor(tape.gradient(loss, layer.node_kernel))
    touched = np.flatnonzero(np.abs(gradient.numpy()).sum(1))
    tree = layer.tree
    on_paths = {
        int(tree.nodes[y, step]) for y in targets[targets != 0] for step in range(tree.lengths[y])
    }
    assert set(touched) == on_paths


def test_the_unigram_start_of_the_tree_predicts_the_smoothed_unigram():
    layer = built("hierarchical")
    start_at_unigram(layer, COUNTS)
    expected = np.log((COUNTS + 1) / (COUNTS.sum() + V))
    np.testing.assert_allclose(layer(np.zeros((2, D))).numpy(), [expected] * 2, rtol=1e-10)


# -- BlackOut and negative sampling -----------------------------------------------------
def fixed_draw(targets: np.ndarray, alpha: float = 0.75, k: int = 6):
    """A fixed draw with replacement: a duplicate (7), and the first target
    (an accidental hit); expected counts k·Q, Q ∝ counts^α."""
    q = COUNTS**alpha / (COUNTS**alpha).sum()
    sampled = np.array([targets.flat[0], 1, 7, 7, 11, 19][:k], dtype="int64")
    return sampled, k * q[targets.reshape(-1, 1)], k * q[sampled]


@pytest.mark.parametrize("method", ["blackout", "negative"])
def test_the_noise_losses_against_numpy(method, batch):
    hidden, targets = batch
    layer = built(method, num_sampled=6, distortion=0.75)
    kernel, bias = layer.kernel.numpy(), layer.bias.numpy()
    flat_h, flat_y = hidden.reshape(-1, D), targets.reshape(-1)
    keep = flat_y != 0
    flat_h, flat_y = flat_h[keep], flat_y[keep]
    sampled, true_expected, sampled_expected = fixed_draw(flat_y)
    draw = tuple(tf.constant(a) for a in (sampled, true_expected, sampled_expected))
    losses = layer.sampled_losses(tf.constant(flat_h), tf.constant(flat_y), draw).numpy()

    expected = []
    for h, y in zip(flat_h, flat_y):
        z = kernel @ h + bias
        noise = [s for s in sampled if s != y]  # accidental hits do not count
        if method == "blackout":  # p̃ ∝ exp(z)/Q over the target and the samples
            q = COUNTS**0.75 / (COUNTS**0.75).sum()
            weights = np.array([np.exp(z[y]) / q[y]] + [np.exp(z[s]) / q[s] for s in noise])
            p = weights / weights.sum()
            expected.append(-np.log(p[0]) - np.log(1 - p[1:]).sum())
        else:
            expected.append(-np.log(sigmoid(z[y])) - sum(np.log(sigmoid(-z[s])) for s in noise))
    np.testing.assert_allclose(losses, expected, rtol=1e-10)


@pytest.mark.parametrize("method", ["blackout", "negative"])
def test_outside_training_the_noise_methods_give_the_full_softmax(method, batch):
    hidden, targets = batch
    layer = built(method, num_sampled=4)
    logits = hidden @ layer.kernel.numpy().T + layer.bias.numpy()
    np.testing.assert_allclose(layer(hidden).numpy(), logits, rtol=1e-12)
    nll = -np.take_along_axis(log_softmax(logits), targets[..., None], -1)[..., 0]
    nll[targets == 0] = 0
    np.testing.assert_allclose(layer([hidden, targets]).numpy(), nll, rtol=1e-12)
    trained = layer([hidden, targets], training=True).numpy()  # a draw: finite, 0 at padding
    assert np.isfinite(trained).all() and (trained[targets == 0] == 0).all()


@pytest.mark.parametrize("alpha", [0.75, 0.4])
def test_the_noise_words_come_from_the_distorted_counts(alpha):
    layer = built("blackout", num_sampled=200, distortion=alpha)
    targets = tf.constant([3, 5], "int64")
    sampled, true_expected, sampled_expected = layer.sampled_values(targets)
    q = COUNTS**alpha / (COUNTS**alpha).sum()
    sampled = sampled.numpy()
    assert 0 not in sampled  # a count of 0 is never drawn
    assert len(set(sampled)) < 200  # with replacement: repeats among 22 words
    np.testing.assert_allclose(sampled_expected, 200 * q[sampled], rtol=1e-5)
    np.testing.assert_allclose(true_expected[:, 0], 200 * q[[3, 5]], rtol=1e-5)


# -- models ----------------------------------------------------------------------------
def language_model(method: str) -> keras.Model:
    keras.utils.set_random_seed(0)
    tokens = keras.Input((None,), dtype="int32")
    targets = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(V, D, mask_zero=True)(tokens)
    hidden = keras.layers.GRU(D, return_sequences=True)(embedded)
    output = VocabularySoftmax(V, method, num_sampled=4, unigram_counts=COUNTS, name="logits")
    model = keras.Model([tokens, targets], output([hidden, targets]))
    model.compile("adam", token_mean)
    return model


@pytest.mark.parametrize("method", ["hierarchical", "blackout", "negative"])
def test_padding_changes_no_loss_and_the_model_round_trips(method, tmp_path):
    model = language_model(method)
    tokens = np.array([[4, 9, 2, 7, 0, 0], [5, 1, 3, 8, 6, 2]], "int32")
    targets = np.array([[9, 2, 7, 3, 0, 0], [1, 3, 8, 6, 2, 4]], "int32")
    losses = model([tokens, targets]).numpy()
    unpadded = model([tokens[:1, :4], targets[:1, :4]]).numpy()
    np.testing.assert_allclose(losses[0, :4], unpadded[0], rtol=1e-5)
    assert (losses[0, 4:] == 0).all()
    model.save(tmp_path / "lm.keras")
    loaded = keras.saving.load_model(tmp_path / "lm.keras", compile=False)
    np.testing.assert_allclose(loaded([tokens, targets]).numpy(), losses, rtol=1e-6)
    served, served_loaded = language_model_for_serving(model), language_model_for_serving(loaded)
    np.testing.assert_allclose(served_loaded(tokens), served(tokens), rtol=1e-6)
    layer = loaded.get_layer("logits")
    assert (layer.method, layer.num_sampled) == (method, 4)
    assert layer.unigram_counts == list(COUNTS)
    model.fit([tokens, targets], targets, epochs=1, verbose=0)  # a training step runs


@pytest.mark.parametrize(
    "options, message",
    [
        ({"method": "hierarchical"}, "`unigram_counts` is needed by method 'hierarchical'"),
        ({"method": "negative", "num_sampled": 4}, "`unigram_counts` is needed by method"),
        (
            {"method": "blackout", "unigram_counts": [1.0] * 4},
            "`unigram_counts` must hold 23 finite",
        ),
        (
            {"method": "blackout", "unigram_counts": COUNTS, "distortion": 1.5},
            "`distortion` must be",
        ),
        (
            {"method": "nce", "num_sampled": 4, "distortion": 0.5},
            "`distortion` applies to methods 'blackout'",
        ),
        ({"method": "negative", "unigram_counts": COUNTS, "num_sampled": 0}, "`num_sampled`"),
    ],
)
def test_bad_arguments_are_named(options, message):
    with pytest.raises(ValueError, match=message):
        VocabularySoftmax(V, **options)


def test_a_tree_needs_two_words():
    with pytest.raises(ValueError, match="`vocabulary_size` must be at least 2"):
        VocabularySoftmax(1, "hierarchical", unigram_counts=[1.0])
    with pytest.raises(ValueError, match="at least 2 words"):
        huffman_tree([3.0])


@pytest.mark.slow  # a training run per method (PTB, 1,500 tokens, 4 units)
def test_a_language_model_run_with_each_new_method(tmp_path, require_data):
    require_data("ptb")
    for method in ("hierarchical", "blackout", "negative"):
        results = train_task(
            "ptb", tmp_path / method, units=4, epochs=1, limit=1500, softmax=method, verbose=0
        )
        assert results["test"]["perplexity"] == pytest.approx(
            np.exp(results["test"]["cross_entropy"])
        )
        assert ("mean_abs_log_z" in results["test"]) == (method != "hierarchical")
        assert f"--softmax {method}" in results["command"]
        served = keras.saving.load_model(tmp_path / method / "model.keras")
        log_p = served(np.array([[5, 6, 7]])).numpy()
        assert log_p.shape == (1, 3, 10001)
        if method == "hierarchical":  # normalized over the whole vocabulary
            np.testing.assert_allclose(np.exp(log_p.astype("float64")).sum(-1), 1.0, atol=1e-5)
