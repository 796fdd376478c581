"""In-graph tokenization (tensorflow-text): tokenizer layers and vocabularies."""

from keras_rnncells.text.learning import learn_tokenizer
from keras_rnncells.text.sentence_piece import SentencePieceTokenizer
from keras_rnncells.text.tokenizers import (
    UNK_TEXT,
    CharTokenizer,
    Tokenizer,
    WordPieceTokenizer,
    WordTokenizer,
)
from keras_rnncells.text.vocabulary import (
    END,
    END_ID,
    PAD,
    PAD_ID,
    SPECIAL_TOKENS,
    START,
    START_ID,
    UNK,
    UNK_ID,
)

__all__ = [
    "END",
    "END_ID",
    "PAD",
    "PAD_ID",
    "SPECIAL_TOKENS",
    "START",
    "START_ID",
    "UNK",
    "UNK_ID",
    "UNK_TEXT",
    "CharTokenizer",
    "SentencePieceTokenizer",
    "Tokenizer",
    "WordPieceTokenizer",
    "WordTokenizer",
    "learn_tokenizer",
]
