"""The string front end of an ONNX model: the tokenizers as
onnxruntime-extensions ops, joined to the converted model (`string_model`);
`keras_rnncells.export.onnx_text` checks and writes it.

tf2onnx cannot convert the tokenizers (tensorflow-text's case folding and
Unicode normalization have no ONNX handler), so the string front end is built
here from onnxruntime-extensions' custom ops (domain ``ai.onnx.contrib``) and
standard ONNX ops, and merged with the rest of the model, which tf2onnx
converts from TensorFlow. The front end does what the tokenizer's
``tokenize`` does, step by step:

1. the application's regex replacements (RE2 in both: ``StringRegexReplace``);
2. the tokenizer's normalization, applied character by character through a
   table (``CategoryMapper`` + ``Gather``) of every code point that it
   changes, computed at export time by the TensorFlow ops themselves:
   `WordPieceTokenizer` (``lowercase``): BERT's, case folding
   (NFKC_Casefold), NFD, accents (``\\p{Mn}``) removed, control and format
   characters made spaces; `CharTokenizer` and `WordTokenizer` with
   ``lowercase``: ``tf.strings.lower`` (ICU's full lower-case mapping);
3. the split into tokens (``StringRegexSplitWithOffsets``, RE2 in both):
   WordPiece's words with tensorflow-text's own BERT patterns, characters,
   or runs of ASCII whitespace (``tf.strings.split``'s);
4. for WordPiece, ``WordpieceTokenizer`` (the same greedy longest-match);
   then the tokens looked up in the vocabulary (``CategoryMapper``).

A `SentencePieceTokenizer` replaces steps 2 to 4 with one op,
``SentencepieceTokenizer``, given the tokenizer's own model: its normalization
and segmentation are in the model, run by the same SentencePiece library as
tensorflow-text's op, and its ids are the vocabulary's.

The whole-word ``[UNK]`` rule of WordPiece (a word that cannot be split, or
longer than 100 bytes, is one ``[UNK]``; onnxruntime-extensions emits its
partial pieces and an ``[UNK]``), truncation and padding run in the converted
TensorFlow part (`ragged_ids`, and `keras_rnncells.export.servable.padded_ids`:
the tokenizer's ``pad`` with ops that tf2onnx converts exactly at every
length, empty texts included). A model that writes text
(`StringFrontEnd.detokenizers`) ends with the detokenization of a
`CharTokenizer` or `SentencePieceTokenizer` as ONNX ops (`detokenizer`).
"""

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from keras_rnncells.export.limits import RequestLimits, onnx_checked_texts
from keras_rnncells.export.onnx_convert import convert
from keras_rnncells.export.servable import StringFrontEnd, traced
from keras_rnncells.text import (
    CharTokenizer,
    SentencePieceTokenizer,
    WordPieceTokenizer,
    WordTokenizer,
)
from keras_rnncells.text.sentence_piece import WORD_BOUNDARY
from keras_rnncells.text.tokenizers import UNK_TEXT
from keras_rnncells.text.vocabulary import END_ID, PAD_ID, START_ID, UNK_ID

CONTRIB = "ai.onnx.contrib"
ML = "ai.onnx.ml"
OPSETS = {"": 17, ML: 1, CONTRIB: 1}
# tensorflow-text's WordpieceTokenizer default: longer words are one [UNK].
MAX_BYTES_PER_WORD = 100
# Any one character (a code point), as a split pattern and as the delimiters kept.
CHARACTER = ("((?s).)", "(?s).")
# `tf.strings.split`'s delimiters: runs of ASCII whitespace, none kept.
WHITESPACE = ("([\\t\\n\\v\\f\\r ]+)", "")


class Graph:
    """An ONNX graph being built: its nodes and constants."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.constants: list[Any] = []

    def constant(self, name: str, value: Any) -> str:
        from onnx import numpy_helper

        array = np.array(value, dtype=object if isinstance(value, str) else None)
        self.constants.append(numpy_helper.from_array(array, name))
        return name

    def node(self, op: str, inputs: list[str], outputs: list[str], domain: str = "", **attributes):
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, outputs, domain=domain, **attributes))
        return outputs[0]

    def model(
        self, name: str, inputs: dict[str, tuple[int, int]], outputs: dict[str, tuple[int, int]]
    ) -> Any:
        """The model of the graph; ``inputs`` and ``outputs``: name -> (ONNX
        element type, rank). The other names get the prefix ``name/``: the
        graphs that `merge` joins share no name but their links."""
        from onnx import compose, helper

        def values(specs):
            return [
                helper.make_tensor_value_info(n, kind, [None] * rank)
                for n, (kind, rank) in specs.items()
            ]

        graph = helper.make_graph(
            self.nodes,
            name,
            values(inputs),
            values(outputs),
            initializer=self.constants,
        )
        imports = [helper.make_opsetid(domain, version) for domain, version in OPSETS.items()]
        # IR version 8: what onnxruntime >= 1.14 reads; `string_model` takes tf2onnx's.
        model = helper.make_model(graph, opset_imports=imports, ir_version=8)
        return compose.add_prefix(model, f"{name}/", rename_inputs=False, rename_outputs=False)

    def lookup(self, keys: str, values: str, vocabulary: Sequence[str]) -> str:
        """``values``: the id of each string of ``keys`` in ``vocabulary``, else ``UNK_ID``."""
        return self.node(
            "CategoryMapper",
            [keys],
            [values],
            ML,
            cats_strings=list(vocabulary),
            cats_int64s=list(range(len(vocabulary))),
            default_int64=UNK_ID,
        )


def bert_normalize(strings: tf.Tensor) -> tf.Tensor:
    """tensorflow-text's ``BasicTokenizer`` normalization with ``lower_case``."""
    import tensorflow_text as text

    strings = text.case_fold_utf8(strings)
    strings = text.normalize_utf8(strings, "NFD")
    strings = tf.strings.regex_replace(strings, r"\p{Mn}", "")
    return tf.strings.regex_replace(strings, r"\p{Cc}|\p{Cf}", " ")


def lower(strings: tf.Tensor) -> tf.Tensor:
    """The lower-casing of `CharTokenizer` and `WordTokenizer`."""
    return tf.strings.lower(strings, encoding="utf-8")


@functools.cache
def character_table(
    normalize: Callable[[tf.Tensor], tf.Tensor],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every code point that ``normalize`` changes, and what it becomes."""
    points = np.array([c for c in range(0x110000) if not 0xD800 <= c < 0xE000], np.int32)
    characters = tf.strings.unicode_encode(tf.constant(points[:, None]), "UTF-8")
    normalized = normalize(characters).numpy()
    changed = [
        (a.decode("utf-8"), b.decode("utf-8"))
        for a, b in zip(characters.numpy(), normalized)
        if a != b
    ]
    return tuple(a for a, _ in changed), tuple(b for _, b in changed)


def bert_patterns() -> tuple[str, str]:
    """tensorflow-text's BERT word-splitting pattern and the delimiters it keeps."""
    from tensorflow_text.python.ops import bert_tokenizer

    delimiters = bert_tokenizer._DELIM_REGEX_PATTERN
    return f"({delimiters})", bert_tokenizer._KEEP_DELIM_NO_WHITESPACE_PATTERN


def token_rows(token_ids: tf.Tensor, text_splits: tf.Tensor) -> tf.RaggedTensor:
    """The front end's ids of a `CharTokenizer` or `WordTokenizer` as
    ``tokenizer.tokenize`` gives them: int32 ``(batch, None)``."""
    return tf.RaggedTensor.from_row_splits(
        tf.cast(token_ids, tf.int32), text_splits, validate=False
    )


@dataclass(frozen=True)
class Scheme:
    """How `front_end` rebuilds a tokenizer class: ``normalize`` (applied
    character by character, None: no normalization), ``split`` (RE2 pattern
    of the delimiters, as a group, and of the delimiters kept as tokens;
    None: the tokenizer's SentencePiece model does both), the
    front end's int64 vector ``outputs`` and ``ragged``, those outputs (by
    name) as ``tokenize``'s ragged ids."""

    normalize: Callable[[tf.Tensor], tf.Tensor] | None
    split: tuple[str, str] | None
    outputs: tuple[str, ...]
    ragged: Callable[..., tf.RaggedTensor]


def scheme(tokenizer: Any) -> Scheme:
    """The `Scheme` of ``tokenizer``, else a ``ValueError``."""
    if isinstance(tokenizer, WordPieceTokenizer) and tokenizer.lowercase:
        outputs = ("piece_ids", "word_splits", "word_bytes", "text_splits")
        return Scheme(bert_normalize, bert_patterns(), outputs, ragged_ids)
    if isinstance(tokenizer, SentencePieceTokenizer):
        return Scheme(None, None, ("token_ids", "text_splits"), token_rows)
    splits = {CharTokenizer: CHARACTER, WordTokenizer: WHITESPACE}
    if type(tokenizer) in splits:
        normalize = lower if tokenizer.lowercase else None
        return Scheme(normalize, splits[type(tokenizer)], ("token_ids", "text_splits"), token_rows)
    raise ValueError(
        "Argument `tokenizer` must be a WordPieceTokenizer with lowercase=True, a "
        "SentencePieceTokenizer, a CharTokenizer or a WordTokenizer for an ONNX string input, "
        f"received: {tokenizer!r}"
    )


def front_end(
    tokenizer: Any,
    replacements: tuple[tuple[str, str], ...] = (),
    limits: RequestLimits | None = None,
) -> Any:
    """The ONNX graph from ``text`` (string ``(batch,)``) to the tokens: the
    `Scheme`'s outputs, for WordPiece ``piece_ids`` (int64, every piece of
    every word), ``word_splits`` (row splits of the pieces by word),
    ``word_bytes`` (UTF-8 length of each word) and ``text_splits`` (row
    splits of the words by text), else ``token_ids`` and their
    ``text_splits``. With ``limits``, a request past them fails before any
    text is read (`keras_rnncells.export.limits.onnx_checked_texts`)."""
    from onnx import TensorProto

    steps = scheme(tokenizer)
    graph = Graph()
    text = "text"
    if limits is not None:
        text = onnx_checked_texts(graph, text, limits)
    for index, (pattern, rewrite) in enumerate(replacements):
        text = graph.node(
            "StringRegexReplace",
            [
                text,
                graph.constant(f"pattern_{index}", pattern),
                graph.constant(f"rewrite_{index}", rewrite),
            ],
            [f"replaced_{index}"],
            CONTRIB,
        )
    if steps.split is None:
        sentence_pieces(graph, text, tokenizer.model)
    else:
        split_and_look_up(graph, text, tokenizer, steps)
    return graph.model(
        "string_front_end",
        {"text": (TensorProto.STRING, 1)},
        dict.fromkeys(steps.outputs, (TensorProto.INT64, 1)),
    )


def split_and_look_up(graph: Graph, text: str, tokenizer: Any, steps: Scheme) -> None:
    """The `Scheme`'s outputs from ``text`` by RE2 ops: normalized character
    by character, split, WordPiece's pieces found, looked up."""
    if steps.normalize is not None:
        text = normalize_characters(graph, text, character_table(steps.normalize))
    delimiters, kept = steps.split
    graph.node(
        "StringRegexSplitWithOffsets",
        [text, graph.constant("delimiters", delimiters), graph.constant("kept", kept)],
        ["split_tokens", "token_begins", "token_ends", "text_splits"],
        CONTRIB,
    )
    vocabulary = tokenizer.vocabulary
    if steps.outputs[0] == "piece_ids":
        graph.node("Sub", ["token_ends", "token_begins"], ["word_bytes"])
        graph.node(
            "WordpieceTokenizer",
            ["split_tokens", graph.constant("no_rows", np.zeros(0, np.int64))],
            ["pieces", "word_splits", "word_begins_unused", "word_ends_unused"],
            CONTRIB,
            vocab=json.dumps({token: index for index, token in enumerate(vocabulary)}),
            suffix_indicator="##",
            unknown_token=vocabulary[UNK_ID],
            max_input_chars_per_word=1 << 30,  # the byte limit is `ragged_ids`'
        )
        graph.lookup("pieces", "piece_ids", vocabulary)
    else:
        graph.lookup("split_tokens", "token_ids", vocabulary)


def sentence_pieces(graph: Graph, text: str, model: bytes) -> None:
    """``token_ids`` and their ``text_splits``: onnxruntime-extensions'
    ``SentencepieceTokenizer`` on ``text``, run by the SentencePiece ``model``
    without sampling, start or end tokens."""
    from onnx import TensorProto

    options = {
        "nbest_size": np.array([0], np.int64),
        "alpha": np.array([0.0], np.float32),
        "add_bos": np.array([False]),
        "add_eos": np.array([False]),
        "reverse": np.array([False]),
        "fairseq": np.array([False]),
    }
    graph.node(
        "SentencepieceTokenizer",
        [text, *(graph.constant(name, value) for name, value in options.items())],
        ["pieces", "text_splits"],
        CONTRIB,
        model=model,
    )
    graph.node("Cast", ["pieces"], ["token_ids"], to=TensorProto.INT64)


def normalize_characters(graph: Graph, text: str, table: tuple[tuple[str, ...], ...]) -> str:
    """``text`` with each character replaced by its entry of ``table``
    (`character_table`), if it has one: the characters mapped one by one and
    joined back per text. Returns the output's name."""
    graph.node(
        "StringRegexSplitWithOffsets",
        [
            text,
            graph.constant("any_character", CHARACTER[0]),
            graph.constant("keep_all", CHARACTER[1]),
        ],
        ["characters", "character_begins", "character_ends", "character_splits"],
        CONTRIB,
    )
    sources, targets = table
    graph.node(
        "CategoryMapper",
        ["characters"],
        ["table_index"],
        ML,
        cats_strings=list(sources),
        cats_int64s=list(range(1, len(sources) + 1)),
        default_int64=0,
    )
    graph.node("Gather", [graph.constant("table", ["", *targets]), "table_index"], ["from_table"])
    graph.node("Equal", ["table_index", graph.constant("zero", np.int64(0))], ["unchanged"])
    graph.node("Where", ["unchanged", "characters", "from_table"], ["normalized_characters"])
    dense_rows(graph, "character_splits", "normalized_characters")
    return join_rows(graph, "character_rows", "normalized")


def join_rows(graph: Graph, matrix: str, output: str) -> str:
    """``output``: each row of the string matrix ``matrix`` joined, without
    separator (``StringJoin``). A row of ``""`` is added for the join and
    dropped after it: onnxruntime-extensions' ``StringJoin`` crashes (a
    segmentation fault) on a matrix of no row, a batch of no text."""
    node, constant = graph.node, graph.constant

    def name(suffix: str) -> str:
        return f"{matrix}_{suffix}"

    node("Shape", [matrix], [name("shape")], start=1)  # the row length, a vector
    node("Concat", [constant(name("one"), [1]), name("shape")], [name("row_shape")], axis=0)
    node("Expand", [constant(name("empty"), [""]), name("row_shape")], [name("row")])
    node("Concat", [matrix, name("row")], [name("and_row")], axis=0)
    separator, axis = constant(name("separator"), ""), constant(name("axis"), np.int64(1))
    node("StringJoin", [name("and_row"), separator, axis], [name("joined")], CONTRIB)
    ends = [constant(name("start"), [0]), constant(name("end"), [-1])]
    return node("Slice", [name("joined"), *ends], [output])


def dense_rows(graph: Graph, splits: str, values: str) -> None:
    """``character_rows``: the strings ``values`` in rows by ``splits``,
    padded with ``""`` to the longest row (a string matrix)."""
    node, constant = graph.node, graph.constant
    node("Slice", [splits, constant("s0", [0]), constant("s_1", [-1])], ["row_starts"])
    node("Slice", [splits, constant("s1", [1]), constant("s_end", [1 << 62])], ["row_ends"])
    node("Sub", ["row_ends", "row_starts"], ["row_lengths"])
    node("ReduceMax", ["row_lengths"], ["longest"], keepdims=0)
    node("Max", ["longest", constant("no_length", np.int64(0))], ["width"])
    node("Range", [constant("r0", np.int64(0)), "width", constant("r1", np.int64(1))], ["column"])
    node("Unsqueeze", ["row_starts", constant("axis1", [1])], ["row_starts_2d"])
    node("Unsqueeze", ["row_lengths", constant("axis1b", [1])], ["row_lengths_2d"])
    node("Add", ["row_starts_2d", "column"], ["positions"])
    node("Less", ["column", "row_lengths_2d"], ["inside"])
    node("Size", [values], ["padding_position"])
    node("Where", ["inside", "positions", "padding_position"], ["gather_positions"])
    node("Concat", [values, constant("padding", [""])], ["padded_values"], axis=0)
    node("Gather", ["padded_values", "gather_positions"], ["character_rows"])


def detokenizer(tokenizer: Any, ids: str, output: str) -> Any:
    """The ONNX graph from the int ids ``ids`` ``(batch, length)`` to the
    strings ``output`` ``(batch,)``: ``tokenizer.detokenize`` of a
    `CharTokenizer` or `SentencePieceTokenizer` (each row up to its first
    ``END_ID``, without ``PAD_ID`` and ``START_ID``, `UNK_TEXT` for
    ``UNK_ID`` and unknown ids, joined; for pieces, each word boundary a
    space, the first dropped)."""
    from onnx import TensorProto

    pieces = isinstance(tokenizer, SentencePieceTokenizer)
    if type(tokenizer) is not CharTokenizer and not pieces:
        raise ValueError(
            "Argument `detokenizers` must map outputs to CharTokenizers or "
            f"SentencePieceTokenizers for an ONNX string output, received: {tokenizer!r}"
        )
    graph = Graph()
    node, constant = graph.node, graph.constant
    node("Cast", [ids], ["ids64"], to=TensorProto.INT64)
    node("Equal", ["ids64", constant("end", np.int64(END_ID))], ["is_end"])
    node("Cast", ["is_end"], ["ends"], to=TensorProto.INT64)
    node("CumSum", ["ends", constant("axis", np.int64(1))], ["ends_so_far"])
    node("Equal", ["ends_so_far", constant("none", np.int64(0))], ["before_end"])
    node("Equal", ["ids64", constant("pad", np.int64(PAD_ID))], ["is_pad"])
    node("Equal", ["ids64", constant("start", np.int64(START_ID))], ["is_start"])
    node("Or", ["is_pad", "is_start"], ["special"])
    node("Not", ["special"], ["not_special"])
    node("And", ["before_end", "not_special"], ["kept"])
    texts = [
        token.replace(WORD_BOUNDARY, " ") if pieces else token for token in tokenizer.vocabulary
    ]
    texts[UNK_ID] = UNK_TEXT
    node("GreaterOrEqual", ["ids64", constant("first", np.int64(0))], ["above"])
    node("Less", ["ids64", constant("size", np.int64(len(texts)))], ["below"])
    node("And", ["above", "below"], ["known"])
    node("Where", ["known", "ids64", constant("unknown", np.int64(UNK_ID))], ["indices"])
    node("Gather", [constant("texts", texts), "indices"], ["token_texts"])
    node("Where", ["kept", "token_texts", constant("nothing", "")], ["kept_texts"])
    if pieces:
        join_rows(graph, "kept_texts", "joined_pieces")
        first_space = [constant("first_space", "^ "), constant("no_space", "")]
        node("StringRegexReplace", ["joined_pieces", *first_space], [output], CONTRIB)
    else:
        join_rows(graph, "kept_texts", output)
    return graph.model(
        f"detokenizer_{output}",  # one prefix per output: a model may detokenize several
        {ids: (TensorProto.INT32, 2)},
        {output: (TensorProto.STRING, 1)},
    )


def ragged_ids(piece_ids, word_splits, word_bytes, text_splits) -> tf.RaggedTensor:
    """The front end's outputs as ``tokenizer.tokenize`` gives them: int32
    ids ``(batch, None)``, each word that holds an ``[UNK]`` piece or has more
    than ``MAX_BYTES_PER_WORD`` bytes made one ``[UNK]``."""
    count = tf.size(piece_ids, out_type=tf.int64)
    piece_word = tf.RaggedTensor.from_row_splits(
        tf.range(count), word_splits, validate=False
    ).value_rowids()
    unknown_count = tf.concat([[0], tf.cumsum(tf.cast(piece_ids == UNK_ID, tf.int64))], 0)
    unknown_word = (
        tf.gather(unknown_count, word_splits[1:]) > tf.gather(unknown_count, word_splits[:-1])
    ) | (word_bytes > MAX_BYTES_PER_WORD)
    unknown = tf.gather(unknown_word, piece_word)
    first = tf.range(count) == tf.gather(word_splits, piece_word)
    keep = first | ~unknown
    ids = tf.boolean_mask(tf.where(unknown, tf.constant(UNK_ID, tf.int64), piece_ids), keep)
    word_text = tf.RaggedTensor.from_row_splits(
        tf.range(tf.size(word_bytes, out_type=tf.int64)), text_splits, validate=False
    ).value_rowids()
    rows = tf.boolean_mask(tf.gather(word_text, piece_word), keep)
    nrows = tf.size(text_splits, out_type=tf.int64) - 1
    return tf.RaggedTensor.from_value_rowids(
        tf.cast(ids, tf.int32), rows, nrows=nrows, validate=False
    )


def string_model(
    front: StringFrontEnd, opset: int, limits: RequestLimits | None = None
) -> tuple[Any, list[dict[str, str]]]:
    """The ONNX model from strings to ``front.function``'s outputs (those of
    ``front.detokenizers`` as text), and what each recurrent layer became
    (`keras_rnncells.export.onnx_convert.convert`). With ``limits``, it
    fails a request past them before tokenizing (`front_end`)."""
    steps = scheme(front.tokenizer)
    signature = {name: tf.TensorSpec((None,), tf.int64) for name in steps.outputs}
    function = traced(lambda **tokens: front.function(steps.ragged(**tokens)), signature)
    body, layers = convert(function, opset)
    head = aligned(front_end(front.tokenizer, front.replacements, limits), body)
    model = merge(head, body, list(signature))
    for output, (ids, tokenizer) in front.detokenizers.items():
        model = merge(model, aligned(detokenizer(tokenizer, ids, output), body), [ids])
    model.graph.input[0].name = front.input_name
    for item in model.graph.node:
        item.input[:] = [front.input_name if name == "text" else name for name in item.input]
    return model, layers


def aligned(part: Any, converted: Any) -> Any:
    """``part`` with the IR and opset versions of ``converted`` (tf2onnx's),
    as ``onnx.compose.merge_models`` wants them."""
    part.ir_version = converted.ir_version
    versions = {o.domain: o.version for o in converted.opset_import}
    for entry in part.opset_import:
        entry.version = versions.get(entry.domain, entry.version)
    return part


def merge(first: Any, second: Any, links: list[str]) -> Any:
    """One model: ``first``'s outputs ``links`` feed ``second``'s inputs of the same names."""
    from onnx import compose

    for kind, values in (("outputs", first.graph.output), ("inputs", second.graph.input)):
        missing = sorted(set(links) - {value.name for value in values})
        if missing:
            raise ValueError(f"Cannot join the ONNX graphs: {kind} {missing} are missing")
    return compose.merge_models(first, second, io_map=[(name, name) for name in links])
