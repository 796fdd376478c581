"""The standalone tokenizer (keras_rnncells/text/standalone.py, shipped as an
export's tokenizer.py): loaded by path in a process where TensorFlow, NumPy,
Keras and keras_rnncells cannot be imported (tests/tools/standalone_tokenizer.py),
it gives the padded ids of the in-graph tokenizers (computed here) for every
tokenizer kind, on hard texts, the SST-2 test set and the applications'
inputs, and their detokenizer's texts; the manifest entry that
`tokenizer_manifest` writes; one-line errors."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.apps import servable_for
from keras_rnncells.apps.colors import load_color_list
from keras_rnncells.apps.sentiment import LINE_BREAK
from keras_rnncells.data.dates import date_pairs
from keras_rnncells.export.servable import Servable, StringFrontEnd, padded_ids
from keras_rnncells.export.tokenizer_files import (
    HARD_TEXTS,
    STANDALONE_FILE,
    id_rows,
    tokenizer_manifest,
)
from keras_rnncells.text import (
    CharTokenizer,
    WordPieceTokenizer,
    WordTokenizer,
    learn_tokenizer,
    standalone,
    vocabulary,
)
from keras_rnncells.text.sentence_piece import WORD_BOUNDARY
from keras_rnncells.text.tokenizers import UNK_TEXT

RUNNER = Path(__file__).parents[1] / "tools" / "standalone_tokenizer.py"
SENTENCES = [
    "A gripping, beautifully acted film.",
    "Dull and far too long; the Café scene drags.",
    "It's a naïve, touching story about Zoë and Ångström.",
    "NOV 21, 2026: the premiere <br />was sold out!",
]
# Batches besides all the texts at once: no text, texts of no token (a batch
# of no steps: one column, or `pad_to_multiple`), a str alone (a batch of one).
EDGE_BATCHES = [[], [""], ["", " ", "\t\n"], "a str alone", ["[UNK] [END]"]]


def in_graph_ids(tokenizer, texts, replacements=(), multiple=1) -> list[list[int]]:
    strings = tf.constant(texts, tf.string, shape=[len(texts)])
    for pattern, rewrite in replacements:
        strings = tf.strings.regex_replace(strings, pattern, rewrite)
    ids = padded_ids(tokenizer.tokenize(strings), tokenizer.max_length, multiple).numpy()
    assert ids.shape[1] >= multiple  # no text: (0, multiple) in TensorFlow, [] standalone
    return ids.tolist()


def detokenized(tokenizer, rows) -> list[str]:
    return [text.decode("utf-8") for text in tokenizer.detokenize(tf.constant(rows)).numpy()]


def text_servable(tokenizer, replacements=(), multiple=1) -> Servable:
    """The text ends of an id-form model, for `tokenizer_manifest`: its
    ``token_ids`` input from ``text``, its ``text_out`` output from ``ids``."""
    return Servable(
        name="texts",
        cell=None,
        module=tf.Module(),
        serve=None,
        examples={"text": np.array(SENTENCES)},
        onnx_function=lambda token_ids: token_ids,
        onnx_examples={"token_ids": np.zeros((1, 1), np.int32)},
        onnx_text=StringFrontEnd(tokenizer, None, replacements, pad_to_multiple=multiple),
        detokenizers={"text_out": ("ids", tokenizer)},
    )


def write_export(directory: Path, servable: Servable, **changes) -> tuple[Path, dict]:
    """The tokenizer files and manifest.json of ``servable`` in ``directory``;
    ``changes`` replace settings of its ``token_ids`` input."""
    entry, files = tokenizer_manifest(servable)
    entry["inputs"].get("token_ids", {}).update(changes)
    directory.mkdir(parents=True)
    for name, data in files.items():
        path = directory / name
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    (directory / "manifest.json").write_text(json.dumps({"tokenizer": entry}), encoding="utf-8")
    return directory, entry


def run_standalone(workdir: Path, jobs: list[dict]) -> list[dict]:
    """The jobs run by tests/tools/standalone_tokenizer.py in a child process."""
    request, result = workdir / "request.json", workdir / "result.json"
    request.write_text(json.dumps(jobs), encoding="utf-8")
    child = subprocess.run(
        [sys.executable, str(RUNNER), str(request), str(result)], capture_output=True, text=True
    )
    assert child.returncode == 0, child.stderr[-3000:]
    found = json.loads(result.read_text(encoding="utf-8"))
    assert found["imported"] == []  # nothing blocked was imported after all
    return found["results"]


@pytest.fixture(scope="module")
def tokenizers() -> dict:
    """One tokenizer of each kind the applications use, small, learned here
    (WordPiece and characters lower-cased, as the sentiment app's; SentencePiece's
    two models; the color names' words; the dates' characters, cased)."""
    names = load_color_list().names
    dates = [source for source, _ in date_pairs(200, seed=3)]
    # The hard texts are in the corpus: their characters and words get ids of
    # their own, so a character normalized otherwise changes an id.
    corpus = [*names[::3], *SENTENCES, *dates[:40], *HARD_TEXTS]
    wordpiece = learn_tokenizer("wordpiece", corpus, 400, max_length=12)
    # Without the run of 40 "日": pieces of it of several lengths make ties
    # that two sentencepiece versions break apart (see the standalone module).
    pieces = [text for text in corpus if "日" * 40 not in text]
    return {
        "wordpiece": wordpiece,
        "wordpiece, cased": WordPieceTokenizer(wordpiece.vocabulary, lowercase=False),
        "bpe": learn_tokenizer("bpe", pieces, 400, max_length=12),
        "unigram": learn_tokenizer("unigram", pieces, 400),
        "char": learn_tokenizer("char", corpus, 400),
        "char, cased": CharTokenizer.from_corpus([*dates, *HARD_TEXTS]),
        "word": WordTokenizer.from_corpus([*names, *HARD_TEXTS], lowercase=True),
    }


@pytest.mark.parametrize(
    "kind", ["wordpiece", "wordpiece, cased", "bpe", "unigram", "char", "char, cased", "word"]
)
def test_standalone_ids_and_texts_equal_tensorflows(kind, tokenizers, tmp_path):
    tokenizer = tokenizers[kind]
    replacements, multiple = ((LINE_BREAK, " "),), (4 if kind == "bpe" else 1)
    export, entry = write_export(
        tmp_path / "export", text_servable(tokenizer, replacements, multiple)
    )
    assert entry["parity"]["identical"] is True
    texts = [*SENTENCES, *HARD_TEXTS]
    batches = [texts, *([text] for text in HARD_TEXTS), *EDGE_BATCHES]
    rows = id_rows(tokenizer.vocabulary_size)
    (found,) = run_standalone(
        tmp_path,
        [
            {
                "export": str(export),
                "encode": [{"input": None, "texts": batch} for batch in batches],
                "decode": [{"output": "text_out", "ids": rows}, {"output": None, "ids": []}],
            }
        ],
    )
    for batch, ids in zip(batches, found["encode"]):
        batch = [batch] if isinstance(batch, str) else batch
        expected = in_graph_ids(tokenizer, batch, replacements, multiple)
        assert ids == expected, [(t, e, i) for t, e, i in zip(batch, expected, ids) if e != i][:2]
    assert found["encode"][0] != [[0] * len(found["encode"][0][0])] * len(texts)  # not all [PAD]
    assert found["decode"] == [detokenized(tokenizer, rows), []]


def fuzz_texts(count: int, seed: int = 0) -> list[str]:
    """Random texts of any code points, weighted toward the hard ones: case
    and sigma contexts, combining marks in and out of order, controls,
    whitespace, Hangul, ligatures."""
    rng = np.random.default_rng(seed)
    hard = [
        *map(ord, "\x00\t\n\v\f\r \x85\xa0ΣΑσςİẞǅﬁ.'\u0345\u0301\u0323\u0e31\u0f71"),
        0x200D,
        0xAD,
        0xAC00,
        0xD7A3,
        0x1D165,
        0x1D16D,
        0x1F88,
        0x3000,
        0x2028,
    ]
    texts = []
    for length in rng.integers(0, 24, count):
        points = rng.integers(0, 0x110000, length)
        points = np.where(rng.random(length) < 0.4, rng.choice(hard, length), points)
        points = np.where(rng.random(length) < 0.2, rng.integers(0x300, 0x370, length), points)
        texts.append("".join(chr(p) for p in points if not 0xD800 <= p < 0xE000))
    return texts


def test_normalization_and_words_equal_tensorflows_on_any_text():
    # Vocabulary-free: the text each tokenizer's normalization makes, and
    # WordPiece's words, on random texts of any code points.
    from tensorflow_text.python.ops.bert_tokenizer import BasicTokenizer

    from keras_rnncells.export.tokenizer_files import lowercase_tables, wordpiece_tables

    texts = [*fuzz_texts(3000), *HARD_TEXTS]
    strings = tf.constant(texts)
    lower = standalone.LowerCase(lowercase_tables())
    expected = tf.strings.lower(strings, encoding="utf-8").numpy()
    assert [lower(t) for t in texts] == [t.decode("utf-8") for t in expected]
    for lowercase in (True, False):
        vocabulary_ = list(vocabulary.SPECIAL_TOKENS)
        tables = wordpiece_tables(lowercase)
        tokenizer = standalone.WordPieceTokenizer(vocabulary_, lowercase, tables)
        # WordPieceTokenizer's arguments (tokenizers._bert_tokenizer_params).
        arguments = {"lower_case": True} if lowercase else {"normalization_form": "NFC"}
        basic = BasicTokenizer(**arguments)
        expected = basic.tokenize(strings).to_list()
        found = [tokenizer.words(tokenizer.normalize(t)) for t in texts]
        differing = [
            (t, e, f) for t, e, f in zip(texts, expected, found) if [w.decode() for w in e] != f
        ]
        assert not differing, (lowercase, differing[:2])


def test_start_end_and_truncation_equal_the_tokenizers(tokenizers, tmp_path):
    # No application's id input takes [START] and [END]; the standalone
    # tokenizer adds them as `Tokenizer.call` does, within `max_length`.
    tokenizer = CharTokenizer(tokenizers["char, cased"].vocabulary, max_length=6)
    export, _ = write_export(
        tmp_path / "export", text_servable(tokenizer), add_start=True, add_end=True
    )
    texts = ["", "a", "abcd", "abcde", "Nov 21, 2026", "ÉÉÉÉÉÉÉÉ"]
    (found,) = run_standalone(
        tmp_path, [{"export": str(export), "encode": [{"input": "token_ids", "texts": texts}]}]
    )
    expected = tokenizer(tf.constant(texts), add_start=True, add_end=True).numpy().tolist()
    assert found["encode"] == [expected]
    assert [len(row) for row in expected] == [6] * len(texts)


@pytest.mark.slow  # four tokenizers learned from SST-2 (tens of seconds)
def test_standalone_ids_equal_tensorflows_on_sst2(require_data, tmp_path):
    from keras_rnncells.data.sentiment import read_glue_train, read_stsa

    root = require_data("sst2").parent
    train, _ = read_glue_train(root)
    test, _ = read_stsa("stsa.binary.test", root)
    replacements = ((LINE_BREAK, " "),)
    # The sentiment app's settings: WordPiece (or SentencePiece, characters),
    # the first 400 tokens, rows padded to a multiple of 16.
    tokenizers = {
        "wordpiece": learn_tokenizer("wordpiece", train[:3000], 2000, max_length=400),
        "bpe": learn_tokenizer("bpe", train, 8000, max_length=400),
        "unigram": learn_tokenizer("unigram", train, 8000, max_length=400),
        "char": learn_tokenizer("char", train, 60, max_length=400),
    }
    jobs, expected = [], []
    for kind, tokenizer in tokenizers.items():
        export, _ = write_export(tmp_path / kind, text_servable(tokenizer, replacements, 16))
        batches = [test, *(test[start : start + 64] for start in range(0, len(test), 64))]
        jobs.append(
            {"export": str(export), "encode": [{"input": None, "texts": b} for b in batches]}
        )
        expected.append([in_graph_ids(tokenizer, b, replacements, 16) for b in batches])
    for kind, job, want in zip(tokenizers, run_standalone(tmp_path, jobs), expected):
        differing = [(text, e, f) for text, e, f in zip(test, want[0], job["encode"][0]) if e != f]
        assert not differing, (kind, differing[:2])
        assert job["encode"] == want, kind
        assert sum(id_ > vocabulary.UNK_ID for row in want[0] for id_ in row) > 10 * len(test)


# The applications that read text: what gives the ids their id form takes
# (an attribute of the model); those that write text: their string output
# and the tokenizer that detokenizes it.
TEXT_IDS = {"sentiment": "token_ids", "name-to-color": "tokenizer", "seq2seq": "source_tokenizer"}
TEXT_OUTPUTS = {"color-namer": ("names", "tokenizer"), "seq2seq": ("output", "target_tokenizer")}


@pytest.mark.slow  # the four applications built and served (about 25 s)
def test_the_apps_manifests_give_their_models_ids_and_texts(tiny_app_models, tmp_path):
    servables = {servable.name: servable for servable in map(servable_for, tiny_app_models())}
    jobs, expected, entries = [], [], {}
    texts = [*SENTENCES, *HARD_TEXTS]
    for name, servable in servables.items():
        export, entries[name] = write_export(tmp_path / name, servable)
        model = servable.module.model
        job, want = {"export": str(export), "encode": [], "decode": []}, {}
        if name in TEXT_IDS:
            job["encode"].append({"input": "token_ids", "texts": texts})
            text_ids = getattr(model, TEXT_IDS[name])
            want["encode"] = [text_ids(tf.constant(texts)).numpy().tolist()]
        if name in TEXT_OUTPUTS:
            output, attribute = TEXT_OUTPUTS[name]
            tokenizer = getattr(model, attribute)
            rows = id_rows(tokenizer.vocabulary_size)
            job["decode"].append({"output": output, "ids": rows})
            want["decode"] = [detokenized(tokenizer, rows)]
        jobs.append(job)
        expected.append(want)
    for name, found, want in zip(servables, run_standalone(tmp_path, jobs), expected):
        for key, value in want.items():
            assert found[key] == value, name
    assert entries["sentiment"]["inputs"]["token_ids"]["pad_to_multiple"] == 16
    assert entries["sentiment"]["inputs"]["token_ids"]["replacements"] == [[LINE_BREAK, " "]]
    assert entries["name-to-color"]["inputs"]["token_ids"]["text"] == "name"
    assert entries["color-namer"]["inputs"] == {}
    assert entries["color-namer"]["outputs"]["names"]["ids"] == "tokens"
    assert entries["seq2seq"]["outputs"]["output"]["tokenizer"]["vocabulary"] == (
        "target_vocabulary.txt"
    )
    assert all(entry["parity"]["identical"] for entry in entries.values())


def test_the_manifest_names_its_files_and_needs(tokenizers, tmp_path):
    entry, files = tokenizer_manifest(text_servable(tokenizers["bpe"]))
    assert files[STANDALONE_FILE] == Path(standalone.__file__).read_text("utf-8")
    assert set(files) == {STANDALONE_FILE, "vocabulary.txt", "tokenizer.model"}
    assert entry["requires"] == ["sentencepiece"]
    assert entry["inputs"]["token_ids"]["tokenizer"] == {
        "kind": "sentencepiece",
        "vocabulary": "vocabulary.txt",
        "model": "tokenizer.model",
    }
    entry, files = tokenizer_manifest(text_servable(tokenizers["word"]), check=False)
    assert "parity" not in entry and entry["requires"] == []
    assert entry["inputs"]["token_ids"]["tokenizer"]["tables"] == "lowercase.json"
    plain = Servable(name="plain", cell=None, module=tf.Module(), serve=None, examples={})
    assert tokenizer_manifest(plain) is None
    with pytest.raises(ValueError, match="Argument `servable` must be"):
        tokenizer_manifest("not a servable")


def test_the_standalone_file_imports_the_standard_library_only():
    tree = ast.parse(Path(standalone.__file__).read_text("utf-8"))
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    roots = {name.split(".")[0] for name in imported}
    assert roots - set(sys.stdlib_module_names) == {"sentencepiece"}
    # Its constants are the package's.
    assert standalone.SPECIAL_TOKENS == vocabulary.SPECIAL_TOKENS
    assert (standalone.PAD_ID, standalone.UNK_ID, standalone.START_ID, standalone.END_ID) == (
        vocabulary.PAD_ID,
        vocabulary.UNK_ID,
        vocabulary.START_ID,
        vocabulary.END_ID,
    )
    assert (standalone.UNK_TEXT, standalone.WORD_BOUNDARY) == (UNK_TEXT, WORD_BOUNDARY)
    # tf.strings.split's whitespace is ASCII's.
    points = np.arange(1, 0x3100, dtype=np.int32)
    texts = tf.strings.unicode_encode(np.stack([np.full_like(points, 97), points], 1), "UTF-8")
    split = tf.strings.split(tf.strings.join([texts, "b"])).row_lengths().numpy() == 2
    assert {chr(p) for p in points[split]} == standalone.ASCII_WHITESPACE


@pytest.mark.parametrize(
    ("pattern", "rewrite"),
    [
        (LINE_BREAK, " "),
        (r"\s+", " "),
        (r"x*", "-"),
        (r"", "|"),
        (r"a|", "<\\0>"),
        (r"\bfo+\b", "[\\0]"),
        (r"(\w)(\d)?", "\\2\\1\\\\"),
        (r"[^\s]+$", "END"),
        (r"^\S", "^"),
        (r"(?i)br|É", "?"),
        (r"[\]a-]\d{2,}", "#"),
        (r"\x{e9}|\x41", "e"),
        (r"(?s).$", "!"),
        (r"\W+", "_"),
    ],
)
def test_re2_replacements_equal_tensorflows(pattern, rewrite):
    texts = [
        *HARD_TEXTS,
        "xaxbx",
        "foo food fooo\nfoo",
        "ÉéE é",
        "a-12 ]345 b6",
        "trailing\n",
        "line<br />break<BR>",
    ]
    expected = tf.strings.regex_replace(tf.constant(texts), pattern, rewrite).numpy()
    replacement = standalone.RE2Replacement(pattern, rewrite)
    assert [replacement(text) for text in texts] == [text.decode("utf-8") for text in expected]


@pytest.mark.parametrize(
    ("pattern", "what"),
    [
        (r"\p{L}+", "\\p"),
        (r"(?m)^a", "flags"),
        (r"[[:alpha:]]", "POSIX"),
        (r"a{,3}", "{,n}"),
        (r"(?U)a*", "flags"),
        (r"\Qa.b\E", "\\Q"),
        (r"a(?i)b", "middle"),
        (r"[a", "unterminated"),
    ],
)
def test_re2_constructs_without_a_translation_are_refused(pattern, what):
    with pytest.raises(ValueError, match=r"Argument `pattern` \(.*\) uses .*") as error:
        standalone.python_pattern(pattern)
    assert what in str(error.value) and "\n" not in str(error.value)


def test_bad_inputs_and_exports_get_one_line_errors(tokenizers, tmp_path, monkeypatch):
    export, entry = write_export(tmp_path / "export", text_servable(tokenizers["char"]))
    # A vocabulary with a line break among its tokens ships as a JSON list.
    vocabulary_file = entry["inputs"]["token_ids"]["tokenizer"]["vocabulary"]
    assert "\n" in tokenizers["char"].vocabulary and vocabulary_file == "vocabulary.json"
    text = standalone.load(export)
    cases = [
        (lambda: text.encode(b"bytes"), "Argument `texts` must be a str or a sequence of str"),
        (lambda: text.encode(["a", 3]), "Argument `texts` must hold str only, received int at"),
        (lambda: text.encode(["ok", "\ud800"]), "valid Unicode text, received a lone surrogate"),
        (lambda: text.encode("a", input="other"), "Argument `input` must be one of"),
        (lambda: text.decode([1, 2]), "Argument `ids` must be rows of integer ids"),
        (lambda: text.decode([[1.5]]), "Argument `ids` must be rows of integer ids"),
        (lambda: standalone.load(tmp_path), "Argument `directory` must hold an export's"),
    ]
    manifest = json.loads((export / "manifest.json").read_text("utf-8"))
    for name, content, message in [
        ("no-entry", {"format": 1}, "has no 'tokenizer' entry"),
        ("format", {"tokenizer": {**manifest["tokenizer"], "format": 9}}, "format 9"),
        ("partial", {"tokenizer": {"format": 1, "inputs": {"ids": {}}}}, "not a complete"),
    ]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_text(json.dumps(content), encoding="utf-8")
        cases.append((lambda name=name: standalone.load(tmp_path / name), message))
    (export / vocabulary_file).unlink()
    cases.append((lambda: standalone.load(export), "The export lacks"))
    for call, message in cases:
        with pytest.raises(ValueError) as error:
            call()
        assert message in str(error.value) and "\n" not in str(error.value), str(error.value)
    # Decoding takes integer arrays too; a batch of one row, rows of no id.
    assert text.decode(np.array([[4, 5, 3, 6]])) == detokenized(tokenizers["char"], [[4, 5, 3, 6]])
    assert text.decode(np.zeros((2, 0), np.int32)) == ["", ""]
    # A SentencePiece export without the sentencepiece package says what to install.
    export, _ = write_export(tmp_path / "pieces", text_servable(tokenizers["unigram"]))
    monkeypatch.setitem(sys.modules, "sentencepiece", None)
    with pytest.raises(ModuleNotFoundError, match="pip install sentencepiece"):
        standalone.load(export)
