"""keras_rnncells: the recurrent cells of the literature for Keras 3, fast.

The public API (``keras_rnncells._api``): every cell (``keras_rnncells.cells``),
the ``RNN`` layer, the named layers and word dropout (``keras_rnncells.layers``),
MuFuRU's operation registry and the norm-stabilizer and temporal-coherence
penalties; encoder-decoders (``keras_rnncells.seq2seq``), in-graph tokenizers
(``keras_rnncells.text``) and the applications (``keras_rnncells.apps``) as
subpackages, imported here so that every ``.keras`` file of the package loads
after ``import keras_rnncells`` (their classes register with Keras as they are
imported).

Only the ``rnncells`` command (its console script, or ``python -m
keras_rnncells.cli``) imports the API on first use instead (PEP 562
``__getattr__``): ``rnncells --help`` and its argument errors then answer
without importing TensorFlow, which takes seconds.
"""

from __future__ import annotations

import importlib
import itertools
import os
import sys
from typing import Any

__version__ = "0.1.0"


def _runs_the_command() -> bool:
    """Whether this interpreter was started as ``rnncells`` (pip's console
    script, ``rnncells.exe`` or ``rnncells-script.py`` on Windows) or as
    ``python -m keras_rnncells.cli``."""
    script = os.path.basename(sys.argv[0]) if getattr(sys, "argv", None) else ""
    if script.removesuffix(".exe").removesuffix("-script.py") == "rnncells":
        return True
    argv = getattr(sys, "orig_argv", [])
    return any(a == "-m" and b == "keras_rnncells.cli" for a, b in itertools.pairwise(argv))


_loading = False

if _runs_the_command():

    def __getattr__(name: str) -> Any:
        """Imports the public API on the first name asked for that is not here."""
        global _loading
        if name.startswith("_") or _loading:  # a submodule import asks while loading
            raise AttributeError(f"module 'keras_rnncells' has no attribute {name!r}")
        _loading = True
        try:
            api = importlib.import_module("keras_rnncells._api")
        finally:
            _loading = False
        globals().update({key: getattr(api, key) for key in api.__all__}, __all__=api.__all__)
        if name not in globals():
            raise AttributeError(f"module 'keras_rnncells' has no attribute {name!r}")
        return globals()[name]

else:
    from keras_rnncells._api import *  # noqa: F403 (names listed in _api.__all__)
    from keras_rnncells._api import __all__ as __all__
