"""Every SavedModel the package writes serves in a stock TF Serving.

``tensorflow_model_server`` disables XLA JIT at start-up, cannot import
keras_rnncells and runs the signature through the SavedModel loader; the
``serve_like_tf_serving`` fixture (tests/tools/stock_server.py) does the same
in a child process. Checked here, with parity against the exporting process:

* Keras' own ``model.export(format="tf_saved_model")`` of one model holding a
  layer of every registered cell, masked (right-padded ids, and an empty row);
* the four applications (``write_saved_models``, the apps' servables);
* a training graph, which keeps the XLA-compiled loop, is refused by the same
  stand-in server: the check can fail.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells import RNN, get_cell, list_cells
from keras_rnncells.apps import servable_for
from keras_rnncells.export import write_saved_models

UNITS = 4  # = the embedding size, which the MUT cells require
VOCABULARY = 12


def every_cell_model() -> keras.Model:
    """Token ids -> one output per registered cell, each an ``RNN`` over an
    ``Embedding(mask_zero=True)``, so every layer runs masked."""
    keras.utils.set_random_seed(0)
    ids = keras.Input((None,), dtype="int32", name="ids")
    embedded = keras.layers.Embedding(VOCABULARY, UNITS, mask_zero=True)(ids)
    outputs = {name: RNN(get_cell(name)(UNITS), name=name)(embedded) for name in list_cells()}
    return keras.Model(ids, outputs)


def token_batches() -> list[np.ndarray]:
    """Right-padded id rows (one all padding), one row, and a longer batch."""
    rng = np.random.default_rng(0)
    padded = rng.integers(1, VOCABULARY, size=(5, 7)).astype("int32")
    for row, length in enumerate([7, 3, 1, 0, 5]):
        padded[row, length:] = 0
    return [padded, padded[:1, :4], rng.integers(1, VOCABULARY, size=(33, 19)).astype("int32")]


@pytest.mark.slow  # every cell exported (test_saved_model serves each) (43 s of the default run)
def test_keras_export_of_every_cell_serves_without_xla(tmp_path, serve_like_tf_serving):
    model = every_cell_model()
    directory = tmp_path / "every-cell" / "1"
    model.export(directory, format="tf_saved_model", verbose=False)
    batches = token_batches()
    served = serve_like_tf_serving(
        [(directory, {"ids": ids}) for ids in batches], tmp_path / "serve"
    )
    for ids, outputs in zip(batches, served):
        assert isinstance(outputs, dict), outputs  # the signature raised: its message
        expected = model.predict(ids, verbose=0)
        assert set(outputs) == set(expected) == set(list_cells())
        for cell, value in expected.items():
            np.testing.assert_allclose(outputs[cell], value, atol=1e-5, err_msg=cell)


def test_the_apps_savedmodels_serve_without_xla(tmp_path, tiny_app_models, serve_like_tf_serving):
    servables = [servable_for(model) for model in tiny_app_models()]
    directories = write_saved_models(servables, tmp_path, version=1, check=False)
    served = serve_like_tf_serving(
        [(d, s.examples) for s, d in zip(servables, directories)], tmp_path / "serve"
    )
    for servable, outputs in zip(servables, served):
        assert isinstance(outputs, dict), f"{servable.name}: {outputs}"
        expected = servable.serve(**{k: tf.constant(v) for k, v in servable.examples.items()})
        assert set(outputs) == set(expected), servable.name
        for name, value in expected.items():
            value = value.numpy()
            if value.dtype == object:
                assert list(outputs[name]) == list(value.astype(bytes)), (servable.name, name)
            else:
                np.testing.assert_allclose(outputs[name], value, atol=1e-5, err_msg=name)


def test_the_stand_in_server_refuses_graphs_that_need_xla(tmp_path, serve_like_tf_serving):
    """A training graph keeps the compiled loop: saved anyway, it fails where XLA
    JIT is off, as it would in TF Serving. An inference graph serves. (Both
    served by one child: its TensorFlow import is most of the cost.)"""
    keras.utils.set_random_seed(0)
    layer = RNN(get_cell("mgu")(UNITS))
    layer.build((None, None, UNITS))
    x = np.ones((2, 3, UNITS), "float32")
    jobs = []
    for training in (True, False):
        module = tf.Module()
        module.layer = layer
        spec = tf.TensorSpec((None, None, UNITS), tf.float32, name="x")
        module.serve = tf.function(
            lambda x, training=training: {"h": layer(x, training=training)},
            input_signature=[spec],
        )
        # tracked directly, as keras.export.ExportArchive does, for the session loader
        module.serving_variables = list(module.serve.get_concrete_function().variables)
        directory = tmp_path / f"training-{training}" / "1"
        tf.saved_model.save(module, str(directory), signatures=module.serve)
        jobs.append((directory, {"x": x}))
    trained, inferred = serve_like_tf_serving(jobs, tmp_path / "serve")
    assert isinstance(trained, str) and "XLA compilation disabled" in trained, trained
    assert isinstance(inferred, dict), inferred
    np.testing.assert_allclose(inferred["h"], layer(x), atol=1e-5)
