"""Request limits of the exported text models (`keras_rnncells.export.limits`).

* A request past a limit (rows, characters of one text, characters in all)
  is refused with an InvalidArgument error that names the limit; one at
  exactly the limits (texts of several bytes a character among them), of no
  row, or of one empty text is answered as the unbounded model answers it:
  in this process, in a stock TF Serving stand-in (``serve_like_tf_serving``:
  XLA off, keras_rnncells unimportable) and in onnxruntime without
  TensorFlow (``run_onnx_in_child``, the string-input ``model_text.onnx``).
* The 20 MB request of issue 48 (10,000 texts of 2,000 characters, which took
  a server past 15 GB) is refused in under a second by a stock server whose
  peak memory stays under 1 GB, and by onnxruntime without a crash.
* The manifests record the limits; ``rnncells export --max-batch ...`` reaches
  them; each application has its defaults; a user's model that reads text
  (a ``TextVectorization`` first) is bounded too; limits on a model without
  text, or bad values, are one-line errors.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells import GRU
from keras_rnncells.apps import servable_for
from keras_rnncells.apps.name_to_color import LIMITS as NAME_LIMITS
from keras_rnncells.apps.sentiment import SentimentClassifier
from keras_rnncells.apps.seq2seq import LIMITS as SEQ2SEQ_LIMITS
from keras_rnncells.cli import main
from keras_rnncells.export import write_onnx, write_saved_model
from keras_rnncells.export.limits import (
    DEFAULT_LIMITS,
    INT64_MAX,
    RequestLimits,
    checked_texts,
)
from keras_rnncells.export.servable import model_servable, servable_from_model, with_limits
from keras_rnncells.text import WordPieceTokenizer

LIMITS = RequestLimits(max_batch=4, max_chars=8, max_total_chars=20)
# Requests around LIMITS: name -> (texts, the limit that refuses them, or None).
REQUESTS = {
    # 4 rows, 8 characters (16 bytes) the longest, 20 in all
    "at the limits": (["é" * 8, "日本語abcd", "a", "😀😀😀😀"], None),
    "no row": ([], None),
    "one empty text": ([""], None),
    "a row too many": (["a"] * 5, "max_batch"),
    "a character too many in one text": (["ab", "a" * 9], "max_chars"),
    "a character too many in all": (["a" * 8, "b" * 8, "c" * 5], "max_total_chars"),
}
# Issue 48's hostile request: 10,000 texts of 2,000 characters, 20 MB.
HOSTILE = ["a gripping, beautifully acted film " * 57 + "x" * 5] * 10_000
WRITTEN = {"characters": "Unicode code points"}  # in every manifest's "limits"
STOCK_SERVER = Path(__file__).parents[1] / "tools" / "stock_server.py"


def tiny_sentiment() -> SentimentClassifier:
    """A sentiment classifier on WordPiece tokens, untrained, tiny."""
    keras.utils.set_random_seed(0)
    corpus = ["a wonderful , moving film", "a dull and lifeless film", "so dull"]
    tokenizer = WordPieceTokenizer.from_corpus(corpus, vocab_size=60)
    return SentimentClassifier(tokenizer, "gru", units=4, embedding_dim=4, bidirectional=False)


def refused_by(error: str, limit: str) -> bool:
    """Whether a stock server's error is the refusal of ``limit`` (of LIMITS)."""
    value = getattr(LIMITS, limit)
    return f"Request refused by its limit {limit}={value}:" in error


# -- in this process -----------------------------------------------------------------


def test_limits_are_checked_and_resolved():
    assert RequestLimits().resolved() == DEFAULT_LIMITS
    assert RequestLimits(max_batch=3).resolved(SEQ2SEQ_LIMITS) == RequestLimits(
        3, SEQ2SEQ_LIMITS.max_chars, DEFAULT_LIMITS.max_total_chars
    )
    assert LIMITS.admits(REQUESTS["at the limits"][0])
    assert not LIMITS.admits(REQUESTS["a row too many"][0])
    for value in (0, -1, 1.5, True, "8", 2**63):
        name = "max_chars"
        with pytest.raises(ValueError, match=rf"^Argument `{name}` must be "):
            RequestLimits(max_chars=value)
    with pytest.raises(ValueError, match=r"^Argument `limits` must be a .*RequestLimits"):
        model_servable(keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]), limits=4)


def test_the_checks_refuse_past_each_limit_and_name_it():
    """`checked_texts` alone: each request of REQUESTS passes unchanged or is
    refused naming its limit; limits of int64's largest value admit (they are
    compared as int64)."""
    for name, (texts, limit) in REQUESTS.items():
        request = tf.constant(texts, tf.string)
        if limit is None:
            assert checked_texts(request, LIMITS).numpy().tolist() == request.numpy().tolist()
            continue
        with pytest.raises(tf.errors.InvalidArgumentError) as refusal:
            checked_texts(request, LIMITS)
        assert refused_by(refusal.value.message, limit), (name, refusal.value.message)
    largest = RequestLimits(INT64_MAX, INT64_MAX, INT64_MAX)
    assert checked_texts(tf.constant(["dark red"]), largest).numpy().tolist() == [b"dark red"]


@pytest.mark.slow  # every app's servable traced (30 s)
def test_each_app_has_its_default_limits(tiny_app_models):
    """Sentiment reads long reviews (the defaults), name-to-color and seq2seq
    short lines; the color namer reads no text, and refuses limits."""
    sentiment, color_namer, name_to_color, seq2seq = tiny_app_models()
    assert servable_for(sentiment).limits == DEFAULT_LIMITS
    assert servable_for(name_to_color).limits == NAME_LIMITS.resolved()
    assert servable_for(seq2seq, limits=RequestLimits(max_batch=2)).limits == RequestLimits(
        2, SEQ2SEQ_LIMITS.max_chars, DEFAULT_LIMITS.max_total_chars
    )
    assert servable_for(color_namer).limits is None
    with pytest.raises(ValueError, match=r"^Argument `limits`: a ColorNamer takes no text"):
        servable_for(color_namer, limits=LIMITS)


def text_model() -> keras.Model:
    """A user's model on strings: TextVectorization (4 words, padded), an
    Embedding, our GRU."""
    keras.utils.set_random_seed(0)
    words = keras.layers.TextVectorization(max_tokens=12, output_sequence_length=4, name="words")
    words.adapt(["light blue", "dark red", "greenish blue"])
    text = keras.Input((), dtype="string", name="text")
    embedded = keras.layers.Embedding(12, 4, mask_zero=True)(words(text))
    return keras.Model(text, GRU(4)(embedded), name="user-text")


def test_a_users_model_on_text_is_bounded():
    """A model reading strings (`servable_from_model`): refused past each
    limit naming it, answered within them as the model answers; bounded by
    the defaults unless told; its examples cut to the limits; bounded once,
    and only on text."""
    model = text_model()
    servable = servable_from_model(model, limits=LIMITS)
    assert servable.limits == LIMITS.resolved()
    assert servable.examples["text"].tolist() == ["a short ", "light gr"]  # 8 characters each
    for name, (texts, limit) in REQUESTS.items():
        request = tf.constant(texts, tf.string)
        if limit is None:
            answer = servable.serve(text=request)["output_0"]
            np.testing.assert_allclose(answer, model(request), atol=1e-6, err_msg=name)
            continue
        with pytest.raises(tf.errors.InvalidArgumentError) as refusal:
            servable.serve(text=request)
        assert refused_by(refusal.value.message, limit), (name, refusal.value.message)
    assert model_servable(model).limits == DEFAULT_LIMITS
    with pytest.raises(ValueError, match=r"^Argument `limits`: servable .* is already bounded"):
        with_limits(servable, LIMITS)
    numbers = keras.Sequential([keras.Input((3, 2)), GRU(2)], name="numbers")
    with pytest.raises(ValueError, match=r"^Argument `limits`: servable .* has no string input"):
        servable_from_model(numbers, limits=LIMITS)


def test_export_flags_take_positive_integers(tmp_path, capsys):
    for flag in ("--max-batch", "--max-chars", "--max-total-chars"):
        with pytest.raises(SystemExit):
            main(["export", "run", "--out", str(tmp_path), flag, "0"])
        assert f"argument {flag}: expected a positive integer" in capsys.readouterr().err


# -- as users run the artifacts --------------------------------------------------------


@pytest.fixture(scope="module")
def bounded_exports(tmp_path_factory):
    """The tiny sentiment model exported with LIMITS (SavedModel, string ONNX)
    and with the defaults (SavedModel), and its servables."""
    root = tmp_path_factory.mktemp("limits")
    model = tiny_sentiment()
    servables = {
        "small": servable_for(model, limits=LIMITS),
        "default": servable_for(model),
    }
    servables["default"].name = "sentiment-default"
    saved = {key: write_saved_model(s, root, version=1) for key, s in servables.items()}
    onnx = write_onnx(servables["small"], root / "onnx" / "model.onnx", version=1)
    return {"root": root, "servables": servables, "saved": saved, "onnx_manifest": onnx}


@pytest.mark.slow  # two exports, checked, and two child processes (about 60 s)
def test_requests_around_the_limits_as_served(
    bounded_exports, serve_like_tf_serving, run_onnx_in_child, tmp_path
):
    """Stock TF Serving and onnxruntime (no TensorFlow) answer the requests
    within the limits as this process does, and refuse the others naming the
    limit (InvalidArgument); onnxruntime never crashes."""
    servable = bounded_exports["servables"]["small"]
    jobs = [{"text": texts} for texts, _ in REQUESTS.values()]
    saved = bounded_exports["saved"]["small"]
    served = serve_like_tf_serving([(saved, job) for job in jobs], tmp_path / "stock")
    text_model_file = bounded_exports["root"] / "onnx" / "model_text.onnx"
    ran = run_onnx_in_child([(text_model_file, job) for job in jobs], tmp_path / "onnx")
    for (name, (texts, limit)), stock, onnx in zip(REQUESTS.items(), served, ran):
        if limit is None:
            expected = servable.serve(text=tf.constant(texts, tf.string))
            for answer in (stock, onnx):
                assert isinstance(answer, dict), (name, answer)
                np.testing.assert_allclose(
                    answer["probability"], expected["probability"], atol=1e-5, err_msg=name
                )
                assert list(answer["label"]) == list(expected["label"].numpy()), name
            continue
        assert isinstance(stock, str) and refused_by(stock, limit), (name, stock)
        value = getattr(LIMITS, limit)
        assert isinstance(onnx, str), (name, onnx)
        assert "INVALID_ARGUMENT" in onnx and f"request_limit_{limit}_{value}'" in onnx, onnx


@pytest.mark.slow  # exports and two child processes (about 60 s)
def test_the_manifests_record_the_limits(bounded_exports):
    recorded = {**WRITTEN, "max_batch": 4, "max_chars": 8, "max_total_chars": 20}
    manifest = json.loads((bounded_exports["saved"]["small"] / "manifest.json").read_text())
    assert manifest["limits"] == recorded
    assert bounded_exports["onnx_manifest"]["string_input"]["limits"] == recorded
    assert "limits" not in {k for k in bounded_exports["onnx_manifest"] if k != "string_input"}
    default = json.loads((bounded_exports["saved"]["default"] / "manifest.json").read_text())
    assert default["limits"] == {**WRITTEN, **dataclasses.asdict(DEFAULT_LIMITS)}


# Runs a script (argv: the script, its arguments..., the report file) and
# writes its peak resident memory in bytes, the high-water mark of the
# process's own memory (/proc's VmHWM: `os.wait4`'s ru_maxrss would count the
# pages of the parent it was forked from).
METER = """
import runpy, sys
script, *arguments, report = sys.argv[1:]
sys.argv = [script, *arguments]
runpy.run_path(script, run_name="__main__")
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
open(report, "w").write(str(int(peak.split()[1]) * 1024))
"""


def serve_measured(directory: Path, requests: list[list[str]], workdir: Path):
    """``requests`` served one after the other by tests/tools/stock_server.py
    in a child process: per request its outputs, or its error and how long
    the server's session ran before it (None for an answer), and the
    child's peak resident memory in bytes (`METER`)."""
    workdir.mkdir(parents=True, exist_ok=True)
    jobs = []
    for index, texts in enumerate(requests):
        path = workdir / f"in{index}.json"
        path.write_text(json.dumps({"text": texts}), encoding="utf-8")
        jobs.append(
            {"artifact": os.fspath(directory), "inputs": os.fspath(path)}
            | {"outputs": os.fspath(workdir / f"out{index}.npz")}
        )
    (workdir / "request.json").write_text(json.dumps(jobs), encoding="utf-8")
    arguments = [STOCK_SERVER, workdir / "request.json", workdir / "peak"]
    child = subprocess.run(
        [sys.executable, "-c", METER, *map(os.fspath, arguments)],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert child.returncode == 0, child.stderr[-3000:]
    results, seconds = [], []
    for job in jobs:
        error = Path(job["outputs"] + ".error")
        if error.exists():
            refusal = json.loads(error.read_text(encoding="utf-8"))
            results.append(refusal["error"])
            seconds.append(refusal["seconds"])
        else:
            with np.load(job["outputs"]) as outputs:
                results.append(dict(outputs))
            seconds.append(None)
    return results, seconds, int((workdir / "peak").read_text())


@pytest.mark.slow  # exports, a 20 MB request to each runtime (about 70 s)
def test_the_20_mb_request_is_refused_at_once_in_little_memory(
    bounded_exports, run_onnx_in_child, tmp_path
):
    """Issue 48: 10,000 texts of 2,000 characters. A stock server (default
    limits) answers a small request, then refuses the hostile one naming
    max_batch, and 256 texts of 8,192 characters (2 MiB) naming
    max_total_chars, its session refusing each in under a second, the
    process's memory peaking under 1 GB; then answers a small request again.
    onnxruntime refuses the hostile request too, without crashing."""
    small = ["a gripping, beautifully acted film", "dull"]
    too_long = ["so dull " * 1024] * 256
    results, seconds, peak = serve_measured(
        bounded_exports["saved"]["default"], [small, HOSTILE, too_long, small], tmp_path / "s"
    )
    assert isinstance(results[0], dict) and isinstance(results[3], dict), results
    for result, limit, found in (
        (results[1], "max_batch=256", "has 10000 rows"),
        (results[2], "max_total_chars=1048576", "has 2097152 characters in all"),
    ):
        assert isinstance(result, str) and "assertion failed" in result, result
        assert f"Request refused by its limit {limit}: input `text` {found}" in result, result
    print(f"refused in {seconds[1]:.3f} s and {seconds[2]:.3f} s, peak {peak / 2**20:.0f} MiB")
    assert max(seconds[1:3]) < 1.0, seconds
    assert peak < 1e9, f"peak resident memory {peak / 2**20:.0f} MiB"
    text_model_file = bounded_exports["root"] / "onnx" / "model_text.onnx"
    (refused,) = run_onnx_in_child([(text_model_file, {"text": HOSTILE})], tmp_path / "o")
    assert isinstance(refused, str) and "request_limit_max_batch_4'" in refused, refused


@pytest.mark.slow  # rnncells export, checked (about 40 s)
def test_export_flags_reach_the_manifest(tmp_path, tiny_app_models, capsys):
    sentiment, color_namer = tiny_app_models()[:2]
    sentiment.save(tmp_path / "sentiment.keras")
    color_namer.save(tmp_path / "namer.keras")
    flags = ["--max-batch", "64", "--max-chars", "1000"]
    main(["export", str(tmp_path / "sentiment.keras"), "--out", str(tmp_path / "out"), *flags])
    expected = {**WRITTEN, "max_batch": 64, "max_chars": 1000, "max_total_chars": 1_048_576}
    saved = json.loads((tmp_path / "out" / "sentiment" / "1" / "manifest.json").read_text())
    onnx = json.loads((tmp_path / "out" / "onnx" / "sentiment" / "1" / "manifest.json").read_text())
    assert saved["limits"] == onnx["string_input"]["limits"] == expected
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["export", str(tmp_path / "namer.keras"), "--out", str(tmp_path / "out"), *flags])
    error = capsys.readouterr().err
    assert "error: Argument `limits`: a ColorNamer takes no text" in error, error
