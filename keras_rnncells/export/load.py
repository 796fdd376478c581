"""Serving under load: many threads sending requests to one loaded artifact.

``serve_under_load(run, requests, threads=8, per_thread=200)`` starts
``threads`` threads together; each sends ``per_thread`` requests, drawn at
random from ``requests``, to ``run``: a SavedModel's ``serving_default`` as
``tf.saved_model.load`` gives it (`SavedModelRunner`) or an onnxruntime
``InferenceSession`` (`OnnxRunner`), one object shared by every thread, as a
server shares it. Each answer is compared with the answer to the same request
sent alone from one thread before the load starts (strings and integers
exactly, floats to ``tolerance``). The report holds the latency of every
answered request, the exceptions raised and the wrong answers.

``requests_from_examples(examples)`` makes the requests: batches of 1 to 8
rows drawn from a servable's examples.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

from keras_rnncells.checks import check_positive_int
from keras_rnncells.export.check import SIGNATURE
from keras_rnncells.export.saved_model import compare_outputs

Inputs = dict[str, np.ndarray]
Runner = Callable[[Inputs], Inputs]


class SavedModelRunner:
    """``tf.saved_model.load(path).signatures[signature]`` on numpy inputs,
    returning numpy outputs by name (strings as ``bytes`` objects)."""

    def __init__(self, path: str | os.PathLike, signature: str = SIGNATURE) -> None:
        try:  # the text applications' graphs hold tensorflow-text ops, as the model server links
            import tensorflow_text  # noqa: F401
        except ImportError:
            pass
        self.loaded = tf.saved_model.load(os.fspath(path))  # its signatures need it alive
        self.function = self.loaded.signatures[signature]

    def __call__(self, inputs: Inputs) -> Inputs:
        outputs = self.function(**{name: tf.constant(value) for name, value in inputs.items()})
        return {name: tensor.numpy() for name, tensor in outputs.items()}


class OnnxRunner:
    """An onnxruntime ``InferenceSession`` (CPU) of ``path``, outputs by name."""

    def __init__(self, path: str | os.PathLike) -> None:
        import onnxruntime

        self.session = onnxruntime.InferenceSession(
            os.fspath(path), providers=["CPUExecutionProvider"]
        )
        self.names = [output.name for output in self.session.get_outputs()]

    def __call__(self, inputs: Inputs) -> Inputs:
        return dict(zip(self.names, self.session.run(self.names, inputs)))


def requests_from_examples(
    examples: Inputs, count: int = 8, max_batch: int = 8, seed: int = 0
) -> list[Inputs]:
    """``count`` requests of 1, 2, ..., ``max_batch``, 1, 2, ... rows, each row
    drawn at random from ``examples`` (the same rows of every input)."""
    check_positive_int("count", count)
    check_positive_int("max_batch", max_batch)
    sizes = {len(value) for value in examples.values()}
    if len(sizes) != 1 or 0 in sizes:
        raise ValueError(
            f"Argument `examples` must hold inputs with the same number of rows (at least 1), "
            f"received: { {name: np.shape(value) for name, value in examples.items()} }"
        )
    (rows,) = sizes
    rng = np.random.default_rng(seed)
    drawn = [rng.integers(rows, size=1 + index % max_batch) for index in range(count)]
    return [{name: np.asarray(value)[pick] for name, value in examples.items()} for pick in drawn]


@dataclass
class LoadReport:
    """What ``serve_under_load`` measured: wall time of the whole load,
    latency (seconds) of each answered request, exceptions raised and
    wrong answers (messages)."""

    threads: int
    requests: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, float | int]:
        """p50 and p99 latency (ms), throughput (requests per second over the
        wall time), the number of errors and of wrong answers."""
        p50, p99 = np.percentile(self.latencies, [50, 99]) if self.latencies else (np.nan,) * 2
        return {
            "threads": self.threads,
            "requests": self.requests,
            "p50_ms": 1000 * float(p50),
            "p99_ms": 1000 * float(p99),
            "per_second": self.requests / self.seconds,
            "errors": len(self.errors),
            "wrong": len(self.wrong),
        }


def serve_under_load(
    run: Runner,
    requests: Sequence[Inputs],
    threads: int = 8,
    per_thread: int = 200,
    tolerance: float = 1e-5,
    seed: int = 0,
) -> LoadReport:
    """``threads`` threads × ``per_thread`` requests to ``run`` (see the module)."""
    check_positive_int("threads", threads)
    check_positive_int("per_thread", per_thread)
    if not requests:
        raise ValueError("Argument `requests` must hold at least one request, received none")
    references = [run(request) for request in requests]  # alone, one thread
    start = threading.Barrier(threads + 1)
    reports = [LoadReport(1, per_thread, 0.0) for _ in range(threads)]

    def send(report: LoadReport, rng: np.random.Generator) -> None:
        start.wait()
        for _ in range(per_thread):
            index = int(rng.integers(len(requests)))
            began = time.perf_counter()
            try:
                answer = run(requests[index])
            except Exception as error:  # a server's failed request, reported
                report.errors.append(f"request {index}: {type(error).__name__}: {error}")
                continue
            report.latencies.append(time.perf_counter() - began)
            try:
                compare_outputs(references[index], answer, tolerance, f"request {index}")
            except RuntimeError as error:
                report.wrong.append(str(error))

    workers = [
        threading.Thread(target=send, args=(report, rng))
        for report, rng in zip(reports, np.random.default_rng(seed).spawn(threads))
    ]
    for worker in workers:
        worker.start()
    start.wait()
    began = time.perf_counter()
    for worker in workers:
        worker.join()
    total = LoadReport(threads, threads * per_thread, time.perf_counter() - began)
    for report in reports:
        total.latencies += report.latencies
        total.errors += report.errors
        total.wrong += report.wrong
    return total
