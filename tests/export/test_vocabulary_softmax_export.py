"""Language models with a `VocabularySoftmax` head, exported: the SavedModel
served as a stock TF Serving serves it (XLA JIT off, keras_rnncells not
importable) and the ONNX file in onnxruntime without TensorFlow, each in a
child process, give the model's logits (class-factored: log-probabilities)
at batch 3, 1 and 0 and at lengths the examples do not have; the
hierarchical softmax's log-probabilities too."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_rnncells import GRU, VocabularySoftmax
from keras_rnncells.export import servable_from_model, write_onnx, write_saved_models

VOCABULARY = 50
COUNTS = [0.0, *(100.0 / np.arange(1, VOCABULARY))]  # the hierarchical softmax's tree


def language_model() -> keras.Model:
    """Tokens to the logits of a sampled-softmax head and the log-probabilities
    of a class-factored and a hierarchical one over the same GRU (weights random)."""
    keras.utils.set_random_seed(3)
    tokens = keras.Input((None,), dtype="int32", name="tokens")
    hidden = GRU(6, return_sequences=True)(keras.layers.Embedding(VOCABULARY, 5)(tokens))
    heads = {
        method: VocabularySoftmax(
            VOCABULARY, method, num_sampled=8, classes=7, unigram_counts=COUNTS, name=method
        )
        for method in ("sampled", "class", "hierarchical")
    }
    model = keras.Model(tokens, {method: head(hidden) for method, head in heads.items()})
    for head in heads.values():
        for weight in head.weights:
            weight.assign(np.random.default_rng(0).normal(size=weight.shape, scale=0.5))
    return model


@pytest.mark.slow  # every head exported both ways (19 s of the default run)
def test_language_model_heads_serve_and_run_in_onnxruntime(
    tmp_path, serve_like_tf_serving, run_onnx_in_child
):
    model = language_model()
    servable = servable_from_model(model)
    (directory,) = write_saved_models([servable], tmp_path / "export")
    onnx_file = tmp_path / "onnx" / "lm.onnx"
    write_onnx(servable, onnx_file)
    rng = np.random.default_rng(1)
    batch = rng.integers(1, VOCABULARY, size=(3, 11)).astype("int32")
    batch[1, 4:] = 0  # right padding
    requests = [{"tokens": batch}, {"tokens": batch[:1, :2]}, {"tokens": batch[:0]}]
    expected = [{k: np.asarray(v) for k, v in model(r["tokens"]).items()} for r in requests]
    for normalized in ("class", "hierarchical"):
        np.testing.assert_allclose(np.exp(expected[0][normalized]).sum(-1), 1.0, rtol=1e-5)
    served = serve_like_tf_serving([(directory, r) for r in requests], tmp_path / "serve")
    ran = run_onnx_in_child([(onnx_file, r) for r in requests], tmp_path / "onnx-run")
    for want, from_server, from_onnx in zip(expected, served, ran):
        assert isinstance(from_server, dict), from_server
        assert isinstance(from_onnx, dict), from_onnx
        assert set(from_server) == set(from_onnx) == set(want)
        for name, value in want.items():
            assert value.shape == (*value.shape[:2], VOCABULARY)
            assert from_server[name].shape == from_onnx[name].shape == value.shape
            np.testing.assert_allclose(from_server[name], value, atol=1e-5, err_msg=name)
            np.testing.assert_allclose(from_onnx[name], value, atol=1e-4, err_msg=name)
