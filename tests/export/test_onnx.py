"""ONNX export: every cell's layer converts and matches TensorFlow in
onnxruntime; GRU, LSTM and SimpleRNN become native ONNX nodes."""

from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

MISSING = [m for m in ("tf2onnx", "onnx", "onnxruntime") if importlib.util.find_spec(m) is None]
if MISSING and os.environ.get("CI", "").lower() != "true":
    pytest.skip(f"ONNX export needs {', '.join(MISSING)} (pip install it)", allow_module_level=True)

import keras  # noqa: E402
import onnx  # noqa: E402
import tensorflow as tf  # noqa: E402

import keras_rnncells as kr  # noqa: E402
from keras_rnncells.export import (  # noqa: E402
    Servable,
    recurrent_layer_servable,
    traced,
    verify_manifest,
    write_onnx,
)
from keras_rnncells.export.onnx import onnx_path, run_onnx  # noqa: E402
from keras_rnncells.export.onnx_rnn import graph_op_types  # noqa: E402

NATIVE = {"gru": "GRU", "lstm": "LSTM", "simple": "RNN"}
RECURRENT_OPS = {"GRU", "LSTM", "RNN", "Loop"}


def op_types(directory) -> set[str]:
    return graph_op_types(onnx.load(str(directory / "model.onnx")).graph)


@pytest.mark.cell_sweep
@pytest.mark.parametrize("cell", kr.list_cells())
def test_every_cell_layer_converts_and_matches(cell, tmp_path, run_onnx_in_child):
    path = onnx_path(tmp_path, f"rnn-{cell}", 1)
    # input_dim == units: the MUT cells add their input to a units-sized block
    servable = recurrent_layer_servable(cell, input_dim=4)
    manifest = write_onnx(servable, path, version=1)
    errors = manifest["parity"]["max_abs_error"]
    assert set(errors) == {"outputs", "last"}
    assert max(errors.values()) < 1e-4
    assert manifest["opset"] >= 17 and manifest["format"] == "onnx"
    assert verify_manifest(path.parent)["files"].keys() == {"model.onnx"}
    expected = NATIVE.get(cell, "Loop")
    assert op_types(path.parent) & RECURRENT_OPS == {expected}
    assert [r["onnx"] for r in manifest["recurrent_layers"]] == [expected]
    # batches of 0, 1 and 7 rows, in onnxruntime without TensorFlow: no crash
    # (its GRU and LSTM kernels abort on 0 rows unless given one row more)
    rng = np.random.default_rng(0)
    batches = [
        rng.normal(size=shape).astype("float32") for shape in [(0, 5, 4), (1, 1, 4), (7, 9, 4)]
    ]
    found = run_onnx_in_child([(path, {"sequences": x}) for x in batches], tmp_path / "run")
    for x, outputs in zip(batches, found):
        assert isinstance(outputs, dict), outputs
        for name, value in servable.serve(sequences=tf.constant(x)).items():
            assert outputs[name].shape == value.shape, (name, x.shape)
            np.testing.assert_allclose(outputs[name], value, atol=1e-4)


def masked_servable(layer: keras.layers.Layer, mask: np.ndarray, input_dim: int = 3) -> Servable:
    """``layer`` on sequences with a boolean mask input; the examples have
    ``mask`` (conftest's: right and left padding, holes, an empty row) and NaN
    inputs at some masked steps (Keras ignores them)."""
    layer.build((None, None, input_dim))
    module = tf.Module()
    module.layer = layer

    def run(sequences, mask):
        outputs = layer(sequences, mask=mask)
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        return {f"output_{i}": o for i, o in enumerate(outputs)}

    signature = {
        "sequences": tf.TensorSpec((None, None, input_dim), tf.float32),
        "mask": tf.TensorSpec((None, None), tf.bool),
    }
    rng = np.random.default_rng(1)
    sequences = rng.normal(size=(*mask.shape, input_dim)).astype("float32")
    sequences[~mask & (rng.random(mask.shape) < 0.5)] = np.nan
    examples = {"sequences": sequences, "mask": mask}
    return Servable("masked", None, module, traced(run, signature), examples)


@pytest.mark.parametrize(
    "name, options",
    [
        ("GRU", {"return_sequences": True, "return_state": True}),
        ("GRU", {"reset_after": False, "zero_output_for_mask": True, "return_sequences": True}),
        ("LSTM", {"return_state": True}),
        ("LSTM", {"zero_output_for_mask": True, "return_state": True}),
        ("SimpleRNN", {"return_sequences": True}),
    ],
)
def test_native_ops_give_keras_answer_for_every_mask_pattern(name, options, mask, tmp_path):
    keras.utils.set_random_seed(0)
    path = tmp_path / "model.onnx"
    servable = masked_servable(getattr(kr, name)(4, **options), mask)
    manifest = write_onnx(servable, path)
    assert max(manifest["parity"]["max_abs_error"].values()) < 1e-4
    (record,) = manifest["recurrent_layers"]
    assert op_types(tmp_path) & RECURRENT_OPS == {record["onnx"]} != {"Loop"}
    assert "any padding pattern" in record["note"]
    # Keras' own layer with the same weights is the reference, row by row
    reference = getattr(keras.layers, name)(4, **options)
    reference.build((None, None, 3))
    reference.set_weights(servable.module.layer.get_weights())
    found = run_onnx(path, servable.examples)
    expected = reference(servable.examples["sequences"], mask=servable.examples["mask"])
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    for index, value in enumerate(expected):
        np.testing.assert_allclose(found[f"output_{index}"], value, atol=1e-5)


def test_parity_failure_and_bad_arguments(tmp_path):
    servable = recurrent_layer_servable("gru")
    with pytest.raises(ValueError, match="above tolerance"):
        write_onnx(servable, tmp_path / "model.onnx", tolerance=1e-12)
    assert not (tmp_path / "model.onnx").exists()
    with pytest.raises(ValueError, match="`opset`"):
        write_onnx(servable, tmp_path / "model.onnx", opset=13)
    with pytest.raises(ValueError, match="`path`"):
        write_onnx(servable, tmp_path / "model.pb")


def test_manifest_lists_vocabulary_and_detects_tampering(tmp_path):
    servable = recurrent_layer_servable("simple")
    servable.vocabulary_files = {"vocab.txt": ["[PAD]", "[UNK]", "red"]}
    path = onnx_path(tmp_path, "simple", 3)
    manifest = write_onnx(servable, path, version=3)
    assert (path.parent / "vocab.txt").read_text().split() == ["[PAD]", "[UNK]", "red"]
    on_disk = json.loads((path.parent / "manifest.json").read_text())
    assert on_disk["vocabulary_files"] == ["vocab.txt"] and on_disk["version"] == 3
    assert on_disk["opset"] == onnx.load(str(path)).opset_import[0].version == manifest["opset"]
    assert on_disk["inputs"] == [
        {"name": "sequences", "dtype": "float32", "shape": [None, None, 3]}
    ]
    (path.parent / "vocab.txt").write_text("tampered\n")
    with pytest.raises(ValueError, match=r"vocab\.txt"):
        verify_manifest(path.parent)


def test_only_the_shape_notes_of_our_placeholders_are_dropped():
    import logging

    from keras_rnncells.export.onnx_convert import PlaceholderShapeNotes

    def note(message: str) -> logging.LogRecord:
        return logging.LogRecord("tf2onnx", logging.WARNING, "", 0, message, (), None)

    notes = PlaceholderShapeNotes()
    ours = "Cannot infer shape for model/encoder/forward_0_1/onnx_GRU: model/encoder/onnx_GRU:0"
    assert not notes.filter(note(ours))
    assert not notes.filter(note(ours.replace("onnx_GRU:", "onnx_LSTM_3:", 1)))
    assert notes.filter(note("Cannot infer shape for model/dense/MatMul: model/dense/MatMul:0"))
    assert notes.filter(note("Failed to convert node model/onnx_GRU"))
