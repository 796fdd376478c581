"""SavedModel export: TF Serving's layout, parity in a fresh process without
keras_rnncells (through ``tf.saved_model.load`` and TF Serving's session
loader), manifests, versions, the cuDNN scan, ``saved_model_cli run``, bad
serving input and gRPC ``PredictRequest``s (built and parsed only: no TF
Serving server runs here).

GRU, LSTM, MGU, SimpleRNN and a text model are exported once (``exported``),
checked in one fresh process; the tests read those artifacts. Every other
registered cell is exported and checked the same way in the slow run (one
SavedModel a cell is most of this module's time)."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells import list_cells
from keras_rnncells.apps.seq2seq import seq2seq_servable
from keras_rnncells.export import (
    Servable,
    load_and_run,
    predict_request,
    recurrent_layer_servable,
    verify_manifest,
    write_saved_model,
    write_saved_models,
)
from keras_rnncells.export.check import LOADERS, RefuseImport, full_float32
from keras_rnncells.export.saved_model import compare_outputs, cudnn_ops, saved_model_cudnn_ops
from keras_rnncells.layers.rnn import gpu_available
from keras_rnncells.seq2seq import TextSeq2Seq
from keras_rnncells.text import CharTokenizer

UNITS = 4  # = the input size, which the MUT cells require
# The cells exported in the default run (the tests below read GRU and SimpleRNN);
# `test_every_other_cell_serves_in_a_fresh_process` (slow) exports the rest.
DEFAULT_CELLS = ("gru", "lstm", "mgu", "simple")


def cell_servables(cells) -> dict:
    return {cell: recurrent_layer_servable(cell, units=UNITS, input_dim=UNITS) for cell in cells}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(export root, servables by key, version directories by key): the layers
    of `DEFAULT_CELLS` and an untrained text model (strings in and out, its
    examples hold an empty string), written and checked together."""
    servables = cell_servables(DEFAULT_CELLS)
    text_model = TextSeq2Seq.from_tokenizers(
        CharTokenizer.from_corpus(["nov 21, 2026"]),
        CharTokenizer.from_corpus(["0123456789-"]),
        cell="gru",
        units=5,
        embedding_dim=4,
        max_output_length=6,
    )
    servables["text"] = seq2seq_servable(text_model)
    root = tmp_path_factory.mktemp("export")
    paths = write_saved_models(list(servables.values()), root)
    return root, servables, dict(zip(servables, paths))


def assert_cells_served(cells, root, servables, paths) -> None:
    """Each cell's export: TF Serving's layout, no staging left, a manifest
    naming it, and parity with this process in the fresh one, by every loader."""
    for cell in cells:
        path = paths[cell]
        assert path == root / f"rnn-{cell}" / "1"
        assert (path / "saved_model.pb").is_file() and (path / "variables").is_dir()
        assert [p.name for p in path.parent.iterdir()] == ["1"]  # no staging left
        manifest = verify_manifest(path)
        assert (manifest["model"], manifest["cell"], manifest["version"]) == (
            f"rnn-{cell}",
            cell,
            1,
        )
        assert manifest["format"] == "savedmodel"
        assert manifest["inputs"] == [
            {"name": "sequences", "dtype": "float32", "shape": [None, None, UNITS]}
        ]
        size = servables[cell].module.layer.cell.output_size  # units, or more (SCRN)
        assert manifest["outputs"] == [
            {"name": "last", "dtype": "float32", "shape": [None, size]},
            {"name": "outputs", "dtype": "float32", "shape": [None, None, size]},
        ]
        by_loader = manifest["parity"]["outputs"]
        assert set(by_loader) == set(LOADERS)
        for loader, outputs in by_loader.items():
            assert set(outputs) == {"last", "outputs"}
            for name, report in outputs.items():
                assert report["max_abs_error"] < 1e-5, (cell, loader, name)


def test_the_default_cells_serve_in_a_fresh_process(exported):
    root, servables, paths = exported
    assert_cells_served(DEFAULT_CELLS, root, servables, paths)


@pytest.mark.slow  # a SavedModel of each of the other cells, checked (about 40 s)
def test_every_other_cell_serves_in_a_fresh_process(tmp_path):
    others = [cell for cell in list_cells() if cell not in DEFAULT_CELLS]
    assert others, "every registered cell is a default one"
    servables = cell_servables(others)
    paths = dict(zip(servables, write_saved_models(list(servables.values()), tmp_path)))
    assert_cells_served(others, tmp_path, servables, paths)


def test_text_servable_strings_in_and_out(exported):
    _, servables, paths = exported
    servable, path = servables["text"], paths["text"]
    manifest = verify_manifest(path)
    assert manifest["inputs"] == [{"name": "text", "dtype": "string", "shape": [None]}]
    assert [(o["name"], o["dtype"]) for o in manifest["outputs"]] == [
        ("output", "string"),
        ("score", "float32"),
    ]
    for outputs in manifest["parity"]["outputs"].values():  # the fresh process's strings
        assert outputs["output"] == {"equal": True}
        assert outputs["score"]["max_abs_error"] < 1e-5
    model = servable.module.model
    vocabularies = {
        "source_vocabulary.txt": model.source_tokenizer.vocabulary,
        "target_vocabulary.txt": model.target_tokenizer.vocabulary,
    }
    assert manifest["vocabulary_files"] == [f"assets.extra/{name}" for name in vocabularies]
    for name, tokens in vocabularies.items():
        lines = (path / "assets.extra" / name).read_text(encoding="utf-8").split("\n")
        assert lines == [*tokens, ""]
    reloaded = load_and_run(path, servable.examples)
    served = servable.serve(text=tf.constant(servable.examples["text"]))
    assert list(reloaded["output"]) == list(served["output"].numpy())
    np.testing.assert_allclose(reloaded["score"], served["score"], atol=1e-5)


def test_an_altered_variables_file_is_detected(exported, tmp_path):
    _, _, paths = exported
    copy = shutil.copytree(paths["gru"], tmp_path / "1")
    verify_manifest(copy)
    data = next((copy / "variables").glob("variables.data-*"))
    content = bytearray(data.read_bytes())
    content[-1] ^= 0xFF
    data.write_bytes(bytes(content))
    with pytest.raises(ValueError, match=r"variables/variables\.data-.*checksum"):
        verify_manifest(copy)


def test_versions_and_overwrite(exported, tmp_path):
    servable = exported[1]["simple"]

    def write(**options):
        return write_saved_model(servable, tmp_path, check=False, **options)

    assert [write().name, write().name, write(version=7).name, write().name] == list("1278")
    model_directory = tmp_path / servable.name
    (model_directory / "2" / "stale").write_text("old")
    with pytest.raises(ValueError, match=r"`version`.*2 exists"):
        write(version=2)
    assert (model_directory / "2" / "stale").exists()
    assert write(version=2, overwrite=True) == model_directory / "2"
    assert not (model_directory / "2" / "stale").exists()
    assert verify_manifest(model_directory / "2")["version"] == 2
    assert sorted(p.name for p in model_directory.iterdir()) == ["1", "2", "7", "8"]
    for version in (0, -1, True, "3", 1.0):
        with pytest.raises(ValueError, match="`version` must be a positive integer"):
            write(version=version)
    with pytest.raises(ValueError, match="`servables` must have distinct names"):
        write_saved_models([servable, servable], tmp_path, check=False)


def test_the_cudnn_scan(exported):
    assert saved_model_cudnn_ops(exported[2]["gru"]) == []
    graph_def = tf.compat.v1.GraphDef()
    graph_def.node.add(name="x", op="Placeholder")
    function = graph_def.library.function.add()
    function.signature.name = "gru_loop"
    function.node_def.add(name="gru", op="CudnnRNNV3")
    assert cudnn_ops(graph_def) == ["CudnnRNNV3"]
    graph_def.node.add(name="lstm", op="CudnnRNN")
    assert cudnn_ops(graph_def) == ["CudnnRNN", "CudnnRNNV3"]


@pytest.mark.skipif(not gpu_available(), reason="the cuDNN path is only traced on a GPU")
def test_a_cudnn_trace_is_refused_and_export_traces_the_portable_path(exported, tmp_path):
    portable = exported[1]["gru"]
    layer = portable.module.layer
    assert layer.path() == "cudnn"  # outside portable(), on this GPU
    serve = tf.function(
        lambda sequences: {"last": layer(sequences)[:, -1]},
        input_signature=[tf.TensorSpec((None, None, UNITS), tf.float32, name="sequences")],
    )
    serve.get_concrete_function()  # traced here, outside portable()
    cudnn = Servable("cudnn-gru", "gru", portable.module, serve, portable.examples)
    with pytest.raises(ValueError, match=r"cuDNN-only ops.*CudnnRNN"):
        write_saved_model(cudnn, tmp_path, check=False)
    assert not any((tmp_path / "cudnn-gru").iterdir())  # staging removed
    assert saved_model_cudnn_ops(write_saved_model(portable, tmp_path, check=False)) == []


def test_saved_model_cli_runs_the_export(exported, tmp_path):
    if shutil.which("saved_model_cli") is None:
        pytest.skip("saved_model_cli (installed with tensorflow) is not on PATH")
    _, servables, paths = exported
    sequences = servables["gru"].examples["sequences"]
    np.save(tmp_path / "sequences.npy", sequences)
    command = ["saved_model_cli", "run", "--dir", str(paths["gru"]), "--tag_set", "serve"]
    command += ["--signature_def", "serving_default", "--inputs", "sequences=sequences.npy"]
    command += ["--outdir", "out"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    printed = [line for line in result.stdout.splitlines() if line.startswith("Result for")]
    assert printed == ["Result for output key last:", "Result for output key outputs:"]
    expected = load_and_run(paths["gru"], {"sequences": sequences})
    for name in ("last", "outputs"):
        np.testing.assert_allclose(np.load(tmp_path / "out" / f"{name}.npy"), expected[name])


def test_bad_serving_input(exported):
    """Through the loaded signature: a wrong dtype is an ``InvalidArgumentError``
    naming the dtypes; a wrong rank or feature size is an
    ``InvalidArgumentError`` from the first op it breaks (the loaded signature
    checks dtypes, not shapes); an empty string gets a string and a finite
    score (whatever the model generates from an empty source). The model
    serves on afterwards."""
    _, servables, paths = exported
    loaded = tf.saved_model.load(str(paths["gru"]))  # kept: its signatures need it
    signature = loaded.signatures["serving_default"]
    sequences = servables["gru"].examples["sequences"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="float tensor but is a double"):
        signature(sequences=tf.constant(sequences, tf.float64))
    for shape in ((2, 5), (2, 5, UNITS + 1)):
        with pytest.raises(tf.errors.InvalidArgumentError):
            signature(sequences=tf.zeros(shape))
    assert signature(sequences=tf.constant(sequences))["last"].shape == (2, UNITS)

    loaded_text = tf.saved_model.load(str(paths["text"]))
    text = loaded_text.signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="string tensor but is a float"):
        text(text=tf.constant([1.0]))
    outputs = text(text=tf.constant([""]))
    assert outputs["output"].dtype == tf.string and outputs["output"].shape == (1,)
    assert np.isfinite(outputs["score"].numpy()).all()


def test_predict_request(exported):
    from tensorflow_serving.apis import predict_pb2

    _, servables, paths = exported
    for key in ("gru", "text"):
        servable = servables[key]
        loaded = tf.saved_model.load(str(paths[key]))
        signature = loaded.signatures["serving_default"]
        request = predict_request(servable, servable.examples, servable.name, version=1)
        parsed = predict_pb2.PredictRequest.FromString(request.SerializeToString())
        assert parsed == request
        assert (parsed.model_spec.name, parsed.model_spec.signature_name) == (
            servable.name,
            "serving_default",
        )
        assert parsed.model_spec.version.value == 1
        specs = signature.structured_input_signature[1]
        assert set(parsed.inputs) == set(specs) == set(servable.examples)
        for name, spec in specs.items():
            assert parsed.inputs[name].dtype == spec.dtype.as_datatype_enum
            value = tf.make_ndarray(parsed.inputs[name])
            expected = servable.examples[name]
            if spec.dtype == tf.string:
                expected = np.char.encode(expected, "utf-8")
            np.testing.assert_array_equal(value, expected)
        from_signature = predict_request(signature, servable.examples, servable.name, version=1)
        assert from_signature == request

    gru = servables["gru"]
    with pytest.raises(ValueError, match="`inputs` must have the keys \\['sequences'\\]"):
        predict_request(gru, {"x": gru.examples["sequences"]}, "rnn-gru")
    with pytest.raises(ValueError, match="`inputs`: 'sequences' must have the shape"):
        predict_request(gru, {"sequences": np.zeros((2, 5))}, "rnn-gru")
    with pytest.raises(ValueError, match="`inputs`: 'text' must convert to string"):
        predict_request(servables["text"], {"text": np.array([1.5])}, "seq2seq")
    with pytest.raises(ValueError, match="`servable_or_signature`"):
        predict_request("rnn-gru", gru.examples, "rnn-gru")


def test_compare_outputs():
    floats, strings = np.array([[0.0, 1.0]], "float32"), np.array([b"a", b""], object)
    report = compare_outputs(
        {"x": floats, "s": strings},
        {"x": floats + np.array([[0.25, -0.5]], "float32"), "s": strings.astype(bytes)},
        tolerance=1.0,
        what="m",
    )
    assert report == {"x": {"max_abs_error": 0.5}, "s": {"equal": True}}
    for actual, message in [
        ({"x": floats + 1e-3}, "'x' differs by"),
        ({"x": floats * np.nan}, "'x' differs by nan"),
        ({"x": floats[0]}, "'x' reloaded as \\(2,\\)"),
        ({"y": floats}, "outputs \\['y'\\] reloaded"),
    ]:
        with pytest.raises(RuntimeError, match=message):
            compare_outputs({"x": floats}, actual, 1e-5, "m")
    with pytest.raises(RuntimeError, match="'s' reloaded as"):
        compare_outputs({"s": strings}, {"s": np.array([b"a", b"b"])}, 1e-5, "m")


def test_the_fresh_process_cannot_import_keras_rnncells():
    refuse = RefuseImport()
    for name in ("keras_rnncells", "keras_rnncells.export.servable"):
        with pytest.raises(ImportError, match="must not import keras_rnncells"):
            refuse.find_spec(name)
    assert refuse.find_spec("keras_rnncells_extra") is None
    assert refuse.find_spec("numpy") is None


def test_the_checks_compute_in_full_float32_and_restore_the_setting():
    """Every export check compares in full float32 (`check.full_float32`),
    whatever the process's TF32 setting (on by default on recent GPUs), and
    leaves that setting as it was, also when the check raises."""
    try:
        for setting in (True, False):
            tf.config.experimental.enable_tensor_float_32_execution(setting)
            with pytest.raises(RuntimeError, match="inside"), full_float32():
                assert not tf.config.experimental.tensor_float_32_execution_enabled()
                raise RuntimeError("inside")
            assert tf.config.experimental.tensor_float_32_execution_enabled() is setting
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(False)  # conftest's setting
