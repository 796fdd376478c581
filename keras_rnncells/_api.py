"""The public API, as ``keras_rnncells`` holds it (see its docstring): every
cell (``keras_rnncells.cells``), the ``RNN`` layer, the named layers and
word dropout (``keras_rnncells.layers``), MuFuRU's operation registry and the
norm-stabilizer and temporal-coherence penalties, the language models' token
cross-entropy metrics, large-vocabulary output layer and its unigram
start (``keras_rnncells.softmax``), the re-estimation of recurrent batch
norm's statistics; encoder-decoders
(``keras_rnncells.seq2seq``), tree encoders (``keras_rnncells.tree``),
in-graph tokenizers (``keras_rnncells.text``) and the applications
(``keras_rnncells.apps``, whose model classes Keras then knows) as
subpackages."""

from keras_rnncells import apps, cells, layers, seq2seq, text, tree
from keras_rnncells.cells import *  # noqa: F403 (names listed in cells.__all__)
from keras_rnncells.cells.mufuru import register_operation
from keras_rnncells.layers import *  # noqa: F403 (names listed in layers.__all__)
from keras_rnncells.metrics import TokenCrossEntropy, TokenLossMean
from keras_rnncells.reestimation import reestimate_batch_norm
from keras_rnncells.regularizers import (
    NormStabilizer,
    TemporalCoherence,
    norm_stabilizer,
    temporal_coherence,
)
from keras_rnncells.sets import PointerDecoder, PointerSorter, SetEncoder
from keras_rnncells.softmax import VocabularySoftmax, start_at_unigram

# The applications' model classes register with Keras when their modules are
# imported: load_apps imports every one listed (keras_rnncells.defaults.APPS),
# so every model.keras the package writes loads after `import keras_rnncells`.
apps.load_apps()

__all__ = [
    *cells.__all__,
    *layers.__all__,
    "NormStabilizer",
    "PointerDecoder",
    "PointerSorter",
    "SetEncoder",
    "TemporalCoherence",
    "TokenCrossEntropy",
    "TokenLossMean",
    "VocabularySoftmax",
    "apps",
    "norm_stabilizer",
    "reestimate_batch_norm",
    "register_operation",
    "seq2seq",
    "start_at_unigram",
    "temporal_coherence",
    "text",
    "tree",
]
