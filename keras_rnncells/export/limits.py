"""Request limits of the exported text models: how many texts a request may
hold (``max_batch``), how many characters each (``max_chars``) and how many in
all (``max_total_chars``), and the checks that refuse a request past them
before anything reads its texts: `checked_texts` in TensorFlow (the
SavedModel's signature), `onnx_checked_texts` in ONNX (``model_text.onnx``).

What a request costs a server: its tokenization, in proportion to its
characters; and the model's recurrence over the padded batch, in proportion to
its rows times its longest row's tokens (every row is padded to the longest,
so a total-characters limit alone does not bound it: one long text and many
short ones cost as many long ones). ``max_total_chars`` bounds the first,
``max_batch`` times the tokens ``max_chars`` characters make (or the
tokenizer's ``max_length``, where it truncates) the second. Unbounded, a
request of 10,000 texts of 2,000 characters (20 MB) took a server past 15 GB.

A character is a Unicode code point (UTF-8 encoded); in TensorFlow a byte
of invalid UTF-8 counts as one. The checks run in order (rows, the longest
text, all characters), each only once the previous one passed, so a request
of too many rows is refused from its shape alone, without reading its texts;
the error names the first limit exceeded: TensorFlow's ``InvalidArgumentError``
(a gRPC ``INVALID_ARGUMENT`` from TF Serving) reads "Request refused by its
limit max_batch=256: input `text` has 10000 rows ...". ONNX has no assertion
op: each check is a gather out of range (as
`keras_rnncells.export.servable.served_ids` checks ids), from a node named
for its limit (``request_limit_max_batch_256``), which onnxruntime's error
names.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import tensorflow as tf

from keras_rnncells.checks import check_optional_positive_int

INT64_MAX = 2**63 - 1  # the limits are int64 constants of the graphs
# The export flags that set each limit (`rnncells export`).
FLAGS = {
    "max_batch": "--max-batch",
    "max_chars": "--max-chars",
    "max_total_chars": "--max-total-chars",
}


@dataclass(frozen=True)
class RequestLimits:
    """The most a request to an exported text model may hold: ``max_batch``
    rows (texts of a ``(batch,)`` input), ``max_chars`` characters (Unicode
    code points) in any one text and ``max_total_chars`` in all its texts.

    A limit left ``None`` takes the servable's default
    (`resolved`): the application's (a color name or a date is short, a
    movie review is not), else `DEFAULT_LIMITS`. A request past a limit is
    refused, whole, with an error that names the limit (see the module).
    """

    max_batch: int | None = None
    max_chars: int | None = None
    max_total_chars: int | None = None

    def __post_init__(self) -> None:
        for field in fields(self):
            value = check_optional_positive_int(field.name, getattr(self, field.name))
            if value is not None and value > INT64_MAX:
                raise ValueError(
                    f"Argument `{field.name}` must be at most 2**63-1 (an int64), "
                    f"received: {value!r}"
                )
            object.__setattr__(self, field.name, value)

    def resolved(self, defaults: RequestLimits | None = None) -> RequestLimits:
        """These limits, each one left ``None`` taken from ``defaults``, then
        from `DEFAULT_LIMITS`."""
        merged = {}
        for field in fields(self):
            chain = (self, defaults or DEFAULT_LIMITS, DEFAULT_LIMITS)
            merged[field.name] = next(
                getattr(limits, field.name)
                for limits in chain
                if getattr(limits, field.name) is not None
            )
        return RequestLimits(**merged)

    def manifest(self) -> dict[str, Any]:
        """The limits as ``manifest.json`` records them, under ``"limits"``."""
        return {**asdict(self.resolved()), "characters": "Unicode code points"}

    def admits(self, texts: list[str]) -> bool:
        """Whether a request of ``texts`` (one input) is within the limits."""
        limits = self.resolved()
        lengths = [len(text) for text in texts]
        return (
            len(texts) <= limits.max_batch
            and max(lengths, default=0) <= limits.max_chars
            and sum(lengths) <= limits.max_total_chars
        )


# The defaults. Measured on a 2-core host, served as stock TF Serving serves
# (XLA off, the session loader), the sentiment classifier at its default size
# (WordPiece, 8,000 tokens, 400 kept; a bidirectional GRU of 128 units): a
# server of 0.84 GB once loaded answered 256 texts of 4,096 characters (these
# limits) in 3.1 s, its memory peaking at 1.46 GB; 1,024 texts of 2,000
# characters, unbounded, took 11 s and 3.5 GB (the memory grows with the rows
# times the tokens kept; issue 48's 10,000 texts took a server past 15 GB).
# * max_batch 256: what the memory grows with; TF Serving's clients batch a
#   few to a few hundred texts a request.
# * max_chars 16,384: every review of IMDB (the longest has 13,704
#   characters) and every SST-2 sentence fits.
# * max_total_chars 1,048,576: 256 texts of 4,096 characters (IMDB's mean is
#   1,309), what the tokenizers' time and memory grow with.
# Applications whose model reads every token of the longest text (no
# truncation) set a smaller max_chars (`keras_rnncells.apps.seq2seq.LIMITS`).
DEFAULT_LIMITS = RequestLimits(max_batch=256, max_chars=16_384, max_total_chars=1_048_576)


def check_limits(name: str, limits: Any) -> RequestLimits | None:
    """``limits`` if it is a `RequestLimits` or ``None``."""
    if limits is not None and not isinstance(limits, RequestLimits):
        raise ValueError(
            f"Argument `{name}` must be a keras_rnncells.export.limits.RequestLimits or None, "
            f"received: {limits!r}"
        )
    return limits


def refusal(limit: str, value: int, input_name: str, found: str) -> str:
    """The message of a request refused by ``limit`` (a ``tf.strings.format``
    template: ``{}`` is what the request holds)."""
    return (
        f"Request refused by its limit {limit}={value}: input `{input_name}` has {found} "
        f"(set at export: rnncells export {FLAGS[limit]})"
    )


def checked_texts(texts: Any, limits: RequestLimits, input_name: str = "text") -> tf.Tensor:
    """``texts`` (strings of any shape, rows first) once a request is known
    to be within ``limits`` (resolved with `DEFAULT_LIMITS`): every op that
    reads the result runs after the checks, which fail the request with an
    ``InvalidArgumentError`` naming the first limit exceeded (see the
    module). The rows are checked first, from the shape alone; the
    characters only then."""
    limits = limits.resolved()
    texts = tf.convert_to_tensor(texts, tf.string)
    rows = tf.shape(texts, out_type=tf.int64)[0]
    passed = tf.debugging.Assert(
        rows <= limits.max_batch,
        [tf.strings.format(refusal("max_batch", limits.max_batch, input_name, "{} rows"), rows)],
        name="request_limit_max_batch",
    )
    with tf.control_dependencies([passed]):  # not a character read before
        lengths = tf.reshape(tf.strings.length(texts, unit="UTF8_CHAR"), [-1])
    lengths = tf.cast(lengths, tf.int64)  # compared with int64 limits
    longest = tf.reduce_max(tf.concat([lengths, tf.zeros([1], tf.int64)], 0))
    found = "a text of {} characters"
    passed = tf.debugging.Assert(
        longest <= limits.max_chars,
        [tf.strings.format(refusal("max_chars", limits.max_chars, input_name, found), longest)],
        name="request_limit_max_chars",
    )
    with tf.control_dependencies([passed]):
        total = tf.reduce_sum(lengths)
    found = "{} characters in all"
    limit = limits.max_total_chars
    passed = tf.debugging.Assert(
        total <= limit,
        [tf.strings.format(refusal("max_total_chars", limit, input_name, found), total)],
        name="request_limit_max_total_chars",
    )
    with tf.control_dependencies([passed]):
        return tf.identity(texts)


def onnx_checked_texts(graph: Any, text: str, limits: RequestLimits) -> str:
    """The ONNX counterpart of `checked_texts`, added to ``graph`` (a
    `keras_rnncells.export.onnx_text_graph.Graph`) for the string vector
    ``text`` ``(batch,)``: returns the name of ``text`` once within
    ``limits``, which every later node reads instead. Each check is a
    ``Gather`` out of range from a node named ``request_limit_<limit>_<value>``
    (onnxruntime's error names it); the characters are counted
    (onnxruntime-extensions' ``StringLength``, code points) only once the
    rows passed. Its ``StringLength`` stops at a text's first NUL (U+0000),
    as the front end's regex ops do (`keras_rnncells.export.onnx_text`)."""
    from onnx import TensorProto

    limits = limits.resolved()
    node, constant = graph.node, graph.constant
    no_offset = constant("limits_no_offset", np.zeros(1, np.int64))
    to_end = constant("limits_to_end", np.array([INT64_MAX], np.int64))

    def check(limit: str, found: str, after: str) -> str:
        """A zero ``(1,)`` int64, computed once ``after`` is, failing the
        request where ``found`` (int64 ``(1,)``) exceeds the limit."""
        value = getattr(limits, limit)
        node("Add", [found, after], [f"{limit}_found"])  # runs after `after`
        limit_value = constant(f"limit_{limit}", np.array([value], np.int64))
        node("Greater", [f"{limit}_found", limit_value], [f"{limit}_exceeded"])
        node("Cast", [f"{limit}_exceeded"], [f"{limit}_index"], to=TensorProto.INT64)
        return node(
            "Gather",
            [no_offset, f"{limit}_index"],
            [f"{limit}_passed"],
            name=f"request_limit_{limit}_{value}",
        )

    rows = check("max_batch", node("Shape", [text], ["request_rows"]), no_offset)
    text = node("Slice", [text, rows, to_end], ["text_within_max_batch"])
    node("StringLength", [text], ["text_lengths"], "ai.onnx.contrib")
    node(
        "Concat",
        ["text_lengths", constant("limits_no_text", np.zeros(1, np.int64))],
        ["lengths_and_zero"],
        axis=0,
    )
    node("ReduceMax", ["lengths_and_zero"], ["longest_text"], keepdims=1)
    longest = check("max_chars", "longest_text", rows)
    node("ReduceSum", ["text_lengths"], ["all_characters"], keepdims=1)
    total = check("max_total_chars", "all_characters", longest)
    return node("Slice", [text, total, to_end], ["text_within_limits"])
