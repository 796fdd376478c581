"""Encoder-decoders: attention, the encoder and decoder layers, the seq2seq
model, and decoding inside the graph (greedy and beam search)."""

from keras_rnncells.seq2seq.attention import Attention
from keras_rnncells.seq2seq.decoder import Decoder, ScheduledSampling, inverse_sigmoid_decay
from keras_rnncells.seq2seq.encoder import Encoder
from keras_rnncells.seq2seq.model import Seq2Seq
from keras_rnncells.seq2seq.search import Decoded, beam_search, greedy_search, repeat_beams

__all__ = [
    "Attention",
    "Decoded",
    "Decoder",
    "Encoder",
    "ScheduledSampling",
    "Seq2Seq",
    "beam_search",
    "greedy_search",
    "inverse_sigmoid_decay",
    "repeat_beams",
]
