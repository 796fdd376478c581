"""Order-invariant set encoding and pointing: read-process-write's
`SetEncoder` (Vinyals et al. 2016), the `PointerDecoder` (Vinyals et al.
2015) and `PointerSorter`, the two put to sorting numbers."""

from keras_rnncells.sets.pointer import PointerDecoder
from keras_rnncells.sets.set_encoder import SetEncoder
from keras_rnncells.sets.sorting import PointerSorter, exact_match

__all__ = ["PointerDecoder", "PointerSorter", "SetEncoder", "exact_match"]
