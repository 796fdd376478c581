"""One tokenizer of each kind, learned from a corpus by name: what the
applications' ``--tokenizer`` flag (`keras_rnncells.defaults.TOKENIZERS`) builds."""

from __future__ import annotations

from typing import Any

from keras_rnncells.checks import check_choice
from keras_rnncells.defaults import TOKENIZERS
from keras_rnncells.text.sentence_piece import SentencePieceTokenizer
from keras_rnncells.text.tokenizers import CharTokenizer, Tokenizer, WordPieceTokenizer
from keras_rnncells.text.vocabulary import Texts


def learn_tokenizer(
    kind: str, texts: Texts, vocabulary_size: int, lowercase: bool = True, **kwargs: Any
) -> Tokenizer:
    """The ``kind`` tokenizer (one of `TOKENIZERS`) learned from ``texts``,
    at most ``vocabulary_size`` tokens, special tokens included (WordPiece's
    learner takes it as a target, which it can exceed):
    ``"wordpiece"`` (`WordPieceTokenizer`), ``"bpe"`` or ``"unigram"``
    (`SentencePieceTokenizer`), ``"char"`` (`CharTokenizer`, the most
    frequent characters). ``kwargs``: the other arguments of its constructor
    (``max_length``)."""
    check_choice("tokenizer", kind, TOKENIZERS)
    if kind == "wordpiece":
        return WordPieceTokenizer.from_corpus(texts, vocabulary_size, lowercase, **kwargs)
    if kind == "char":
        return CharTokenizer.from_corpus(texts, lowercase, max_size=vocabulary_size, **kwargs)
    return SentencePieceTokenizer.from_corpus(texts, vocabulary_size, kind, lowercase, **kwargs)
