"""The applications on strings in ONNX: the tokenizers as onnxruntime-extensions
ops give the tokenizers' ids, and the models their outputs: WordPiece and
SentencePiece's BPE and unigram models (sentiment) on SST-2's test sentences,
words (name to color) on the shipped color names, characters (the date
normalizer, and its output text) on generated dates, all on handwritten texts."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

MISSING = [
    m
    for m in ("tf2onnx", "onnx", "onnxruntime", "onnxruntime_extensions")
    if importlib.util.find_spec(m) is None
]
if MISSING:
    pytest.skip(f"ONNX string export needs {', '.join(MISSING)}", allow_module_level=True)

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_rnncells.apps.colors import load_color_list  # noqa: E402
from keras_rnncells.apps.name_to_color import NameToColor, name_to_color_servable  # noqa: E402
from keras_rnncells.apps.sentiment import LINE_BREAK, SentimentClassifier, sentiment_servable  # noqa: E402
from keras_rnncells.apps.seq2seq import seq2seq_servable  # noqa: E402
from keras_rnncells.data.dates import date_pairs  # noqa: E402
from keras_rnncells.data.sentiment import read_glue_train, read_stsa  # noqa: E402
from keras_rnncells.export import verify_manifest, write_onnx  # noqa: E402
from keras_rnncells.export.limits import RequestLimits  # noqa: E402
from keras_rnncells.export.onnx_text import (  # noqa: E402
    CHECK_TEXTS,
    front_end_ids,
    run_string_model,
)
from keras_rnncells.export.onnx_text_graph import detokenizer, front_end  # noqa: E402
from keras_rnncells.seq2seq import TextSeq2Seq  # noqa: E402
from keras_rnncells.text import (  # noqa: E402
    CharTokenizer,
    SentencePieceTokenizer,
    WordPieceTokenizer,
    WordTokenizer,
)
from keras_rnncells.text.vocabulary import UNK_ID  # noqa: E402

HANDWRITTEN = [
    "",
    "   ",
    "UPPER case AND MiXeD",
    "unknown words: zzqxj, qwxzv; xyzzyplugh!",
    'punctuation... (lots) of it -- "quoted" [bracketed] {braced}?!',
    "accents: Crème brûlée, naïve, façade, Ångström, résumé, ÉCOLE",
    "compatibility: ﬁne ＦＵＬＬＷＩＤＴＨ ½ Ⅻ straße ΣΊΣΥΦΟΣ",
    "cjk 日本語 and hangul 한국어",
    "combining e\u0301 and zero\u200bwidth",
    "line<br />break<br>and<BR/>",
    "x" * 101 + " " + "é" * 51 + " " + "é" * 50,
    "emoji 😀🎉 and İSTANBUL, ǅ, ÅNGSTRÖM",
    "whitespace\t\n\v\f\rruns\u00a0nbsp\u3000ideographic",
    "LIGHT Greenish   BLUE",
    "Saturday, NOVEMBER 21st 2026",
    *CHECK_TEXTS,
]


@pytest.fixture(scope="module")
def sst2(require_data):
    root = require_data("sst2").parent
    train, _ = read_stsa("stsa.binary.dev", root)
    test, _ = read_stsa("stsa.binary.test", root)
    # A small vocabulary: many words of the test sentences split into pieces or [UNK].
    return WordPieceTokenizer.from_corpus(train[:400], vocab_size=400, max_length=48), test


def cleaned(texts):
    return tf.strings.regex_replace(tf.constant(texts), LINE_BREAK, " ")


def test_front_end_ids_equal_the_tokenizer_on_sst2_and_handwritten_texts(sst2):
    tokenizer, test = sst2
    texts = [*test, *HANDWRITTEN]
    replacements = ((LINE_BREAK, " "),)
    found = front_end_ids(tokenizer, texts, replacements).to_list()
    expected = tokenizer.tokenize(cleaned(texts)).to_list()
    differing = [(t, e, f) for t, e, f in zip(texts, expected, found) if e != f]
    assert not differing, differing[:3]
    assert len(found) == len(texts) == len(test) + len(HANDWRITTEN)
    assert found[len(test)] == [] and sum(map(len, found)) > 10 * len(test)
    # The whole-word [UNK] rule is exercised: onnxruntime-extensions' own
    # pieces of some words hold a valid piece and an [UNK].
    pieces = run_string_model(front_end(tokenizer, replacements), texts)
    splits, ids = pieces["word_splits"], pieces["piece_ids"]
    partial = [
        word
        for word in range(len(splits) - 1)
        if UNK_ID in ids[splits[word] : splits[word + 1]] and splits[word + 1] - splits[word] > 1
    ]
    assert partial


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_sentence_piece_front_end_ids_equal_tensorflows_on_sst2(model_type, require_data):
    # The sentiment app's tokenizer: 8,000 pieces learned from GLUE's training sentences.
    root = require_data("sst2").parent
    train, _ = read_glue_train(root)
    test, _ = read_stsa("stsa.binary.test", root)
    tokenizer = SentencePieceTokenizer.from_corpus(train, 8000, model_type)
    texts = [*test, *HANDWRITTEN]
    found = front_end_ids(tokenizer, texts).to_list()
    expected = tokenizer.tokenize(tf.constant(texts)).to_list()
    differing = [(t, e, f) for t, e, f in zip(texts, expected, found) if e != f]
    assert not differing, differing[:3]
    assert len(found) == len(texts) and sum(map(len, found)) > 10 * len(test)
    assert UNK_ID in found[texts.index("cjk 日本語 and hangul 한국어")]


def test_sentiment_string_model_matches_keras(sst2, tmp_path):
    tokenizer, test = sst2
    keras.utils.set_random_seed(0)
    model = SentimentClassifier(tokenizer, "gru", units=4, embedding_dim=4, pad_to_multiple=4)
    servable = sentiment_servable(model)
    path = tmp_path / "onnx" / "sentiment" / "1" / "model.onnx"
    manifest = write_onnx(servable, path, version=1)
    entry = manifest["string_input"]
    assert entry["parity"]["token_ids_identical"] is True
    assert entry["parity"]["max_abs_error"]["probability"] <= 1e-4
    assert entry["requires"][0].startswith("onnxruntime-extensions==")
    assert entry["inputs"] == [{"name": "text", "dtype": "string", "shape": [None]}]
    assert set(verify_manifest(path.parent)["files"]) == {
        "model.onnx",
        "model_text.onnx",
        "vocabulary.txt",
    }
    texts = [*test[:64], *HANDWRITTEN]
    found = run_string_model(path.parent / entry["file"], texts)["probability"]
    expected = servable.serve(text=tf.constant(texts))["probability"].numpy()
    assert found.shape == expected.shape == (len(texts),)
    assert np.max(np.abs(found - expected)) <= 1e-4


@pytest.fixture(scope="module")
def names_and_dates():
    names = load_color_list().names
    dates = [source for source, _ in date_pairs(300, seed=1)]
    return names, dates


def test_char_and_word_front_ends_equal_the_tokenizers(names_and_dates):
    names, dates = names_and_dates
    tokenizers = {
        "words": (WordTokenizer.from_corpus(names[::2], lowercase=True), names),
        "characters": (CharTokenizer.from_corpus(dates[::2]), dates),
        "lower-cased characters": (CharTokenizer.from_corpus(dates[::2], lowercase=True), dates),
    }
    for kind, (tokenizer, texts) in tokenizers.items():
        texts = [*texts, *HANDWRITTEN]
        found = front_end_ids(tokenizer, texts).to_list()
        expected = tokenizer.tokenize(tf.constant(texts)).to_list()
        differing = [(t, e, f) for t, e, f in zip(texts, expected, found) if e != f]
        assert not differing, (kind, differing[:3])
        assert len(found) == len(texts) and found[-len(HANDWRITTEN)] == []
        values = [i for row in found for i in row]
        assert UNK_ID in values and len(set(values)) > 20, kind  # unknown and known tokens


@pytest.mark.slow  # two apps exported both ways (35 s of the default run)
def test_name_to_color_and_seq2seq_string_models_match_keras(names_and_dates, tmp_path):
    names, dates = names_and_dates
    keras.utils.set_random_seed(0)
    small = {"units": 4, "embedding_dim": 4}
    words = WordTokenizer.from_corpus(names[::2], lowercase=True)
    targets = CharTokenizer.from_corpus([target for _, target in date_pairs(50)])
    translator = TextSeq2Seq.from_tokenizers(
        CharTokenizer.from_corpus(dates[::2]), targets, cell="gru", max_output_length=6, **small
    )
    every_text = RequestLimits(max_batch=2048)  # all of them in one request
    cases = {
        "name": (
            name_to_color_servable(NameToColor(words, "gru", bins=4, **small), limits=every_text),
            names,
        ),
        "text": (seq2seq_servable(translator, limits=every_text), dates),
    }
    for input_name, (servable, texts) in cases.items():
        path = tmp_path / servable.name / "model.onnx"
        entry = write_onnx(servable, path)["string_input"]
        assert entry["parity"]["token_ids_identical"] is True
        assert entry["inputs"] == [{"name": input_name, "dtype": "string", "shape": [None]}]
        texts = [*texts, *HANDWRITTEN]
        found = run_string_model(path.parent / entry["file"], texts, input_name)
        expected = servable.serve(**{input_name: tf.constant(texts)})
        assert set(found) == set(expected)
        for name, value in expected.items():
            value = value.numpy()
            if value.dtype == object:  # the translations, as text
                assert found[name].tolist() == [t.decode("utf-8") for t in value]
                assert len(set(found[name].tolist())) > 1
            else:
                assert found[name].shape == value.shape and value.shape[0] == len(texts)
                assert np.max(np.abs(found[name] - value)) <= 1e-4
    assert cases["text"][0].onnx_text.detokenizers == {"output": ("tokens", targets)}


def test_front_end_needs_a_supported_tokenizer():
    vocabulary = ["[PAD]", "[UNK]", "[START]", "[END]", "a"]
    with pytest.raises(ValueError, match="`tokenizer`"):
        front_end(WordPieceTokenizer(vocabulary, lowercase=False))
    with pytest.raises(ValueError, match="`detokenizers`"):
        detokenizer(WordTokenizer(vocabulary), "tokens", "output")
