"""The SentencePiece tokenizer (BPE and unigram): its ids are those of the
sentencepiece library itself on SST-2's test sentences and hard texts, its
special tokens are the package's, it round-trips text, its configuration,
model file and a model holding it (.keras, and a SavedModel served as stock
TF Serving serves it), and bad arguments get one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import keras
import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from keras_rnncells.apps.sentiment import SentimentClassifier, sentiment_servable
from keras_rnncells.apps.seq2seq import seq2seq_servable
from keras_rnncells.data.dates import date_pairs
from keras_rnncells.data.sentiment import read_stsa
from keras_rnncells.export import write_saved_models
from keras_rnncells.export.limits import RequestLimits
from keras_rnncells.seq2seq import TextSeq2Seq
from keras_rnncells.text import (
    END_ID,
    SPECIAL_TOKENS,
    START_ID,
    UNK_ID,
    UNK_TEXT,
    SentencePieceTokenizer,
    learn_tokenizer,
)
from keras_rnncells.text.sentence_piece import learn_sentence_piece_model

HARD_TEXTS = [
    "",
    " ",
    "a",
    "UPPER and lower",
    "Crème brûlée, naïve ﬁne ＦＵＬＬＷＩＤＴＨ straße",
    "日本語 한국어 😀🎉 ☃",
    "tabs\tand\nnew lines\u00a0nbsp",
    "x" * 500,
    "the " * 300,
]
SIZE = 500


@pytest.fixture(scope="module")
def sst2(require_data):
    root = require_data("sst2").parent
    train, _ = read_stsa("stsa.binary.train", root)
    test, _ = read_stsa("stsa.binary.test", root)
    return train, test


@pytest.fixture(scope="module", params=["bpe", "unigram"])
def pieces(request, sst2):
    train, _ = sst2
    return SentencePieceTokenizer.from_corpus(train, SIZE, request.param)


def test_ids_are_the_sentencepiece_librarys_on_sst2_and_hard_texts(pieces, sst2):
    _, test = sst2
    texts = [*test, *HARD_TEXTS]
    reference = sentencepiece.SentencePieceProcessor(model_proto=pieces.model)
    expected = [reference.encode(text) for text in texts]
    found = pieces.tokenize(tf.constant(texts)).to_list()
    differing = [(t, e, f) for t, e, f in zip(texts, expected, found) if e != f]
    assert not differing, differing[:3]
    assert found[len(test)] == []  # the empty string has no token
    assert UNK_ID in found[len(test) + 5]  # ☃ is not in SST-2
    assert sum(map(len, found)) > 5 * len(test)  # subwords, not whole sentences


def test_the_special_tokens_are_the_packages(pieces):
    assert pieces.vocabulary[: len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS)
    assert pieces.vocabulary_size == SIZE
    ids = pieces(tf.constant(["a film", ""]), add_start=True, add_end=True).numpy()
    assert ids[0, 0] == START_ID and END_ID in ids[0] and list(ids[1][:2]) == [START_ID, END_ID]


def test_it_survives_the_calls_that_empty_tensorflows_kernel_cache(pieces):
    # tensorflow-text's own tokenizer loses its model to these (tensorflow/text#570).
    texts = tf.constant(["a gripping film", "", "dull"])
    traced = tf.function(pieces.tokenize)
    expected = pieces.tokenize(texts).to_list()
    assert traced(texts).to_list() == expected
    for empty_the_cache in (lambda: keras.utils.set_random_seed(1), keras.backend.clear_session):
        empty_the_cache()
        assert pieces.tokenize(texts).to_list() == expected
        assert traced(texts).to_list() == expected


def test_detokenize_is_the_normalized_text(pieces, sst2):
    _, test = sst2
    texts = [*test[:200], "UPPER  and   lower", "Crème ☃ brûlée"]
    reference = sentencepiece.SentencePieceProcessor(model_proto=pieces.model)
    ids = pieces(tf.constant(texts), add_start=True, add_end=True)
    found = [text.decode("utf-8") for text in pieces.detokenize(ids).numpy()]
    # The library's decoding, with our [UNK] text for its " ⁇ ".
    expected = [reference.decode(reference.encode(text)) for text in texts]
    expected = [text.replace(" ⁇ ", UNK_TEXT).replace("⁇", UNK_TEXT) for text in expected]
    assert found == expected
    assert found[-2] == "upper and lower"  # case-folded, single spaces
    # SST-2's sentences with no unknown character read back whole (lower-cased).
    known = [i for i, row in enumerate(ids.numpy()[:200]) if UNK_ID not in row]
    assert len(known) > 190
    assert [found[i] for i in known] == [test[i].lower() for i in known]


def test_config_model_file_and_keras_file_round_trip(pieces, tmp_path):
    texts = tf.constant(["a gripping film", "", "dull"])
    again = SentencePieceTokenizer.from_config(pieces.get_config())
    np.testing.assert_array_equal(again(texts), pieces(texts))
    pieces.save_model(tmp_path / "pieces.model")
    from_file = SentencePieceTokenizer.from_model_file(tmp_path / "pieces.model", max_length=3)
    assert from_file.model == pieces.model and from_file(texts).shape[1] <= 3
    keras.utils.set_random_seed(0)
    model = SentimentClassifier(pieces, "gru", units=4, embedding_dim=4)
    model.save(tmp_path / "sentiment.keras")
    loaded = keras.saving.load_model(tmp_path / "sentiment.keras")
    assert isinstance(loaded.tokenizer, SentencePieceTokenizer)
    np.testing.assert_allclose(loaded(texts), model(texts), atol=1e-6)


@pytest.mark.slow  # exports served in a child process (25 s of the default run)
def test_saved_models_with_pieces_serve_as_stock_tf_serving(tmp_path, serve_like_tf_serving):
    keras.utils.set_random_seed(0)
    corpus = [source for source, _ in date_pairs(200, seed=3)]
    outputs = [target for _, target in date_pairs(200, seed=4)]
    sources, targets = (
        learn_tokenizer("bpe", texts, 80, lowercase=False) for texts in (corpus, outputs)
    )
    small = {"units": 4, "embedding_dim": 4}
    servables = [
        sentiment_servable(
            SentimentClassifier(learn_tokenizer("unigram", corpus, 60), "mgu", **small)
        ),
        seq2seq_servable(
            TextSeq2Seq.from_tokenizers(sources, targets, max_output_length=6, **small),
            limits=RequestLimits(max_chars=1024),  # the long text below: 520 characters
        ),
    ]
    directories = write_saved_models(servables, tmp_path, version=1, check=False)
    texts = ["Nov 21, 2026", "", "日本語 ☃", "saturday 21 november 2026 " * 20]
    served = serve_like_tf_serving(
        [(directory, {"text": texts}) for directory in directories], tmp_path / "serve"
    )
    for servable, found in zip(servables, served):
        assert isinstance(found, dict), f"{servable.name}: {found}"
        expected = servable.serve(text=tf.constant(texts))
        for name, value in expected.items():
            value = value.numpy()
            if value.dtype == object:
                assert list(found[name]) == list(value), (servable.name, name)
            else:
                np.testing.assert_allclose(found[name], value, atol=1e-5, err_msg=name)


@pytest.mark.slow  # a fresh training run
def test_the_date_normalizer_trains_on_pieces_from_the_command_line(tmp_path):
    # As a user runs it: a fresh directory, a relative --out.
    command = [sys.executable, "-m", "keras_rnncells.cli", "train", "seq2seq"]
    options = ["--tokenizer", "unigram", "--limit", "300", "--epochs", "1", "--units", "8"]
    done = subprocess.run(
        [*command, *options, "--out", "dates"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    run = tmp_path / "dates"
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert results["task"] == "date normalization (unigram tokens)"
    assert results["settings"]["tokenizer"] == "unigram"
    model = keras.saving.load_model(run / "model.keras")
    for side in ("source", "target"):
        tokenizer = getattr(model, f"{side}_tokenizer")
        assert isinstance(tokenizer, SentencePieceTokenizer)
        assert (run / f"{side}_tokenizer.model").read_bytes() == tokenizer.model
    assert (
        "2026-11-21"
        in model.target_tokenizer.detokenize(model.target_tokenizer(tf.constant(["2026-11-21"])))
        .numpy()[0]
        .decode()
    )


def default_ids_model() -> bytes:
    """A model learned with SentencePiece's own special ids (unk 0, bos 1, eos 2)."""
    import io

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(["a cat sat", "a dog ran"] * 5),
        model_writer=model,
        vocab_size=20,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    return model.getvalue()


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: SentencePieceTokenizer(b"not a model"),
            r"^Argument `model` must be a serialized SentencePiece model; "
            r"SentencePiece could not read these 11 bytes$",
        ),
        (
            lambda: SentencePieceTokenizer(b""),
            r"^Argument `model` must be a serialized SentencePiece model",
        ),
        (
            lambda: SentencePieceTokenizer("not base64!"),
            r"^Argument `model` must be the bytes of a SentencePiece model",
        ),
        (
            lambda: SentencePieceTokenizer(default_ids_model()),
            r"^Argument `model` must be a SentencePiece model whose pieces 0-3 are "
            r"\['\[PAD\]', '\[UNK\]', '\[START\]', '\[END\]'\] .*"
            r"received pieces \['<unk>', '<s>', '</s>'",
        ),
        (
            lambda: SentencePieceTokenizer.from_model_file("no/such.model"),
            r"^Argument `path` must be a readable SentencePiece model file, "
            r"received 'no/such.model' \(No such file or directory\)$",
        ),
        (lambda: learn_sentence_piece_model(["a b"], 4), r"^Argument `vocab_size`"),
        (lambda: learn_sentence_piece_model(["", ""], 50), r"^Argument `texts` must hold a"),
        (
            lambda: learn_sentence_piece_model(["a b"], 50, "word"),
            r"^Argument `model_type` must be one of \('bpe', 'unigram'\), received: 'word'$",
        ),
        (
            lambda: learn_tokenizer("pieces", ["a b"], 50),
            r"^Argument `tokenizer` must be one of \('wordpiece', 'bpe', 'unigram', 'char'\)",
        ),
    ],
    ids=[
        "corrupt",
        "empty",
        "not-base64",
        "other-special-ids",
        "missing-file",
        "tiny-vocabulary",
        "no-text",
        "model-type",
        "kind",
    ],
)
def test_bad_arguments_get_one_line_errors(build, message):
    with pytest.raises(ValueError, match=message) as raised:
        build()
    assert "\n" not in str(raised.value)


def test_a_corrupt_model_file_is_named(tmp_path):
    path = tmp_path / "broken.model"
    path.write_bytes(b"\x00\x01 truncated")
    with pytest.raises(ValueError, match="could not read these 12 bytes"):
        SentencePieceTokenizer.from_model_file(path)
