"""Language models with a `VocabularySoftmax` head, exported: the SavedModel
served as a stock TF Serving serves it (XLA JIT off, keras_rnncells not
importable) and the ONNX file in onnxruntime without TensorFlow, each in a
child process, give the model's logits (class-factored: log-probabilities)
at batch 3, 1 and 0 and at lengths the examples do not have."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_rnncells import GRU, VocabularySoftmax
from keras_rnncells.export import servable_from_model, write_onnx, write_saved_models

VOCABULARY = 50


def language_model(method: str) -> keras.Model:
    """Tokens to logits through the head trained by ``method`` (its weights random)."""
    keras.utils.set_random_seed(3)
    tokens = keras.Input((None,), dtype="int32", name="tokens")
    hidden = GRU(6, return_sequences=True)(keras.layers.Embedding(VOCABULARY, 5)(tokens))
    head = VocabularySoftmax(VOCABULARY, method, num_sampled=8, classes=7)
    model = keras.Model(tokens, head(hidden), name=f"lm_{method}")
    for weight in head.weights:
        weight.assign(np.random.default_rng(0).normal(size=weight.shape, scale=0.5))
    return model


@pytest.mark.parametrize("method", ["sampled", "class"])
def test_language_model_heads_serve_and_run_in_onnxruntime(
    method, tmp_path, serve_like_tf_serving, run_onnx_in_child
):
    model = language_model(method)
    servable = servable_from_model(model)
    (directory,) = write_saved_models([servable], tmp_path / "export")
    onnx_file = tmp_path / "onnx" / "lm.onnx"
    write_onnx(servable, onnx_file)
    rng = np.random.default_rng(1)
    batch = rng.integers(1, VOCABULARY, size=(3, 11)).astype("int32")
    batch[1, 4:] = 0  # right padding
    requests = [{"tokens": batch}, {"tokens": batch[:1, :2]}, {"tokens": batch[:0]}]
    expected = [np.asarray(model(r["tokens"])) for r in requests]
    if method == "class":  # normalized: log-probabilities
        np.testing.assert_allclose(np.exp(expected[0]).sum(-1), 1.0, rtol=1e-5)
    served = serve_like_tf_serving([(directory, r) for r in requests], tmp_path / "serve")
    ran = run_onnx_in_child([(onnx_file, r) for r in requests], tmp_path / "onnx-run")
    for want, from_server, from_onnx in zip(expected, served, ran):
        assert isinstance(from_server, dict), from_server
        assert isinstance(from_onnx, dict), from_onnx
        (server_out,), (onnx_out,) = from_server.values(), from_onnx.values()
        assert server_out.shape == onnx_out.shape == want.shape == (*want.shape[:2], VOCABULARY)
        np.testing.assert_allclose(server_out, want, atol=1e-5)
        np.testing.assert_allclose(onnx_out, want, atol=1e-4)
