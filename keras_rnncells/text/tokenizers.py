"""In-graph tokenizers: Keras layers from strings to padded ids and back.

`CharTokenizer` (Unicode characters), `WordTokenizer` (whitespace-separated
words) and `WordPieceTokenizer` (BERT subwords) share everything but how
they split a string into tokens and join tokens back:
the vocabulary (beginning with the special tokens of `vocabulary`, ids 0-3),
the lookup tables, padding, ``[START]``/``[END]``, truncation, detokenization,
configuration, vocabulary files and learning. The lookups are TensorFlow hash
tables owned by the layer, so a tokenizer runs eagerly, in a ``tf.function``,
in a Keras model (saved as ``.keras`` with its vocabulary in its config) and in
a SavedModel (the tables are saved and restored with it). They need Keras'
TensorFlow backend; `WordPieceTokenizer` also needs tensorflow-text (the
``text`` extra), imported when one is built, not with the package.

A string batch becomes, with ``add_start`` and ``add_end``::

    ["ab", ""]  ->  [[START_ID, id("a"), id("b"), END_ID],
                     [START_ID, END_ID,   PAD_ID,  PAD_ID]]

and `Tokenizer.detokenize` reads each row up to its first ``END_ID``, skips
``PAD_ID`` and ``START_ID``, and writes `UNK_TEXT` for ``UNK_ID`` and for ids
outside the vocabulary.
"""

from __future__ import annotations

import os
from typing import Any

import keras
import tensorflow as tf

from keras_rnncells.checks import check_bool, check_integer
from keras_rnncells.text._tf_text import tensorflow_text
from keras_rnncells.text.vocabulary import (
    END_ID,
    PAD_ID,
    START_ID,
    UNK_ID,
    Texts,
    check_vocabulary,
    learn_frequency_vocabulary,
    learn_wordpiece_vocabulary,
    read_vocabulary,
    write_vocabulary,
)

# What `detokenize` writes for an unknown token: U+FFFD REPLACEMENT CHARACTER.
UNK_TEXT = "\ufffd"


class Tokenizer(keras.layers.Layer):
    """Base of the tokenizers: a layer from strings to ids, and back.

    Subclasses define `_split` (string vector -> ragged string tokens) and
    `_join` (ragged token texts -> string vector).

    Args:
        vocabulary: the tokens, a list of unique non-empty strings beginning
            with ``[PAD]``, ``[UNK]``, ``[START]``, ``[END]``; a token's id
            is its index.
        lowercase: lower-case the strings before splitting them.
        max_length: if set, the most ids per row that `call` returns,
            ``[START]`` and ``[END]`` included: longer texts keep their first
            ``max_length`` tokens minus one per special token requested, and
            ``[END]`` is still their last id when ``add_end``.
        **kwargs: the arguments of ``keras.layers.Layer`` (``name``, ...).
    """

    def __init__(
        self,
        vocabulary: list[str],
        lowercase: bool = False,
        max_length: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._vocabulary = tuple(check_vocabulary(vocabulary))
        if max_length is not None:
            check_integer("max_length", max_length, 1)
        self.lowercase = check_bool("lowercase", lowercase)
        self.max_length = max_length
        ids = tf.range(len(self._vocabulary), dtype=tf.int64)
        tokens = tf.constant(self._vocabulary)
        # int64 values: tensorflow-text's WordPiece kernel reads the table as int64.
        self._token_ids = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tokens, ids), default_value=UNK_ID
        )
        texts = tf.tensor_scatter_nd_update(tokens, [[UNK_ID]], [UNK_TEXT])
        self._token_texts = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(ids, texts), default_value=UNK_TEXT
        )
        # Strings are not tensors Keras should convert to the layer's dtype.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    @property
    def vocabulary(self) -> list[str]:
        """The tokens, in id order."""
        return list(self._vocabulary)

    @property
    def vocabulary_size(self) -> int:
        """The number of tokens, special tokens included."""
        return len(self._vocabulary)

    def tokenize(self, strings: Any) -> tf.RaggedTensor:
        """The int32 ids of the tokens of ``strings`` (shape ``(batch,)``,
        ``(batch, 1)`` or a scalar, a batch of one), without ``[START]`` and
        ``[END]``, not truncated: a ``(batch, None)`` ragged tensor."""
        tokens = self._split(string_vector(strings))
        return tf.cast(self._token_ids.lookup(tokens), tf.int32)

    def call(self, strings: Any, add_start: bool = False, add_end: bool = False) -> tf.Tensor:
        """The ids of ``strings`` as a dense int32 ``(batch, length)`` tensor
        padded with ``PAD_ID``, ``length`` the longest row (at least 1), each
        row with ``START_ID`` first if ``add_start`` and ``END_ID`` last if
        ``add_end``, truncated to ``max_length``."""
        return self.pad(self.tokenize(strings), add_start, add_end)

    def pad(
        self, ids: tf.RaggedTensor, add_start: bool = False, add_end: bool = False
    ) -> tf.Tensor:
        """What `call` makes of the ragged ids of `tokenize`: ``[START]`` and
        ``[END]`` added, truncated to ``max_length``, padded with ``PAD_ID``."""
        check_bool("add_start", add_start)
        check_bool("add_end", add_end)
        if self.max_length is not None:
            room = self.max_length - add_start - add_end
            if room < 0:
                raise ValueError(
                    f"Argument `max_length` ({self.max_length}) leaves no room for the "
                    "[START] and [END] tokens: add_start and add_end need max_length >= 2"
                )
            ids = ids[:, :room]
        rows = ids.nrows()
        start = [_column(rows, START_ID)] if add_start else []
        end = [_column(rows, END_ID)] if add_end else []
        if start or end:
            ids = tf.concat([*start, ids, *end], axis=1)
        ids = ids.to_tensor(PAD_ID)
        # At least one column: no downstream layer should see an empty time axis.
        missing = tf.maximum(1 - tf.shape(ids)[1], 0)
        return tf.pad(ids, [[0, 0], [0, missing]], constant_values=PAD_ID)

    def compute_output_spec(
        self, strings: Any, add_start: bool = False, add_end: bool = False
    ) -> keras.KerasTensor:
        batch = strings.shape[0] if strings.shape else 1
        return keras.KerasTensor((batch, None), dtype="int32")

    def detokenize(self, ids: Any) -> tf.Tensor:
        """The strings of ``ids``, a ``(batch, length)`` integer tensor (dense
        or ragged): a ``(batch,)`` string tensor. Each row is read up to its
        first ``END_ID``, without its ``PAD_ID`` and ``START_ID``; ``UNK_ID``
        and ids outside the vocabulary become `UNK_TEXT`."""
        if isinstance(ids, tf.RaggedTensor):
            ids = ids.to_tensor(PAD_ID)
        ids = tf.convert_to_tensor(ids)
        if not ids.dtype.is_integer or ids.shape.rank != 2:
            raise ValueError(
                "Argument `ids` must be an integer tensor of shape (batch, length), "
                f"received dtype {ids.dtype.name} and shape {ids.shape}"
            )
        ids = tf.cast(ids, tf.int64)
        before_end = tf.cumsum(tf.cast(ids == END_ID, tf.int32), axis=1) == 0
        kept = tf.ragged.boolean_mask(ids, before_end & (ids != PAD_ID) & (ids != START_ID))
        return self._join(self._token_texts.lookup(kept))

    def save_vocabulary(self, path: str | os.PathLike) -> None:
        """Write the vocabulary to ``path``, one token per line (UTF-8), atomically."""
        write_vocabulary(self.vocabulary, path)

    @classmethod
    def from_vocabulary_file(cls, path: str | os.PathLike, **kwargs: Any) -> Tokenizer:
        """The tokenizer of the vocabulary file ``path`` (see `save_vocabulary`);
        ``kwargs`` are the other arguments of the constructor."""
        return cls(read_vocabulary(path), **kwargs)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "vocabulary": self.vocabulary,
            "lowercase": self.lowercase,
            "max_length": self.max_length,
        }

    def _split(self, strings: tf.Tensor) -> tf.RaggedTensor:
        raise NotImplementedError

    def _join(self, tokens: tf.RaggedTensor) -> tf.Tensor:
        raise NotImplementedError


def _column(rows: tf.Tensor, token_id: int) -> tf.RaggedTensor:
    """A ``(rows, 1)`` ragged int32 tensor of ``token_id``."""
    return tf.RaggedTensor.from_tensor(tf.fill(tf.stack([rows, 1]), token_id))


def string_vector(strings: Any) -> tf.Tensor:
    """``strings`` as a string vector: a scalar becomes a batch of one, a
    ``(batch, 1)`` matrix (Keras' text inputs) a ``(batch,)`` vector."""
    try:
        strings = tf.convert_to_tensor(strings)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"Argument `strings` must be a string tensor, received: {strings!r}"
        ) from error
    rank = strings.shape.rank
    if strings.dtype != tf.string or not (rank in (0, 1) or (rank == 2 and strings.shape[1] == 1)):
        raise ValueError(
            "Argument `strings` must be a string tensor of shape (batch,), (batch, 1) or (), "
            f"received dtype {strings.dtype.name} and shape {strings.shape}"
        )
    return tf.reshape(strings, [-1])


class FrequencyTokenizer(Tokenizer):
    """Base of the tokenizers whose vocabulary is every token seen in a corpus:
    they differ only in ``split`` (strings to ragged tokens) and ``separator``
    (what ``detokenize`` puts between tokens)."""

    separator = ""

    @staticmethod
    def split(strings: tf.Tensor) -> tf.RaggedTensor:
        raise NotImplementedError

    @classmethod
    def pieces(cls, strings: tf.Tensor, lowercase: bool) -> tf.RaggedTensor:
        """``split`` after Unicode-aware lower-casing if ``lowercase``."""
        if lowercase:
            strings = tf.strings.lower(strings, encoding="utf-8")
        return cls.split(strings)

    def _split(self, strings: tf.Tensor) -> tf.RaggedTensor:
        return self.pieces(strings, self.lowercase)

    def _join(self, tokens: tf.RaggedTensor) -> tf.Tensor:
        return tf.strings.reduce_join(tokens, axis=-1, separator=self.separator)

    @classmethod
    def from_corpus(
        cls,
        texts: Texts,
        lowercase: bool = False,
        min_count: int = 1,
        max_size: int | None = None,
        **kwargs: Any,
    ) -> FrequencyTokenizer:
        """The tokenizer of the tokens of ``texts`` (an iterable of strings or a
        ``tf.data.Dataset`` of strings): the special tokens, then every token
        seen at least ``min_count`` times, most frequent first, ties in
        codepoint order, at most ``max_size`` tokens in all. ``kwargs``: the
        other arguments of the constructor."""
        vocabulary = learn_frequency_vocabulary(
            texts, lambda strings: cls.pieces(strings, lowercase), min_count, max_size
        )
        return cls(vocabulary, lowercase=lowercase, **kwargs)


@keras.saving.register_keras_serializable(package="keras_rnncells")
class CharTokenizer(FrequencyTokenizer):
    """Tokens are the Unicode characters (code points) of the UTF-8 strings.

    ``tokenize`` splits with ``tf.strings.unicode_split``, after lower-casing
    (Unicode-aware) if ``lowercase``; bytes that are not valid UTF-8 become
    U+FFFD. Characters missing from the vocabulary get ``UNK_ID``. No other
    normalization: ``detokenize`` gives back exactly the strings whose
    characters are all in the vocabulary (lower-cased if ``lowercase``). The
    empty string has no token: one ``PAD_ID`` column (or only ``[START]`` and
    ``[END]``) from ``call``, ``""`` from ``detokenize``.

    Args: those of `Tokenizer`.
    """

    @staticmethod
    def split(strings: tf.Tensor) -> tf.RaggedTensor:
        return tf.strings.unicode_split(strings, "UTF-8")


@keras.saving.register_keras_serializable(package="keras_rnncells")
class WordTokenizer(FrequencyTokenizer):
    """Tokens are the words of the strings: runs of non-whitespace characters.

    ``tokenize`` splits on whitespace (``tf.strings.split``), after
    lower-casing (Unicode-aware) if ``lowercase``; punctuation stays inside
    its word ("robin's egg" is two words). ``detokenize`` joins the words with
    one space, so a round trip gives the text with its whitespace runs made
    single spaces and trimmed. The empty string has no token.

    Args: those of `Tokenizer`.
    """

    separator = " "

    @staticmethod
    def split(strings: tf.Tensor) -> tf.RaggedTensor:
        return tf.strings.split(strings)


@keras.saving.register_keras_serializable(package="keras_rnncells")
class WordPieceTokenizer(Tokenizer):
    """Tokens are BERT's WordPiece subwords (continuations prefixed ``##``).

    Tokenized by ``tensorflow_text.BertTokenizer``: its basic tokenizer
    normalizes the text and splits it into words (on whitespace, around each
    punctuation mark, around each CJK character), then WordPiece splits each
    word greedily into the longest subwords of the vocabulary; a word that
    cannot be split (or longer than 100 bytes) becomes one ``[UNK]``. With
    ``lowercase`` (the default) the text is case-folded, NFD-normalized and
    stripped of accents ("Café" -> "cafe"); without, only NFC-normalized.

    Why ``BertTokenizer`` rather than ``FastWordpieceTokenizer``: the
    vocabulary learner (``bert_vocab_from_dataset``, used by `from_corpus`)
    splits the corpus into words with this same basic tokenizer and the same
    arguments, so the learned subwords and the tokenization agree by
    construction; ``FastWordpieceTokenizer``'s own pre-tokenization neither
    lower-cases nor normalizes, which we would have to rebuild around it. It
    also looks the subwords up in the layer's own lookup table, which
    SavedModels save and restore.

    ``detokenize`` joins the words with one space and the ``##``
    continuations to their word, so a round trip gives the text normalized:
    lower-cased (if ``lowercase``), whitespace runs made single spaces and
    punctuation spaced out ("Hello,  World!" -> "hello , world !").

    Args: those of `Tokenizer`, ``lowercase`` True by default.
    """

    def __init__(
        self,
        vocabulary: list[str],
        lowercase: bool = True,
        max_length: int | None = None,
        **kwargs: Any,
    ) -> None:
        text = tensorflow_text("WordPieceTokenizer")  # the `text` extra
        super().__init__(vocabulary, lowercase=lowercase, max_length=max_length, **kwargs)
        self._bert = text.BertTokenizer(
            self._token_ids,
            token_out_type=tf.string,
            unknown_token=self.vocabulary[UNK_ID],
            **_bert_tokenizer_params(self.lowercase),
        )

    def _split(self, strings: tf.Tensor) -> tf.RaggedTensor:
        return self._bert.tokenize(strings).merge_dims(1, 2)

    def _join(self, tokens: tf.RaggedTensor) -> tf.Tensor:
        words = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(words, r"(^| )##", "")

    @classmethod
    def from_corpus(
        cls, texts: Texts, vocab_size: int = 8000, lowercase: bool = True, **kwargs: Any
    ) -> WordPieceTokenizer:
        """The tokenizer of a WordPiece vocabulary of about ``vocab_size``
        tokens (special tokens included; the learner's target, which it can
        exceed: 8,155 for 8,000 on SST-2's training phrases) learned from ``texts`` (an iterable
        of strings or a ``tf.data.Dataset`` of strings) by tensorflow-text's
        ``bert_vocab_from_dataset``. ``kwargs``: the other arguments of the
        constructor."""
        vocabulary = learn_wordpiece_vocabulary(
            texts, vocab_size, _bert_tokenizer_params(check_bool("lowercase", lowercase))
        )
        return cls(vocabulary, lowercase=lowercase, **kwargs)


def _bert_tokenizer_params(lowercase: bool) -> dict[str, Any]:
    """The arguments of BERT's basic tokenizer, shared by the tokenizer and the
    vocabulary learner."""
    return {"lower_case": True} if lowercase else {"lower_case": False, "normalization_form": "NFC"}
