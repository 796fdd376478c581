"""Omission scores (Kádár, Chrupała & Alishahi 2016): 1 - cos(h_end(S), h_end(S without w_i)),
batched against a one-at-a-time loop, on hand-checkable encoders, per token type, and shown."""

import math
from collections import Counter

import numpy as np
import pytest

from keras_rnncells.analysis import (
    mean_by_token,
    omission_html,
    omission_png,
    omission_scores,
    sentiment_encoder,
    sentiment_token_ids,
)
from keras_rnncells.apps.sentiment import SentimentClassifier
from keras_rnncells.data.sentiment import read_stsa
from keras_rnncells.text import WordPieceTokenizer
from keras_rnncells.text.vocabulary import SPECIAL_TOKENS

CORPUS = ["a wonderful , moving film", "a dull and lifeless film", "wonderful acting", "so dull"]
TEXTS = [
    "a wonderful , moving film",
    "",
    "a",  # one piece (the tiny vocabulary spells most words letter by letter)
    "so dull and lifeless , a film without wonderful acting",
    "wonderful acting",
    "a dull film , so dull",
]
IGNORED = 7  # the id `counts_except_ignored` does not see


@pytest.fixture(scope="module")
def model():
    tokenizer = WordPieceTokenizer.from_corpus(CORPUS, vocab_size=60)
    return SentimentClassifier(tokenizer, cell="gru", units=4, embedding_dim=4, pad_to_multiple=8)


def slow_scores(model, ids):
    """One sentence, and one variant of it, at a time, through the eager encoder."""

    def h_end(row):
        _, summary, _ = model.encoder(np.asarray(row, "int32")[None], training=False)
        return np.asarray(summary, "float64")[0]

    def cosine(a, b):
        norms = np.linalg.norm(a) * np.linalg.norm(b)
        return 0.0 if norms == 0 else float(a @ b) / norms

    results = []
    for row in ids:
        tokens = [int(i) for i in row if i != 0]
        whole = h_end(row)
        scores = []
        for i in range(len(tokens)):
            variant = tokens[:i] + tokens[i + 1 :]
            variant += [0] * (len(row) - len(variant))
            scores.append(1.0 - cosine(whole, h_end(variant)))
        results.append(np.array(scores))
    return results


def test_batched_scores_equal_one_at_a_time_at_any_batch_size(model):
    ids, pieces = sentiment_token_ids(model, TEXTS)
    assert ids.dtype == np.int32 and ids.shape[0] == len(TEXTS) and ids.shape[1] % 8 == 0
    assert [len(row) for row in pieces] == [int(n) for n in (ids != 0).sum(axis=1)]
    assert pieces[2] == ["a"] and pieces[1] == []
    expected = slow_scores(model, ids)
    encode = sentiment_encoder(model)
    for batch_size in (1, 3, 256):
        scores = omission_scores(encode, ids, batch_size=batch_size)
        assert [len(s) for s in scores] == [len(p) for p in pieces]
        for got, want in zip(scores, expected):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # The empty text has no score; one token alone: its encoding against the
    # empty one, which is zero, so cos = 0 and the score is 1.
    assert scores[1].shape == (0,)
    np.testing.assert_allclose(scores[2], [1.0], atol=1e-6)


def counts_except_ignored(ids):
    """h_end = the sum of one-hot vectors of the ids, padding and IGNORED left out."""
    counts = np.zeros((len(ids), 12))
    for row, sentence in enumerate(ids):
        for token in sentence:
            if token not in (0, IGNORED):
                counts[row, token] += 1
    return counts


def test_a_token_the_encoder_ignores_scores_zero():
    ids = np.array([[5, IGNORED, 9, 0], [5, 5, 9, 0], [IGNORED, 0, 0, 0], [0, 0, 0, 0]])
    scores = omission_scores(counts_except_ignored, ids, batch_size=2)
    # [5, 7, 9]: h = e5 + e9; without 7 the same; without 5 (or 9) cos = 1/sqrt(2)
    np.testing.assert_allclose(
        scores[0], [1 - 1 / math.sqrt(2), 0.0, 1 - 1 / math.sqrt(2)], atol=1e-12
    )
    # [5, 5, 9]: h = 2 e5 + e9; without a 5: e5 + e9, cos = 3/sqrt(10); without 9: e5 twice
    np.testing.assert_allclose(
        scores[1], [1 - 3 / math.sqrt(10), 1 - 3 / math.sqrt(10), 1 - 2 / math.sqrt(5)]
    )
    np.testing.assert_allclose(scores[2], [1.0])  # h = 0: cosine taken as 0
    assert scores[3].shape == (0,)
    # The tokens of a row are its non-zero ids: a hole is padding like the end.
    holes = omission_scores(counts_except_ignored, np.array([[5, 0, IGNORED, 0, 9]]))
    np.testing.assert_allclose(holes[0], scores[0])
    assert omission_scores(counts_except_ignored, np.zeros((0, 3), int)) == []


def test_mean_by_token_averages_per_type_and_drops_rare_ones():
    scores = [np.array([0.1, 0.5, 0.3]), np.array([0.3, 0.7]), np.array([0.2]), np.array([])]
    pieces = [["a", "b", "c"], ["a", "b"], ["a"], []]
    means = mean_by_token(scores, pieces, min_count=2)
    assert [(token, count) for token, _, count in means] == [("b", 2), ("a", 3)]
    assert [mean for _, mean, _ in means] == pytest.approx([0.6, 0.2])
    everything = mean_by_token(scores, pieces, min_count=1)
    assert [token for token, _, _ in everything] == ["b", "c", "a"]
    assert everything[1][1:] == pytest.approx((0.3, 1))
    assert mean_by_token(scores, pieces) == []  # the default min_count is 5


def test_html_is_escaped_and_shows_every_token_and_the_legend():
    pieces = [["<script>", "alert", "(1)", "&"], ["fine", "##ly"], []]
    scores = [[0.9, 0.1, 0.0, 0.45], [0.3, -1e-9], []]
    means = [("<b>", 0.9, 6), ("fine", 0.3, 5)]
    page = omission_html(pieces, scores, 'title "<x>"', token_means=means)
    assert "<script" not in page and "<b>" not in page and "<x>" not in page
    assert "&lt;script&gt;" in page and "&lt;b&gt;" in page and "&amp;" in page
    for piece in ("alert", "(1)", "fine", "##ly"):
        assert f">{piece}</span>" in page
    assert 'title="alert: 0.1000"' in page
    assert "Background: the omission score" in page and "0.9000" in page
    assert "rgb(200, 0, 0)" in page and "rgb(255, 255, 255)" in page  # the max and 0
    assert "Most important tokens" in page and "Least important tokens" in page
    assert "src=" not in page and "<link" not in page and "url(" not in page
    with pytest.raises(ValueError, match="`scores_per_sentence`"):
        omission_html([["a", "b"]], [[0.1]], "t")


def test_png_is_written_atomically(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib (the plot extra) is not installed")
    path = tmp_path / "sentence.png"
    written = omission_png(["a", "wonderful", "film", "##s"], [0.1, 0.8, 0.2, 0.0], path, "S")
    assert written == path
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left
    # Dollar signs in user text are text: matplotlib would parse "$x^2$" as a formula.
    pieces = ["$x^$", "$\\frac$", "5"]
    dollars = omission_png(pieces, [0.1, 0.2, 0.3], tmp_path / "dollars.png", "$\\frac$ $5")
    assert dollars.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_bad_arguments_are_refused_by_name(model):
    ids = np.array([[5, 9, 0]])
    with pytest.raises(ValueError, match="`batch_size`"):
        omission_scores(counts_except_ignored, ids, batch_size=0)
    with pytest.raises(ValueError, match="`token_ids`"):
        omission_scores(counts_except_ignored, np.array([5, 9, 0]))
    with pytest.raises(ValueError, match="`token_ids`"):
        omission_scores(counts_except_ignored, np.array([[0.5, 1.0]]))
    with pytest.raises(ValueError, match="`token_ids`"):
        omission_scores(counts_except_ignored, np.array([[5, -1]]))
    with pytest.raises(ValueError, match="`encode`"):
        omission_scores(lambda batch: np.zeros(len(batch)), ids)
    with pytest.raises(ValueError, match="`min_count`"):
        mean_by_token([], [], min_count=0)
    with pytest.raises(ValueError, match="`pieces`"):
        mean_by_token([np.array([0.1, 0.2])], [["a"]])
    with pytest.raises(ValueError, match="`model`"):
        sentiment_encoder("not a model")
    with pytest.raises(ValueError, match="`texts`"):
        sentiment_token_ids(model, "one string")


def test_the_sst2_test_set_in_batches(require_data):
    """The 1,821 test sentences through a small untrained model (seconds: the
    variants go in length-sorted batches, their padding trimmed). The
    vocabulary: the 1,000 most frequent words, the others one [UNK] each
    (learning one would take longer than the scores)."""
    require_data("sst2")
    texts, _ = read_stsa("stsa.binary.test")
    assert len(texts) == 1821
    words = Counter(word for text in texts for word in text.split())
    tokenizer = WordPieceTokenizer([*SPECIAL_TOKENS, *(w for w, _ in words.most_common(1000))])
    small = SentimentClassifier(tokenizer, cell="gru", units=16, embedding_dim=16)
    ids, pieces = sentiment_token_ids(small, texts)
    scores = omission_scores(sentiment_encoder(small), ids)
    assert [len(s) for s in scores] == [len(p) for p in pieces]
    flat = np.concatenate(scores)
    assert len(flat) == (ids != 0).sum() and np.all(np.isfinite(flat))
    assert np.all((flat > -1e-6) & (flat < 2 + 1e-6))
    means = mean_by_token(scores, pieces, min_count=20)
    assert means and all(count >= 20 for _, _, count in means)
    assert "the" in [token for token, _, _ in means]
