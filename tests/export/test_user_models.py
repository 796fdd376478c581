"""Any Keras model in, checked artifacts out.

* ``write_saved_models`` / ``write_onnx`` on a Sequential, a functional (two
  named inputs, one of ids through ``Embedding(mask_zero=True)``, a dict of
  outputs) and a subclassed model, with our layers and Keras' own: the
  SavedModels served as a stock TF Serving serves them (``serve_like_tf_serving``:
  XLA JIT off, keras_rnncells unimportable), the ONNX files in onnxruntime in a
  child process without TensorFlow (``run_onnx_in_child``), both on inputs
  other than the export's examples, compared with the model in this process;
* ``rnncells export model.keras`` (through `main`, in this process);
* a failed ONNX check publishes nothing (the export root is left as it was)
  and the next export is version 1;
* two exports racing into one root (two processes released together) get
  versions 1 and 2, each its own model; a version another export holds is
  skipped by every format, or refused when asked for;
* Keras' own ``model.export(format="onnx")`` of a Sequential with our GRU and
  MGU, run the same way; ``tf2onnx_errors_raise`` turns a conversion tf2onnx
  cannot do into an error in place of a broken file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_rnncells as kr
from keras_rnncells.cli import main
from keras_rnncells.export import (
    servable_from_model,
    verify_manifest,
    write_onnx,
    write_saved_models,
)
from keras_rnncells.export.command import export_servable
from keras_rnncells.export.onnx import run_onnx
from keras_rnncells.export.onnx_convert import tf2onnx_errors_raise
from keras_rnncells.export.saved_model import Staging
from keras_rnncells.locks import Claim

UNITS = 4
VOCABULARY = 12

# -- the models ---------------------------------------------------------------------


def sequential_model() -> keras.Model:
    """Floats in; Keras' GRU, our SCRN (an ONNX Loop) and our GRU (a native
    ONNX GRU node), then Keras' Dense."""
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((None, 3)),
            keras.layers.GRU(UNITS, return_sequences=True),
            kr.SCRN(UNITS, return_sequences=True),
            kr.GRU(UNITS),
            keras.layers.Dense(2),
        ],
        name="user-sequential",
    )


def small_model() -> keras.Model:
    """One GRU layer over floats: what the command and the atomic test export."""
    keras.utils.set_random_seed(3)
    return keras.Sequential([keras.Input((None, 3)), kr.GRU(UNITS)], name="user-small")


def functional_model() -> keras.Model:
    """Two named inputs (floats, and ids masked by ``Embedding(mask_zero=True)``)
    into our LSTM (native ONNX node, masked) and MGU; a dict of outputs."""
    keras.utils.set_random_seed(1)
    frames = keras.Input((None, 3), name="frames")
    tokens = keras.Input((None,), dtype="int32", name="tokens")
    embedded = keras.layers.Embedding(VOCABULARY, 3, mask_zero=True)(tokens)
    joined = keras.layers.Concatenate()([frames, embedded])
    sequence = kr.LSTM(UNITS, return_sequences=True)(joined)
    last = kr.MGU(UNITS)(sequence)
    outputs = {"score": keras.layers.Dense(1)(last), "features": last}
    return keras.Model({"frames": frames, "tokens": tokens}, outputs, name="user-functional")


class Subclassed(keras.Model):
    """Our MuFuRU, then a Dense layer, in a ``call`` of our own."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.recurrent = kr.MuFuRU(UNITS)
        self.head = keras.layers.Dense(2)

    def call(self, inputs):
        return self.head(self.recurrent(inputs))


def subclassed_model() -> keras.Model:
    keras.utils.set_random_seed(2)
    return Subclassed(name="user-subclassed")


def fresh_inputs(seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Floats and ids other than any export's examples (batch 3, 6 steps),
    the ids right-padded (one row is three steps long)."""
    rng = np.random.default_rng(seed)
    frames = rng.normal(size=(3, 6, 3)).astype("float32")
    tokens = rng.integers(1, VOCABULARY, size=(3, 6)).astype("int32")
    tokens[1, 3:] = 0
    return frames, tokens


@pytest.fixture(scope="module")
def cases():
    """name -> (servable, serving inputs, the model's outputs in this process,
    named as the export names them). The subclassed model, never called,
    needs an explicit input signature."""
    frames, tokens = fresh_inputs()
    sequential, functional, subclassed = sequential_model(), functional_model(), subclassed_model()
    with pytest.raises(ValueError, match=r"Argument `model`.*input_signature"):
        servable_from_model(subclassed)
    spec = tf.TensorSpec((None, None, 3), tf.float32, name="frames")
    cases = {
        "user-sequential": (
            servable_from_model(sequential),
            {"inputs": frames},
            lambda: {"output_0": sequential(frames)},
        ),
        "user-functional": (
            servable_from_model(functional),
            {"frames": frames, "tokens": tokens},
            lambda: functional({"frames": frames, "tokens": tokens}),
        ),
        "user-subclassed": (
            servable_from_model(subclassed, input_signature=[spec]),
            {"frames": frames},
            lambda: {"output_0": subclassed(frames)},
        ),
    }
    return {
        name: (servable, inputs, {k: np.asarray(v) for k, v in expected().items()})
        for name, (servable, inputs, expected) in cases.items()
    }


def assert_outputs(found: dict[str, np.ndarray], expected: dict[str, np.ndarray], atol: float):
    assert set(found) == set(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(found[name], value, atol=atol, err_msg=name)


def tree_of(root: Path) -> dict[str, str]:
    """Every path under ``root`` -> "dir" or its content's sha256."""
    return {
        os.fspath(path.relative_to(root)): "dir"
        if path.is_dir()
        else hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
    }


# -- the tests ------------------------------------------------------------------------


def test_signatures_follow_the_models_inputs(cases):
    signatures = {
        name: {s.name: (s.dtype.name, s.shape.as_list()) for s in servable.serve.input_signature}
        for name, (servable, _, _) in cases.items()
    }
    assert signatures == {
        "user-sequential": {"inputs": ("float32", [None, None, 3])},
        "user-functional": {
            "frames": ("float32", [None, None, 3]),
            "tokens": ("int32", [None, None]),
        },
        "user-subclassed": {"frames": ("float32", [None, None, 3])},
    }
    assert {name: servable.cell for name, (servable, _, _) in cases.items()} == {
        "user-sequential": "gru,scrn",
        "user-functional": "lstm,mgu",
        "user-subclassed": "mufuru",
    }
    examples = cases["user-functional"][0].examples["tokens"]
    assert examples.min() == 0 and examples.max() < VOCABULARY  # ids, right-padded
    assert (examples[1, -2:] == 0).all() and (examples[0] > 0).all()
    # a subclassed model once called: Keras' recorded shapes, batch dimension None
    called = subclassed_model()
    called(np.zeros((1, 5, 3), "float32"))
    (spec,) = servable_from_model(called, name="called").serve.input_signature
    assert (spec.name, spec.shape.as_list()) == ("inputs", [None, 5, 3])


def test_user_models_serve_as_tf_serving_does(cases, tmp_path, serve_like_tf_serving):
    models = {name: servable for name, (servable, _, _) in cases.items()}
    directories = write_saved_models(list(models.values()), tmp_path / "export")
    assert [d.relative_to(tmp_path / "export").as_posix() for d in directories] == [
        f"{name}/1" for name in models
    ]
    for directory in directories:
        manifest = verify_manifest(directory)
        for loader in ("load", "session"):  # the export's own check, recorded
            errors = manifest["parity"]["outputs"][loader].values()
            assert all(e["max_abs_error"] <= 1e-5 for e in errors), manifest["parity"]
    served = serve_like_tf_serving(
        [(d, cases[name][1]) for name, d in zip(models, directories)], tmp_path / "serve"
    )
    for name, outputs in zip(models, served):
        assert isinstance(outputs, dict), f"{name}: {outputs}"  # else the signature's error
        assert_outputs(outputs, cases[name][2], atol=1e-5)


def test_user_models_as_onnx_run_without_tensorflow(cases, tmp_path, run_onnx_in_child):
    paths = {}
    for name, (servable, _, _) in cases.items():
        paths[name] = tmp_path / name / "model.onnx"
        manifest = write_onnx(servable, paths[name])
        assert manifest["model"] == name and manifest["parity"]["max_abs_error"]
        assert all(e <= 1e-4 for e in manifest["parity"]["max_abs_error"].values())
    became = {r["cell"]: r["onnx"] for r in manifest_of(paths["user-functional"])}
    assert became == {"LSTMCell": "LSTM", "MGUCell": "Loop"}
    results = run_onnx_in_child(
        [(paths[name], inputs) for name, (_, inputs, _) in cases.items()], tmp_path / "run"
    )
    for (name, (_, _, expected)), outputs in zip(cases.items(), results):
        assert isinstance(outputs, dict), f"{name}: {outputs}"  # else onnxruntime's error
        assert set(outputs) == set(expected), name
        assert_outputs(outputs, expected, atol=1e-4)


def manifest_of(path: Path) -> list[dict]:
    return json.loads((path.parent / "manifest.json").read_text())["recurrent_layers"]


def test_rnncells_export_of_a_keras_file(tmp_path, monkeypatch, capsys):
    """``rnncells export mine.keras`` through `main`, in this process (a child
    would pay TensorFlow's import again; the console script runs in children
    in test_cli.py and test_litert.py)."""
    from keras_rnncells.cli import main

    model = small_model()
    model.save(tmp_path / "mine.keras")
    monkeypatch.chdir(tmp_path)
    main(["export", "mine.keras", "--out", "served"])  # raises if it fails
    printed = capsys.readouterr().out
    saved_model = tmp_path / "served" / "user-small" / "1"
    onnx_file = tmp_path / "served" / "onnx" / "user-small" / "1" / "model.onnx"
    assert f"savedmodel {saved_model} " in printed and f"onnx       {onnx_file} " in printed
    assert (saved_model / "saved_model.pb").is_file() and onnx_file.is_file()
    for directory in (saved_model, onnx_file.parent):
        manifest = verify_manifest(directory)
        assert manifest["model"] == "user-small" and manifest["cell"] == "gru"
        assert manifest["parity"], directory  # checked at export


@pytest.mark.slow  # an export that fails its check (18 s of the default run)
def test_a_failed_onnx_check_publishes_no_format(tmp_path):
    """The SavedModel is staged and passes its check; the ONNX check fails (a
    tolerance no float model meets): no version of either appears, no
    directory is left, and the next export is version 1."""
    root = tmp_path / "export"
    (root / "other" / "3").mkdir(parents=True)
    (root / "other" / "3" / "kept.txt").write_text("untouched")
    before = tree_of(root)
    model = small_model()
    with pytest.raises(ValueError, match="above tolerance=1e-12"):
        export_servable(model, root, tolerances={"onnx": 1e-12})
    assert tree_of(root) == before
    paths = export_servable(model, root)
    assert paths == {
        "savedmodel": root.resolve() / "user-small" / "1",
        "onnx": root.resolve() / "onnx" / "user-small" / "1" / "model.onnx",
    }
    assert set(tree_of(root)) - set(before) >= {"user-small/1/saved_model.pb"}
    assert not [p for p in root.rglob(".*")]  # no staging directory left


# An exporter: loads the .keras file argv[1], says it is ready (touches argv[3]),
# waits for argv[4] to appear, exports ONNX into argv[2] and prints the paths
# (ONNX only: the race is the same for both formats, and the SavedModel's
# fresh-process check would double the time).
EXPORTER = """
import json, pathlib, sys, time
from keras_rnncells.apps.runs import read_model
from keras_rnncells.export.command import export_servable
model = read_model(sys.argv[1])
pathlib.Path(sys.argv[3]).touch()
while not pathlib.Path(sys.argv[4]).exists():
    time.sleep(0.002)
paths = export_servable(model, sys.argv[2], formats=("onnx",))
print(json.dumps({fmt: str(path) for fmt, path in paths.items()}))
"""


@pytest.mark.slow  # two export processes (14 s of the default run)
def test_two_exports_racing_into_one_root_get_two_versions(tmp_path):
    """Both processes load their model, then start exporting at the same
    moment: each picks a version before the other publishes. The loser of the
    claim takes the next number; neither replaces the other's version."""
    models = [small_model(), small_model()]
    models[1].set_weights([w + 0.5 for w in models[1].get_weights()])
    files = [tmp_path / "a.keras", tmp_path / "b.keras"]
    for model, file in zip(models, files):
        model.save(file)
    go = tmp_path / "go"
    environ = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", EXPORTER, file, tmp_path / "export", tmp_path / f"{i}", go],
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, file in enumerate(files)
    ]
    while not all((tmp_path / f"{i}").exists() for i in range(len(racers))):
        assert all(racer.poll() is None for racer in racers), racers[0].communicate()[1][-3000:]
        time.sleep(0.01)
    go.touch()
    outputs = [racer.communicate(timeout=300) for racer in racers]
    assert [racer.returncode for racer in racers] == [0, 0], [e[-3000:] for _, e in outputs]
    paths = [Path(json.loads(out)["onnx"]) for out, _ in outputs]
    assert sorted(int(path.parent.name) for path in paths) == [1, 2], paths
    published = tmp_path / "export" / "onnx" / "user-small"
    assert sorted(p.name for p in published.iterdir()) == ["1", "2"]  # no claim or staging left
    frames = fresh_inputs()[0]
    for model, path in zip(models, paths):
        manifest = verify_manifest(path.parent)
        assert manifest["version"] == int(path.parent.name)
        # each version holds its exporter's model
        found = run_onnx(path, {manifest["inputs"][0]["name"]: frames})
        np.testing.assert_allclose(found["output_0"], model(frames), atol=1e-4)


def test_a_version_another_export_holds_is_skipped_or_refused(tmp_path, capsys):
    """While a claim on version 1 is held (here by another open file, which
    excludes as another process does), a new export's formats all get
    version 2, and asking for version 1 is refused naming the holder."""
    root = tmp_path / "export"
    directories = [root / "user-small", root / "onnx" / "user-small"]
    directories[0].mkdir(parents=True)
    with Claim(directories[0] / ".1.claim") as held:
        assert held.try_acquire() is None
        with Staging() as staging:
            assert staging.claim(directories) == 2
            assert all((d / ".2.claim").is_file() for d in directories)
            with pytest.raises(
                ValueError, match=rf"user-small/1 is being exported by pid {os.getpid()} "
            ):
                with Staging() as other:
                    other.claim(directories, version=1)
        # nothing published: the claims are released, the directories made for them removed
        assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
            "export",
            "export/user-small",
            "export/user-small/.1.claim",
        ]
        small_model().save(tmp_path / "mine.keras")
        with pytest.raises(SystemExit):
            main(["export", str(tmp_path / "mine.keras"), "--out", str(root), "--version", "1"])
        error = capsys.readouterr().err
        assert re.fullmatch(
            rf"rnncells export: error: --version: \S+/user-small/1 is being exported by pid "
            rf"{os.getpid()} \(.*\); wait for it to end, or pass another --version\n",
            error,
        ), error


@pytest.mark.slow  # an export of every cell (37 s of the default run)
def test_keras_own_onnx_export_of_every_cell(tmp_path, run_onnx_in_child):
    """A user's plain ``model.export(format="onnx")`` of a model holding a
    layer of every registered cell over masked ids (one row all padding) gives
    Keras' answer in onnxruntime (a process without TensorFlow), and a batch
    of 0 rows its empty answer. Every other cell returns its sequence (one
    export for both: tf2onnx takes seconds per layer)."""
    keras.utils.set_random_seed(0)
    ids = keras.Input((None,), dtype="int32", name="ids")
    embedded = keras.layers.Embedding(VOCABULARY, UNITS, mask_zero=True)(ids)
    outputs = [
        kr.RNN(kr.get_cell(cell)(UNITS), return_sequences=index % 2 == 0, name=cell)(embedded)
        for index, cell in enumerate(kr.list_cells())
    ]
    model = keras.Model(ids, outputs)
    rng = np.random.default_rng(1)
    tokens = rng.integers(1, VOCABULARY, size=(4, 6)).astype("int32")
    tokens[1, 3:] = 0
    tokens[2, :] = 0
    expected = model.predict(tokens, verbose=0)
    path = tmp_path / "keras.onnx"
    model.export(path, format="onnx", verbose=False)
    found, empty = run_onnx_in_child(
        [(path, {"ids": tokens}), (path, {"ids": tokens[:0]})], tmp_path / "run"
    )
    assert isinstance(found, dict), found  # else onnxruntime's error
    assert isinstance(empty, dict), empty  # a batch of 0 rows
    import onnx

    # the graph's outputs in the model's order (tf2onnx names them Identity_<i>:0)
    names = [output.name for output in onnx.load(path).graph.output]
    assert len(names) == len(expected) == len(kr.list_cells())
    for cell, value, name in zip(kr.list_cells(), expected, names):
        np.testing.assert_allclose(found[name], value, atol=1e-5, err_msg=cell)
        assert empty[name].shape == (0, *value.shape[1:]), cell


def test_keras_own_exports_at_a_fixed_length(tmp_path, run_onnx_in_child, serve_like_tf_serving):
    """``model.export(format="onnx")`` and ``model.export()`` (a SavedModel) of
    models whose batch and length are fixed (the trip counts of the portable
    loop known when traced): a length shorter than one unrolled iteration,
    whole iterations only, and both loops with the batch split into two loops
    (``layers/fused.py: loop_count``). Each gives Keras' answer in onnxruntime,
    in a process without TensorFlow, and served as a stock TF Serving runs it;
    a known trip count once made an ONNX model onnxruntime refused ("Tensor
    element type mismatch")."""
    from keras_rnncells.layers import fused

    shapes = [(1, 3), (2, 2 * fused.PORTABLE_UNROLL), (16, 5 * fused.PORTABLE_UNROLL + 1)]
    with tf.Graph().as_default():
        assert fused.loop_count(16, shapes[-1][1], compiled=False) == min(2, fused.executor_cores())
    rng = np.random.default_rng(2)
    jobs, served_jobs, expected = [], [], []
    for batch, steps in shapes:
        keras.utils.set_random_seed(batch)
        x = keras.Input((steps, 3), batch_size=batch, name="x")
        model = keras.Model(x, kr.MGU(UNITS, return_sequences=True)(x))
        values = rng.normal(size=(batch, steps, 3)).astype("float32")
        expected.append(model.predict(values, verbose=0))
        path = tmp_path / f"mgu-{batch}x{steps}.onnx"
        model.export(path, format="onnx", verbose=False)
        jobs.append((path, {"x": values}))
        model.export(tmp_path / path.stem, verbose=False)
        served_jobs.append((tmp_path / path.stem, {"x": values}))
    answers = zip(
        jobs,
        run_onnx_in_child(jobs, tmp_path / "run"),
        serve_like_tf_serving(served_jobs, tmp_path / "serve"),
        expected,
    )
    for (path, _), found, served, value in answers:
        for answered in (found, served):
            assert isinstance(answered, dict), f"{path.name}: {answered}"  # else the error
            (answer,) = answered.values()
            np.testing.assert_allclose(answer, value, atol=1e-5, err_msg=path.name)


def test_keras_own_exports_answer_empty_batches_and_sequences(
    tmp_path, run_onnx_in_child, serve_like_tf_serving
):
    """Keras' own ONNX and SavedModel exports of a model of any batch and
    length (MGU's loop, GRU and LSTM, sequences and last outputs) answer a
    batch of 0 rows, 0 steps, both, one step and lengths around the unrolled
    loop's iterations with the shapes and numbers of the model itself, in
    onnxruntime (no TensorFlow) and as a stock TF Serving runs them. tf2onnx
    leaves ONNX's ``Reshape`` reading a 0 as "copy the input's size": a 0 row
    batch once failed in onnxruntime, and 0 rows in 0 steps came back as 4 rows.
    At 128 units the GRU's and LSTM's products of few rows run in column blocks
    (``column_blocks=True``), picked in each step by a ``tf.cond`` on the batch
    size (`portable_loop.ColumnBlocks`)."""
    from keras_rnncells.layers import portable_loop as fused

    units = 128
    keras.utils.set_random_seed(3)
    x = keras.Input((None, 3), name="x")
    outputs = [
        kr.MGU(units, return_sequences=True)(x),
        kr.GRU(units, return_sequences=True, column_blocks=True)(x),
        kr.LSTM(units, column_blocks=True)(x),
    ]
    model = keras.Model(x, outputs)
    model.predict(np.zeros((1, 2, 3), "float32"), verbose=0)
    path = tmp_path / "keras.onnx"
    model.export(path, format="onnx", verbose=False)
    model.export(tmp_path / "saved", verbose=False)
    rng = np.random.default_rng(4)
    shapes = [(0, 5), (1, 0), (0, 0), (1, 1), (3, 2 * fused.PORTABLE_UNROLL + 1), (2, 7)]
    feeds = [{"x": rng.normal(size=(*shape, 3)).astype("float32")} for shape in shapes]
    found = run_onnx_in_child([(path, feed) for feed in feeds], tmp_path / "run")
    served = serve_like_tf_serving([(tmp_path / "saved", feed) for feed in feeds], tmp_path / "s")
    import onnx

    names = [output.name for output in onnx.load(path).graph.output]
    for shape, feed, onnx_answer, served_answer in zip(shapes, feeds, found, served):
        if shape[1]:
            expected = [np.asarray(value) for value in model(feed["x"], training=False)]
        else:  # refused when called eagerly; a graph's layer ends in its initial state
            expected = [np.zeros((*shape, units))] * 2 + [np.zeros((shape[0], units))]
        assert [value.shape for value in expected] == [(*shape, units)] * 2 + [(shape[0], units)]
        assert isinstance(onnx_answer, dict), f"{shape}: {onnx_answer}"  # else the error
        assert isinstance(served_answer, dict), f"{shape}: {served_answer}"
        for value, name, served_value in zip(expected, names, served_answer.values()):
            for answer in (onnx_answer[name], served_value):
                assert answer.shape == value.shape, f"{shape}: {answer.shape} != {value.shape}"
                np.testing.assert_allclose(answer, value, atol=1e-5, err_msg=str(shape))


def test_a_conversion_tf2onnx_cannot_do_raises(tmp_path):
    """A ``tf.numpy_function`` has no ONNX form: tf2onnx's Python API would
    log it and write a model onnxruntime refuses; here it raises, nothing written."""
    inputs = keras.Input((None, 3))
    sines = keras.layers.Lambda(
        lambda x: tf.numpy_function(np.sin, [x], tf.float32, stateful=False),
        output_shape=(UNITS,),
    )
    model = keras.Model(inputs, sines(kr.GRU(UNITS, return_sequences=True)(inputs)[:, -1]))
    model.predict(np.zeros((1, 2, 3), "float32"), verbose=0)
    path = tmp_path / "keras.onnx"
    with pytest.raises(ValueError, match="tf2onnx failed to convert"):
        with tf2onnx_errors_raise():
            model.export(path, format="onnx", verbose=False)
    assert not path.exists()
    with pytest.raises(ValueError, match="tf2onnx failed to convert"):
        write_onnx(model, tmp_path / "ours" / "model.onnx")
    assert not (tmp_path / "ours").exists()
