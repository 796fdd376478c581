"""Encoder-decoders: attention, the encoder and decoder layers, the seq2seq
model (on ids, and on strings with its tokenizers), decoding inside the
graph (greedy and beam search), and the multi-task model (one encoder, a
decoder or head per task) with its training schedule."""

from keras_rnncells.seq2seq.attention import Attention
from keras_rnncells.seq2seq.decoder import Decoder, ScheduledSampling, inverse_sigmoid_decay
from keras_rnncells.seq2seq.encoder import Encoder
from keras_rnncells.seq2seq.model import Seq2Seq
from keras_rnncells.seq2seq.multitask import MultiTaskSeq2Seq, fit_tasks, task_schedule
from keras_rnncells.seq2seq.search import Decoded, beam_search, greedy_search, repeat_beams
from keras_rnncells.seq2seq.text import TextSeq2Seq

__all__ = [
    "Attention",
    "Decoded",
    "Decoder",
    "Encoder",
    "MultiTaskSeq2Seq",
    "ScheduledSampling",
    "Seq2Seq",
    "TextSeq2Seq",
    "beam_search",
    "fit_tasks",
    "greedy_search",
    "inverse_sigmoid_decay",
    "repeat_beams",
    "task_schedule",
]
