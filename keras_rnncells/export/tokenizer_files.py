"""The tokenizer an app runs on its side of an id-input export (LiteRT, or
ONNX without string ops): the manifest's ``"tokenizer"`` entry and the files
it names (`tokenizer_manifest`), read by the standalone tokenizer
`keras_rnncells.text.standalone`, shipped as ``tokenizer.py``.

What the standalone tokenizer cannot compute the same way as TensorFlow
without TensorFlow is computed here, by TensorFlow's own ops over every code
point, and shipped as JSON tables: BERT's normalization of each character
(case folding, NFD, nonspacing marks removed, control and format characters
made spaces), the characters WordPiece splits around (RE2's ``\\p{P}``, ASCII
punctuation, CJK) and on (``\\s``), ICU's lower-casing of each character and
the cased and case-ignorable characters of its final-sigma rule.
"""

from __future__ import annotations

import functools
import json
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from keras_rnncells.export.onnx_text_graph import (
    MAX_BYTES_PER_WORD,
    bert_normalize,
    bert_patterns,
    character_table,
    lower,
)
from keras_rnncells.export.servable import Servable, padded_ids
from keras_rnncells.text import standalone
from keras_rnncells.text.sentence_piece import SentencePieceTokenizer
from keras_rnncells.text.tokenizers import CharTokenizer, WordPieceTokenizer, WordTokenizer
from keras_rnncells.text.vocabulary import END_ID, PAD_ID, START_ID, UNK_ID

STANDALONE_FILE = "tokenizer.py"  # the standalone tokenizer, in the version directory
SUFFIX_INDICATOR = "##"  # WordPiece's continuation prefix (BertTokenizer's default)
NOTE = (
    "The model takes token ids and gives ids: tokenizer.py (Python standard library; "
    "the sentencepiece package for a SentencePiece tokenizer) turns texts into the padded "
    "ids of each input and output ids into texts, as the in-graph tokenizer does. Load it "
    "by path (importlib.util.spec_from_file_location), then tokenizer.load().encode(texts) "
    "and .decode(ids)."
)
# What the export checks the standalone tokenizer on, besides the servable's
# examples: texts hard to tokenize alike (empty, spaces only, accents and
# case, CJK, emoji and joiners, combining marks in and out of order, RTL
# scripts, punctuation runs, control and format characters, special tokens as
# text, a word past WordPiece's 100 bytes, a Greek final sigma).
HARD_TEXTS = (
    "",
    " ",
    " \t\n\r\f\v ",
    "a gripping, beautifully acted film",
    "  A Gripping,   BEAUTIFULLY acted film!!  ",
    "Crème brûlée, naïve façade — Ångström's résumé. ÉCOLE Ça",
    "zzqxj qwxz unfathomablyxyzzy",
    "line<br />break<br>and<BR/>tab\there<br/><br  />",
    "ﬁne ＦＵＬＬＷＩＤＴＨ straße ǅ İSTANBUL ΣΊΣΥΦΟΣ ΟΔΟΣ. Σ ΑΣ'Σ Σ̈Α",
    "日本語のテキスト 中文 한국어 ㄱㅏ 𠀋𪚲",
    "😀🎉 👩‍👩‍👧 🇫🇷 👍🏽 ❤️ e\u0301 a\u0308\u0301 o\u0327\u0301 q\u0301\u0323",
    "\U0001d165\U0001d16d \U0001d16d\U0001d165 \U0001d16d\u0e31\U0001d165 x\u0f71\u0f72",
    "שלום עולם مرحبا بالعالم \u200f\u200e\u202b \u0627\u0644\u0652",
    "!!!...???---,,,;;;((()))[[[]]]{{{}}}'\"`~@#$%^&*_+=|\\/<>¿¡«»“”„‘’…–—·",
    "\x00nul\x01\x07\x1b\x7f\x85\u200b\u00ad\ufeff\u2028\u2029\u00a0\u3000end",
    "[UNK] [PAD] [START] [END] ##ing ## #",
    "NOV 21, 2026 11/21/2026 21.11.2026 2026-11-21 \ufffd",
    "supercalifragilistic" * 6 + " " + "é" * 60 + " " + "日" * 40,
)


def tokenizer_manifest(
    servable: Servable, check: bool = True
) -> tuple[dict[str, Any], dict[str, bytes | str]] | None:
    """The manifest's ``"tokenizer"`` entry for ``servable``'s id form
    (`Servable.onnx`) and the files it names, by file name (``str``: UTF-8
    text), ``tokenizer.py`` (`keras_rnncells.text.standalone`) among them, or
    ``None`` where the id form neither takes nor gives token ids for text.

    * ``entry["inputs"]``: id input name -> its string input (``"text"``),
      tokenizer, RE2 replacements, ``max_length``, ``pad_to_multiple``,
      ``add_start``, ``add_end``: from ``servable.onnx_text``.
    * ``entry["outputs"]``: string output name -> the id output it reads
      (``"ids"``) and its tokenizer: from ``servable.detokenizers`` and
      ``servable.onnx_text.detokenizers``.
    * A tokenizer: ``"kind"`` (``wordpiece``, ``sentencepiece``, ``char``,
      ``word``), ``"vocabulary"`` (a file of one token a line, named as in
      ``servable.vocabulary_files``), ``"lowercase"``, ``"tables"`` (the
      character tables computed here), ``"model"`` (a SentencePiece model).

    With ``check``, the standalone tokenizer, given these files, must give
    the same padded ids as the in-graph tokenizer on the servable's text
    examples and `HARD_TEXTS`, and the same texts as its ``detokenize`` on
    rows of every id (and ids outside the vocabulary), else a ``ValueError``;
    ``entry["parity"]`` says what was compared."""
    if not isinstance(servable, Servable):
        raise ValueError(
            f"Argument `servable` must be a keras_rnncells.export.Servable, received: {servable!r}"
        )
    front = servable.onnx_text
    detokenizers = {**servable.detokenizers, **(front.detokenizers if front else {})}
    if front is None and not detokenizers:
        return None
    files: dict[str, bytes | str] = {STANDALONE_FILE: Path(standalone.__file__).read_text("utf-8")}
    entry: dict[str, Any] = {
        "format": standalone.FORMAT,
        "module": STANDALONE_FILE,
        "inputs": {},
        "outputs": {},
    }
    if front is not None:
        entry["inputs"][id_input_name(servable)] = {
            "text": front.input_name,
            "tokenizer": tokenizer_spec(front.tokenizer, servable.vocabulary_files, files),
            "replacements": [list(pair) for pair in front.replacements],
            "max_length": front.tokenizer.max_length,
            "pad_to_multiple": front.pad_to_multiple,
            "add_start": False,
            "add_end": False,
        }
    for output, (ids, tokenizer) in detokenizers.items():
        spec = tokenizer_spec(tokenizer, servable.vocabulary_files, files)
        entry["outputs"][output] = {"ids": ids, "tokenizer": spec}
    kinds = {spec["tokenizer"]["kind"] for spec in [*entry["inputs"].values()]}
    kinds |= {spec["tokenizer"]["kind"] for spec in entry["outputs"].values()}
    entry["requires"] = ["sentencepiece"] if "sentencepiece" in kinds else []
    if check:
        entry["parity"] = check_standalone(servable, entry, files)
    entry["note"] = NOTE
    return entry, files


def id_input_name(servable: Servable) -> str:
    """The one integer input of ``servable``'s id form: its token ids."""
    _, examples = servable.onnx()
    names = [name for name, value in examples.items() if np.asarray(value).dtype.kind in "iu"]
    if len(names) != 1:
        raise ValueError(
            f"Servable {servable.name!r} has a string front end, so its id form must take one "
            f"integer input (the token ids), received inputs {sorted(examples)}"
        )
    return names[0]


def tokenizer_spec(
    tokenizer: Any, vocabulary_files: dict[str, list[str]], files: dict[str, bytes | str]
) -> dict[str, Any]:
    """The manifest's description of ``tokenizer``; the files it names are
    added to ``files`` (`file_for`): its vocabulary (one token a line,
    named as in ``vocabulary_files`` where that holds the same tokens, else
    ``vocabulary.txt``; a JSON list, ``vocabulary.json``, where a token holds
    a line break), tables, SentencePiece model."""
    vocabulary = tokenizer.vocabulary
    if any("\n" in token for token in vocabulary):  # a token a line cannot hold it
        name = file_for(files, "vocabulary.json", json.dumps(vocabulary))
    else:
        named = (n for n, tokens in vocabulary_files.items() if list(tokens) == vocabulary)
        text = "".join(f"{token}\n" for token in vocabulary)
        name = file_for(files, next(named, "vocabulary.txt"), text)
    spec: dict[str, Any] = {"kind": kind_of(tokenizer), "vocabulary": name}
    if isinstance(tokenizer, SentencePieceTokenizer):
        prefix = name.removesuffix(".txt").removesuffix("vocabulary")
        return {**spec, "model": file_for(files, f"{prefix}tokenizer.model", tokenizer.model)}
    spec["lowercase"] = tokenizer.lowercase
    if spec["kind"] == "wordpiece":
        tables = "wordpiece_lowercase.json" if tokenizer.lowercase else "wordpiece_cased.json"
        return {
            **spec,
            "tables": file_for(files, tables, json.dumps(wordpiece_tables(tokenizer.lowercase))),
            "max_bytes_per_word": MAX_BYTES_PER_WORD,
            "suffix_indicator": SUFFIX_INDICATOR,
        }
    if tokenizer.lowercase:
        spec["tables"] = file_for(files, "lowercase.json", json.dumps(lowercase_tables()))
    return spec


def kind_of(tokenizer: Any) -> str:
    """The standalone tokenizer's name for ``tokenizer``'s class."""
    if isinstance(tokenizer, WordPieceTokenizer):
        return "wordpiece"
    if isinstance(tokenizer, SentencePieceTokenizer):
        return "sentencepiece"
    kinds = {CharTokenizer: "char", WordTokenizer: "word"}
    if type(tokenizer) not in kinds:
        raise ValueError(
            "Argument `tokenizer` must be a WordPieceTokenizer, SentencePieceTokenizer, "
            f"CharTokenizer or WordTokenizer for the standalone tokenizer, received: {tokenizer!r}"
        )
    return kinds[type(tokenizer)]


def file_for(files: dict[str, bytes | str], name: str, data: bytes | str) -> str:
    """The name of ``data`` in ``files``: a file already holding it, else
    ``name`` (numbered before its suffix while taken), added."""
    same = next((existing for existing, held in files.items() if held == data), None)
    if same is not None:
        return same
    stem, dot, suffix = name.rpartition(".")
    index = 1
    while name in files:
        index += 1
        name = f"{stem}_{index}{dot}{suffix}"
    files[name] = data
    return name


# -- character tables, computed by TensorFlow ----------------------------------------


@functools.cache
def code_points() -> np.ndarray:
    """Every Unicode scalar value (surrogates left out), int32."""
    points = np.arange(0x110000, dtype=np.int32)
    return points[(points < 0xD800) | (points >= 0xE000)]


@functools.cache
def characters() -> tf.Tensor:
    """`code_points` as one-character UTF-8 strings."""
    return tf.strings.unicode_encode(tf.constant(code_points()[:, None]), "UTF-8")


def matching(pattern: str) -> list[list[int]]:
    """The code points that RE2 ``pattern`` matches in full, as ranges."""
    matched = tf.strings.regex_full_match(characters(), pattern).numpy()
    return point_ranges(code_points()[matched])


def point_ranges(points: Iterable[int]) -> list[list[int]]:
    """Sorted code points as ``[first, last]`` runs."""
    ranges: list[list[int]] = []
    for point in sorted(int(p) for p in points):
        if ranges and ranges[-1][1] == point - 1:
            ranges[-1][1] = point
        else:
            ranges.append([point, point])
    return ranges


def map_runs(table: tuple[tuple[str, ...], tuple[str, ...]]) -> list[list[Any]]:
    """A character table (`onnx_text_graph.character_table`) as the runs of
    `standalone.character_runs`: consecutive code points that map to the
    same string, or each to a character the same distance away."""
    runs: list[list[Any]] = []
    for source, target in zip(*table):
        point = ord(source)
        if runs and runs[-1][1] == point - 1:
            first, last, value = runs[-1]
            delta = ord(target) - point if len(target) == 1 else None
            if value == target or (isinstance(value, int) and value == delta):
                runs[-1][1] = point
                continue
            if first == last and isinstance(value, str) and len(value) == 1 and delta is not None:
                if ord(value) - first == delta:
                    runs[-1][1:] = [point, delta]
                    continue
        runs.append([point, point, target])
    return runs


@functools.cache
def wordpiece_tables(lowercase: bool) -> dict[str, Any]:
    """The tables of `standalone.WordPieceTokenizer`: ``whitespace`` (RE2's
    ``\\s``) and ``delimiters`` (the split characters BERT keeps as words),
    and with ``lowercase`` BERT's normalization of each character (``map``,
    Hangul syllables left to the arithmetic of `standalone.hangul_jamo`), the
    combining marks it leaves (``combining``: their combining classes, by
    ``unicodedata``) and the characters it deletes whose decomposition held
    a starter (``breaks``); without, ``controls`` (``\\p{Cc}|\\p{Cf}``)."""
    _, kept = bert_patterns()
    tables: dict[str, Any] = {"whitespace": matching(r"\s"), "delimiters": matching(kept)}
    if not lowercase:
        return {**tables, "controls": matching(r"\p{Cc}|\p{Cf}")}
    sources, targets = character_table(bert_normalize)
    pairs = [
        (source, target)
        for source, target in zip(sources, targets)
        if standalone.hangul_jamo(source) != target
    ]
    hangul = [chr(standalone.HANGUL_FIRST + i) for i in range(standalone.HANGUL_COUNT)]
    if len(sources) - len(pairs) != len(hangul):  # not every syllable as the arithmetic has it
        raise RuntimeError("TensorFlow's NFD of the Hangul syllables is not Unicode's arithmetic")
    mapped = dict(zip(sources, targets))
    marks = {c for target in targets for c in target if unicodedata.combining(c)}
    marks |= {c for c in map(chr, range(0x110000)) if unicodedata.combining(c) and c not in mapped}
    deleted = [source for source, target in zip(sources, targets) if not target]
    decomposed = tf.strings.unicode_split(
        normalize_nfd(tf.constant(deleted or [""])), "UTF-8"
    ).to_list()
    breaks = [
        ord(source)
        for source, pieces in zip(deleted, decomposed)
        if any(unicodedata.combining(piece.decode("utf-8")) == 0 for piece in pieces)
    ]
    return {
        **tables,
        "map": map_runs(tuple(zip(*pairs))),
        "combining": [[ord(mark), unicodedata.combining(mark)] for mark in sorted(marks)],
        "breaks": point_ranges(breaks),
    }


def normalize_nfd(strings: tf.Tensor) -> tf.Tensor:
    """BERT's case folding and NFD, before its marks are removed."""
    import tensorflow_text as text

    return text.normalize_utf8(text.case_fold_utf8(strings), "NFD")


@functools.cache
def lowercase_tables() -> dict[str, Any]:
    """The tables of `standalone.LowerCase`: ``tf.strings.lower`` of each
    character (``map``), and the cased and case-ignorable characters of its
    final-sigma rule, found by lower-casing ``"<c>Σ"`` (final after a cased
    character) and ``"A<c>Σ"`` (final after a cased or case-ignorable one)."""
    strings = characters()
    final = standalone.FINAL_SIGMA.encode("utf-8")

    def final_sigma(prefix: str) -> np.ndarray:
        lowered = lower(tf.strings.join([prefix, strings, standalone.GREEK_CAPITAL_SIGMA]))
        return np.array([text.endswith(final) for text in lowered.numpy()])

    cased = final_sigma("")
    ignorable = final_sigma("A") & ~cased
    return {
        "map": map_runs(character_table(lower)),
        "cased": point_ranges(code_points()[cased]),
        "case_ignorable": point_ranges(code_points()[ignorable]),
    }


# -- the check -----------------------------------------------------------------------


def check_standalone(
    servable: Servable, entry: dict[str, Any], files: dict[str, bytes | str]
) -> dict[str, Any]:
    """The standalone tokenizer of ``entry`` and ``files`` against the
    servable's tokenizers (see `tokenizer_manifest`): what was compared, or
    a ``ValueError`` naming the first difference."""

    def read(name: str) -> bytes:
        data = files[name]
        return data.encode("utf-8") if isinstance(data, str) else data

    text = standalone.Text.from_entry(entry, read)
    front = servable.onnx_text
    checked: dict[str, Any] = {"texts": 0, "id_rows": 0}
    if front is not None:
        examples = np.asarray(servable.examples[front.input_name]).reshape(-1)
        texts = [t.decode() if isinstance(t, bytes) else str(t) for t in examples]
        texts += HARD_TEXTS
        if front.tokenizer.max_length is not None:  # one token past it, at least
            texts.append(" ".join(["a", "b", "c"] * front.tokenizer.max_length))
        (name,) = entry["inputs"]
        expected = in_graph_ids(front, texts)
        found = text.encoders[name].encode(texts)
        for row, (want, got) in enumerate(zip(expected, found)):
            if want != got:
                raise ValueError(
                    f"The standalone tokenizer of {servable.name!r} gives other ids than "
                    f"TensorFlow for {texts[row]!r}: {got} instead of {want}"
                )
        checked["texts"] = len(texts)
    detokenizers = {**servable.detokenizers, **(front.detokenizers if front else {})}
    for output, (_, tokenizer) in detokenizers.items():
        rows = id_rows(tokenizer.vocabulary_size)
        expected = [t.decode("utf-8") for t in tokenizer.detokenize(tf.constant(rows)).numpy()]
        found = text.decoders[output].decode(rows)
        for row, (want, got) in enumerate(zip(expected, found)):
            if want != got:
                raise ValueError(
                    f"The standalone tokenizer of {servable.name!r} detokenizes {rows[row]} "
                    f"as {got!r}, TensorFlow as {want!r}"
                )
        checked["id_rows"] += len(rows)
    return {**checked, "identical": True}


def in_graph_ids(front: Any, texts: list[str]) -> list[list[int]]:
    """The padded ids that ``front``'s tokenizer and padding give ``texts``
    in TensorFlow (the id form's input)."""
    strings = tf.constant(texts, tf.string)
    for pattern, rewrite in front.replacements:
        strings = tf.strings.regex_replace(strings, pattern, rewrite)
    ragged = front.tokenizer.tokenize(strings)
    return padded_ids(ragged, front.tokenizer.max_length, front.pad_to_multiple).numpy().tolist()


def id_rows(vocabulary_size: int, seed: int = 0) -> list[list[int]]:
    """Rows of ids to detokenize: every id of the vocabulary and a few outside
    it (-1, the size), the special ids in and out of place, an empty row."""
    rng = np.random.default_rng(seed)
    every = list(range(vocabulary_size))
    rows = [
        [i for i in every if i != END_ID] + [END_ID, 4],
        [START_ID, *rng.integers(4, vocabulary_size, 6).tolist(), END_ID, PAD_ID],
        [4, PAD_ID, UNK_ID, START_ID, -1, vocabulary_size, END_ID, END_ID],
        [END_ID, 4, 5],
        [],
        *rng.integers(-1, vocabulary_size + 1, (8, 9)).tolist(),
    ]
    width = max(len(row) for row in rows)
    return [row + [PAD_ID] * (width - len(row)) for row in rows]
