"""Shared fixtures of the test suite: small sequences, masks, weights, gradients.

Shapes are tiny on purpose (batch 9, 5 steps, 4 features): the tests check
numbers, not speed, and every distinct layer costs an XLA compilation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells.data import data_root

# The child processes the tests start (CLI runs, fresh loads, exporters) import
# this checkout first, and still see what PYTHONPATH already held.
CHECKOUT = Path(__file__).resolve().parents[1]
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(CHECKOUT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
)

# TF32 matmuls (the default on recent GPUs) are accurate to ~1e-3 only; the
# paths are compared to 1e-5, so every path computes in full float32.
tf.config.experimental.enable_tensor_float_32_execution(False)

BATCH, STEPS, FEATURES = 9, 5, 4

# Three rows of each padding pattern; the batch of `sequences` holds them all,
# so one call (one compiled loop) checks every pattern. The last "holes" row
# is fully masked (an empty sequence).
MASK_ROWS = {
    "right": [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]],
    "left": [[1, 1, 1, 1, 1], [0, 0, 1, 1, 1], [0, 0, 0, 0, 1]],
    "holes": [[1, 0, 1, 1, 0], [0, 1, 1, 0, 1], [0, 0, 0, 0, 0]],
}
# Right padding only, no empty row: the masks the cuDNN kernel takes.
RIGHT_PADDED_LENGTHS = [5, 4, 3, 2, 1, 5, 3, 2, 1]


# `@pytest.mark.cell_sweep` on a test parametrized by cell name: the default run
# (under 15 minutes on 2 cores) takes these cells, the slow run (CI runs it too)
# the others. Every cell's paths, gradients, Keras parity and serialization stay
# in the default run; the sweeps so marked (ONNX conversion, seq2seq, long and
# zero-step sequences, one loop per core) check behaviours beyond those.
DEFAULT_RUN_CELLS = ("gru", "lstm", "mgu")


@pytest.hookimpl(tryfirst=True)  # before `-m "not slow"` deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("cell_sweep") and not any(
            value in DEFAULT_RUN_CELLS for value in item.callspec.params.values()
        ):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240611)


@pytest.fixture
def sequences(rng: np.random.Generator) -> np.ndarray:
    """A (BATCH, STEPS, FEATURES) float32 batch."""
    return rng.normal(size=(BATCH, STEPS, FEATURES)).astype("float32")


@pytest.fixture
def mask() -> np.ndarray:
    """A boolean (BATCH, STEPS) mask with right and left padding and holes."""
    return np.array([row for rows in MASK_ROWS.values() for row in rows], dtype=bool)


@pytest.fixture
def right_padded_mask() -> np.ndarray:
    """A boolean (BATCH, STEPS) right-padded mask without empty rows."""
    return np.arange(STEPS)[None, :] < np.array(RIGHT_PADDED_LENGTHS)[:, None]


def randomize_weights(layer: keras.layers.Layer, rng: np.random.Generator) -> None:
    """Give every trainable weight random values (biases included, so a
    misplaced bias cannot hide behind the zero initializer)."""
    for weight in layer.trainable_weights:
        weight.assign(rng.uniform(-0.6, 0.6, size=weight.shape).astype(weight.dtype))


def linear_loss(outputs: list) -> tf.Tensor:
    """A fixed random linear function of a list of tensors: every element
    weighs differently, and identically for the layers being compared."""
    rng = np.random.default_rng(7)
    return sum(
        tf.reduce_sum(o * rng.normal(size=tuple(o.shape)).astype(o.dtype.name)) for o in outputs
    )


def outputs_and_gradients(
    layer: Callable, inputs: Any, **call_kwargs: Any
) -> tuple[list[tf.Tensor], list[tf.Tensor]]:
    """The flattened outputs of ``layer(inputs, **call_kwargs)`` and the
    gradients of their `linear_loss` with respect to the inputs, the
    ``initial_state`` tensors (if given) and every trainable weight. Works
    eagerly and inside ``tf.function``."""
    inputs = tf.convert_to_tensor(inputs)
    states = [tf.convert_to_tensor(s) for s in call_kwargs.pop("initial_state", None) or []]
    if states:
        call_kwargs["initial_state"] = states
    with tf.GradientTape() as tape:
        tape.watch([inputs, *states])
        outputs = keras.tree.flatten(layer(inputs, **call_kwargs))
        loss = linear_loss(outputs)
    sources = [inputs, *states, *layer.trainable_weights]
    return outputs, tape.gradient(loss, sources, unconnected_gradients="zero")


def assert_all_close(actual: list, expected: list, tol: float = 1e-5, what: str = "") -> None:
    """Lists of arrays equal elementwise to ``tol`` (absolute and relative)."""
    assert len(actual) == len(expected), f"{what}: {len(actual)} vs {len(expected)} tensors"
    for i, (a, e) in enumerate(zip(actual, expected)):
        np.testing.assert_allclose(
            np.asarray(a), np.asarray(e), rtol=tol, atol=tol, err_msg=f"{what} [tensor {i}]"
        )


def check_step_and_sequence(
    cell: Any, reference: Callable, features: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """For a one-state cell: put it in a fused ``RNN`` on random (2, 5,
    ``features``) inputs, randomize its weights, then check one
    ``cell(x_t, [h])`` step and the whole sequence from a random ``h0``
    against ``reference(x_t, h, weights)`` (numpy, weights as
    ``get_weights()``). Returns the weights."""
    from keras_rnncells import RNN

    layer = RNN(cell, return_sequences=True, return_state=True, implementation="fused")
    x = rng.normal(size=(2, 5, features)).astype("float32")
    h0 = rng.normal(size=(2, cell.state_size)).astype("float32")
    layer.build(x.shape)
    randomize_weights(layer, rng)
    weights = layer.get_weights()
    output, states = cell(x[:, 0], [h0])
    expected = reference(x[:, 0], h0, weights)
    assert_all_close([output, states[0]], [expected, expected], what="one step")
    h, expected_outputs = h0, []
    for t in range(x.shape[1]):
        h = reference(x[:, t], h, weights)
        expected_outputs.append(h)
    outputs, last_state = layer(x, initial_state=[h0])
    assert_all_close([outputs, last_state], [np.stack(expected_outputs, 1), h], what="sequence")
    return weights


def assert_rows_independent(layer: Any, sequences: np.ndarray, mask: np.ndarray) -> None:
    """``layer`` on the masked batch gives each row what it gives that row's
    unmasked steps alone (masked steps neither read nor counted)."""
    batched = np.asarray(layer(sequences, mask=mask))
    for row in range(len(sequences)):
        steps = mask[row].astype(bool)
        if steps.any():
            alone = layer(sequences[row : row + 1, steps])
            np.testing.assert_allclose(batched[row], alone[0], atol=1e-5, err_msg=f"row {row}")


@pytest.fixture
def helpers():
    """The helper functions above, for the test modules (no package to import
    them from: the test tree has no ``__init__.py``)."""

    class Helpers:
        randomize_weights = staticmethod(randomize_weights)
        linear_loss = staticmethod(linear_loss)
        outputs_and_gradients = staticmethod(outputs_and_gradients)
        assert_all_close = staticmethod(assert_all_close)
        check_step_and_sequence = staticmethod(check_step_and_sequence)
        assert_rows_independent = staticmethod(assert_rows_independent)

    return Helpers


@pytest.fixture
def refused_in_one_line(tmp_path, capsys) -> Callable[[Sequence[str], str], None]:
    """``refused(argv, message)``: ``rnncells ARGV --out RUN`` exits with 2,
    says ``message`` on one line of stderr and writes no run directory."""

    def refused(argv: Sequence[str], message: str) -> None:
        from keras_rnncells.cli import main

        with pytest.raises(SystemExit) as exit_info:
            main([*argv, "--out", str(tmp_path / "run")])
        assert exit_info.value.code == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], lines
        assert not (tmp_path / "run").exists()

    return refused


# -- the benchmark data ------------------------------------------------------------
# Tests that read real data ask ``require_data(folder)``: it skips them, with the
# path tried, when the data is absent, except under ``CI=true``, where the data
# must be present and they fail instead.
def require_data(folder: str) -> Path:
    try:
        path = data_root() / folder
        if not path.is_dir():
            raise FileNotFoundError(f"no folder {path} (set $RNNCELLS_DATA)")
    except FileNotFoundError as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"benchmark data {folder}/ is required under CI=true: {error}")
        pytest.skip(f"benchmark data {folder}/ absent: {error}")
    return path


@pytest.fixture(scope="session", name="require_data")
def require_data_fixture() -> Callable[[str], Path]:
    return require_data


# -- artifacts run where users run them, in child processes ------------------------
TOOLS = Path(__file__).parent / "tools"


class ToolServers:
    """One long-lived ``tests/tools/<script> --serve`` child per script (see
    tests/tools/serve_requests.py): a request costs the tool's imports
    (TensorFlow's: seconds) once per test worker, not once per call. A child
    that dies (a crash of the artifact it ran) fails the request that killed
    it with its stderr's tail, and the next request starts a new one."""

    def __init__(self) -> None:
        self.children: dict[str, tuple[subprocess.Popen, Path]] = {}
        self.lock = threading.Lock()  # one request at a time (tests may call from threads)

    def run(self, script: str, request: Path) -> None:
        with self.lock:
            self.run_one(script, request)

    def run_one(self, script: str, request: Path) -> None:
        child, log = self.children.get(script, (None, None))
        if child is None or child.poll() is not None:
            log = request.parent / f"{Path(script).stem}.stderr"
            with open(log, "wb") as stderr:
                child = subprocess.Popen(
                    [sys.executable, os.fspath(TOOLS / script), "--serve"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                    text=True,
                    env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
                )
            self.children[script] = child, log
        try:
            child.stdin.write(f"{os.fspath(request.resolve())}\n")
            child.stdin.flush()
            answer = child.stdout.readline()
        except BrokenPipeError:
            answer = ""
        if answer.strip() != "done":
            code = child.wait()
            del self.children[script]
            tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
            raise AssertionError(f"{script} exited {code}:\n{tail}")

    def close(self) -> None:
        for child, _ in self.children.values():
            child.stdin.close()
            child.wait()
        self.children.clear()


TOOL_SERVERS = ToolServers()


def run_jobs_in_child(
    script: str,
    jobs: Sequence[tuple[Path, dict[str, Any]]],
    workdir: Path,
    persistent: bool = False,
) -> list[dict[str, np.ndarray] | str]:
    """Runs ``tests/tools/<script>`` on a request of ``(artifact, inputs)``
    jobs (inputs as ``.npz``, or ``.json`` where they are lists of str) in one
    child process (with ``persistent``, the worker's long-lived one,
    `ToolServers`). Returns per job the outputs by name, or the one-line error
    the artifact raised; the child's crash (a segfault, say) fails the test."""
    workdir.mkdir(parents=True, exist_ok=True)
    request = []
    for index, (artifact, inputs) in enumerate(jobs):
        texts = {k: v for k, v in inputs.items() if isinstance(v, list)}
        path = workdir / f"in{index}.{'json' if texts else 'npz'}"
        if texts:
            path.write_text(json.dumps(texts), encoding="utf-8")
        else:
            np.savez(path, **inputs)
        outputs = os.fspath((workdir / f"out{index}.npz").resolve())
        request.append(
            {"artifact": os.fspath(Path(artifact).resolve()), "inputs": os.fspath(path.resolve())}
            | {"outputs": outputs}
        )
    (workdir / "request.json").write_text(json.dumps(request), encoding="utf-8")
    if persistent:
        TOOL_SERVERS.run(script, workdir / "request.json")
    else:
        child = subprocess.run(
            [sys.executable, os.fspath(TOOLS / script), os.fspath(workdir / "request.json")],
            capture_output=True,
            text=True,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        )
        assert child.returncode == 0, f"{script} exited {child.returncode}:\n{child.stderr[-3000:]}"
    results: list[dict[str, np.ndarray] | str] = []
    for job in request:
        error = Path(job["outputs"] + ".error")
        if error.exists():
            results.append(json.loads(error.read_text(encoding="utf-8"))["error"])
            continue
        with np.load(job["outputs"]) as loaded:
            results.append(dict(loaded))
    return results


@pytest.fixture(scope="session")
def tool_servers():
    """The worker's long-lived tool children, stopped at the session's end."""
    yield TOOL_SERVERS
    TOOL_SERVERS.close()


@pytest.fixture(scope="session")
def serve_like_tf_serving(tool_servers) -> Callable:
    """``(SavedModel directories and inputs, workdir) -> outputs or errors``, run
    as a stock ``tensorflow_model_server`` runs them (tests/tools/stock_server.py:
    XLA JIT disabled, keras_rnncells not importable, tf-text ops linked, the
    session loader), in the worker's long-lived server process (as a model
    server serves many models), each request from no model loaded."""
    return partial(run_jobs_in_child, "stock_server.py", persistent=True)


@pytest.fixture(scope="session")
def stream_in_child() -> Callable:
    """Streams step forms chunk by chunk in a child (tests/tools/stream_runner.py)."""
    return partial(run_jobs_in_child, "stream_runner.py")


@pytest.fixture(scope="session")
def run_onnx_in_child(tool_servers) -> Callable:
    """``(ONNX files and inputs, workdir) -> outputs or errors``, run by
    onnxruntime with the extensions in a process without TensorFlow
    (tests/tools/onnx_runner.py), the worker's long-lived one."""
    return partial(run_jobs_in_child, "onnx_runner.py", persistent=True)


# -- the applications, tiny ----------------------------------------------------------
def tiny_app_models() -> list[keras.Model]:
    """The four applications, untrained, tiny (what serving tests check does
    not depend on the weights), with native ONNX GRU/LSTM nodes and a Loop (MGU)."""
    from keras_rnncells.apps.color_namer import ColorNamer
    from keras_rnncells.apps.name_to_color import NameToColor
    from keras_rnncells.apps.sentiment import SentimentClassifier
    from keras_rnncells.seq2seq import TextSeq2Seq
    from keras_rnncells.text import CharTokenizer, WordPieceTokenizer, WordTokenizer

    corpus = ["a wonderful , moving film", "a dull and lifeless film", "so dull"]
    words = WordTokenizer.from_corpus(["light blue", "dark red", "greenish blue"], lowercase=True)
    small = {"units": 4, "embedding_dim": 4}
    return [
        SentimentClassifier(
            WordPieceTokenizer.from_corpus(corpus, vocab_size=60),
            "mgu",
            bidirectional=False,
            **small,
        ),
        ColorNamer(words, "gru", max_length=4, **small),
        NameToColor(words, "lstm", bins=4, **small),
        TextSeq2Seq.from_tokenizers(
            CharTokenizer.from_corpus(["nov 21, 2026"]),
            CharTokenizer.from_corpus(["0123456789-"]),
            cell="gru",
            max_output_length=6,
            **small,
        ),
    ]


@pytest.fixture(scope="session", name="tiny_app_models")
def tiny_app_models_fixture() -> Callable[[], list[keras.Model]]:
    return tiny_app_models
