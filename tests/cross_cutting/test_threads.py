"""Two threads of one process, one exporting a model while the other trains
another: the loop switches are context-local (`keras_rnncells.layers.rnn`:
``portable``, ``loop_override``; `keras_rnncells.export.onnx_rnn`'s record of
the layers traced), so each thread gets its own path. The export holds no
XLA-compiled function and serves with XLA JIT disabled, with the model's
numbers; the training thread's steps run the compiled loop and learn."""

from __future__ import annotations

import threading

import keras
import numpy as np
import pytest

import keras_rnncells as krc
from keras_rnncells.export import write_onnx, write_saved_model
from keras_rnncells.layers import rnn


def sequence_model(cell: str, seed: int) -> keras.Model:
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((None, 4), name="sequence")
    outputs = keras.layers.Dense(1, name="score")(krc.RNN(krc.get_cell(cell)(8))(inputs))
    return keras.Model(inputs, outputs, name=f"{cell}-model")


@pytest.mark.slow  # an export beside a training run (17 s of the default run)
def test_one_thread_exports_while_another_trains(
    tmp_path, monkeypatch, serve_like_tf_serving, run_onnx_in_child
):
    loops = []  # (thread, compiled) of every fused loop traced, from the real function
    fused_recurrence = rnn.fused_recurrence

    def recording(*args, **kwargs):
        loops.append((threading.current_thread().name, kwargs["compiled"]))
        return fused_recurrence(*args, **kwargs)

    monkeypatch.setattr(rnn, "fused_recurrence", recording)
    rng = np.random.default_rng(0)
    exported, trained = sequence_model("mgu", 0), sequence_model("mufuru", 1)
    x = rng.normal(size=(64, 12, 4)).astype("float32")
    y = x[:, :, :1].mean(axis=1)
    trained.compile(keras.optimizers.Adam(1e-2), "mse")
    before = trained.evaluate(x, y, verbose=0)
    training_started, failures, exports = threading.Event(), [], {}

    def export() -> None:
        try:
            training_started.wait(timeout=120)
            exports["savedmodel"] = write_saved_model(exported, tmp_path / "export", check=False)
            onnx = tmp_path / "export" / "onnx" / "mgu-model" / "1" / "model.onnx"
            write_onnx(exported, onnx, check=False)
            exports["onnx"] = onnx
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    class Signal(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            training_started.set()

    exporter = threading.Thread(target=export, name="exporter")
    exporter.start()
    trained.fit(x, y, batch_size=8, epochs=8, verbose=0, callbacks=[Signal()])
    exporter.join(timeout=600)
    assert not exporter.is_alive() and not failures, failures

    # each thread traced its own loop: the trainer the compiled one, and it learned;
    # the exporter only the portable one (no XLA in a served graph)
    main = threading.main_thread().name
    assert {compiled for thread, compiled in loops if thread == "exporter"} == {False}
    assert (main, True) in loops
    assert trained.evaluate(x, y, verbose=0) < 0.8 * before

    # the export serves without XLA and gives the model's answers, in both formats
    request = {"sequence": x[:5]}
    expected = exported.predict(request["sequence"], verbose=0)
    served = serve_like_tf_serving([(exports["savedmodel"], request)], tmp_path / "tf")[0]
    answered = run_onnx_in_child([(exports["onnx"], request)], tmp_path / "onnx")[0]
    for outputs in (served, answered):
        assert isinstance(outputs, dict), outputs  # an error string otherwise
        np.testing.assert_allclose(next(iter(outputs.values())), expected, atol=1e-5)
