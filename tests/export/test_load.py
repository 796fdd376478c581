"""Serving under load (``keras_rnncells.export.load``): each application's
SavedModel (through ``tf.saved_model.load``) and ONNX model (through
onnxruntime) answer 8 threads x 200 requests, batches of 1 to 8 rows drawn
from the application's examples, with no error and every answer equal to the
single-threaded answer to the same request. The models are tiny and untrained
(what is tested does not depend on the weights) and exported once through
the real writers."""

from __future__ import annotations

import itertools
import threading

import keras
import numpy as np
import pytest

from keras_rnncells.apps import servable_for
from keras_rnncells.export import write_onnx, write_saved_models
from keras_rnncells.export.load import (
    OnnxRunner,
    SavedModelRunner,
    requests_from_examples,
    serve_under_load,
)
from keras_rnncells.export.onnx import onnx_path

THREADS, PER_THREAD = 8, 200
# The float output both formats return (the SavedModel from text, ONNX from token ids).
SHARED_OUTPUT = {
    "sentiment": "probability",
    "color-namer": "scores",
    "name-to-color": "rgb",
    "seq2seq": "score",
}


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory, tiny_app_models):
    """Servable, SavedModel directory and ONNX file by application name. The
    fresh-process SavedModel check is left to test_saved_model.py; the ONNX
    writer checks parity with TensorFlow in onnxruntime."""
    keras.utils.set_random_seed(0)
    servables = [servable_for(model) for model in tiny_app_models()]
    root = tmp_path_factory.mktemp("load")
    saved = write_saved_models(servables, root, version=1, check=False)
    found = {}
    for servable, directory in zip(servables, saved):
        path = onnx_path(root, servable.name, 1)
        write_onnx(servable, path, version=1)
        found[servable.name] = (servable, directory, path)
    assert set(found) == set(SHARED_OUTPUT)
    return found


@pytest.mark.slow  # a load run per app (63 s of the default run)
@pytest.mark.parametrize("app", list(SHARED_OUTPUT))
def test_both_formats_answer_8_threads_x_200_requests(artifacts, app):
    servable, saved_model, onnx_file = artifacts[app]
    answers = {}
    for runtime, run, examples in (
        ("SavedModel", SavedModelRunner(saved_model), servable.examples),
        ("ONNX", OnnxRunner(onnx_file), servable.onnx()[1]),
    ):
        requests = requests_from_examples(examples)
        assert [len(next(iter(r.values()))) for r in requests] == list(range(1, 9))
        report = serve_under_load(run, requests, THREADS, PER_THREAD)
        assert (report.errors[:3], report.wrong[:3]) == ([], []), runtime
        assert len(report.latencies) == report.requests == THREADS * PER_THREAD
        summary = report.summary()
        assert 0 < summary["p50_ms"] <= summary["p99_ms"] and summary["per_second"] > 0
        answers[runtime] = [run(request) for request in requests]
    # The same rows in both formats (equal seeds, equal numbers of examples):
    # the two artifacts agree on their shared output, to the ONNX export's tolerance.
    name = SHARED_OUTPUT[app]
    for saved, onnx in zip(answers["SavedModel"], answers["ONNX"]):
        np.testing.assert_allclose(saved[name], onnx[name], atol=1e-4)


def doubled(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"twice": inputs["x"] * 2.0, "label": np.where(inputs["x"][:, 0] > 0, b"+", b"-")}


class Faulty:
    """``doubled``, right while the references are taken (the first
    ``healthy`` calls); then every 5th call raises and every 5th call (another
    one) answers 1e-3 off."""

    def __init__(self, healthy: int) -> None:
        self.healthy, self.calls, self.lock = healthy, itertools.count(), threading.Lock()

    def __call__(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        with self.lock:
            call = next(self.calls)
        answer = doubled(inputs)
        if call >= self.healthy and call % 5 == 0:
            raise RuntimeError("busy")
        if call >= self.healthy and call % 5 == 1:
            answer["twice"] = answer["twice"] + 1e-3
        return answer


def test_the_driver_reports_errors_and_wrong_answers():
    examples = {"x": np.array([[1.0, 2.0], [-3.0, 0.5], [0.25, -1.0]], "float32")}
    requests = requests_from_examples(examples, count=16, seed=3)
    assert [len(r["x"]) for r in requests] == [*range(1, 9)] * 2
    assert all(any((row == examples["x"]).all(1)) for r in requests for row in r["x"])
    assert len({r["x"].tobytes() for r in requests}) > 8  # rows drawn, not the same every time

    report = serve_under_load(doubled, requests, threads=3, per_thread=40)
    assert (report.errors, report.wrong, len(report.latencies)) == ([], [], 120)
    summary = report.summary()
    assert summary["per_second"] == pytest.approx(120 / report.seconds)
    assert (summary["threads"], summary["requests"], summary["errors"]) == (3, 120, 0)

    report = serve_under_load(Faulty(healthy=16), requests, threads=3, per_thread=40)
    under_load = range(16, 16 + 120)
    failed = sum(call % 5 == 0 for call in under_load)
    assert len(report.errors) == failed and "RuntimeError: busy" in report.errors[0]
    assert len(report.wrong) == sum(call % 5 == 1 for call in under_load)
    assert "'twice' differs by" in report.wrong[0]
    assert len(report.latencies) == 120 - failed
    assert report.summary()["errors"] == failed


def test_bad_arguments():
    examples = {"x": np.zeros((3, 2), "float32")}
    with pytest.raises(ValueError, match="`count` must be a positive integer"):
        requests_from_examples(examples, count=0)
    with pytest.raises(ValueError, match="`max_batch`"):
        requests_from_examples(examples, max_batch=True)
    with pytest.raises(ValueError, match="`examples` must hold inputs with the same number"):
        requests_from_examples({"x": np.zeros((3, 2)), "y": np.zeros((2, 2))})
    with pytest.raises(ValueError, match="`threads`"):
        serve_under_load(doubled, requests_from_examples(examples), threads=0)
    with pytest.raises(ValueError, match="`per_thread`"):
        serve_under_load(doubled, requests_from_examples(examples), per_thread=-1)
    with pytest.raises(ValueError, match="`requests`"):
        serve_under_load(doubled, [])
