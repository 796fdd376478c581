"""Serving export: SavedModel (TF Serving's layout) and ONNX, each with a manifest."""

from keras_rnncells.export.manifest import verify_manifest, write_manifest
from keras_rnncells.export.servable import Servable, recurrent_layer_servable, traced

__all__ = ["Servable", "recurrent_layer_servable", "traced", "verify_manifest", "write_manifest"]
