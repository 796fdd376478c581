"""keras_rnncells: the recurrent cells of the literature for Keras 3, fast.

The public API: every cell (``keras_rnncells.cells``), the ``RNN`` layer and the
named layers (``keras_rnncells.layers``), MuFuRU's operation registry and the
norm-stabilizer penalty; encoder-decoders (``keras_rnncells.seq2seq``) and
in-graph tokenizers (``keras_rnncells.text``) as subpackages, imported here so
that every saved model of the package loads after ``import keras_rnncells``.
"""

from keras_rnncells import cells, layers, seq2seq, text
from keras_rnncells.cells import *  # noqa: F403 (names listed in cells.__all__)
from keras_rnncells.cells.mufuru import register_operation
from keras_rnncells.layers import *  # noqa: F403 (names listed in layers.__all__)
from keras_rnncells.regularizers import NormStabilizer, norm_stabilizer

__version__ = "0.1.0"

__all__ = [
    *cells.__all__,
    *layers.__all__,
    "NormStabilizer",
    "norm_stabilizer",
    "register_operation",
    "seq2seq",
    "text",
]
