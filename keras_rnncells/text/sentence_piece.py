"""Subword tokenization by a SentencePiece model (Kudo & Richardson 2018):
byte-pair encoding (Sennrich et al. 2016) or the unigram language model
(Kudo 2018), learned by the ``sentencepiece`` package and run in the graph by
``tensorflow_text.SentencepieceTokenizer``.

The model's ids are the vocabulary's: `learn_sentence_piece_model` trains it
with ``[PAD]``, ``[UNK]``, ``[START]`` and ``[END]`` as pieces 0-3, so the
special ids of `keras_rnncells.text.vocabulary` hold for it as for every
tokenizer of the package, and onnxruntime-extensions' ``SentencepieceTokenizer``
op, given the same model, gives the same ids (`keras_rnncells.export.onnx_text`).
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from keras_rnncells.checks import check_bool, check_integer
from keras_rnncells.files import write_atomically
from keras_rnncells.text._tf_text import EXTRA, tensorflow_text
from keras_rnncells.text.tokenizers import Tokenizer, string_vector
from keras_rnncells.text.vocabulary import SPECIAL_TOKENS, Texts, string_batches

MODEL_TYPES = ("bpe", "unigram")
# SentencePiece's word-boundary mark, which begins each word's first piece.
WORD_BOUNDARY = "\u2581"
# The trainer's options that make our special tokens its pad, unk, bos and eos pieces, ids 0-3.
SPECIAL_OPTIONS = {
    option: value
    for index, (kind, token) in enumerate(zip(("pad", "unk", "bos", "eos"), SPECIAL_TOKENS))
    for option, value in ((f"{kind}_id", index), (f"{kind}_piece", token))
}


def learn_sentence_piece_model(
    texts: Texts, vocab_size: int = 8000, model_type: str = "bpe", lowercase: bool = True
) -> bytes:
    """A serialized SentencePiece model of at most ``vocab_size`` pieces
    (special tokens included) learned from ``texts`` (an iterable of strings
    or a ``tf.data.Dataset`` of strings): ``model_type`` ``"bpe"`` or
    ``"unigram"``; NFKC normalization, case-folded if ``lowercase``. Fewer
    pieces where the corpus holds fewer. Needs the ``sentencepiece`` package
    (the ``text`` extra)."""
    check_integer("vocab_size", vocab_size, len(SPECIAL_TOKENS) + 1)
    if model_type not in MODEL_TYPES:
        raise ValueError(
            f"Argument `model_type` must be one of {MODEL_TYPES}, received: {model_type!r}"
        )
    try:
        import sentencepiece
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            f"Learning a SentencePiece model needs sentencepiece: pip install '{EXTRA}'",
            name="sentencepiece",
        ) from None
    sentences = list(_nonempty_texts(texts))
    if not sentences:
        raise ValueError("Argument `texts` must hold a non-empty text to learn pieces from")
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_writer=model,
        vocab_size=vocab_size,
        model_type=model_type,
        normalization_rule_name="nmt_nfkc_cf" if check_bool("lowercase", lowercase) else "nmt_nfkc",
        hard_vocab_limit=False,  # a small corpus gets the pieces it has
        character_coverage=1.0,  # every character of the corpus is a piece
        num_threads=1,  # the same model on every machine
        minloglevel=2,
        **SPECIAL_OPTIONS,
    )
    return model.getvalue()


@keras.saving.register_keras_serializable(package="keras_rnncells")
class SentencePieceTokenizer(Tokenizer):
    """Tokens are the pieces of a SentencePiece model: BPE or unigram subwords.

    Tokenized by tensorflow-text's SentencePiece ops: the model's own
    normalization (NFKC, case-folded when learned with ``lowercase``), a
    ``▁`` (U+2581) before each word, then the model's segmentation into
    pieces. Characters the model has not seen become ``[UNK]``.
    ``detokenize`` joins the pieces and makes each ``▁`` a space (the first
    one dropped), so a round trip gives the normalized text with single
    spaces. The empty string has no token.

    Args:
        model: a serialized SentencePiece model (``bytes``, or the base64 text
            of them as the config holds) whose pieces 0-3 are ``[PAD]``,
            ``[UNK]``, ``[START]`` and ``[END]``: `from_corpus` learns one,
            `from_model_file` reads one.
        max_length: as `Tokenizer`'s.
        **kwargs: the arguments of ``keras.layers.Layer``.
    """

    def __init__(self, model: bytes | str, max_length: int | None = None, **kwargs: Any) -> None:
        self._ops = tensorflow_text(  # the `text` extra
            "SentencePieceTokenizer", "tensorflow_text.python.ops.sentencepiece_tokenizer"
        ).gen_sentencepiece_tokenizer
        self.model = _model_bytes(model)
        try:
            handle = self._ops.sentencepiece_op(model=self.model)
            ids = tf.range(self._ops.sentencepiece_vocab_size_op(handle))
            pieces = self._ops.sentencepiece_id_to_string_op(handle, ids).numpy()
        except tf.errors.OpError:
            raise ValueError(
                "Argument `model` must be a serialized SentencePiece model; "
                f"SentencePiece could not read these {len(self.model)} bytes"
            ) from None
        vocabulary = [piece.decode("utf-8") for piece in pieces]
        if tuple(vocabulary[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
            raise ValueError(
                f"Argument `model` must be a SentencePiece model whose pieces 0-3 are "
                f"{list(SPECIAL_TOKENS)} (learn it with SentencePieceTokenizer.from_corpus), "
                f"received pieces {vocabulary[: len(SPECIAL_TOKENS)]}"
            )
        super().__init__(vocabulary, max_length=max_length, **kwargs)

    def tokenize(self, strings: Any) -> tf.RaggedTensor:
        # The model is opened by each call (an op of the graph, or an eager op):
        # tensorflow-text's tokenizer opens it once, in the eager kernel cache,
        # which `tf.random.set_seed` and `clear_session` empty under it.
        handle = self._ops.sentencepiece_op(model=self.model)
        values, splits = self._ops.sentencepiece_tokenize_op(
            handle,
            string_vector(strings),
            nbest_size=0,
            alpha=1.0,
            add_bos=False,
            add_eos=False,
            reverse=False,
            out_type=tf.int32,
        )
        return tf.RaggedTensor.from_row_splits(values, splits, validate=False)

    def _join(self, tokens: tf.RaggedTensor) -> tf.Tensor:
        return words_of_pieces(tf.strings.reduce_join(tokens, axis=-1))

    def save_model(self, path: str | os.PathLike) -> None:
        """Write the SentencePiece model to ``path``, atomically."""
        write_atomically(path, lambda temporary: Path(temporary).write_bytes(self.model))

    @classmethod
    def from_model_file(cls, path: str | os.PathLike, **kwargs: Any) -> SentencePieceTokenizer:
        """The tokenizer of the SentencePiece model file ``path`` (see
        `save_model`); ``kwargs``: the other arguments of the constructor."""
        try:
            model = Path(path).read_bytes()
        except OSError as error:
            raise ValueError(
                f"Argument `path` must be a readable SentencePiece model file, received "
                f"{str(path)!r} ({error.strerror})"
            ) from None
        return cls(model, **kwargs)

    @classmethod
    def from_corpus(
        cls,
        texts: Texts,
        vocab_size: int = 8000,
        model_type: str = "bpe",
        lowercase: bool = True,
        **kwargs: Any,
    ) -> SentencePieceTokenizer:
        """The tokenizer of a model learned from ``texts`` by
        `learn_sentence_piece_model`; ``kwargs``: the other arguments of the
        constructor."""
        return cls(learn_sentence_piece_model(texts, vocab_size, model_type, lowercase), **kwargs)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        for derived in ("vocabulary", "lowercase"):  # both come from the model
            del config[derived]
        return {**config, "model": base64.b64encode(self.model).decode("ascii")}


def words_of_pieces(joined: tf.Tensor) -> tf.Tensor:
    """Joined pieces as text: each word boundary a space, the first dropped."""
    return tf.strings.regex_replace(tf.strings.regex_replace(joined, WORD_BOUNDARY, " "), "^ ", "")


def _nonempty_texts(texts: Texts) -> Iterator[str]:
    for batch in string_batches(texts):
        yield from (text.decode("utf-8") for text in batch.numpy() if text)


def _model_bytes(model: Any) -> bytes:
    if isinstance(model, str):
        try:
            return base64.b64decode(model, validate=True)
        except ValueError:
            pass
    elif isinstance(model, bytes):
        return model
    raise ValueError(
        "Argument `model` must be the bytes of a SentencePiece model (or their base64 text), "
        f"received: {str(model)[:60]!r}"
    )
