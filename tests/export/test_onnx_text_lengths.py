"""Every string-input ONNX model (``model_text.onnx``) agrees with its
SavedModel's serving function at every length: the empty string, generated
texts of 1 to 64 tokens, a 400-token text, the application's examples and,
for the sentiment classifier, every SST-2 test sentence and a review of at
least 400 tokens (it keeps 400), all in one batch and one text at a time;
for the sentiment classifier and the date normalizer, with their default
tokenizers and with SentencePiece's (BPE, unigram), and the date normalizer
with its copy mechanism.
The ONNX models run in a child process (without TensorFlow, which breaks
onnxruntime-extensions' regex ops), so a crash there fails the test. The
export check refuses a model that is wrong on short texts, `padded_ids` (the
padding that converts exactly) is ``Tokenizer.pad``, and a string model
takes a batch of no text."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
from collections.abc import Callable
from pathlib import Path

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
from keras_rnncells.apps.sentiment import SentimentClassifier, sentiment_servable  # noqa: E402
from keras_rnncells.apps.seq2seq import seq2seq_servable  # noqa: E402
from keras_rnncells.data.dates import date_pairs  # noqa: E402
from keras_rnncells.data.sentiment import read_stsa  # noqa: E402
from keras_rnncells.export import write_onnx, write_saved_model  # noqa: E402
from keras_rnncells.export.limits import RequestLimits  # noqa: E402
from keras_rnncells.export.onnx_text import (  # noqa: E402
    length_texts,
    run_string_model_ways,
    write_string_model,
)
from keras_rnncells.export.onnx_text_graph import string_model  # noqa: E402
from keras_rnncells.export.servable import Servable, padded_ids  # noqa: E402
from keras_rnncells.seq2seq import TextSeq2Seq  # noqa: E402
from keras_rnncells.text import (  # noqa: E402
    CharTokenizer,
    SentencePieceTokenizer,
    WordPieceTokenizer,
    WordTokenizer,
)

LENGTHS = range(65)  # the empty string and 1 to 64 tokens
LONG = 400
TOLERANCE = 1e-4
SMALL = {"units": 4, "embedding_dim": 4}
# Request limits that admit every sweep here in one request (the apps' own
# refuse more than 256 texts, and the 400-token texts of a name or a date).
ONE_REQUEST = RequestLimits(max_batch=4096, max_chars=65_536)


def sentiment_app(
    require_data: Callable[[str], Path], model_type: str | None = None
) -> tuple[Servable, list[str]]:
    """A sentiment classifier (default padding to multiples of 16, up to 400
    tokens) and its extra texts: every SST-2 test sentence and a review of at
    least 400 tokens made of consecutive test sentences. Its tokens: WordPiece,
    or SentencePiece's ``model_type``."""
    root = require_data("sst2").parent
    dev, _ = read_stsa("stsa.binary.dev", root)
    test, _ = read_stsa("stsa.binary.test", root)
    if model_type is None:
        tokenizer = WordPieceTokenizer.from_corpus(dev[:400], vocab_size=400, max_length=LONG)
    else:
        tokenizer = SentencePieceTokenizer.from_corpus(dev[:400], 400, model_type, max_length=LONG)
    model = SentimentClassifier(tokenizer, "gru", **SMALL)
    counts = np.cumsum([len(row) for row in tokenizer.tokenize(tf.constant(test)).to_list()])
    review = " ".join(test[: int(np.searchsorted(counts, LONG)) + 1])
    assert len(test) == 1821 and len(tokenizer.tokenize(tf.constant([review]))[0]) >= LONG
    return sentiment_servable(model, limits=ONE_REQUEST), [*test, review]


def name_to_color_app(require_data: Callable[[str], Path]) -> tuple[Servable, list[str]]:
    """A name-to-color model on words of the shipped color names."""
    names = load_color_list().names
    words = WordTokenizer.from_corpus(names[::2], lowercase=True)
    model = NameToColor(words, "gru", bins=4, **SMALL)
    return name_to_color_servable(model, limits=ONE_REQUEST), names[:200]


def seq2seq_app(
    require_data: Callable[[str], Path],
    cell: str = "gru",
    lowercase: bool = False,
    model_type: str | None = None,
    copy: bool = False,
) -> tuple[Servable, list[str]]:
    """A date normalizer on characters (lower-cased if ``lowercase``), or on
    SentencePiece's ``model_type`` pieces, beam search in the graph, with the
    decoder's copy mechanism if ``copy``."""
    dates = [source for source, _ in date_pairs(300, seed=1)]
    outputs = [target for _, target in date_pairs(50)]
    if model_type is None:
        sources = CharTokenizer.from_corpus(dates[::2], lowercase=lowercase)
        targets = CharTokenizer.from_corpus(outputs)
    else:
        sources, targets = (
            SentencePieceTokenizer.from_corpus(texts, 200, model_type, lowercase)
            for texts in (dates[::2], outputs)
        )
    model = TextSeq2Seq.from_tokenizers(
        sources, targets, copy=copy, cell=cell, max_output_length=6, **SMALL
    )
    return seq2seq_servable(model, limits=ONE_REQUEST), dates[:100]


def max_errors(
    found: dict[str, np.ndarray], expected: dict[str, np.ndarray], texts: list[str]
) -> dict[str, float]:
    """Max absolute error per number output; string outputs must be equal
    (the first differing text is named)."""
    assert set(found) == set(expected)
    errors = {}
    for name, reference in expected.items():
        value = found[name]
        assert value.shape == reference.shape and reference.shape[0] == len(texts), name
        if reference.dtype == object:
            decoded = [text.decode("utf-8") for text in reference]
            differing = [(t, f, e) for t, f, e in zip(texts, value.tolist(), decoded) if f != e]
            assert not differing, (name, differing[:3])
        else:
            difference = np.abs(value.astype(np.float64) - reference)
            per_text = difference.reshape(len(texts), int(np.prod(reference.shape[1:])))
            per_text = per_text.max(axis=1, initial=0.0)
            errors[name] = float(per_text.max(initial=0.0))
            worst = texts[int(per_text.argmax())][:80] if texts else None
            assert errors[name] <= TOLERANCE, (name, errors[name], worst)
    return errors


VARIANTS = [
    *(
        functools.partial(app, model_type=model_type)
        for app in (sentiment_app, seq2seq_app)
        for model_type in ("bpe", "unigram")
    ),
    functools.partial(seq2seq_app, copy=True),
]


def variant_name(build: functools.partial) -> str:
    return f"{build.func.__name__}-{'-'.join(map(str, build.keywords.values()))}"


@pytest.mark.parametrize(
    "build",
    [
        sentiment_app,
        name_to_color_app,
        # The seq2seq and the variants (word pieces, copying) in the slow run, which
        # CI runs too: the default run, under 15 minutes, sweeps the two others.
        *(pytest.param(b, marks=pytest.mark.slow) for b in [seq2seq_app, *VARIANTS]),
    ],
    ids=["sentiment", "name_to_color", "seq2seq", *map(variant_name, VARIANTS)],
)
def test_string_model_agrees_with_the_saved_model_at_every_length(build, require_data, tmp_path):
    keras.utils.set_random_seed(0)
    servable, extra = build(require_data)
    front = servable.onnx_text
    swept = length_texts(front.tokenizer, [*LENGTHS, LONG])
    counts = [len(row) for row in front.tokenizer.tokenize(tf.constant(swept)).to_list()]
    assert counts == [*LENGTHS, LONG]
    examples = [str(text) for text in servable.examples[front.input_name]]
    texts = [*swept, *examples, *extra]

    saved = write_saved_model(servable, tmp_path / "saved", version=1, check=False)
    manifest = write_onnx(servable, tmp_path / "onnx" / "model.onnx", version=1)
    string_model = tmp_path / "onnx" / manifest["string_input"]["file"]
    serving = tf.saved_model.load(str(saved)).signatures["serving_default"]
    expected = serving(**{front.input_name: tf.constant(texts)})
    expected = {name: tensor.numpy() for name, tensor in expected.items()}

    found = run_string_model_ways(string_model, texts, front.input_name)
    assert set(found) == {"batched", "one_at_a_time"}
    for way, outputs in found.items():
        errors = max_errors(outputs, expected, texts)
        print(f"{servable.name} {way}, {len(texts)} texts: max abs error {errors}")
    # The outputs do depend on the text: agreement is not that of constants.
    numbers = [value for value in expected.values() if value.dtype != object]
    assert any(np.ptp(value, axis=0).max() > 1e-3 for value in numbers)


def floor_division_padding(tokenizer, multiple: int = 16) -> Callable:
    """The sentiment app's former padding: ``tokenizer.pad``, then the columns
    rounded up by ``-(-steps // multiple) * multiple``, which tf2onnx turns
    into a truncating division (0 columns for fewer than ``multiple``)."""

    def pad(ragged):
        ids = tokenizer.pad(ragged)
        steps = tf.shape(ids)[1]
        return tf.pad(ids, [[0, 0], [0, -(-steps // multiple) * multiple - steps]])

    return pad


def test_the_export_check_refuses_a_model_wrong_on_short_texts(require_data, tmp_path):
    keras.utils.set_random_seed(0)
    servable, _ = name_to_color_app(require_data)
    model = servable.module.model
    pad = floor_division_padding(model.tokenizer)

    def colors(ragged):
        rgb, distribution = model.colors_from_ids(pad(ragged))
        return {"rgb": rgb, "distribution": distribution}

    front = dataclasses.replace(servable.onnx_text, function=colors)
    broken = dataclasses.replace(servable, onnx_text=front)
    path = tmp_path / "model_text.onnx"
    with pytest.raises(ValueError, match="string-input ONNX model of 'name-to-color'"):
        write_string_model(broken, path, opset=17)
    assert not path.exists()
    write_string_model(servable, path, opset=17)  # the app's own padding passes
    assert path.is_file()


@pytest.mark.parametrize("max_length", [None, 3])
@pytest.mark.parametrize("multiple", [1, 4])
def test_padded_ids_are_the_tokenizers_padding(max_length, multiple):
    vocabulary = ["[PAD]", "[UNK]", "[START]", "[END]", *"abcdefg"]
    tokenizer = CharTokenizer(vocabulary, max_length=max_length)
    batches = [[""], ["", ""], ["a", ""], ["abcdefg", "", "cab"], ["abcd"], ["zz", "a"]]
    for texts in batches:
        ragged = tokenizer.tokenize(tf.constant(texts))
        expected = tokenizer.pad(ragged).numpy()
        found = padded_ids(ragged, max_length, multiple).numpy()
        width = -(-expected.shape[1] // multiple) * multiple  # Python's exact ceiling
        assert found.shape == (len(texts), width) and found.dtype == expected.dtype
        np.testing.assert_array_equal(found[:, : expected.shape[1]], expected)
        assert (found[:, expected.shape[1] :] == 0).all()


def test_a_string_model_takes_a_batch_of_no_text(require_data):
    # MGU: its recurrences are ONNX Loops. onnxruntime's native GRU node
    # aborts on a batch of no row, which no front end can prevent.
    keras.utils.set_random_seed(0)
    servable, _ = seq2seq_app(require_data, cell="mgu", lowercase=True)
    model, _ = string_model(servable.onnx_text, opset=17)
    for texts in ([], ["", "Nov 21, 2026", "SATURDAY 21 NOVEMBER 2026"]):
        expected = servable.serve(text=tf.constant(texts, tf.string))
        expected = {name: value.numpy() for name, value in expected.items()}
        for outputs in run_string_model_ways(model, texts, "text").values():
            assert max_errors(outputs, expected, texts).keys() == {"score"}
