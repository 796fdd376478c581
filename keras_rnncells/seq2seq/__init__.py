"""Encoder-decoders: attention, the encoder and decoder layers, the seq2seq
model (on ids, and on strings with its tokenizers), and decoding inside the
graph (greedy and beam search)."""

from keras_rnncells.seq2seq.attention import Attention
from keras_rnncells.seq2seq.decoder import Decoder, ScheduledSampling, inverse_sigmoid_decay
from keras_rnncells.seq2seq.encoder import Encoder
from keras_rnncells.seq2seq.model import Seq2Seq
from keras_rnncells.seq2seq.search import Decoded, beam_search, greedy_search, repeat_beams
from keras_rnncells.seq2seq.text import TextSeq2Seq

__all__ = [
    "Attention",
    "Decoded",
    "Decoder",
    "Encoder",
    "ScheduledSampling",
    "Seq2Seq",
    "TextSeq2Seq",
    "beam_search",
    "greedy_search",
    "inverse_sigmoid_decay",
    "repeat_beams",
]
