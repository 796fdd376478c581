"""The public API, as ``keras_rnncells`` holds it (see its docstring): every
cell (``keras_rnncells.cells``), the ``RNN`` layer and the named layers
(``keras_rnncells.layers``), MuFuRU's operation registry and the
norm-stabilizer penalty; encoder-decoders (``keras_rnncells.seq2seq``) and
in-graph tokenizers (``keras_rnncells.text``) as subpackages."""

from keras_rnncells import cells, layers, seq2seq, text
from keras_rnncells.cells import *  # noqa: F403 (names listed in cells.__all__)
from keras_rnncells.cells.mufuru import register_operation
from keras_rnncells.layers import *  # noqa: F403 (names listed in layers.__all__)
from keras_rnncells.regularizers import NormStabilizer, norm_stabilizer

__all__ = [
    *cells.__all__,
    *layers.__all__,
    "NormStabilizer",
    "norm_stabilizer",
    "register_operation",
    "seq2seq",
    "text",
]
