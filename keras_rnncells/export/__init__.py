"""Serving export: SavedModel (TF Serving's layout), ONNX and LiteRT, each with a manifest."""

from keras_rnncells.export.litert import write_litert
from keras_rnncells.export.manifest import verify_manifest, write_manifest
from keras_rnncells.export.onnx import onnx_path, write_onnx
from keras_rnncells.export.saved_model import (
    load_and_run,
    predict_request,
    write_saved_model,
    write_saved_models,
)
from keras_rnncells.export.servable import (
    Servable,
    model_servable,
    recurrent_layer_servable,
    servable_from_model,
    traced,
)
from keras_rnncells.export.streaming import StepForm, check_streaming, step_form

__all__ = [
    "Servable",
    "StepForm",
    "check_streaming",
    "load_and_run",
    "model_servable",
    "onnx_path",
    "predict_request",
    "recurrent_layer_servable",
    "servable_from_model",
    "step_form",
    "traced",
    "verify_manifest",
    "write_litert",
    "write_manifest",
    "write_onnx",
    "write_saved_model",
    "write_saved_models",
]
