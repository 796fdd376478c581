"""ONNX with a string input, checked and written: the model that
`keras_rnncells.export.onnx_text_graph` builds (the tokenizers as
onnxruntime-extensions ops), run by onnxruntime on texts of every length
from 0 to 64 tokens and the examples, in one batch and one text at a time,
against the TensorFlow tokenizer and model (`write_string_model`).

Where the two can differ (not met in SST-2's texts, the shipped color names or
generated dates, whose ids are identical, see the tests): the normalization
is exact for any text that is, character by character, the concatenation of
its characters' normalizations, which fails where the mapping depends on
context: NFD's canonical reordering of a combining mark that is not
``\\p{Mn}`` (``\\p{Mc}`` marks with a combining class, such as
U+1D165..U+1D169 musical symbols), and ``tf.strings.lower``'s Greek final
sigma (a word-final "Σ" becomes "ς" in TensorFlow, "σ" here); the regex ops
of onnxruntime-extensions read a text up to its first NUL (U+0000), which
TensorFlow keeps (a character, or a space for WordPiece); invalid UTF-8 is not
supported; and RE2's Unicode tables (``\\p{P}``, ``\\p{Mn}``) are those of the
RE2 each library was built with.

onnxruntime must run the model in a process that has not imported TensorFlow
(`run_string_model` starts one): with TensorFlow loaded, the extensions' regex
ops bind to TensorFlow's RE2 and stop splitting.
"""

import importlib.metadata
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from keras_rnncells.export.check import full_float32
from keras_rnncells.export.fresh import run_fresh_python
from keras_rnncells.export.onnx_convert import value_specs
from keras_rnncells.export.onnx_text_graph import front_end, scheme, string_model
from keras_rnncells.export.servable import StringFrontEnd
from keras_rnncells.files import write_atomically
from keras_rnncells.text.sentence_piece import WORD_BOUNDARY
from keras_rnncells.text.vocabulary import END_ID

REQUIRES = "onnxruntime-extensions"
NOTE = (
    "String input: register onnxruntime-extensions' custom ops "
    "(SessionOptions.register_custom_ops_library(onnxruntime_extensions.get_library_path())). "
    "Run it in a process that has not imported TensorFlow (with TensorFlow loaded, the "
    "extensions' regex ops bind to TensorFlow's RE2 and stop splitting). Tokenization matches "
    "the Keras model for valid UTF-8 text, except: text after a NUL character (U+0000) is "
    "dropped (TensorFlow keeps the NUL, or makes it a space for WordPiece); NFD's reordering "
    "of a combining mark that is not \\p{Mn} (e.g. U+1D165..U+1D169) is not reproduced; "
    "lower-casing makes every Greek capital sigma 'σ' (TensorFlow writes a word-final one "
    "'ς'); and the RE2 Unicode tables of tensorflow-text and onnxruntime-extensions may "
    "disagree on new characters."
)
# Handwritten texts run at export time, next to the application's examples.
CHECK_TEXTS = (
    "",
    "  A Gripping,   BEAUTIFULLY acted film!!  ",
    "Crème brûlée, naïve façade — Ångström's résumé.",
    "zzqxj qwxz unfathomablyxyzzy",
    "line<br />break<br>and<BR/>tab\there",
    "ﬁne ＦＵＬＬＷＩＤＴＨ straße ΣΊΣΥΦΟΣ 日本語 한국어",
    "a" * 120 + " " + "é" * 60,
    "İSTANBUL ǅ 😀🎉 NOV 21, 2026",
)


# Runs a model on strings in a process that has not imported TensorFlow: with
# TensorFlow loaded, onnxruntime-extensions' regex ops bind to TensorFlow's
# RE2 and no longer split (measured with TensorFlow 2.21 and extensions 0.15).
# Each way ("batched": all texts in one run; "one_at_a_time": a run per text,
# the outputs stacked) writes its outputs to <out>.<way>.npz.
RUNNER = """
import json, sys
import numpy as np
import onnxruntime, onnxruntime_extensions
model, texts, name, out, *ways = sys.argv[1:]
options = onnxruntime.SessionOptions()
options.register_custom_ops_library(onnxruntime_extensions.get_library_path())
options.intra_op_num_threads = options.inter_op_num_threads = 1  # small runs: no thread pool
session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
strings = np.array(json.load(open(texts, encoding="utf-8")), dtype=object)
names = [o.name for o in session.get_outputs()]
def run(batch):
    return session.run(names, {name: batch})
for way in ways:
    if way == "batched":
        values = run(strings)
    else:
        rows = [run(strings[i : i + 1]) for i in range(len(strings))]
        values = [np.concatenate(v, 0) for v in zip(*rows)] if rows else run(strings)
    np.savez(f"{out}.{way}.npz", **{
        k: v.astype(str) if v.dtype == object else v for k, v in zip(names, values)
    })
"""
WAYS = ("batched", "one_at_a_time")


def run_string_model_ways(
    model: Any, texts: Sequence[str], input_name: str = "text", ways: Sequence[str] = WAYS
) -> dict[str, dict[str, np.ndarray]]:
    """``model`` (a ``ModelProto`` or a path) run by onnxruntime, with the
    onnxruntime-extensions ops, on the strings ``texts``, in a fresh Python
    process that imports neither TensorFlow nor keras_rnncells (a crash there
    is a ``RuntimeError`` here): way -> outputs, for each of ``ways``:
    ``"batched"`` (one run on all texts) and ``"one_at_a_time"`` (one run per
    text, the outputs concatenated). String outputs come back as numpy
    unicode arrays."""
    unknown = sorted(set(ways) - set(WAYS))
    if unknown:
        raise ValueError(f"Argument `ways` must hold only {WAYS}, received: {list(ways)!r}")
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary)
        if isinstance(model, (str, os.PathLike)):
            path = Path(model).resolve()
        else:
            path = directory / "model.onnx"
            path.write_bytes(model.SerializeToString())
        (directory / "texts.json").write_text(json.dumps(list(texts)), encoding="utf-8")
        arguments = [path, directory / "texts.json", input_name, directory / "outputs", *ways]
        run_fresh_python(RUNNER, arguments, "onnxruntime on the string model", directory)
        found = {}
        for way in ways:
            with np.load(directory / f"outputs.{way}.npz") as outputs:
                found[way] = dict(outputs)
        return found


def run_string_model(model: Any, texts: Sequence[str], input_name: str = "text") -> dict:
    """`run_string_model_ways` batched only: the outputs on ``texts``."""
    return run_string_model_ways(model, texts, input_name, ("batched",))["batched"]


def front_end_ids(
    tokenizer: Any, texts: Sequence[str], replacements: tuple[tuple[str, str], ...] = ()
) -> tf.RaggedTensor:
    """The ragged ids that the ONNX front end gives for ``texts``."""
    tokens = run_string_model(front_end(tokenizer, replacements), texts)
    return scheme(tokenizer).ragged(**{name: tf.constant(value) for name, value in tokens.items()})


def one_token_words(tokenizer: Any) -> list[str]:
    """The words that the tokenizer reads as one token of its vocabulary:
    the tokens (special tokens and ``##`` continuations left out), a
    SentencePiece word's first piece without its ``▁``, that read back as
    that token."""
    tokens = {}  # word -> its token, a word's first piece before a continuation
    for token in tokenizer.vocabulary[END_ID + 1 :]:
        word = token.removeprefix(WORD_BOUNDARY)
        if not token.startswith("##") and (word not in tokens or word != token):
            tokens[word] = token
    words = [word for word in tokens if word and not word.isspace()]
    ids = tokenizer.tokenize(tf.constant(words or [""])).to_list()
    index = {token: i for i, token in enumerate(tokenizer.vocabulary)}
    return [word for word, row in zip(words, ids) if row == [index[tokens[word]]]]


def length_texts(tokenizer: Any, lengths: Sequence[int]) -> list[str]:
    """For each ``k`` of ``lengths``, a text of exactly ``k`` tokens of
    ``tokenizer``: `one_token_words` joined by its separator (a space, none
    for characters), taken in a different order for each length."""
    words = one_token_words(tokenizer)
    if not words and any(lengths):
        raise ValueError(f"The vocabulary of {tokenizer!r} has no token that reads as itself")
    separator = getattr(tokenizer, "separator", " ")
    return [separator.join(words[(7 * k + 3 * i) % len(words)] for i in range(k)) for k in lengths]


def string_parity(
    model: Any, front: StringFrontEnd, serve: Any, texts: list[str]
) -> tuple[dict[str, float], dict[str, bool]]:
    """Onnxruntime on ``texts``, all in one batch and one text at a time
    (`WAYS`), against ``serve`` (the SavedModel's function on strings) on all
    of them in one batch: the max absolute difference per number output and
    whether each string output is identical, over both ways (a missing
    output or another shape: ``inf``, ``False``). ``serve`` runs in full
    float32 (`check.full_float32`)."""
    with full_float32():
        expected = serve(**{front.input_name: tf.constant(texts)})
    expected = {name: np.asarray(value) for name, value in expected.items()}
    errors = {name: 0.0 for name, value in expected.items() if value.dtype != object}
    identical = {name: True for name, value in expected.items() if value.dtype == object}
    for found in run_string_model_ways(model, texts, front.input_name).values():
        for name, reference in expected.items():
            value = found.get(name)
            same_shape = value is not None and value.shape == reference.shape
            if name in identical:
                decoded = [text.decode("utf-8") for text in reference.reshape(-1)]
                identical[name] &= same_shape and value.reshape(-1).tolist() == decoded
            else:
                error = np.max(np.abs(value - reference), initial=0.0) if same_shape else np.inf
                errors[name] = max(errors[name], float(error))
    return errors, identical


STRING_MODEL_FILE = "model_text.onnx"
# The export check's generated texts: 0 to 64 tokens (`length_texts`), and one
# token more than the tokenizer keeps where that is at most LONGEST_CHECK.
CHECK_LENGTHS = range(65)
LONGEST_CHECK = 1024


def check_texts(servable: Any) -> list[str]:
    """What `write_string_model` checks the model on: the servable's text
    examples, `CHECK_TEXTS` and generated texts of every length of
    `CHECK_LENGTHS` tokens, and of one token more than the tokenizer keeps
    (its ``max_length``), if it truncates (up to `LONGEST_CHECK` tokens);
    under ``servable.limits``, the first of them that one request may hold
    (each text within ``max_chars``)."""
    front = servable.onnx_text
    examples = np.asarray(servable.examples[front.input_name]).reshape(-1)
    lengths = [*CHECK_LENGTHS]
    kept = front.tokenizer.max_length
    if kept is not None and kept < LONGEST_CHECK:
        lengths.append(kept + 1)
    generated = length_texts(front.tokenizer, lengths)
    texts = [*(str(text) for text in examples), *CHECK_TEXTS, *generated]
    if servable.limits is None:
        return texts
    admitted: list[str] = []
    for text in texts:
        if servable.limits.admits([*admitted, text]):
            admitted.append(text)
    return admitted


def write_string_model(
    servable: Any, path: Path, opset: int, check: bool = True, tolerance: float = 1e-4
) -> dict[str, Any]:
    """Writes ``servable.onnx_text``'s string-input model to ``path``
    (atomically) and returns its manifest entry. With ``check``, onnxruntime
    runs it on `check_texts` (every length from 0 to 64 tokens, the
    examples, `CHECK_TEXTS`), all in one batch and one text at a time: the
    ragged ids of its front end must equal the tokenizer's, each number
    output must be within ``tolerance`` of ``servable.serve`` and each string
    output equal to it, else a ``ValueError`` (also when onnxruntime fails
    on a text), and nothing is written."""
    front = servable.onnx_text
    model, layers = string_model(front, opset, servable.limits)
    measured: dict[str, Any] = {}
    if check:
        texts = check_texts(servable)
        cleaned = tf.constant(texts)
        for pattern, rewrite in front.replacements:
            cleaned = tf.strings.regex_replace(cleaned, pattern, rewrite)
        expected_ids = front.tokenizer.tokenize(cleaned).to_list()
        ids = front_end_ids(front.tokenizer, texts, front.replacements).to_list()
        identical = ids == expected_ids
        try:
            errors, same = string_parity(model, front, servable.serve, texts)
        except RuntimeError as error:  # onnxruntime failed, or its process crashed
            raise ValueError(
                f"The string-input ONNX model of {servable.name!r} fails on texts that "
                f"TensorFlow serves: {error}"
            ) from error
        close = all(error <= tolerance for error in errors.values())
        if not (identical and close and all(same.values())):
            raise ValueError(
                f"The string-input ONNX model of {servable.name!r} differs from TensorFlow: "
                f"token ids identical: {identical}, max abs error per output {errors} "
                f"(tolerance={tolerance}), string outputs identical: {same}"
            )
        lengths = [len(row) for row in expected_ids]
        measured = {
            "max_abs_error": errors,
            "tolerance": tolerance,
            "texts": len(texts),
            "token_lengths": [min(lengths), max(lengths)],
            "ways": list(WAYS),
            "token_ids_identical": identical,
            "strings_identical": same,
            "runtime": "onnxruntime + onnxruntime-extensions",
        }
    write_atomically(path, lambda temporary: Path(temporary).write_bytes(model.SerializeToString()))
    return {
        "file": path.name,
        "inputs": value_specs(model.graph.input),
        "outputs": value_specs(model.graph.output),
        "parity": measured,
        "requires": [f"{REQUIRES}=={importlib.metadata.version(REQUIRES)}"],
        "custom_ops_library": "onnxruntime_extensions.get_library_path()",
        "recurrent_layers": layers,
        **({} if servable.limits is None else {"limits": servable.limits.manifest()}),
        "note": NOTE,
    }
