"""`keras_rnncells.softmax`: each training loss against a direct NumPy
computation, the exact loss outside training, convergence of the sampled
losses on a small vocabulary, a language-model run that trains with each and
saves a tokens-to-logits model, the unigram start of the output bias, and
one-line errors for bad arguments."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.cli import main
from keras_rnncells.data import load_task
from keras_rnncells.experiments import build_model, token_counts, train_task
from keras_rnncells.softmax import VocabularySoftmax, start_at_unigram, token_mean

V, D = 23, 8


def log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


@pytest.fixture
def batch():
    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(2, 5, D)).astype("float64")
    targets = rng.integers(1, V, size=(2, 5))
    targets[0, -2:] = 0  # padding
    return hidden, targets


def built(method: str, **options) -> VocabularySoftmax:
    layer = VocabularySoftmax(V, method, dtype="float64", **options)
    layer.build((None, None, D))
    rng = np.random.default_rng(1)
    for weight in layer.weights:  # nonzero biases too
        weight.assign(rng.normal(size=weight.shape, scale=0.5))
    return layer


def weights(layer: VocabularySoftmax) -> tuple[np.ndarray, np.ndarray]:
    return layer.kernel.numpy(), layer.bias.numpy()


@pytest.mark.parametrize("method", ["full", "sampled", "nce"])
def test_outside_training_the_loss_is_the_full_softmax_cross_entropy(method, batch):
    hidden, targets = batch
    layer = built(method, num_sampled=5)
    kernel, bias = weights(layer)
    logits = hidden @ kernel.T + bias
    np.testing.assert_allclose(layer(hidden).numpy(), logits, rtol=1e-12)
    expected = -np.take_along_axis(log_softmax(logits), targets[..., None], -1)[..., 0]
    expected[targets == 0] = 0
    np.testing.assert_allclose(layer([hidden, targets]).numpy(), expected, rtol=1e-12)


def test_self_normalization_adds_alpha_log_z_squared_in_training(batch):
    hidden, targets = batch
    layer = built("full", self_normalization=0.3)
    kernel, bias = weights(layer)
    logits = hidden @ kernel.T + bias
    log_z = np.log(np.exp(logits).sum(-1))
    expected = log_z - np.take_along_axis(logits, targets[..., None], -1)[..., 0] + 0.3 * log_z**2
    expected[targets == 0] = 0
    np.testing.assert_allclose(layer([hidden, targets], training=True), expected, rtol=1e-12)
    np.testing.assert_allclose(layer.log_partition(hidden), log_z, rtol=1e-12)


def sampled_candidates(targets: np.ndarray, k: int = 6):
    """A fixed draw: k distinct ids (one of them a target: an accidental
    hit), and expected counts k·Q as a log-uniform sampler gives them."""
    sampled = np.array([targets.flat[0], 1, 3, 7, 11, 19][:k], dtype="int64")
    q = np.log((np.arange(V) + 2) / (np.arange(V) + 1)) / np.log(V + 1)
    return sampled, k * q[targets.reshape(-1, 1)], k * q[sampled]


@pytest.mark.parametrize("method", ["sampled", "nce"])
def test_sampled_losses_against_numpy(method, batch):
    hidden, targets = batch
    layer = built(method, num_sampled=6)
    kernel, bias = weights(layer)
    flat_h, flat_y = hidden.reshape(-1, D), targets.reshape(-1)
    sampled, true_expected, sampled_expected = sampled_candidates(targets)
    candidates = tuple(tf.constant(a) for a in (sampled, true_expected, sampled_expected))
    losses = layer.sampled_losses(tf.constant(flat_h), tf.constant(flat_y), candidates).numpy()

    true_logit = np.einsum("nd,nd->n", flat_h, kernel[flat_y]) + bias[flat_y]
    true_logit -= np.log(true_expected[:, 0])
    sampled_logits = flat_h @ kernel[sampled].T + bias[sampled] - np.log(sampled_expected)
    if method == "sampled":  # softmax over the target and the samples, accidental hits removed
        sampled_logits = np.where(sampled[None] == flat_y[:, None], -np.inf, sampled_logits)
        every = np.concatenate([true_logit[:, None], sampled_logits], 1)
        expected = np.log(np.exp(every).sum(1)) - true_logit
    else:  # logistic: the target is 1, every sample 0
        expected = softplus(-true_logit) + softplus(sampled_logits).sum(1)
    np.testing.assert_allclose(losses, expected, rtol=1e-10)


def test_nce_starts_self_normalized():
    # Biases at -log V: Z = 1 where the kernel gives nothing (h = 0), every
    # word at 1/V, rather than Z = V for the words NCE never samples.
    layer = VocabularySoftmax(500, method="nce", num_sampled=8)
    logits = layer(np.zeros((3, 16), "float32"))
    np.testing.assert_allclose(tf.reduce_logsumexp(logits, -1), 0.0, atol=1e-5)
    full = VocabularySoftmax(500)
    np.testing.assert_array_equal(full(np.zeros((1, 16), "float32")), 0.0)


@pytest.mark.parametrize("kind", ["dense", "full", "nce", "class"])
def test_start_at_unigram_predicts_the_smoothed_unigram_where_the_kernel_gives_nothing(kind):
    counts = np.arange(V, dtype="float64") ** 2  # id 0 (padding) never seen
    if kind == "dense":
        layer = keras.layers.Dense(V, dtype="float64")
        layer.build((None, D))
    else:
        layer = built(kind, classes=5, num_sampled=4)  # nonzero weights everywhere
    start_at_unigram(layer, counts)
    expected = np.log((counts + 1) / (counts.sum() + V))  # add-one smoothing
    np.testing.assert_allclose(layer.bias.numpy(), expected, rtol=1e-12)
    output = layer(np.zeros((2, D)))
    log_p = output.numpy() if kind == "class" else log_softmax(output.numpy())
    np.testing.assert_allclose(log_p, np.broadcast_to(expected, (2, V)), rtol=1e-10)
    if kind == "class":  # each class starts at the total of its words
        np.testing.assert_allclose(
            np.exp(layer.class_bias.numpy()),
            [np.exp(expected[5 * c : 5 * c + 5]).sum() for c in range(5)],
        )


@pytest.mark.parametrize(
    "counts, message",
    [
        (None, "needed by the unigram bias"),
        ([1.0] * 5, "23 finite"),
        ([0.0] * V, "at least one count > 0"),
        ([-1.0] + [1.0] * (V - 1), ">= 0"),
    ],
)
def test_start_at_unigram_names_bad_counts(counts, message):
    layer = keras.layers.Dense(V)
    layer.build((None, D))
    with pytest.raises(ValueError, match=message):
        start_at_unigram(layer, counts)


@pytest.mark.parametrize(
    "layer, message",
    [
        (keras.layers.Dense(V, use_bias=False), "without a bias"),
        (keras.layers.Dense(V), "without a bias"),  # not built
    ],
)
def test_start_at_unigram_names_a_layer_without_a_vocabulary_bias(layer, message):
    if not layer.use_bias:
        layer.build((None, D))
    with pytest.raises(
        ValueError, match=f"Argument `layer` must be a built output layer.*{message}"
    ):
        start_at_unigram(layer, [1.0] * V)


def test_a_language_model_with_the_unigram_bias_starts_at_the_unigram_perplexity(require_data):
    require_data("ptb")
    task = load_task("ptb", limit=3000)
    counts = token_counts(task)
    losses = {}
    for unigram_bias in (False, True):
        keras.utils.set_random_seed(0)
        model = build_model(
            task, "gru", 8, embedding_dim=8, unigram_bias=unigram_bias, unigram_counts=counts
        )
        losses[unigram_bias] = model.evaluate(task.train, return_dict=True, verbose=0)["loss"]
    probabilities = (counts + 1) / (counts.sum() + len(counts))
    unigram = -(counts * np.log(probabilities)).sum() / counts.sum()  # its training cross-entropy
    assert losses[False] == pytest.approx(np.log(len(counts)), abs=0.01)  # uniform: log V
    assert losses[True] == pytest.approx(unigram, abs=0.01)
    with pytest.raises(ValueError, match="`unigram_bias` starts a language model's output bias"):
        build_model(load_task("adding", batch_size=4, train_size=8), "gru", 2, unigram_bias=True)


def test_the_class_factored_model_is_normalized_and_its_loss_exact(batch):
    hidden, targets = batch
    layer = built("class", classes=5)  # bins of 5 ids; the last holds ids 20-22 only
    kernel, bias = weights(layer)
    class_kernel, class_bias = layer.class_kernel.numpy(), layer.class_bias.numpy()
    logits = hidden @ kernel.T + bias
    class_log_p = log_softmax(hidden @ class_kernel.T + class_bias)
    expected = np.empty_like(logits)
    for c in range(5):
        members = slice(5 * c, min(5 * c + 5, V))
        expected[..., members] = log_softmax(logits[..., members]) + class_log_p[..., c : c + 1]
    log_p = layer(hidden).numpy()
    np.testing.assert_allclose(log_p, expected, rtol=1e-12)
    np.testing.assert_allclose(np.exp(log_p).sum(-1), 1.0, rtol=1e-12)
    nll = -np.take_along_axis(expected, targets[..., None], -1)[..., 0]
    nll[targets == 0] = 0
    for training in (False, True):  # its training loss is its exact loss
        np.testing.assert_allclose(layer([hidden, targets], training=training), nll, rtol=1e-12)


def test_class_bins_are_never_empty(batch):
    hidden, _ = batch
    layer = built("class", classes=22)  # bins of 2 words: 12 of them hold the 23
    assert (layer.classes, layer.class_size) == (12, 2)
    assert np.isfinite(layer(hidden).numpy()).all()


def zipf_bigrams(vocabulary: int, length: int, seed: int) -> np.ndarray:
    """A token stream (ids 1..V-1) from a bigram model: the next id j is drawn
    with weight 1/j, times 50 for three successors each id prefers, so ids
    are about sorted by frequency, as a vocabulary's are."""
    rng = np.random.default_rng(seed)
    table = np.tile(1.0 / np.arange(1, vocabulary), (vocabulary, 1))
    for row in table:
        row[rng.choice(vocabulary - 1, 3, replace=False)] *= 50
    table /= table.sum(1, keepdims=True)
    stream = [1]
    for _ in range(length - 1):
        stream.append(1 + rng.choice(vocabulary - 1, p=table[stream[-1]]))
    return np.array(stream)


@pytest.mark.slow  # five training runs (24 s of the default run)
def test_sampled_losses_keep_the_full_softmax_perplexity_and_its_ranking():
    """On a 40-word bigram language model, training with each loss brings the
    full softmax's held-out perplexity below half the uniform guess, within
    20% of what training with the full softmax reaches, and ranks two model
    sizes (embedding 16 against 1) as the full softmax does (fixed seeds)."""
    vocabulary, steps = 40, 20
    stream = zipf_bigrams(vocabulary, 200 * steps + 1, seed=0)
    x = stream[:-1].reshape(-1, steps)
    y = stream[1:].reshape(-1, steps)
    train, test = ((x[:160], y[:160]), y[:160]), ((x[160:], y[160:]), y[160:])
    perplexities = {}
    for method in ("full", "sampled", "nce", "class"):
        for width in (1, 16):
            keras.utils.set_random_seed(0)
            tokens = keras.Input((None,), dtype="int32")
            targets = keras.Input((None,), dtype="int32")
            hidden = keras.layers.Embedding(vocabulary, width)(tokens)
            output = VocabularySoftmax(vocabulary, method, num_sampled=16, classes=6)
            model = keras.Model([tokens, targets], output([hidden, targets]))
            model.compile(keras.optimizers.Adam(0.05), token_mean)
            model.fit(*train, epochs=20, batch_size=16, verbose=0)
            perplexities[method, width] = float(np.exp(model.evaluate(*test, verbose=0)))
    full = perplexities["full", 16]
    assert full < 0.5 * (vocabulary - 1), perplexities
    for method in ("sampled", "nce", "class"):
        assert perplexities[method, 16] < 1.2 * full, perplexities
        assert perplexities[method, 16] < perplexities[method, 1], perplexities
    assert full < perplexities["full", 1]


@pytest.mark.slow  # a training run per loss (29 s of the default run)
def test_a_language_model_run_with_each_loss_saves_a_tokens_to_logits_model(tmp_path, require_data):
    require_data("ptb")
    options = {"units": 4, "layers": 1, "epochs": 1, "limit": 1500}
    runs = {
        "sampled-unigram": {"softmax": "sampled", "sampler": "unigram", "num_sampled": 16},
        "class": {"softmax": "class", "unigram_bias": True},
    }
    for name, softmax in runs.items():
        results = train_task("ptb", tmp_path / name, **options, **softmax, verbose=0)
        assert results["test"]["perplexity"] == pytest.approx(
            np.exp(results["test"]["cross_entropy"])
        )
        assert ("mean_abs_log_z" in results["test"]) == (name != "class")
        assert f"--softmax {softmax['softmax']}" in results["command"]
        assert ("--unigram-bias" in results["command"]) == ("unigram_bias" in softmax)
    # the saved model reads tokens alone and gives the vocabulary's logits, in a fresh process
    script = (
        "import sys, keras, numpy as np, keras_rnncells\n"
        "for path in sys.argv[1:]:\n"
        "    model = keras.saving.load_model(path)\n"
        "    logits = model(np.array([[5, 6, 7]]))\n"
        "    print(len(model.inputs), tuple(logits.shape), bool(np.isfinite(logits).all()))\n"
    )
    paths = [str(tmp_path / name / "model.keras") for name in runs]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    shown = subprocess.run(
        [sys.executable, "-c", script, *paths], env=env, capture_output=True, text=True, timeout=300
    )
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert shown.stdout.split("\n")[:2] == ["1 (1, 3, 10001) True"] * 2
    stored = json.loads((tmp_path / "class" / "results.json").read_text())
    assert stored["settings"]["softmax"] == "class"


@pytest.mark.parametrize(
    "options, message",
    [
        ({"method": "sampled", "num_sampled": 23}, "`num_sampled` must be below"),
        ({"method": "nce", "sampler": "zipf"}, "`sampler` must be one of"),
        ({"method": "sampled", "num_sampled": 5, "sampler": "unigram"}, "`unigram_counts` is"),
        (
            {"method": "nce", "num_sampled": 5, "sampler": "unigram", "unigram_counts": [1.0] * 5},
            "23 finite",
        ),
        ({"method": "sampled", "num_sampled": 5, "self_normalization": 0.1}, "method 'full'"),
        ({"method": "class", "classes": 24}, "`classes` must be at most"),
        ({"method": "huffman"}, "`method` must be one of"),
    ],
)
def test_bad_arguments_are_named(options, message):
    with pytest.raises(ValueError, match=message):
        VocabularySoftmax(V, **options)


def test_the_softmax_flags_apply_to_the_language_model_only(capsys, tmp_path, require_data):
    with pytest.raises(SystemExit):
        main(["train", "adding", "--softmax", "nce", "--out", str(tmp_path / "adding")])
    readers = "the ptb task and the ptb_chars task and the imdb_lm task"
    assert f"--softmax applies to {readers}, not to adding" in capsys.readouterr().err
    with pytest.raises(ValueError, match="`softmax` applies to the language-model task"):
        train_task("adding", tmp_path / "adding", softmax="class")
    with pytest.raises(SystemExit):
        main(["train", "adding", "--unigram-bias", "--out", str(tmp_path / "adding")])
    assert f"--unigram-bias applies to {readers}" in capsys.readouterr().err
    with pytest.raises(ValueError, match="`unigram_bias` applies to the language-model task"):
        train_task("adding", tmp_path / "adding", unigram_bias=True)
    require_data("ptb")
    with pytest.raises(ValueError, match="`num_sampled` must be below"):
        train_task("ptb", tmp_path / "ptb", softmax="sampled", num_sampled=20000, limit=1000)
