"""Fuzzing every artifact the package writes, where its users run it.

Each application of ``tiny_app_models`` is exported once: its SavedModel,
``model.onnx`` and, for the text applications, ``model_text.onnx``. The
text applications' ``model.onnx`` takes token ids, which no SavedModel of
theirs does: its TensorFlow reference is the function it was converted from
(``Servable.onnx_function``), written as a SavedModel of its own.

hypothesis draws the requests (tests/tools/fuzz_requests.py, which says
what is drawn and why in a process of its own: the same requests in every
run): ``RNNCELLS_FUZZ_EXAMPLES`` of each kind per application (default
`DEFAULT_EXAMPLES`), plus one per batch size (0, 1, 7, 257) at the longest
length (400) and, for the id models, at no length and one per kind of id out
of the vocabulary. Colors with NaN, ±Inf, huge and subnormal values; texts of
0 to 400 words (characters for the date normalizer) of the vocabulary,
unknown, Unicode (emoji, CJK, combining marks, right-to-left), whitespace or
very long; token ids padded every way, and out of the vocabulary.

Every request of a runtime goes to one child process: the SavedModels to the
stand-in TF Serving (``serve_like_tf_serving``), the ONNX models to
onnxruntime without TensorFlow (``run_onnx_in_child``); the two run side by
side, and a crash of either fails the test naming the request it was
running. A text request also runs ``model.onnx`` on the ids TensorFlow's
tokenizer gives the texts (in this process), against the text SavedModel.
Then per request: either the SavedModel answers and each ONNX model gives
the same answer (numbers to 1e-4, strings exactly, the same shapes, empty
batches included), or all refuse it with an error naming the check; which
of the two must happen is checked too (a color with NaN or infinity and an
id out of the vocabulary are refused; texts, and id batches of no steps,
are answered).

``model_text.onnx`` documents where its tokenization differs from
TensorFlow's (``keras_rnncells.export.onnx_text``): text after a NUL,
Greek capital sigma, combining marks that are not ``\\p{Mn}``. Texts with
those are drawn too, must be answered by both, and their rows' values are
not compared (the count is printed).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# A hypothesis sweep of every app's artifacts: in the slow run (which CI runs too),
# 92 s of the default run.
pytestmark = pytest.mark.slow

MISSING = [
    m
    for m in ("hypothesis", "tf2onnx", "onnx", "onnxruntime", "onnxruntime_extensions")
    if importlib.util.find_spec(m) is None
]
if MISSING:
    pytest.skip(f"the fuzz suite needs {', '.join(MISSING)}", allow_module_level=True)

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_rnncells.apps import servable_for  # noqa: E402
from keras_rnncells.apps.color_namer import ColorNamer  # noqa: E402
from keras_rnncells.export import write_onnx, write_saved_model  # noqa: E402
from keras_rnncells.export.limits import RequestLimits  # noqa: E402
from keras_rnncells.export.servable import Servable  # noqa: E402
from keras_rnncells.text import CharTokenizer  # noqa: E402

DEFAULT_EXAMPLES = 12
EXAMPLES = int(os.environ.get("RNNCELLS_FUZZ_EXAMPLES", DEFAULT_EXAMPLES))
TOLERANCE = 1e-4
DRAW = Path(__file__).parents[1] / "tools" / "fuzz_requests.py"
# Where model_text.onnx documents a tokenization other than TensorFlow's.
DOCUMENTED = ("\x00", "Σ")
# Request limits above what tests/tools/fuzz_requests.py draws: 257 texts, a
# million characters a request.
ADMITTING = RequestLimits(max_batch=1024, max_chars=2**20, max_total_chars=2**20)


def documented_divergence(text: str) -> bool:
    """Whether ``text`` holds a character for which ``model_text.onnx``
    documents a tokenization that differs from TensorFlow's."""
    return any(c in DOCUMENTED for c in text) or any(
        unicodedata.category(c) == "Mc" and unicodedata.combining(c) for c in text
    )


@dataclasses.dataclass
class Request:
    """One generated request to an application's artifacts."""

    app: str
    kind: str  # "colors", "texts" or "ids"
    inputs: Any  # (B, 3) float32 colors, B texts, or (B, T) int32 ids
    note: str  # what is special about it, for messages

    def __str__(self) -> str:
        shape = len(self.inputs) if self.kind == "texts" else self.inputs.shape
        return f"{self.app} {self.kind} {shape} [{self.note}]"


# -- the artifacts -----------------------------------------------------------------
@dataclasses.dataclass
class App:
    """An application's artifacts and what reads them."""

    servable: Servable
    saved: Path  # the SavedModel's version directory
    onnx: Path  # model.onnx
    text_onnx: Path | None = None  # model_text.onnx
    ids_saved: Path | None = None  # onnx_function as a SavedModel
    text_input: str | None = None  # the SavedModel's string input
    ids: Callable[[list[str]], np.ndarray] | None = None  # texts -> the ids model.onnx takes
    readable: Callable[[dict], dict] = lambda outputs: outputs  # model.onnx's as the SavedModel's
    vocabulary: list[str] = dataclasses.field(default_factory=list)  # pieces to draw from
    vocabulary_size: int = 0
    characters: bool = False  # whether its tokens are characters


def detokenized(tokenizer: Any, name: str, ids_name: str) -> Callable[[dict], dict]:
    """model.onnx's outputs with its ids output ``ids_name`` as ``name``, the
    text the SavedModel gives (the tokenizer's ``detokenize``)."""

    def convert(outputs: dict) -> dict:
        outputs = dict(outputs)
        ids = outputs.pop(ids_name)
        outputs[name] = tokenizer.detokenize(tf.constant(ids)).numpy().astype(bytes)
        return outputs

    return convert


def export(model: keras.Model, root: Path) -> tuple[str, App]:
    # The text applications with request limits that admit every drawn request
    # (tests/export/test_limits.py checks the limits themselves).
    servable = servable_for(model, limits=None if isinstance(model, ColorNamer) else ADMITTING)
    saved = write_saved_model(servable, root / "saved", version=1, check=False)
    onnx = root / "onnx" / servable.name / "model.onnx"
    write_onnx(servable, onnx, version=1, check=False)
    app = App(servable, saved, onnx)
    if servable.onnx_text is None:  # the color namer: colors in, names out
        app.readable = detokenized(model.tokenizer, "names", "tokens")
        return servable.name, app
    ids_servable = dataclasses.replace(
        servable,
        name=f"{servable.name}-ids",
        serve=servable.onnx_function,
        examples=servable.onnx_examples,
        onnx_function=None,
        onnx_examples=None,
        onnx_text=None,
    )
    app.ids_saved = write_saved_model(ids_servable, root / "saved", version=1, check=False)
    app.text_onnx = onnx.parent / "model_text.onnx"
    app.text_input = servable.onnx_text.input_name
    tokenizer = servable.onnx_text.tokenizer
    if hasattr(model, "token_ids"):  # the sentiment classifier
        app.ids = lambda texts: model.token_ids(tf.constant(texts, tf.string)).numpy()
    else:
        app.ids = lambda texts: tokenizer(tf.constant(texts, tf.string)).numpy()
    if hasattr(model, "target_tokenizer"):  # the date normalizer: model.onnx gives tokens
        app.readable = detokenized(model.target_tokenizer, "output", "tokens")
    app.vocabulary = [t for t in tokenizer.vocabulary if not t.startswith(("[", "##"))]
    app.vocabulary_size = len(tokenizer.vocabulary)
    app.characters = isinstance(tokenizer, CharTokenizer)
    return servable.name, app


@pytest.fixture(scope="module")
def apps(tmp_path_factory, tiny_app_models) -> dict[str, App]:
    keras.utils.set_random_seed(0)
    root = tmp_path_factory.mktemp("fuzz-artifacts")
    started = time.perf_counter()
    exported = dict(export(model, root) for model in tiny_app_models())
    print(f"\nfuzz: the artifacts exported in {time.perf_counter() - started:.1f} s")
    return exported


def drawn_requests(apps: dict[str, App], count: int, workdir: Path) -> dict[str, list[Request]]:
    """The requests tests/tools/fuzz_requests.py draws for ``apps``, by app."""
    workdir.mkdir(parents=True, exist_ok=True)
    specification = {"count": count, "apps": {}}
    for name, app in apps.items():
        specification["apps"][name] = (
            {"kind": "colors"}
            if app.ids_saved is None
            else {
                "kind": "texts",
                "vocabulary": app.vocabulary,
                "size": app.vocabulary_size,
                "characters": app.characters,
            }
        )
    (workdir / "specification.json").write_text(json.dumps(specification), encoding="utf-8")
    subprocess.run(
        [sys.executable, os.fspath(DRAW), os.fspath(workdir / "specification.json"), workdir],
        check=True,
    )
    requests: dict[str, list[Request]] = {name: [] for name in apps}
    listed = json.loads((workdir / "requests.json").read_text(encoding="utf-8"))
    with np.load(workdir / "arrays.npz") as arrays:
        for index, entry in enumerate(listed):
            inputs = entry["texts"] if entry["kind"] == "texts" else arrays[str(index)]
            requests[entry["app"]].append(
                Request(entry["app"], entry["kind"], inputs, entry["note"])
            )
    return requests


# -- running them ------------------------------------------------------------------
@dataclasses.dataclass
class Run:
    """One request's answers: the reference (a SavedModel) and each ONNX model's."""

    request: Request
    reference: str  # which SavedModel
    answers: dict[str, dict | str] = dataclasses.field(default_factory=dict)


def jobs_of(app: App, request: Request) -> tuple[tuple, list[tuple[str, tuple]]]:
    """The SavedModel job of ``request`` and its ONNX jobs, by name."""
    if request.kind == "colors":
        return (app.saved, {"rgb": request.inputs}), [
            ("model.onnx", (app.onnx, {"rgb": request.inputs}))
        ]
    if request.kind == "ids":
        inputs = {"token_ids": request.inputs}
        return (app.ids_saved, inputs), [("model.onnx", (app.onnx, inputs))]
    texts = request.inputs  # a list: sent as JSON, a NUL at the end kept
    ids = app.ids(texts).astype("int32")
    return (app.saved, {app.text_input: texts}), [
        ("model_text.onnx", (app.text_onnx, {app.text_input: texts})),
        ("model.onnx", (app.onnx, {"token_ids": ids})),
    ]


def run_all(runner: Callable, jobs: list[tuple], labels: list[str], workdir: Path) -> list:
    """``runner``'s answers to ``jobs`` (one child process); if the child
    crashed, the failure names the request it was running."""
    try:
        return runner(jobs, workdir)
    except AssertionError as crash:
        done = sum(
            (workdir / f"out{i}.npz").exists() or (workdir / f"out{i}.npz.error").exists()
            for i in range(len(jobs))
        )
        running = labels[min(done, len(jobs) - 1)]
        pytest.fail(f"the child process crashed on job {done}: {running}\n{crash}")


@pytest.fixture(scope="module")
def runs(apps, tmp_path_factory, serve_like_tf_serving, run_onnx_in_child) -> dict[str, list[Run]]:
    started = time.perf_counter()
    root = tmp_path_factory.mktemp("fuzz-runs")
    requests = drawn_requests(apps, EXAMPLES, root / "requests")
    drawn_at = time.perf_counter()
    runs: dict[str, list[Run]] = {}
    saved_jobs, saved_labels, onnx_jobs, onnx_labels, slots = [], [], [], [], []
    for name, app in apps.items():
        runs[name] = []
        for request in requests[name]:
            reference, others = jobs_of(app, request)
            run = Run(request, "ids SavedModel" if request.kind == "ids" else "SavedModel")
            runs[name].append(run)
            saved_jobs.append(reference)
            saved_labels.append(f"{run.reference} on {request}")
            for label, job in others:
                onnx_jobs.append(job)
                onnx_labels.append(f"{label} on {request}")
                slots.append((run, label))
    with ThreadPoolExecutor(2) as pool:  # the two children side by side
        saved = pool.submit(
            run_all, serve_like_tf_serving, saved_jobs, saved_labels, root / "saved"
        )
        onnx = pool.submit(run_all, run_onnx_in_child, onnx_jobs, onnx_labels, root / "onnx")
        saved_answers, onnx_answers = saved.result(), onnx.result()
    for run, answer in zip((run for r in runs.values() for run in r), saved_answers):
        run.answers["reference"] = answer
    for (run, label), answer in zip(slots, onnx_answers):
        run.answers[label] = answer
    cases = sum(len(r) for r in runs.values())
    print(
        f"\nfuzz: {cases} requests ({', '.join(f'{n} {len(r)}' for n, r in runs.items())}), "
        f"{len(saved_jobs)} SavedModel and {len(onnx_jobs)} ONNX runs, "
        f"drawn in {drawn_at - started:.1f} s, run in {time.perf_counter() - drawn_at:.1f} s"
    )
    return runs


# -- the checks --------------------------------------------------------------------
# What a refusal must name, by kind of request and artifact.
REFUSALS = {
    "colors": {"reference": "finite", "model.onnx": "rgb_must_be_finite"},
    "ids": dict.fromkeys(("reference", "model.onnx"), "token_ids_must_be_in_vocabulary"),
}


def expected_refusal(request: Request, vocabulary_size: int) -> bool:
    """Whether the request must be refused: a color that is not finite, an
    id out of the vocabulary (`keras_rnncells.export.servable.served_ids`)."""
    if request.kind == "colors":
        return not np.isfinite(request.inputs).all()
    if request.kind == "ids":
        return bool(((request.inputs < 0) | (request.inputs >= vocabulary_size)).any())
    return False


def differences(reference: dict, found: dict, compared: np.ndarray) -> list[str]:
    """How ``found`` differs from ``reference`` on the outputs it has: shapes,
    numbers beyond `TOLERANCE`, strings; values on the ``compared`` rows only."""
    if not set(found) <= set(reference):
        return [f"outputs {sorted(found)}, the reference's {sorted(reference)}"]
    problems = []
    for name, value in found.items():
        expected = reference[name]
        if value.shape != expected.shape:
            problems.append(f"{name}: shape {value.shape}, the reference's {expected.shape}")
            continue
        value, expected = value[compared], expected[compared]
        if expected.dtype.kind == "S":
            rows = np.flatnonzero(value != expected)
            if rows.size:
                example = f"{value[rows[0]]!r} != {expected[rows[0]]!r}"
                problems.append(f"{name}: {rows.size} rows differ, e.g. {example}")
        else:
            error = np.abs(value.astype("float64") - expected).max(initial=0.0)
            if not error <= TOLERANCE:
                problems.append(f"{name}: max abs error {error} > {TOLERANCE}")
    return problems


def problems_of(run: Run, app: App) -> list[str]:
    """What is wrong with one request's answers."""
    request = run.request
    refuse = expected_refusal(request, app.vocabulary_size)
    problems = []
    for label, answer in run.answers.items():
        what = run.reference if label == "reference" else label
        if isinstance(answer, str) != refuse:
            said = f"refused ({answer[:300]})" if isinstance(answer, str) else "answered"
            problems.append(f"{what} {said}, expected {'a refusal' if refuse else 'an answer'}")
        elif refuse and REFUSALS[request.kind][label] not in answer:
            problems.append(f"{what} refused for another reason: {answer[:300]}")
    if refuse or problems:
        return problems
    reference = run.answers["reference"]
    for label, answer in run.answers.items():
        compared = np.ones(len(request.inputs), bool)
        if label == "reference":
            continue
        if label == "model_text.onnx":
            if set(answer) != set(reference):
                problems.append(f"{label}: outputs {sorted(answer)} != {sorted(reference)}")
            compared = ~np.array([documented_divergence(t) for t in request.inputs], bool)
        elif request.kind != "ids":  # model.onnx's ids as the SavedModel's text
            answer = app.readable(answer)
        problems += [f"{label}: {p}" for p in differences(reference, answer, compared)]
    return problems


@pytest.mark.parametrize("name", ["color-namer", "name-to-color", "sentiment", "seq2seq"])
def test_every_artifact_answers_as_the_saved_model_or_refuses_with_it(name, apps, runs):
    app, problems = apps[name], []
    counts = {"answered": 0, "refused": 0, "rows": 0, "text rows not compared": 0}
    for run in runs[name]:
        request = run.request
        problems += [f"{p}: {request}" for p in problems_of(run, app)]
        refused = expected_refusal(request, app.vocabulary_size)
        counts["refused" if refused else "answered"] += 1
        counts["rows"] += len(request.inputs)
        if request.kind == "texts":
            counts["text rows not compared"] += sum(map(documented_divergence, request.inputs))
    summary = f"{name}: {len(runs[name])} requests, {counts}"
    print(summary)
    assert not problems, f"{summary}; {len(problems)} problems:\n" + "\n".join(problems[:20])


def test_id_signatures_refuse_ids_out_of_the_vocabulary_and_answer_no_steps(apps):
    """`served_ids` in each id signature (in this process): an id out of the
    vocabulary fails the request from the op the ONNX error names too, and
    a batch of no steps is answered as one step of padding."""
    for app in apps.values():
        if app.ids_saved is None:
            continue
        function = app.servable.onnx_function
        padding = function(token_ids=tf.zeros((2, 1), tf.int32))
        for name, value in function(token_ids=tf.zeros((2, 0), tf.int32)).items():
            np.testing.assert_array_equal(value, padding[name], err_msg=app.servable.name)
        for outside in (-1, app.vocabulary_size):
            ids = tf.constant([[1, outside]], tf.int32)
            with pytest.raises(tf.errors.InvalidArgumentError, match=REFUSALS["ids"]["model.onnx"]):
                function(token_ids=ids)
