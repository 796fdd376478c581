"""LiteRT export: builtin ops only, one file for any batch and length, the
fused LSTM op, quantization, and the artifact run as a phone's app runs it.

`write_litert` itself checks every export in ``ai_edge_litert``'s interpreter
in a process where TensorFlow cannot be imported, at three input shapes
(the examples, one row of one step, 3 rows of 7 steps), against the model in
this process; the tests below also run the written file in such a child at
shapes of their own (batch 0, long sequences) and read its op list."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells import GRU, LSTM, RNN, get_cell, list_cells
from keras_rnncells.export import recurrent_layer_servable, servable_from_model, write_litert
from keras_rnncells.export.litert import MODEL_FILE, fused_lstm_ineligibility, litert_tracing
from keras_rnncells.export.litert_run import model_ops

UNITS = 4  # = the input size, which the MUT cells require


def run_without_tensorflow(model_path, inputs: dict[str, np.ndarray], tmp_path) -> dict:
    """The model's serving signature on ``inputs``, in a child process where
    ``import tensorflow`` fails (as on a phone)."""
    np.savez(tmp_path / "inputs.npz", **inputs)
    program = textwrap.dedent(
        f"""
        import sys
        sys.modules["tensorflow"] = None
        import numpy as np
        from ai_edge_litert.interpreter import Interpreter
        interpreter = Interpreter(model_path={str(model_path)!r})
        runner = interpreter.get_signature_runner("serving_default")
        inputs = dict(np.load({str(tmp_path / "inputs.npz")!r}))
        np.savez({str(tmp_path / "outputs.npz")!r}, **runner(**inputs))
        """
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return dict(np.load(tmp_path / "outputs.npz"))


def manifest_of(directory) -> dict:
    return json.loads((directory / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.cell_sweep
@pytest.mark.parametrize("cell", list_cells())
def test_every_cell_converts_to_builtin_ops_for_any_batch_and_length(cell, tmp_path):
    servable = recurrent_layer_servable(cell, units=UNITS, input_dim=UNITS)
    directory = write_litert(servable, tmp_path, version=1)
    manifest = manifest_of(directory)
    assert manifest["format"] == "litert" and manifest["batch_size"] is None
    ops = model_ops(str(directory / MODEL_FILE))
    assert ops == manifest["ops"] and "WHILE" in ops
    assert not [op for op in ops if op.startswith("CUSTOM")], ops
    shapes = [s["sequences"] for s in manifest["parity"]["input_shapes"]]
    assert [1, 1, UNITS] in shapes and [3, 7, UNITS] in shapes
    assert max(manifest["parity"]["max_abs_error"].values()) <= 1e-5
    # batch 0 and a long odd sequence, in a child without TensorFlow
    for shape in [(0, 3, UNITS), (2, 41, UNITS)]:
        x = np.random.default_rng(1).normal(size=shape).astype("float32")
        found = run_without_tensorflow(directory / MODEL_FILE, {"sequences": x}, tmp_path)
        expected = servable.serve(sequences=tf.constant(x))
        np.testing.assert_allclose(found["outputs"], expected["outputs"], atol=1e-5, err_msg=cell)


def test_lstm_of_a_fixed_batch_becomes_the_fused_op_and_computes_it_unclipped(tmp_path):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((None, 3), name="sequences")
    sequences = LSTM(UNITS, return_sequences=True)(inputs)
    backwards = keras.layers.Bidirectional(LSTM(UNITS, return_sequences=True))(sequences)
    model = keras.Model(inputs, [LSTM(UNITS)(backwards), backwards])
    directory = write_litert(model, tmp_path, version=1, batch_size=1)
    ops = model_ops(str(directory / MODEL_FILE))
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" in ops and "WHILE" not in ops, ops
    # LiteRT's op clips the cell state at 10 as the converter writes it; ours
    # has no clip. Input 0 drives c up by ~1 a step for 30 steps, input 1 down
    # by ~1 a step for 20: c ends near +10 unclipped (h ~ +1), near -10 clipped
    layer = model.layers[1]
    kernel = np.full((3, 4 * UNITS), 5.0, "float32")  # i, f, o open; candidate +1
    kernel[1, 2 * UNITS : 3 * UNITS] = -5.0  # input 1: candidate -1
    kernel[2] = 0.0
    layer.cell.kernel.assign(kernel)
    layer.cell.recurrent_kernel.assign(np.zeros_like(layer.cell.recurrent_kernel))
    directory = write_litert(model, tmp_path, version=2, batch_size=1)
    x = np.zeros((1, 50, 3), "float32")
    x[0, :30, 0] = x[0, 30:, 1] = 1.0
    assert model.layers[1](x)[0, -1, 0] > 0.5  # unclipped: c is still positive
    found = run_without_tensorflow(directory / MODEL_FILE, {"sequences": x}, tmp_path)
    expected = model.predict(x, verbose=0)
    np.testing.assert_allclose(found["output_0"], expected[0], atol=1e-5)
    np.testing.assert_allclose(found["output_1"], expected[1], atol=1e-5)


def test_what_keeps_the_lstm_a_loop(tmp_path):
    layer = LSTM(UNITS)
    layer.build((1, None, 3))
    known = tf.zeros((1, 5, 3))
    assert fused_lstm_ineligibility(layer, known, None) is None
    assert "mask" in fused_lstm_ineligibility(layer, known, tf.ones((1, 5), bool))
    assert "batch" in fused_lstm_ineligibility(layer, tf.keras.Input((None, 3)), None)
    assert "LSTMCell" in fused_lstm_ineligibility(GRU(UNITS), known, None)


def masked_stack() -> keras.Model:
    """Ids -> embedding (mask_zero) -> GRU (reset_after=False) -> a
    Bidirectional LSTM -> MGU: masks through a stack of different cells."""
    keras.utils.set_random_seed(0)
    ids = keras.Input((None,), dtype="int32", name="ids")
    x = keras.layers.Embedding(12, UNITS, mask_zero=True)(ids)
    x = GRU(UNITS, reset_after=False, return_sequences=True)(x)
    x = keras.layers.Bidirectional(LSTM(UNITS, return_sequences=True))(x)
    return keras.Model(ids, RNN(get_cell("mgu")(UNITS))(x))


def test_a_masked_stack_converts_for_left_and_right_padding(tmp_path):
    model = masked_stack()
    directory = write_litert(model, tmp_path, version=1)
    assert not [op for op in manifest_of(directory)["ops"] if op.startswith("CUSTOM")]
    ids = np.array([[3, 4, 5, 0, 0], [0, 0, 7, 8, 9], [0, 0, 0, 0, 0]], "int32")
    found = run_without_tensorflow(directory / MODEL_FILE, {"ids": ids}, tmp_path)
    np.testing.assert_allclose(found["output_0"], model.predict(ids, verbose=0), atol=1e-5)


def test_keras_own_lstm_and_the_tree_layers_are_refused_in_one_line(tmp_path):
    from keras_rnncells.tree import ChildSumTreeLSTM

    inputs = keras.Input((None, 3))
    keras_lstm = keras.Model(inputs, keras.layers.LSTM(UNITS, name="keras_lstm")(inputs))
    tokens = keras.Input((None, 3), name="tokens")
    parents = keras.Input((None,), dtype="int32", name="parents")
    tree = keras.Model([tokens, parents], ChildSumTreeLSTM(3, name="tree")([tokens, parents]))
    for model, layer in ((keras_lstm, "'keras_lstm' (LSTM)"), (tree, "'tree' (ChildSumTreeLSTM)")):
        with pytest.raises(ValueError, match="no LiteRT form of builtin ops") as error:
            write_litert(model, tmp_path)
        assert "\n" not in str(error.value) and layer in str(error.value)
        assert not list(tmp_path.iterdir())  # nothing published, nothing left


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "1"])
def test_bad_arguments_are_refused(bad, tmp_path):
    servable = recurrent_layer_servable("gru", units=UNITS, input_dim=3)
    with pytest.raises(ValueError, match="Argument `batch_size`"):
        write_litert(servable, tmp_path, batch_size=bad)
    with pytest.raises(ValueError, match="Argument `quantize`"):
        write_litert(servable, tmp_path, quantize=str(bad))


def embedding_classifier() -> keras.Model:
    keras.utils.set_random_seed(0)
    ids = keras.Input((None,), dtype="int32", name="ids")
    x = keras.layers.Embedding(2000, 64, mask_zero=True)(ids)
    x = GRU(128)(x)
    return keras.Model(ids, keras.layers.Dense(2, activation="softmax")(x))


@pytest.mark.slow  # three conversions of a 0.4M-parameter model (~40 s)
def test_quantized_files_are_smaller_and_close(tmp_path):
    model = embedding_classifier()
    servable = servable_from_model(model)
    rng = np.random.default_rng(0)

    def representative():
        for _ in range(8):
            yield {"ids": rng.integers(1, 2000, size=(4, 12)).astype("int32")}

    sizes = {}
    for quantize in (None, "dynamic", "float16", "int8"):
        directory = write_litert(
            servable, tmp_path / str(quantize), quantize=quantize, representative=representative
        )
        manifest = manifest_of(directory)
        sizes[quantize] = manifest["bytes"]
        assert manifest["quantize"] == quantize
        assert not [op for op in manifest["ops"] if op.startswith("CUSTOM")]
        assert manifest["parity"]["max_abs_error"]["output_0"] < 0.05, quantize
    # 0.301x measured here (the loops' graph is a fixed ~30 KB); the apps' ratios:
    # benchmarks/litert_speed.py
    assert sizes["dynamic"] <= 0.32 * sizes[None], sizes
    assert sizes["float16"] <= 0.55 * sizes[None], sizes


def test_int8_needs_a_representative_dataset(tmp_path):
    with pytest.raises(ValueError, match="Argument `representative`"):
        write_litert(servable_from_model(embedding_classifier()), tmp_path, quantize="int8")


def test_litert_tracing_keeps_no_tensor_list():
    servable = recurrent_layer_servable("mgu", units=UNITS, input_dim=3)
    function = tf.function(
        servable.serve.python_function,
        input_signature=[tf.TensorSpec((None, None, 3), tf.float32, name="sequences")],
    )
    with litert_tracing():
        graph = function.get_concrete_function().graph.as_graph_def()
    nodes = [*graph.node, *(n for f in graph.library.function for n in f.node_def)]
    assert not [n.op for n in nodes if n.op.startswith("TensorList")]
    assert "XlaDynamicUpdateSlice" in {n.op for n in nodes}


def test_the_cli_exports_litert_beside_the_other_formats(tmp_path, monkeypatch, capsys):
    """``rnncells export --format all`` (through `main`, in this process: a
    child would pay TensorFlow's import again), then the console script's
    ``rnncells verify`` in a child, and the model in LiteRT without TensorFlow."""
    from keras_rnncells.cli import main

    keras.utils.set_random_seed(0)
    inputs = keras.Input((None, 3), name="frames")
    model = keras.Model(inputs, GRU(UNITS, return_sequences=True)(inputs), name="frames")
    model.save(tmp_path / "frames.keras")
    monkeypatch.chdir(tmp_path)
    main(["export", "frames.keras", "--out", "exports", "--format", "all"])  # raises if it fails
    printed = capsys.readouterr().out
    assert "litert" in printed and "exports/litert/frames/1/model.tflite" in printed
    verified = subprocess.run(
        ["rnncells", "verify", "exports/litert/frames/1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert verified.returncode == 0, verified.stderr[-3000:]
    x = np.random.default_rng(0).normal(size=(2, 9, 3)).astype("float32")
    found = run_without_tensorflow(
        tmp_path / "exports/litert/frames/1" / MODEL_FILE, {"frames": x}, tmp_path
    )
    np.testing.assert_allclose(found["output_0"], model.predict(x, verbose=0), atol=1e-5)


def test_an_app_on_a_phone_tokenizes_in_python_and_runs_the_ids(tmp_path, tiny_app_models):
    from keras_rnncells.apps import servable_for

    sentiment = next(m for m in tiny_app_models() if type(m).__name__ == "SentimentClassifier")
    servable = servable_for(sentiment)
    directory = write_litert(servable, tmp_path / "export", version=1)
    assert manifest_of(directory)["tokenizer"]["module"] == "tokenizer.py"
    texts = ["a wonderful , moving film", "", "Ça, c'est DULL!!  日本 🎬", "so " * 300]
    program = textwrap.dedent(
        f"""
        import importlib.util, json, sys
        sys.modules["tensorflow"] = None
        import numpy as np
        from ai_edge_litert.interpreter import Interpreter
        path = {str(directory / "tokenizer.py")!r}
        spec = importlib.util.spec_from_file_location("tokenizer", path)
        tokenizer = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tokenizer)
        ids = np.array(tokenizer.load().encode({texts!r}), "int32")
        runner = Interpreter(model_path={str(directory / MODEL_FILE)!r}).get_signature_runner()
        print(json.dumps(runner(token_ids=ids)["probability"].tolist()))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=directory, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    expected = servable.serve(text=tf.constant(texts))["probability"].numpy()
    np.testing.assert_allclose(found, expected, atol=1e-5)


@pytest.mark.parametrize("go_backwards", [False, True])
def test_the_fused_functions_tensorflow_body_is_our_lstm(go_backwards):
    from keras_rnncells.export.litert import standard_lstm

    layer = LSTM(UNITS, return_sequences=True, go_backwards=go_backwards)
    x = np.random.default_rng(0).normal(size=(2, 6, 3)).astype("float32")
    expected = layer(x).numpy()
    zeros = tf.zeros((2, UNITS))
    cell = layer.cell
    last, outputs, *_ = standard_lstm(
        tf.constant(x), zeros, zeros, cell.kernel, cell.recurrent_kernel, cell.bias, go_backwards
    )
    np.testing.assert_allclose(outputs, expected, atol=1e-6)
    np.testing.assert_allclose(last, expected[:, -1], atol=1e-6)
