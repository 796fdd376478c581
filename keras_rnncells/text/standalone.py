"""Text to token ids and ids to text without TensorFlow: the tokenizers of an
exported model, in plain Python.

An export whose model takes token ids (a LiteRT ``.tflite`` file, an id-input
ONNX model) ships this file as ``tokenizer.py`` next to its ``manifest.json``,
whose ``"tokenizer"`` entry holds the settings, and the files it names (the
vocabularies, a SentencePiece model, character tables). The app turns its
texts into exactly the padded ids the in-graph tokenizer gives the model, and
the model's output ids back into text::

    import importlib.util

    spec = importlib.util.spec_from_file_location("tokenizer", "EXPORT/sentiment/1/tokenizer.py")
    tokenizer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tokenizer)
    text = tokenizer.load()  # the manifest.json next to tokenizer.py
    ids = text.encode(["a gripping film", ""])  # [[...], [0, ...]]: int rows, padded
    # names = text.decode(output_ids)  # for a model that writes text

Only the Python standard library is imported, and, for a SentencePiece
tokenizer only, the ``sentencepiece`` package (``pip install sentencepiece``),
the library TensorFlow's op runs. Nothing of TensorFlow, NumPy or
keras_rnncells: the file is read by path from the export.

What it reproduces, for valid Unicode text (a ``str``):

* the RE2 replacements the app applies first (``<br />`` made a space),
  translated to Python's ``re`` with RE2's meaning of ``\\s``, ``\\d``, ``\\w``,
  ``\\b`` and ``$``, and RE2's way of replacing empty matches;
* the tokenizer: WordPiece (BERT's normalization, case folding and accents
  removed, read from a table that TensorFlow computed at export; words split
  on whitespace, around each punctuation mark and CJK character; greedy
  longest-match subwords, a word that cannot be split or longer than 100
  bytes one ``[UNK]``), SentencePiece (the model's own normalization and
  segmentation), characters or whitespace-separated words (lower-cased from
  the exporter's table when the tokenizer lower-cases, Greek final sigma
  included);
* truncation to ``max_length``, ``[START]``/``[END]`` where the model takes
  them, padding with ``[PAD]`` (id 0) to the longest row, at least one column,
  rounded up to ``pad_to_multiple``;
* detokenization: each row read up to its first ``[END]``, without ``[PAD]``
  and ``[START]``, U+FFFD for ``[UNK]`` and unknown ids, the tokens joined as
  the tokenizer joins them.

Where it can differ from TensorFlow: a WordPiece tokenizer that does not
lower-case normalizes to NFC with Python's ``unicodedata``, whose Unicode
version may differ from TensorFlow's ICU for recently assigned characters;
and a SentencePiece model segments a text that two segmentations score alike
(a long run of one character, with pieces of that character of several
lengths) as the installed ``sentencepiece`` chooses, which need not be the
choice of the version tensorflow-text bundles (not met on SST-2, nor on
20,000 texts of repeated characters with SST-2's 8,000-piece models).
"""

from __future__ import annotations

import bisect
import json
import operator
import os
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

# The special tokens of every vocabulary, ids 0-3 (keras_rnncells.text.vocabulary).
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[START]", "[END]")
PAD_ID, UNK_ID, START_ID, END_ID = range(len(SPECIAL_TOKENS))
UNK_TEXT = "\ufffd"  # what detokenization writes for [UNK] and unknown ids
WORD_BOUNDARY = "\u2581"  # SentencePiece's mark before each word
MANIFEST = "manifest.json"
MANIFEST_KEY = "tokenizer"  # the entry of manifest.json this file reads
FORMAT = 1  # the version of that entry's layout
KINDS = ("wordpiece", "sentencepiece", "char", "word")
# tf.strings.split's whitespace (absl::ascii_isspace), the WordTokenizer's separators.
ASCII_WHITESPACE = frozenset(" \t\n\v\f\r")
GREEK_CAPITAL_SIGMA, SMALL_SIGMA, FINAL_SIGMA = "\u03a3", "\u03c3", "\u03c2"
# Hangul syllables decompose by arithmetic (Unicode 3.12), not through a table.
HANGUL_FIRST, HANGUL_COUNT, HANGUL_T_COUNT, HANGUL_VT_COUNT = 0xAC00, 11172, 28, 588


# -- the manifest --------------------------------------------------------------------


def load(directory: str | os.PathLike | None = None) -> Text:
    """The tokenizers of the export in ``directory`` (default: the directory
    of this file, where an export puts it): its ``manifest.json``'s
    ``"tokenizer"`` entry and the files it names."""
    directory = Path(__file__).resolve().parent if directory is None else Path(directory)
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(
            f"Argument `directory` must hold an export's {MANIFEST}, received "
            f"{str(directory)!r} ({error})"
        ) from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get(MANIFEST_KEY), dict):
        raise ValueError(
            f"{directory / MANIFEST} has no {MANIFEST_KEY!r} entry: this export's model "
            "does not read or write text"
        )

    def read(name: str) -> bytes:
        path = directory / name
        if Path(name).name != name:
            raise ValueError(f"{MANIFEST} names a file outside the export: {name!r}")
        try:
            return path.read_bytes()
        except OSError as error:
            raise ValueError(f"The export lacks {path} ({error.strerror})") from None

    return Text.from_entry(manifest[MANIFEST_KEY], read)


class Text:
    """An export's text ends: ``encoders`` (id input name -> `TextEncoder`)
    and ``decoders`` (string output name -> `TextDecoder`)."""

    def __init__(self, encoders: dict[str, TextEncoder], decoders: dict[str, TextDecoder]):
        self.encoders = dict(encoders)
        self.decoders = dict(decoders)

    @classmethod
    def from_entry(cls, entry: dict[str, Any], read: Callable[[str], bytes]) -> Text:
        """The text ends of a manifest's ``"tokenizer"`` ``entry``, its files
        read by ``read(name) -> bytes``."""
        if not isinstance(entry, dict) or entry.get("format") != FORMAT:
            found = entry.get("format") if isinstance(entry, dict) else entry
            raise ValueError(
                f"Argument `entry` must be a tokenizer entry of format {FORMAT}, "
                f"received format {found!r}: use the tokenizer.py of the same export"
            )
        tokenizers: dict[str, Tokenizer] = {}

        def tokenizer(spec: dict[str, Any]) -> Tokenizer:
            key = json.dumps(spec, sort_keys=True)  # one object per distinct tokenizer
            if key not in tokenizers:
                tokenizers[key] = Tokenizer.from_spec(spec, read)
            return tokenizers[key]

        try:
            return cls(*cls._ends(entry, tokenizer))
        except (KeyError, TypeError, AttributeError) as error:
            raise ValueError(
                f"Argument `entry` is not a complete tokenizer entry ({type(error).__name__}: "
                f"{error}): use the manifest.json and tokenizer.py of one export"
            ) from None

    @staticmethod
    def _ends(
        entry: dict[str, Any], tokenizer: Callable[[dict[str, Any]], Tokenizer]
    ) -> tuple[dict[str, TextEncoder], dict[str, TextDecoder]]:
        encoders = {
            name: TextEncoder(
                tokenizer(spec["tokenizer"]),
                replacements=[tuple(pair) for pair in spec.get("replacements", ())],
                max_length=spec.get("max_length"),
                pad_to_multiple=spec.get("pad_to_multiple", 1),
                add_start=spec.get("add_start", False),
                add_end=spec.get("add_end", False),
                text_name=spec.get("text"),
            )
            for name, spec in entry.get("inputs", {}).items()
        }
        decoders = {
            name: TextDecoder(tokenizer(spec["tokenizer"]), ids_name=spec.get("ids"))
            for name, spec in entry.get("outputs", {}).items()
        }
        return encoders, decoders

    def encode(self, texts: str | Sequence[str], input: str | None = None) -> list[list[int]]:
        """The padded ids of ``texts`` for the model's id input ``input``
        (optional where the model has one): `TextEncoder.encode`."""
        return _pick("input", input, self.encoders).encode(texts)

    def decode(self, ids: Iterable[Iterable[int]], output: str | None = None) -> list[str]:
        """The texts of the id rows ``ids`` for the string output ``output``
        (optional where the model has one): `TextDecoder.decode`."""
        return _pick("output", output, self.decoders).decode(ids)


def _pick(argument: str, name: str | None, choices: dict[str, Any]) -> Any:
    if name is None and len(choices) == 1:
        return next(iter(choices.values()))
    if name not in choices:
        wanted = f"one of {sorted(choices)}" if choices else "absent: this model has none"
        raise ValueError(f"Argument `{argument}` must be {wanted}, received: {name!r}")
    return choices[name]


# -- from text to ids, and back ------------------------------------------------------


class TextEncoder:
    """Texts to the padded ids of a model's id input.

    Args:
        tokenizer: a `Tokenizer`.
        replacements: ``(RE2 pattern, rewrite)`` pairs applied in order to
            each text first (`RE2Replacement`).
        max_length: the most ids a row keeps, ``[START]`` and ``[END]``
            included (None: all).
        pad_to_multiple: the columns are rounded up to a multiple of it.
        add_start, add_end: each row begins with ``[START]``, ends with ``[END]``.
        text_name: the string input the serving signature reads these texts from.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        replacements: Sequence[tuple[str, str]] = (),
        max_length: int | None = None,
        pad_to_multiple: int = 1,
        add_start: bool = False,
        add_end: bool = False,
        text_name: str | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.replacements = [RE2Replacement(pattern, rewrite) for pattern, rewrite in replacements]
        for name, value in (("add_start", add_start), ("add_end", add_end)):
            if not isinstance(value, bool):
                raise ValueError(f"Argument `{name}` must be a bool, received: {value!r}")
        minimum = max(1, add_start + add_end)
        if max_length is not None and (not _is_int(max_length) or max_length < minimum):
            raise ValueError(
                f"Argument `max_length` must be None or an int >= {minimum} (room for the "
                f"[START] and [END] tokens asked for), received: {max_length!r}"
            )
        if not _is_int(pad_to_multiple) or pad_to_multiple < 1:
            raise ValueError(
                f"Argument `pad_to_multiple` must be an int >= 1, received: {pad_to_multiple!r}"
            )
        self.max_length = max_length
        self.pad_to_multiple = pad_to_multiple
        self.add_start = add_start
        self.add_end = add_end
        self.text_name = text_name

    def tokenize(self, texts: str | Sequence[str]) -> list[list[int]]:
        """The ids of each text's tokens, after the replacements: unpadded,
        untruncated, without ``[START]`` and ``[END]``. A ``str`` is a batch
        of one."""
        rows = []
        for text in _texts(texts):
            for replacement in self.replacements:
                text = replacement(text)
            rows.append(self.tokenizer.ids(text))
        return rows

    def encode(self, texts: str | Sequence[str]) -> list[list[int]]:
        """The ids the model takes for ``texts`` (a ``str``: a batch of one):
        one row per text, each truncated to ``max_length`` (with ``[START]``
        first and ``[END]`` last where asked), padded with ``PAD_ID`` to the
        longest row (at least one column), the columns rounded up to a
        multiple of ``pad_to_multiple``. No text: ``[]`` (TensorFlow's
        ``(0, pad_to_multiple)`` tensor)."""
        room = None if self.max_length is None else self.max_length - self.add_start - self.add_end
        start, end = [START_ID] * self.add_start, [END_ID] * self.add_end
        rows = [start + row[:room] + end for row in self.tokenize(texts)]
        longest = max([1, *(len(row) for row in rows)])
        width = -(-longest // self.pad_to_multiple) * self.pad_to_multiple
        return [row + [PAD_ID] * (width - len(row)) for row in rows]


class TextDecoder:
    """A model's output ids to texts, as its tokenizer's ``detokenize``.

    Args:
        tokenizer: a `Tokenizer`.
        ids_name: the id output of the model that this string output reads.
    """

    def __init__(self, tokenizer: Tokenizer, ids_name: str | None = None) -> None:
        self.tokenizer = tokenizer
        self.ids_name = ids_name

    def decode(self, ids: Iterable[Iterable[int]]) -> list[str]:
        """The text of each row of ``ids`` (rows of ints, a list of lists or
        a 2-D integer array): the row up to its first ``END_ID``, without
        ``PAD_ID`` and ``START_ID``, each other id's token (U+FFFD for
        ``UNK_ID`` and ids outside the vocabulary), joined."""
        try:
            rows = [[operator.index(value) for value in row] for row in ids]
        except TypeError:
            raise ValueError(
                "Argument `ids` must be rows of integer ids, shape (batch, length), "
                f"received: {_preview(ids)}"
            ) from None
        texts = []
        for row in rows:
            if END_ID in row:
                row = row[: row.index(END_ID)]
            tokens = [self.tokenizer.token_text(i) for i in row if i not in (PAD_ID, START_ID)]
            texts.append(self.tokenizer.join(tokens))
        return texts


def _texts(texts: Any) -> list[str]:
    """``texts`` as a list of str (a str: a batch of one), checked."""
    if isinstance(texts, str):
        texts = [texts]
    if isinstance(texts, (bytes, dict)) or not isinstance(texts, Iterable):
        raise ValueError(
            f"Argument `texts` must be a str or a sequence of str, received: {_preview(texts)}"
        )
    texts = list(texts)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(
                f"Argument `texts` must hold str only, received {type(text).__name__} at "
                f"index {index}: {_preview(text)}"
            )
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(
                f"Argument `texts` must hold valid Unicode text, received a lone surrogate "
                f"at index {index}: {_preview(text)}"
            ) from None
    return texts


def _preview(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# -- the tokenizers ------------------------------------------------------------------


class Tokenizer:
    """A tokenizer: text to token ids (`ids`), tokens to text (`token_text`,
    `join`). `from_spec` builds the one a manifest describes."""

    def __init__(self, vocabulary: list[str]) -> None:
        self.vocabulary = check_vocabulary(vocabulary)
        self.token_ids = {token: index for index, token in enumerate(self.vocabulary)}
        self.texts = [UNK_TEXT if i == UNK_ID else token for i, token in enumerate(vocabulary)]

    @staticmethod
    def from_spec(spec: dict[str, Any], read: Callable[[str], bytes]) -> Tokenizer:
        """The tokenizer of a manifest's tokenizer ``spec``, its files read by ``read``."""
        kind = spec.get("kind") if isinstance(spec, dict) else None
        if kind not in KINDS:
            raise ValueError(f"Argument `spec` must have a kind of {KINDS}, received: {spec!r}")
        vocabulary = read_vocabulary(read(spec["vocabulary"]), spec["vocabulary"])
        tables = json.loads(read(spec["tables"]).decode("utf-8")) if spec.get("tables") else {}
        if kind == "wordpiece":
            return WordPieceTokenizer(
                vocabulary,
                spec["lowercase"],
                tables,
                spec.get("max_bytes_per_word", 100),
                spec.get("suffix_indicator", "##"),
            )
        if kind == "sentencepiece":
            return SentencePieceTokenizer(vocabulary, read(spec["model"]))
        lower = LowerCase(tables) if spec.get("lowercase") else None
        return (CharTokenizer if kind == "char" else WordTokenizer)(vocabulary, lower)

    def ids(self, text: str) -> list[int]:
        """The ids of the tokens of ``text``; a token outside the vocabulary is ``UNK_ID``."""
        get = self.token_ids.get
        return [get(token, UNK_ID) for token in self.tokens(text)]

    def tokens(self, text: str) -> list[str]:
        """The tokens of ``text``."""
        raise NotImplementedError

    def token_text(self, token_id: int) -> str:
        """What detokenization writes for ``token_id``."""
        return self.texts[token_id] if 0 <= token_id < len(self.texts) else UNK_TEXT

    def join(self, tokens: list[str]) -> str:
        """The text of the token texts of one row."""
        raise NotImplementedError


class CharTokenizer(Tokenizer):
    """Tokens are the characters (code points), lower-cased first by ``lower``
    (a `LowerCase`) where given."""

    def __init__(self, vocabulary: list[str], lower: LowerCase | None = None) -> None:
        super().__init__(vocabulary)
        self.lower = lower

    def tokens(self, text: str) -> list[str]:
        return list(self.lower(text) if self.lower else text)

    def join(self, tokens: list[str]) -> str:
        return "".join(tokens)


class WordTokenizer(CharTokenizer):
    """Tokens are the runs of characters between ASCII whitespace
    (``tf.strings.split``'s), lower-cased first by ``lower`` where given."""

    def tokens(self, text: str) -> list[str]:
        text = self.lower(text) if self.lower else text
        words, word = [], []
        for character in text:
            if character in ASCII_WHITESPACE:
                if word:
                    words.append("".join(word))
                    word = []
            else:
                word.append(character)
        if word:
            words.append("".join(word))
        return words

    def join(self, tokens: list[str]) -> str:
        return " ".join(tokens)


class WordPieceTokenizer(Tokenizer):
    """BERT's tokenization as tensorflow-text's ``BertTokenizer`` does it.

    With ``lowercase``: each character normalized through ``tables["map"]``
    (case folding, NFD, accents and other nonspacing marks removed, control
    and format characters made spaces; computed by TensorFlow at export),
    the combining marks that remain put in canonical order; without: NFC
    (``unicodedata``) and the control and format characters
    (``tables["controls"]``) made spaces. Then words: runs of characters
    between whitespace (``tables["whitespace"]``), each punctuation mark
    and CJK character (``tables["delimiters"]``) a word of its own. Each word
    is split greedily into the longest subwords of the vocabulary
    (continuations prefixed ``suffix_indicator``); a word that cannot be, or
    longer than ``max_bytes_per_word`` UTF-8 bytes, is one ``[UNK]``.
    """

    def __init__(
        self,
        vocabulary: list[str],
        lowercase: bool,
        tables: dict[str, Any],
        max_bytes_per_word: int = 100,
        suffix_indicator: str = "##",
    ) -> None:
        super().__init__(vocabulary)
        self.lowercase = lowercase
        self.max_bytes_per_word = max_bytes_per_word
        self.suffix_indicator = suffix_indicator
        self.whitespace = RangeSet(tables["whitespace"])
        self.delimiters = RangeSet(tables["delimiters"])
        if lowercase:
            self.normalize = CharacterMap(tables["map"], tables["combining"], tables["breaks"])
        else:
            controls = RangeSet(tables["controls"])
            self.normalize = lambda text: "".join(
                " " if c in controls else c for c in unicodedata.normalize("NFC", text)
            )

    def tokens(self, text: str) -> list[str]:
        pieces: list[str] = []
        for word in self.words(self.normalize(text)):
            pieces.extend(self.subwords(word))
        return pieces

    def words(self, text: str) -> list[str]:
        """``text`` split on whitespace runs and around each delimiter."""
        words, word = [], []
        for character in text:
            if character in self.whitespace or character in self.delimiters:
                if word:
                    words.append("".join(word))
                    word = []
                if character not in self.whitespace:
                    words.append(character)
            else:
                word.append(character)
        if word:
            words.append("".join(word))
        return words

    def subwords(self, word: str) -> list[str]:
        """The greedy longest-match subwords of ``word``, or ``[[UNK]]``."""
        unknown = [self.vocabulary[UNK_ID]]
        if len(word.encode("utf-8")) > self.max_bytes_per_word:
            return unknown
        pieces, start = [], 0
        while start < len(word):
            prefix = self.suffix_indicator if start else ""
            for end in range(len(word), start, -1):
                piece = prefix + word[start:end]
                if piece in self.token_ids:
                    pieces.append(piece)
                    start = end
                    break
            else:
                return unknown
        return pieces

    def join(self, tokens: list[str]) -> str:
        return re.sub(f"(^| ){re.escape(self.suffix_indicator)}", "", " ".join(tokens))


class SentencePieceTokenizer(Tokenizer):
    """The pieces of a SentencePiece ``model`` (its serialized bytes), run by
    the ``sentencepiece`` package without sampling; detokenized from the
    ``vocabulary`` (its pieces), each word boundary a space, the first dropped."""

    def __init__(self, vocabulary: list[str], model: bytes) -> None:
        super().__init__(vocabulary)
        try:
            import sentencepiece
        except ModuleNotFoundError:
            raise ModuleNotFoundError(
                "This export's tokenizer is a SentencePiece model, which needs the "
                "sentencepiece package: pip install sentencepiece",
                name="sentencepiece",
            ) from None
        self.processor = sentencepiece.SentencePieceProcessor()
        self.processor.LoadFromSerializedProto(model)
        if self.processor.GetPieceSize() != len(vocabulary):
            raise ValueError(
                f"The SentencePiece model has {self.processor.GetPieceSize()} pieces, its "
                f"vocabulary file {len(vocabulary)}: they are not from the same export"
            )

    def ids(self, text: str) -> list[int]:
        return list(self.processor.EncodeAsIds(text))

    def tokens(self, text: str) -> list[str]:
        return [self.vocabulary[i] for i in self.ids(text)]

    def join(self, tokens: list[str]) -> str:
        text = "".join(tokens).replace(WORD_BOUNDARY, " ")
        return text[1:] if text.startswith(" ") else text


def check_vocabulary(vocabulary: list[str]) -> list[str]:
    """``vocabulary`` if it is a list of unique non-empty strings beginning
    with `SPECIAL_TOKENS`, else a ``ValueError``."""
    if (
        not isinstance(vocabulary, list)
        or not all(isinstance(token, str) and token for token in vocabulary)
        or tuple(vocabulary[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS
        or len(set(vocabulary)) != len(vocabulary)
    ):
        raise ValueError(
            "Argument `vocabulary` must be a list of unique non-empty strings beginning with "
            f"{list(SPECIAL_TOKENS)}, received: {_preview(vocabulary)}"
        )
    return vocabulary


def read_vocabulary(data: bytes, name: str = "vocabulary.txt") -> list[str]:
    """The tokens of the bytes of the vocabulary file ``name``: UTF-8, one
    token a line, or, for a ``.json`` file (tokens with line breaks), a
    JSON list."""
    text = data.decode("utf-8")
    if name.endswith(".json"):
        return check_vocabulary(json.loads(text))
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return check_vocabulary(lines)


# -- character tables ------------------------------------------------------------------


class RangeSet:
    """Characters whose code points lie in ``ranges``: sorted, disjoint
    ``[first, last]`` pairs."""

    def __init__(self, ranges: Sequence[Sequence[int]]) -> None:
        self.firsts = [first for first, _ in ranges]
        self.lasts = [last for _, last in ranges]

    def __contains__(self, character: str) -> bool:
        point = ord(character)
        index = bisect.bisect_right(self.firsts, point) - 1
        return index >= 0 and point <= self.lasts[index]


def character_runs(runs: Sequence[Sequence[Any]]) -> dict[str, str]:
    """A per-character map from its runs ``[first, last, value]``: code points
    ``first..last`` map to the string ``value``, or, for an int ``value``, each
    to the character ``value`` code points further."""
    mapping = {}
    for first, last, value in runs:
        for point in range(first, last + 1):
            mapping[chr(point)] = chr(point + value) if isinstance(value, int) else value
    return mapping


class CharacterMap:
    """Text mapped character by character (``runs``: `character_runs`;
    Hangul syllables to their jamo), then each run of combining marks
    (``combining``: ``[code point, combining class]`` pairs, the marks that
    the map leaves) put in canonical order, as NFD orders them: stably by
    combining class. ``breaks``: ranges of the characters that the map deletes
    but whose decomposition held a starter, which ends a run of marks."""

    def __init__(
        self,
        runs: Sequence[Sequence[Any]],
        combining: Sequence[Sequence[int]] = (),
        breaks: Sequence[Sequence[int]] = (),
    ) -> None:
        self.mapping = character_runs(runs)
        self.combining = {chr(point): value for point, value in combining}
        self.breaks = RangeSet(breaks)

    def __call__(self, text: str) -> str:
        output: list[str] = []
        marks: list[str] = []
        get, combining = self.mapping.get, self.combining

        def flush() -> None:
            if marks:
                output.extend(sorted(marks, key=combining.__getitem__))
                marks.clear()

        for character in text:
            mapped = get(character)
            if mapped is None:
                mapped = hangul_jamo(character) or character
            elif not mapped and character in self.breaks:
                flush()
            for piece in mapped:
                if piece in combining:
                    marks.append(piece)
                else:
                    flush()
                    output.append(piece)
        flush()
        return "".join(output)


def hangul_jamo(character: str) -> str | None:
    """The canonical decomposition of a Hangul syllable, else None."""
    index = ord(character) - HANGUL_FIRST
    if not 0 <= index < HANGUL_COUNT:
        return None
    lead = chr(0x1100 + index // HANGUL_VT_COUNT)
    vowel = chr(0x1161 + index % HANGUL_VT_COUNT // HANGUL_T_COUNT)
    tail = index % HANGUL_T_COUNT
    return lead + vowel + (chr(0x11A7 + tail) if tail else "")


class LowerCase:
    """ICU's lower-casing (``tf.strings.lower(encoding="utf-8")``): each
    character through ``tables["map"]`` (`character_runs`), and a capital
    sigma made final (ς) where it ends a word: preceded by a cased letter
    and not followed by one, case-ignorable characters skipped both ways
    (``tables["cased"]``, ``tables["case_ignorable"]``: ranges). As
    TensorFlow's, it drops a text's first NUL (U+0000) and all after it."""

    def __init__(self, tables: dict[str, Any]) -> None:
        self.mapping = character_runs(tables["map"])
        self.cased = RangeSet(tables["cased"])
        self.ignorable = RangeSet(tables["case_ignorable"])

    def __call__(self, text: str) -> str:
        text = text.split("\x00", 1)[0]  # TensorFlow's lower-casing ends a text at a NUL
        get = self.mapping.get
        return "".join(
            self.sigma(text, index)
            if character == GREEK_CAPITAL_SIGMA
            else get(character, character)
            for index, character in enumerate(text)
        )

    def sigma(self, text: str, index: int) -> str:
        """The lower case of the capital sigma at ``index`` of ``text``."""
        final = self.cased_next(text, index, -1) and not self.cased_next(text, index, 1)
        return FINAL_SIGMA if final else SMALL_SIGMA

    def cased_next(self, text: str, index: int, step: int) -> bool:
        """Whether the first character from ``index`` on in direction
        ``step`` that is not case-ignorable is cased."""
        index += step
        while 0 <= index < len(text):
            character = text[index]
            if character not in self.ignorable:
                return character in self.cased
            index += step
        return False


# -- RE2 replacements ------------------------------------------------------------------

_ASCII_WORD = "0-9A-Za-z_"
# RE2's Perl classes (ASCII) as Python class contents: (outside a class, inside one).
_CLASS_ESCAPES = {
    "d": ("[0-9]", "0-9"),
    "D": ("[^0-9]", None),
    "s": ("[\\t\\n\\f\\r ]", "\\t\\n\\f\\r "),
    "S": ("[^\\t\\n\\f\\r ]", None),
    "w": (f"[{_ASCII_WORD}]", _ASCII_WORD),
    "W": (f"[^{_ASCII_WORD}]", None),
}
_BOUNDARIES = {
    "b": f"(?:(?<=[{_ASCII_WORD}])(?![{_ASCII_WORD}])|(?<![{_ASCII_WORD}])(?=[{_ASCII_WORD}]))",
    "B": f"(?:(?<=[{_ASCII_WORD}])(?=[{_ASCII_WORD}])|(?<![{_ASCII_WORD}])(?![{_ASCII_WORD}]))",
}
_LITERAL_ESCAPES = {"a": "\\a", "f": "\\f", "n": "\\n", "r": "\\r", "t": "\\t", "v": "\\v"}


def python_pattern(pattern: str) -> str:
    """The Python ``re`` pattern of the RE2 ``pattern``, with RE2's meaning
    (its ASCII ``\\d \\s \\w \\b``, ``$`` only at the end of the text).
    Constructs without a translation here (Unicode classes ``\\p``, POSIX
    classes, ``(?m)``, ``(?U)``, ``\\C``, ``\\Q``) raise a ``ValueError``."""
    if not isinstance(pattern, str):
        raise ValueError(f"Argument `pattern` must be a str, received: {pattern!r}")
    output, index, in_class, class_start = [], 0, False, False

    def unsupported(what: str) -> ValueError:
        return ValueError(
            f"Argument `pattern` ({pattern!r}) uses {what}, which the standalone tokenizer "
            "does not translate from RE2 to Python"
        )

    while index < len(pattern):
        character = pattern[index]
        at_class_start, class_start = class_start, False
        if character == "\\":
            if index + 1 == len(pattern):
                raise unsupported("a trailing backslash")
            escaped = pattern[index + 1]
            index += 2
            if escaped in _CLASS_ESCAPES:
                outside, inside = _CLASS_ESCAPES[escaped]
                if in_class and inside is None:
                    raise unsupported(f"\\{escaped} inside a character class")
                output.append(inside if in_class else outside)
            elif escaped in _BOUNDARIES and not in_class:
                output.append(_BOUNDARIES[escaped])
            elif escaped in "Az" and not in_class:
                output.append("\\A" if escaped == "A" else "\\Z")
            elif escaped == "x":
                hexadecimal = re.match(r"\{([0-9A-Fa-f]{1,6})\}|([0-9A-Fa-f]{2})", pattern[index:])
                if hexadecimal is None:
                    raise unsupported("a malformed \\x escape")
                index += hexadecimal.end()
                output.append(re.escape(chr(int(hexadecimal.group(1) or hexadecimal.group(2), 16))))
            elif escaped in _LITERAL_ESCAPES:
                output.append(_LITERAL_ESCAPES[escaped])
            elif not escaped.isalnum() and escaped.isascii():
                output.append("\\" + escaped)
            else:
                raise unsupported(f"\\{escaped}")
            continue
        index += 1
        if in_class:
            if character == "[" and pattern[index : index + 1] == ":":
                raise unsupported("a POSIX class [:...:]")
            if character == "]" and not at_class_start:
                in_class = False
                output.append("]")
            elif character == "^" and at_class_start and output[-1] == "[":
                output.append("^")
                class_start = True  # a "]" right after "[^" is a literal
            elif character in "[&~|":
                output.append("\\" + character)  # literals; Python warns of set operations
            elif character == "]":
                output.append("\\]")
            else:
                output.append(character)
        elif character == "[":
            in_class = class_start = True
            output.append("[")
        elif character == "$":
            output.append("\\Z")
        elif character == "(" and pattern[index : index + 1] == "?":
            flags = re.match(r"\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])", pattern[index:])
            named = re.match(r"\?P<[A-Za-z_][A-Za-z0-9_]*>", pattern[index:])
            if named:
                output.append("(" + named.group(0))
                index += named.end()
                continue
            if flags is None:
                raise unsupported("a group construct RE2 and Python read differently")
            letters = (flags.group(1) or "") + (flags.group(2) or "")
            if set(letters) - set("is"):
                raise unsupported(f"the flags (?{letters})")
            if flags.group(3) == ")" and (output or letters != flags.group(1)):
                raise unsupported("flags set in the middle of a pattern")
            output.append("(" + flags.group(0))
            index += flags.end()
        elif character == "{" and pattern[index : index + 1] == ",":
            raise unsupported("a repetition {,n}")
        else:
            output.append(character)
    if in_class:
        raise unsupported("an unterminated character class")
    return "".join(output)


class RE2Replacement:
    """``tf.strings.regex_replace(text, pattern, rewrite)`` in Python: every
    match of the RE2 ``pattern`` (`python_pattern`) replaced by ``rewrite``
    (``\\0``-``\\9``: the match and its groups, ``\\\\``: a backslash), empty
    matches as RE2's ``GlobalReplace`` takes them (none right where the
    previous match ended)."""

    def __init__(self, pattern: str, rewrite: str) -> None:
        try:
            self.regex = re.compile(python_pattern(pattern))
        except re.error as error:
            raise ValueError(
                f"Argument `pattern` ({pattern!r}) is not a valid regular expression: {error}"
            ) from None
        if not isinstance(rewrite, str):
            raise ValueError(f"Argument `rewrite` must be a str, received: {rewrite!r}")
        self.parts: list[str | int] = []
        for literal, escape in re.findall(r"([^\\]+)|\\(.?)", rewrite, flags=re.DOTALL):
            if literal:
                self.parts.append(literal)
            elif escape == "\\":
                self.parts.append("\\")
            elif escape.isdigit() and int(escape) <= self.regex.groups:
                self.parts.append(int(escape))
            else:
                raise ValueError(
                    f"Argument `rewrite` ({rewrite!r}) must hold only \\0-\\{self.regex.groups} "
                    f"and \\\\ escapes for the pattern {pattern!r}"
                )

    def __call__(self, text: str) -> str:
        output, position, last_end = [], 0, None
        while position <= len(text):
            match = self.regex.search(text, position)
            if match is None:
                break
            output.append(text[position : match.start()])
            if match.start() == match.end() == last_end:  # an empty match where the last ended
                output.append(text[position : position + 1])
                position += 1
                continue
            output.extend(
                part if isinstance(part, str) else match.group(part) or "" for part in self.parts
            )
            position = last_end = match.end()
        output.append(text[position:])
        return "".join(output)


if __name__ == "__main__":  # python tokenizer.py TEXT...: the ids of the texts, as JSON
    print(json.dumps(load().encode(sys.argv[1:])))
