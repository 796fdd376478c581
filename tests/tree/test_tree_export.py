"""A model holding both tree layers, exported: the SavedModel served as a
stock TF Serving serves it (XLA JIT off, keras_rnncells not importable), the
ONNX file in onnxruntime without TensorFlow, each in a child process, on
trees other than the export's examples; malformed trees are an error from
the server and NaN rows from onnxruntime."""

from __future__ import annotations

import dataclasses

import keras
import numpy as np
import pytest

from keras_rnncells.export import servable_from_model, write_onnx, write_saved_models
from keras_rnncells.tree import ChildSumTreeLSTM, ShiftReduceEncoder, TransitionsFromTokens

# Token ids: 0 padding, 1-2 leaves, 3-4 binary operators (postfix).
EXAMPLES = {
    "tokens": np.array([[1, 2, 3, 0, 0], [2, 1, 4, 1, 3]], "int32"),
    "parents": np.array([[-1, 0, 0, -1, -1], [-1, 0, 0, 1, 1]], "int32"),
}
TREES = {  # batch 4, 7 steps: lengths 1, 3, 7 and 5, padded on both sides
    "tokens": np.array(
        [
            [1, 0, 0, 0, 0, 0, 0],
            [0, 2, 2, 4, 0, 0, 0],
            [1, 2, 3, 2, 1, 4, 3],
            [0, 0, 1, 1, 2, 3, 4],
        ],
        "int32",
    ),
    "parents": np.array(  # the same trees (padding nodes' entries are not read)
        [
            [-1, 9, 9, 9, 9, 9, 9],
            [9, 3, 3, -1, 9, 9, 9],
            [2, 2, 6, 5, 5, 6, -1],
            [9, 9, 6, 5, 5, 6, -1],
        ],
        "int32",
    ),
}


def tree_model() -> keras.Model:
    """Tokens of postfix trees into SPINN; the same embeddings over parent
    indices into a child-sum Tree-LSTM; both roots into one Dense."""
    keras.utils.set_random_seed(5)
    tokens = keras.Input((None,), dtype="int32", name="tokens")
    parents = keras.Input((None,), dtype="int32", name="parents")
    embedded = keras.layers.Embedding(5, 4, mask_zero=True)(tokens)
    spinn = ShiftReduceEncoder(3, tracking_units=2)(
        [embedded, TransitionsFromTokens([3, 4])(tokens)]
    )
    child_sum = ChildSumTreeLSTM(3)([embedded, parents])
    joined = keras.layers.Concatenate()([spinn, child_sum])
    return keras.Model({"tokens": tokens, "parents": parents}, keras.layers.Dense(2)(joined))


@pytest.mark.slow  # the tree models exported both ways (30 s of the default run)
def test_tree_models_serve_and_run_in_onnxruntime(
    tmp_path, serve_like_tf_serving, run_onnx_in_child
):
    model = tree_model()
    servable = dataclasses.replace(servable_from_model(model, name="trees"), examples=EXAMPLES)
    (directory,) = write_saved_models([servable], tmp_path / "export")
    onnx_file = tmp_path / "onnx" / "trees.onnx"
    write_onnx(servable, onnx_file)
    expected = np.asarray(model(TREES))
    one = {name: value[2:3] for name, value in TREES.items()}
    empty = {name: value[:0] for name, value in TREES.items()}
    malformed = {name: value.copy() for name, value in TREES.items()}
    malformed["tokens"][2, 2] = 1  # a leaf where an operator was: two items left
    requests = [TREES, one, empty, malformed]

    served = serve_like_tf_serving([(directory, r) for r in requests], tmp_path / "serve")
    np.testing.assert_allclose(served[0]["output_0"], expected, atol=1e-5)
    np.testing.assert_allclose(served[1]["output_0"], expected[2:3], atol=1e-5)
    assert served[2]["output_0"].shape == (0, 2)
    assert isinstance(served[3], str) and "a tree leaves one item on the stack" in served[3]

    ran = run_onnx_in_child([(onnx_file, r) for r in requests], tmp_path / "onnx-run")
    np.testing.assert_allclose(ran[0]["output_0"], expected, atol=1e-4)
    np.testing.assert_allclose(ran[1]["output_0"], expected[2:3], atol=1e-4)
    assert ran[2]["output_0"].shape == (0, 2)
    nan_rows = np.isnan(ran[3]["output_0"]).any(axis=-1)
    assert nan_rows.tolist() == [False, False, True, False]
    np.testing.assert_allclose(ran[3]["output_0"][~nan_rows], expected[~nan_rows], atol=1e-4)
