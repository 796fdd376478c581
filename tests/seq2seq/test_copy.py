"""The decoder's copy mechanism (pointer-generator mixture): its output is
the mixture of the paper's equation computed in NumPy, stepping matches the
teacher-forced call, it decodes and saves, it writes symbols that no training
target held by copying them, and it refuses bad arguments."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.apps.seq2seq import seq2seq_servable
from keras_rnncells.data.dates import invented_names, meeting_splits
from keras_rnncells.export import write_saved_models
from keras_rnncells.seq2seq import Decoder, Seq2Seq, TextSeq2Seq
from keras_rnncells.seq2seq.text import copy_map
from keras_rnncells.text import UNK_ID, CharTokenizer

START, END = 2, 3


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_the_readout_is_the_mixture_of_the_equation(rng):
    # P(w) = g softmax(W tanh(W_c [c; h]) + b)_w + (1 - g) Σ_{s: m(x_s) = w} a_s,
    # g = σ(w_g·[c; h; x] + b_g), a = the attention weights ("general" score), masked.
    vocabulary, source_vocabulary, units, features = 7, 6, 5, 4
    mapping = [0, 1, 1, 3, 5, 5]  # two source ids share target id 5; one is unknown (1)
    decoder = Decoder(vocabulary, features, "gru", units, "general", copy_map=mapping)
    memory = rng.normal(size=(3, 4, units)).astype("float32")
    mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1], [0, 0, 0, 0]], bool)
    source_ids = rng.integers(0, source_vocabulary, size=(3, 4)).astype("int32")
    decoder(np.ones((3, 2), "int32"), memory=memory, memory_mask=mask, source_ids=source_ids)
    h = rng.normal(size=(3, units)).astype("float32")
    x = rng.normal(size=(3, features)).astype("float32")
    found = np.exp(decoder.readout(h, memory, mask, inputs=x, source_ids=source_ids))

    w = {v.path.split("/", 1)[1]: v.numpy().astype(np.float64) for v in decoder.weights}
    scores = np.einsum("bd,bsd->bs", h @ w["attention/kernel"], memory)
    weights = softmax(np.where(mask, scores, -1e9)) * mask
    context = np.einsum("bs,bsd->bd", weights, memory)
    attentional = np.tanh(np.concatenate([context, h], -1) @ w["attentional/kernel"])
    vocabulary_probs = softmax(attentional @ w["logits/kernel"] + w["logits/bias"])
    switch = np.concatenate([context, h, x], -1) @ w["copy_switch/kernel"] + w["copy_switch/bias"]
    g = sigmoid(switch)
    copied = np.zeros((3, vocabulary))
    for row in range(3):
        for s in range(4):
            copied[row, mapping[source_ids[row, s]]] += weights[row, s]
    expected = g * vocabulary_probs + (1 - g) * copied
    np.testing.assert_allclose(found, expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(found[:2].sum(-1), 1.0, atol=1e-5)
    # The empty source has nothing to copy: the vocabulary's share alone.
    np.testing.assert_allclose(found[2], g[2] * vocabulary_probs[2], rtol=1e-5)


def test_stepping_matches_the_teacher_forced_call(rng):
    model = Seq2Seq(9, 10, units=6, embedding_dim=4, copy_map=[0, 1, 2, 3, 4, 5, 6, 7, 9])
    source = np.array([[4, 5, 8, 6], [7, 4, 0, 0]], "int32")
    target_in = np.array([[START, 4, 5, 8], [START, 7, 4, 0]], "int32")
    logits = model((source, target_in))
    memory, summary, mask = model.encoder(source)
    states = model.decoder.initial_state(2, summary)
    for t in range(4):
        step, states = model.decoder.step(target_in[:, t], states, memory, mask, source_ids=source)
        np.testing.assert_allclose(step, logits[:, t], rtol=1e-5, atol=1e-5)


def symbols_task(rng, count, alphabet):
    """Rows of 3-6 symbols drawn from ``alphabet`` (source ids) -> the same
    symbols (the target ids of the shared tokens): a copy task."""
    source = np.zeros((count, 6), "int32")
    target_out = np.zeros((count, 7), "int32")
    for row, length in enumerate(rng.integers(3, 7, count)):
        source[row, :length] = rng.choice(alphabet, length)
        target_out[row, :length] = source[row, :length]
        target_out[row, length] = END
    target_in = np.concatenate([np.full((count, 1), START), target_out[:, :-1]], 1)
    return source, np.where(target_in == END, 0, target_in), target_out


@pytest.mark.slow  # two training runs
def test_it_copies_symbols_that_no_training_target_held():
    # Source and target share ids 4..23; training uses only 4..15, the test
    # 16..23, whose embeddings stay untrained. The vocabulary alone never
    # produces them (never a training target); the copy switch does, from the
    # row's own source. Exact match on them is what benchmarks/copying.py
    # measures; here, held-out rows of the trained symbols are all right.
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    seen, unseen = np.arange(4, 16), np.arange(16, 24)
    source, target_in, target_out = symbols_task(rng, 3000, seen)
    held_seen, _, expected_seen = symbols_task(np.random.default_rng(2), 300, seen)
    held_out, _, _ = symbols_task(np.random.default_rng(1), 300, unseen)
    for copy in (False, True):
        options = {"copy_map": list(range(24))} if copy else {}
        model = Seq2Seq(24, 24, units=32, embedding_dim=16, max_output_length=7, **options)
        model.compile(
            keras.optimizers.Adam(1e-2),
            keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
        )
        model.fit((source, target_in), target_out, batch_size=64, epochs=6, verbose=0)
        for beam_width in (1, 3):
            decoded = np.asarray(model.generate(held_seen, beam_width=beam_width).tokens)
            decoded = decoded if beam_width == 1 else decoded[:, 0]
            assert np.mean(np.all(decoded == expected_seen, axis=1)) >= 0.99, (copy, beam_width)
            tokens = np.asarray(model.generate(held_out, beam_width=beam_width).tokens)
            tokens = tokens if beam_width == 1 else tokens[:, 0]
            written = tokens[tokens > END]
            from_own_source = [
                token in row for row, out in zip(held_out, tokens) for token in out[out > END]
            ]
            if copy:  # the row's own new symbols, nearly always
                assert np.isin(written, unseen).mean() >= 0.95, (beam_width, tokens[:3])
                assert np.mean(from_own_source) >= 0.95, beam_width
            else:
                assert not np.isin(written, unseen).any(), tokens[:3]


def test_a_text_model_with_copying_saves_and_decodes_in_a_function(tmp_path):
    pairs = meeting_splits(40, 4)["train"]
    sources, targets = (CharTokenizer.from_corpus(column) for column in zip(*pairs))
    model = TextSeq2Seq.from_tokenizers(
        sources, targets, copy=True, units=6, embedding_dim=4, max_output_length=8
    )
    assert model.seq2seq.decoder.copy_map == tuple(copy_map(sources, targets))
    names = sources.vocabulary
    assert copy_map(sources, targets)[names.index("a")] == targets.vocabulary.index("a")
    assert "," not in targets.vocabulary and copy_map(sources, targets)[names.index(",")] == UNK_ID
    texts = tf.constant(["Meeting with Kota on Nov 21, 2026", ""])
    translate = tf.function(lambda t: model.translate(t, beam_width=3))
    outputs, scores = translate(texts)
    model.save(tmp_path / "copy.keras")
    loaded = keras.saving.load_model(tmp_path / "copy.keras")
    again, again_scores = loaded.translate(texts, beam_width=3)
    assert again.numpy().tolist() == outputs.numpy().tolist()
    np.testing.assert_allclose(again_scores, scores, atol=1e-5)


def test_its_saved_model_serves_as_stock_tf_serving(tmp_path, serve_like_tf_serving):
    keras.utils.set_random_seed(0)
    pairs = meeting_splits(60, 4)["train"]
    sources, targets = (CharTokenizer.from_corpus(column) for column in zip(*pairs))
    model = TextSeq2Seq.from_tokenizers(
        sources, targets, copy=True, units=6, embedding_dim=4, max_output_length=8
    )
    servable = seq2seq_servable(model)
    (directory,) = write_saved_models([servable], tmp_path, version=1, check=False)
    texts = ["Meeting with Kota on Nov 21, 2026", "", "☃", "lunch with Zuzu, 1.2.2150" * 9]
    (found,) = serve_like_tf_serving([(directory, {"text": texts})], tmp_path / "serve")
    assert isinstance(found, dict), found
    expected = servable.serve(text=tf.constant(texts))
    assert list(found["output"]) == list(expected["output"].numpy())
    np.testing.assert_allclose(found["score"], expected["score"], atol=1e-5)


def test_meeting_splits_hold_out_names_and_years():
    splits = meeting_splits(300, 100, 50)
    name = lambda pair: pair[1].rsplit(" ", 1)[0]  # noqa: E731
    year = lambda pair: int(pair[1][-10:-6])  # noqa: E731
    trained = {name(pair) for pair in splits["train"] + splits["validation"]}
    assert not trained & {name(pair) for pair in splits["test"]}
    assert {name(pair) for pair in splits["test_years"]} <= set(invented_names(2000)[:1500])
    assert max(map(year, splits["train"])) <= 2099 < min(map(year, splits["test_years"]))
    for source, target in splits["test"]:
        assert name((source, target)) in source


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Decoder(5, copy_map=[0, 1]), r"`copy_map` needs `attention`"),
        (lambda: Decoder(5, attention="dot", copy_map=[0, 5]), r"target ids in \[0, 5\)"),
        (lambda: Decoder(5, attention="dot", copy_map=[]), r"non-empty list"),
        (lambda: Decoder(5, attention="dot", copy_map=[0, True]), r"one per source id"),
    ],
)
def test_bad_copy_maps_are_refused(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_copying_without_source_ids_is_refused():
    decoder = Decoder(5, 4, units=4, attention="dot", copy_map=[0, 1, 2, 3, 4])
    memory = np.ones((1, 2, 4), "float32")
    with pytest.raises(ValueError, match="needs `source_ids`"):
        decoder(np.ones((1, 2), "int32"), memory=memory)
