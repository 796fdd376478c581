"""Serving export: SavedModel (TF Serving's layout), ONNX and LiteRT, each with a manifest.

The public names below are imported from their modules on first use (PEP 562
``__getattr__``), so ``import keras_rnncells`` (whose applications need
`servable` and `limits` only) loads none of the ONNX or LiteRT writers:
``from keras_rnncells.export import write_onnx`` imports `onnx` then.
"""

from __future__ import annotations

import importlib
from typing import Any

# Each public name and the module of this package that defines it.
_LAZY = {
    "Servable": "servable",
    "StepForm": "streaming",
    "check_streaming": "streaming",
    "load_and_run": "check",
    "model_servable": "servable",
    "onnx_path": "onnx",
    "predict_request": "saved_model",
    "recurrent_layer_servable": "servable",
    "servable_from_model": "servable",
    "step_form": "streaming",
    "traced": "servable",
    "verify_manifest": "manifest",
    "write_litert": "litert",
    "write_manifest": "manifest",
    "write_onnx": "onnx",
    "write_saved_model": "saved_model",
    "write_saved_models": "saved_model",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    """The public name ``name``, its module imported on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value  # later look-ups do not come back here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
