"""Bad arguments and bad inputs: a clear error naming the argument or input.

One table of rows: an id, a callable that builds the bad case, the error it
must raise (a ``ValueError`` unless said), and a regular expression its message
must contain: the argument's or input's name and what was expected. Rows cover
every registered cell's constructor, the named layers, both paths of the
``RNN`` layer (fused, generic) for its inputs, and the other public
constructors and functions (seq2seq, text, regularizers, applications and
their settings, export, data). Nothing trains; models are tiny.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import keras
import numpy as np
import pytest

import keras_rnncells as kr
from keras_rnncells import checks, seq2seq, text
from keras_rnncells.apps.color_namer import ColorNamer, NamerSettings
from keras_rnncells.apps.name_to_color import NameToColor, NameToColorSettings
from keras_rnncells.apps.sentiment import SentimentClassifier, SentimentSettings
from keras_rnncells.apps.seq2seq import DateSettings
from keras_rnncells.data import load_task
from keras_rnncells.export import (
    recurrent_layer_servable,
    verify_manifest,
    write_onnx,
    write_saved_model,
)
from keras_rnncells.layers.rnn import gpu_available

BATCH, STEPS, FEATURES, UNITS = 2, 4, 3, 5
CELLS = kr.list_cells()
NAMED_LAYERS = [
    obj
    for obj in vars(kr).values()
    if isinstance(obj, type) and issubclass(obj, kr.CellLayer) and obj is not kr.CellLayer
]
PATHS = ("fused", "generic")
VOCABULARY = [*text.SPECIAL_TOKENS, "light", "blue"]
SEQUENCES = r"\(batch, timesteps, features\)"


def zeros(*shape: int, dtype: str = "float32") -> np.ndarray:
    return np.zeros(shape, dtype=dtype)


def built(implementation: str, layer_class: type = kr.GRU) -> kr.RNN:
    """A layer built for (BATCH, STEPS, FEATURES), not run."""
    layer = layer_class(UNITS, implementation=implementation)
    layer.build((BATCH, STEPS, FEATURES))
    return layer


def built_cell() -> kr.GRUCell:
    cell = kr.GRUCell(UNITS)
    cell.build((BATCH, FEATURES))
    return cell


def initial_state_call(implementation: str, layer_class: type, states: list) -> Callable:
    return lambda: built(implementation, layer_class)(
        zeros(BATCH, STEPS, FEATURES), initial_state=states
    )


def built_attention() -> seq2seq.Attention:
    """General attention built for queries and memory of 3 features."""
    attention = seq2seq.Attention("general")
    attention.build((None, 3), (None, None, 3))
    return attention


@functools.cache
def tiny_color_namer() -> ColorNamer:
    return ColorNamer(text.WordTokenizer(VOCABULARY), units=3, embedding_dim=3)


def tokenizers() -> tuple[text.CharTokenizer, text.CharTokenizer]:
    return text.CharTokenizer(VOCABULARY), text.CharTokenizer(VOCABULARY)


def manifest_directory(content: str | None) -> Path:
    """A directory holding ``manifest.json`` with ``content`` (none for None)."""
    directory = Path(tempfile.mkdtemp(prefix="manifest-"))
    if content is not None:
        (directory / "manifest.json").write_text(content, encoding="utf-8")
    return directory


def row(
    row_id: str,
    raises: Callable[[], object],
    match: str,
    error: type[Exception] = ValueError,
    **kwargs,
) -> pytest.param:
    return pytest.param(raises, error, match, id=row_id, **kwargs)


def positive_int(name: str, value: object) -> str:
    return rf"Argument `{name}` must be a positive integer, received: {value!r}"


def float_in(name: str, interval: str, value: object) -> str:
    return rf"Argument `{name}` must be a float in {interval}, received: {value!r}"


RATE = r"\[0, 1\)"


# -- every registered cell and named layer: the common arguments --------------------------
CELL_ROWS = [
    *(
        row(
            f"cell-{name}-units={value!r}",
            lambda name=name, value=value: kr.get_cell(name)(value),
            positive_int("units", value),
        )
        for name in CELLS
        for value in (0, -1, 2.5, True, "8", None)
    ),
    *(
        row(
            f"cell-{name}-{argument}={value!r}",
            lambda name=name, argument=argument, value=value: kr.get_cell(name)(
                UNITS, **{argument: value}
            ),
            float_in(argument, RATE, value),
        )
        for name in CELLS
        for argument, value in [
            ("dropout", -0.1),
            ("dropout", 1.0),
            ("dropout", "0.1"),
            ("dropout", float("nan")),
            ("recurrent_dropout", 1.5),
            ("recurrent_dropout", True),
            ("recurrent_dropconnect", 1.0),
        ]
    ),
    *(
        row(
            f"cell-{name}-{argument}",
            lambda name=name, argument=argument: kr.get_cell(name)(UNITS, **{argument: "nope"}),
            rf"Argument `{argument}` must be a Keras {kind} .*received: 'nope'",
        )
        for name in CELLS
        for argument, kind in [("activation", "activation"), ("kernel_initializer", "initializer")]
    ),
    *(
        row(
            f"cell-gru-{argument}",
            lambda argument=argument: kr.GRUCell(UNITS, **{argument: "nope"}),
            rf"Argument `{argument}` must be a Keras {argument.split('_')[-1]} .*'nope'",
        )
        for argument in ("recurrent_activation", "bias_regularizer", "recurrent_constraint")
    ),
    row(
        "cell-peephole_lstm-peephole_initializer",
        lambda: kr.PeepholeLSTMCell(UNITS, peephole_initializer="nope"),
        r"Argument `peephole_initializer` must be a Keras initializer",
    ),
    row(
        "cell-mi_gru-alpha_initializer",
        lambda: kr.MIGRUCell(UNITS, alpha_initializer="nope"),
        r"Argument `alpha_initializer` must be a Keras initializer",
    ),
    row(
        "cell-jordan-output_activation",
        lambda: kr.JordanRNNCell(UNITS, output_activation="nope"),
        r"Argument `output_activation` must be a Keras activation",
    ),
    row(
        "cell-numpy-units-accepted-then-call-rank-3",
        lambda: kr.GRUCell(np.int64(UNITS))(zeros(BATCH, STEPS, FEATURES), [zeros(BATCH, UNITS)]),
        r"Input `inputs` of layer '.*' must be of rank 2 \(batch, features\), "
        rf"received shape \({BATCH}, {STEPS}, {FEATURES}\)",
    ),
    row(
        "cell-call-int",
        lambda: kr.GRUCell(UNITS)(zeros(BATCH, FEATURES, dtype="int32"), [zeros(BATCH, UNITS)]),
        r"Input `inputs` .* must be a float tensor, received dtype int32",
    ),
    row(
        "cell-call-features-differ",
        lambda: built_cell()(zeros(BATCH, FEATURES + 1), [zeros(BATCH, UNITS)]),
        rf"Input `inputs` .* must have {FEATURES} features \(last axis\), the size the layer "
        rf"was built for, received shape \({BATCH}, {FEATURES + 1}\)",
    ),
    row(
        "cell-features-unknown",
        lambda: kr.GRU(UNITS)(keras.Input((STEPS, None))),
        r"known input feature size",
    ),
    *(
        row(
            f"cell-{name}-recurrent_activation-without-gates",
            lambda name=name: kr.get_cell(name)(UNITS, recurrent_activation="relu"),
            rf"Unrecognized keyword arguments passed to {kr.get_cell(name).__name__}: "
            r"\{'recurrent_activation': 'relu'\}",
        )
        for name in CELLS
        if not issubclass(kr.get_cell(name), kr.GatedCell)
    ),
    row(
        "get_cell-unknown",
        lambda: kr.get_cell("no-such-cell"),
        r"Argument `name` must be one of \['cifg_lstm'",
    ),
    *(
        row(
            f"layer-{layer.__name__}-units={value!r}",
            lambda layer=layer, value=value: layer(value),
            positive_int("units", value),
        )
        for layer in NAMED_LAYERS
        for value in (0, -1, 2.5, True)
    ),
    row("layer-dropout", lambda: kr.GRU(UNITS, dropout=1.0), float_in("dropout", RATE, 1.0)),
    row(
        "zoneout-rate",
        lambda: kr.Zoneout(kr.GRUCell(UNITS), 1.5),
        float_in("rate", RATE, 1.5),
    ),
    row(
        "zoneout-rates-count",
        lambda: kr.Zoneout(kr.LSTMCell(UNITS), [0.1, 0.1, 0.1]),
        r"Argument `rate` must be a float or 2 floats",
    ),
    row(
        "zoneout-cell",
        lambda: kr.Zoneout("gru", 0.1),
        r"Argument `cell` of Zoneout must be a keras_rnncells.AbstractRNNCell",
    ),
]

# -- the RNN layer: its arguments ---------------------------------------------------------
LAYER_ARGUMENT_ROWS = [
    row(
        "implementation-unknown",
        lambda: kr.GRU(UNITS, implementation="cuda"),
        r"`implementation` must be one of .*'auto'.*'cudnn'.*'fused'.*'generic'.*'cuda'",
    ),
    row(
        "implementation-fused-foreign-cell",
        lambda: kr.RNN(keras.layers.GRUCell(UNITS), implementation="fused"),
        r"`implementation='fused'` needs a keras_rnncells.AbstractRNNCell",
    ),
    row(
        "unroll-fused",
        lambda: kr.GRU(UNITS, unroll=True, implementation="fused"),
        r"`unroll=True`.*implementation='generic'",
    ),
    *(
        row(
            f"cudnn-{name}",
            make,
            r"`implementation='cudnn'` needs a GRUCell\(reset_after=True\) or LSTMCell",
        )
        for name, make in [
            ("mgu", lambda: kr.MGU(UNITS, implementation="cudnn")),
            ("gru-reset-before", lambda: kr.GRU(UNITS, reset_after=False, implementation="cudnn")),
            ("lstm-relu", lambda: kr.LSTM(UNITS, activation="relu", implementation="cudnn")),
            ("rnn-mgu", lambda: kr.RNN(kr.MGUCell(UNITS), implementation="cudnn")),
        ]
    ),
    row(
        "cudnn-no-gpu",
        lambda: kr.GRU(UNITS, implementation="cudnn")(zeros(BATCH, STEPS, FEATURES)),
        r"`implementation='cudnn'` needs a GPU",
        marks=pytest.mark.skipif(gpu_available(), reason="a GPU is visible"),
    ),
    row(
        "stateful-dynamic-batch",
        lambda: kr.GRU(UNITS, stateful=True)(keras.Input((STEPS, FEATURES))),
        r"`stateful=True`.*batch size must be static",
    ),
]


# -- the RNN layer: its inputs, on each path ----------------------------------------------
def input_rows(path: str) -> list:
    sequences = zeros(BATCH, STEPS, FEATURES)
    return [
        row(
            f"{path}-rank-2",
            lambda: kr.GRU(UNITS, implementation=path)(zeros(BATCH, FEATURES)),
            rf"Input `sequences` .* must be of rank 3 {SEQUENCES}, "
            rf"received shape \({BATCH}, {FEATURES}\)",
        ),
        row(
            f"{path}-rank-4",
            lambda: kr.GRU(UNITS, implementation=path)(zeros(BATCH, STEPS, FEATURES, 1)),
            rf"Input `sequences` .* must be of rank 3 {SEQUENCES}",
        ),
        row(
            f"{path}-rank-2-symbolic",
            lambda: kr.GRU(UNITS, implementation=path)(keras.Input((FEATURES,))),
            rf"Input `sequences` .* must be of rank 3 {SEQUENCES}",
        ),
        *(
            row(
                f"{path}-dtype-{dtype}",
                lambda dtype=dtype: kr.GRU(UNITS, implementation=path)(
                    zeros(BATCH, STEPS, FEATURES, dtype=dtype)
                ),
                rf"Input `sequences` .* must be a float, integer or bool tensor, received "
                rf"dtype {dtype}",
            )
            for dtype in (
                "str",
            )  # integers and bools are cast (tests/layers/test_keras_arguments.py)
        ),
        row(
            f"{path}-dtype-string-symbolic",
            lambda: kr.GRU(UNITS, implementation=path)(
                keras.Input((STEPS, FEATURES), dtype="string")
            ),
            r"Input `sequences` .* must be a float, integer or bool tensor, received dtype string",
        ),
        row(
            f"{path}-zero-steps",
            lambda: kr.GRU(UNITS, implementation=path)(zeros(BATCH, 0, FEATURES)),
            r"Input `sequences` .* has 0 timesteps \(axis 1\)",
        ),
        row(
            f"{path}-features-differ",
            lambda: built(path)(zeros(BATCH, STEPS, FEATURES + 1)),
            rf"Input `sequences` .* must have {FEATURES} features \(last axis\), the size the "
            rf"layer was built for, received shape \({BATCH}, {STEPS}, {FEATURES + 1}\)",
        ),
        row(
            f"{path}-features-differ-symbolic",
            lambda: built(path)(keras.Input((STEPS, FEATURES + 1))),
            rf"Input `sequences` .* must have {FEATURES} features",
        ),
        *(
            row(
                f"{path}-mask-{name}",
                lambda mask=mask: kr.GRU(UNITS, implementation=path)(sequences, mask=mask),
                rf"Input `mask` .* must be of shape \({BATCH}, {STEPS}\) \(batch, timesteps\), "
                rf"received shape \({', '.join(map(str, mask.shape))},?\)",
            )
            for name, mask in [
                ("steps", np.ones((BATCH, STEPS + 1), bool)),
                ("batch", np.ones((BATCH + 1, STEPS), bool)),
                ("rank-3", np.ones((BATCH, STEPS, 1), bool)),
                ("rank-1", np.ones((BATCH,), bool)),
            ]
        ),
        row(
            f"{path}-initial_state-shape",
            initial_state_call(path, kr.GRU, [zeros(BATCH, UNITS + 1)]),
            rf"Argument `initial_state` .* must be 1 tensor\(s\) of shapes "
            rf"\[\({BATCH}, {UNITS}\)\], received shapes \[\({BATCH}, {UNITS + 1}\)\]",
        ),
        row(
            f"{path}-initial_state-batch",
            initial_state_call(path, kr.GRU, [zeros(BATCH + 1, UNITS)]),
            rf"`initial_state`.*\[\({BATCH}, {UNITS}\)\]",
        ),
        row(
            f"{path}-initial_state-rank-3",
            initial_state_call(path, kr.GRU, [zeros(BATCH, UNITS, 1)]),
            rf"`initial_state`.*\[\({BATCH}, {UNITS}\)\]",
        ),
        row(
            f"{path}-initial_state-count-lstm",
            initial_state_call(path, kr.LSTM, [zeros(BATCH, UNITS)]),
            r"`initial_state`.*2 tensor\(s\)",
        ),
        row(
            f"{path}-initial_state-count-gru",
            initial_state_call(path, kr.GRU, [zeros(BATCH, UNITS)] * 2),
            r"`initial_state`.*1 tensor\(s\)",
        ),
        row(
            f"{path}-initial_state-symbolic",
            lambda: kr.LSTM(UNITS, implementation=path)(
                keras.Input((STEPS, FEATURES)), initial_state=[keras.Input((UNITS + 1,))] * 2
            ),
            rf"`initial_state`.*\(None, {UNITS}\)",
        ),
    ]


INPUT_ROWS = [r for path in PATHS for r in input_rows(path)]

# -- seq2seq ------------------------------------------------------------------------------
SEQ2SEQ_ROWS = [
    row(
        "attention-score",
        lambda: seq2seq.Attention("cosine"),
        r"Argument `score` must be one of \('dot', 'general', 'concat'\), received: 'cosine'",
    ),
    *(
        row(
            f"attention-units={value!r}",
            lambda value=value: seq2seq.Attention("concat", value),
            positive_int("units", value),
        )
        for value in (0, True)
    ),
    row(
        "attention-memory-rank-2",
        lambda: seq2seq.Attention("general")(zeros(BATCH, 3), zeros(BATCH, 3)),
        r"Input `memory` .* must be of rank 3 \(batch, source_steps, features\), "
        rf"received shape \({BATCH}, 3\)",
    ),
    row(
        "attention-query-rank-4",
        lambda: seq2seq.Attention("general")(zeros(BATCH, 1, 1, 3), zeros(BATCH, STEPS, 3)),
        r"Input `query` .* must be of rank 2 \(batch, features\) or 3 \(batch, steps, features\)",
    ),
    row(
        "attention-memory_mask-shape",
        lambda: seq2seq.Attention("general")(
            zeros(BATCH, 3), zeros(BATCH, STEPS, 3), np.ones((BATCH, STEPS + 1), bool)
        ),
        rf"Input `memory_mask` .* must be of shape \({BATCH}, {STEPS}\) "
        r"\(batch, source_steps\)",
    ),
    row(
        "attention-memory-features-differ",
        lambda: built_attention()(zeros(BATCH, 3), zeros(BATCH, STEPS, 4)),
        r"Input `memory` .* must have 3 features \(last axis\), the size the layer was built for",
    ),
    row(
        "attention-query-features-differ",
        lambda: built_attention()(zeros(BATCH, STEPS, 2), zeros(BATCH, STEPS, 3)),
        r"Input `query` .* must have 3 features \(last axis\)",
    ),
    row(
        "encoder-vocabulary_size",
        lambda: seq2seq.Encoder(0),
        positive_int("vocabulary_size", 0),
    ),
    row(
        "encoder-num_layers",
        lambda: seq2seq.Encoder(10, num_layers=0),
        positive_int("num_layers", 0),
    ),
    row(
        "encoder-cell",
        lambda: seq2seq.Encoder(10, cell="nope"),
        r"Argument `cell` must be one of \(.*'gru'.*\), received: 'nope'",
    ),
    row(
        "encoder-cell_options",
        lambda: seq2seq.Encoder(10, cell_options=["units", 3]),
        r"Argument `cell_options` must be a dict of keyword arguments, received: \['units', 3\]",
    ),
    row(
        "encoder-token_ids-string",
        lambda: seq2seq.Encoder(10, units=3, embedding_dim=3)(np.full((BATCH, STEPS), "a")),
        r"Input `token_ids` .* must be an integer \(or float\) tensor of ids, "
        r"received dtype string",
    ),
    row(
        "encoder-token_ids-rank-3",
        lambda: seq2seq.Encoder(10, units=3, embedding_dim=3)(
            zeros(BATCH, STEPS, 1, dtype="int32")
        ),
        r"Input `token_ids` .* must be of rank 2 \(batch, steps\)",
    ),
    row(
        "decoder-attention",
        lambda: seq2seq.Decoder(10, attention="cosine"),
        r"Argument `attention` must be one of \(None, 'dot', 'general', 'concat'\)",
    ),
    row(
        "decoder-attention_units",
        lambda: seq2seq.Decoder(10, attention="concat", attention_units=0),
        positive_int("units", 0),
    ),
    row(
        "decoder-cell_options",
        lambda: seq2seq.Decoder(10, cell_options="units=3"),
        r"Argument `cell_options` must be a dict",
    ),
    row(
        "decoder-target_in-bool",
        lambda: seq2seq.Decoder(10, units=3, embedding_dim=3)(zeros(BATCH, STEPS, dtype="bool")),
        r"Input `target_in` .* must be an integer \(or float\) tensor of ids, "
        r"received dtype bool",
    ),
    row(
        "seq2seq-max_output_length",
        lambda: seq2seq.Seq2Seq(10, 10, units=3, embedding_dim=3, max_output_length=0),
        positive_int("max_output_length", 0),
    ),
    row(
        "seq2seq-encoder_layers",
        lambda: seq2seq.Seq2Seq(10, 10, units=3, embedding_dim=3, encoder_layers=0),
        positive_int("num_layers", 0),
    ),
    row(
        "text_seq2seq-seq2seq",
        lambda: seq2seq.TextSeq2Seq(*tokenizers(), "model"),
        r"Argument `seq2seq` must be a keras_rnncells.seq2seq.Seq2Seq, received: 'model'",
    ),
    row(
        "text_seq2seq-tokenizer",
        lambda: seq2seq.TextSeq2Seq(VOCABULARY, tokenizers()[1], "model"),
        r"Argument `source_tokenizer` must be a keras_rnncells.text tokenizer",
    ),
    *(
        row(
            f"scheduled_sampling-k={value!r}",
            lambda value=value: seq2seq.ScheduledSampling(value),
            float_in("k", r"\[1, inf\)", value),
        )
        for value in (0.5, "fast")
    ),
    row(
        "greedy_search-max_length",
        lambda: seq2seq.greedy_search(None, [], 1, 0, 2, 3),
        positive_int("max_length", 0),
    ),
    row(
        "beam_search-beam_width",
        lambda: seq2seq.beam_search(None, [], 1, 0, 4, 2, 3),
        positive_int("beam_width", 0),
    ),
    row(
        "beam_search-length_penalty",
        lambda: seq2seq.beam_search(None, [], 1, 2, 4, 2, 3, length_penalty=float("nan")),
        float_in("length_penalty", r"\(-inf, inf\)", float("nan")),
    ),
]

# -- text, regularizers -------------------------------------------------------------------
TEXT_ROWS = [
    row(
        "tokenizer-vocabulary-string",
        lambda: text.CharTokenizer("abc"),
        r"Argument `vocabulary` must be a list of non-empty strings, received: 'abc'",
    ),
    row(
        "tokenizer-vocabulary-specials",
        lambda: text.WordTokenizer(["light", "blue"]),
        r"Argument `vocabulary` must begin with the special tokens \['\[PAD\]'",
    ),
    row(
        "tokenizer-max_length",
        lambda: text.WordPieceTokenizer(VOCABULARY, max_length=0),
        r"Argument `max_length` must be an integer >= 1, received: 0",
    ),
    row(
        "tokenizer-lowercase",
        lambda: text.CharTokenizer(VOCABULARY, lowercase="yes"),
        r"Argument `lowercase` must be True or False, received: 'yes'",
    ),
    row(
        "tokenizer-strings-int",
        lambda: text.CharTokenizer(VOCABULARY)(np.zeros((BATCH,), "int32")),
        r"Argument `strings` must be a string tensor of shape \(batch,\), \(batch, 1\) or \(\), "
        r"received dtype int32",
    ),
    row(
        "tokenizer-detokenize-float",
        lambda: text.CharTokenizer(VOCABULARY).detokenize(zeros(BATCH, STEPS)),
        r"Argument `ids` must be an integer tensor of shape \(batch, length\), "
        r"received dtype float32",
    ),
    row(
        "norm_stabilizer-beta",
        lambda: kr.NormStabilizer(-1.0),
        r"Argument `beta` must be a float >= 0, received: -1.0",
    ),
    row(
        "norm_stabilizer-rank",
        lambda: kr.NormStabilizer(1.0)(zeros(BATCH, UNITS)),
        r"Argument `hidden_sequence` must be of rank 3 \(batch, time, units\), "
        rf"received shape \({BATCH}, {UNITS}\)",
    ),
]

# -- applications and their settings ------------------------------------------------------
APP_ROWS = [
    row(
        "sentiment-tokenizer",
        lambda: SentimentClassifier(VOCABULARY),
        r"Argument `tokenizer` must be a Tokenizer, received: \['\[PAD\]'",
    ),
    *(
        row(
            f"sentiment-{argument}",
            lambda options=options: SentimentClassifier(
                text.WordPieceTokenizer(VOCABULARY), units=3, embedding_dim=3, **options
            ),
            match,
        )
        for argument, options, match in [
            ("dropout", {"dropout": 1.5}, float_in("dropout", RATE, 1.5)),
            ("pad_to_multiple", {"pad_to_multiple": 0}, positive_int("pad_to_multiple", 0)),
            ("cell", {"cell": "nope"}, r"Argument `cell` must be one of \(.*'gru'"),
            ("cell_options", {"cell_options": [1]}, r"Argument `cell_options` must be a dict"),
        ]
    ),
    row(
        "color_namer-max_length",
        lambda: ColorNamer(text.WordTokenizer(VOCABULARY), units=3, max_length=0),
        positive_int("max_length", 0),
    ),
    row(
        "color_namer-rgb-shape",
        lambda: tiny_color_namer().describe(zeros(BATCH, 4)),
        rf"Argument `rgb` must be of shape \(batch, 3\), received shape \({BATCH}, 4\)",
    ),
    row(
        "name_to_color-bins",
        lambda: NameToColor(text.WordTokenizer(VOCABULARY), units=3, bins=0),
        positive_int("bins", 0),
    ),
    *(
        row(
            f"settings-{settings.__name__}-{argument}={value!r}",
            lambda settings=settings, argument=argument, value=value: settings(**{argument: value}),
            match,
        )
        for settings, argument, value, match in [
            (SentimentSettings, "units", 0, positive_int("units", 0)),
            (SentimentSettings, "dataset", "yelp", r"Argument `dataset` must be one of "),
            (SentimentSettings, "dropout", 1.0, float_in("dropout", RATE, 1.0)),
            (SentimentSettings, "train_size", 0, positive_int("train_size", 0)),
            (SentimentSettings, "cell", "nope", r"Argument `cell` must be one of \("),
            (NamerSettings, "beam_width", 0, positive_int("beam_width", 0)),
            (NamerSettings, "source", "web", r"Argument `source` must be one of \('list'"),
            (NamerSettings, "test_fraction", 1.5, float_in("test_fraction", r"\(0, 1\)", 1.5)),
            (NamerSettings, "epochs", -1, positive_int("epochs", -1)),
            (NameToColorSettings, "bins", 0, positive_int("bins", 0)),
            (NameToColorSettings, "seed", "0", r"Argument `seed` must be an integer"),
            (DateSettings, "attention", "cosine", r"Argument `attention` must be one of \(None"),
            (DateSettings, "batch_size", 0, positive_int("batch_size", 0)),
            (DateSettings, "learning_rate", 0.0, float_in("learning_rate", r"\(0, inf\)", 0.0)),
            (DateSettings, "cell_options", "units=3", r"Argument `cell_options` must be a dict"),
            (DateSettings, "dataset", "emails", r"Argument `dataset` must be one of \('dates'"),
            (DateSettings, "tokenizer", "wordpiece", r"Argument `tokenizer` must be one of \("),
            (DateSettings, "finetune", "ppo", r"Argument `finetune` must be one of \(None, "),
            (DateSettings, "finetune_epochs", 0, positive_int("finetune_epochs", 0)),
            (DateSettings, "finetune_samples", 1, r"Argument `finetune_samples` must be"),
            (DateSettings, "typos", 1.0, float_in("typos", r"\[0, 1\)", 1.0)),
            (SentimentSettings, "tokenizer", "words", r"Argument `tokenizer` must be one of \("),
        ]
    ),
]

# -- export, data -------------------------------------------------------------------------
EXPORT_DATA_ROWS = [
    row(
        "write_saved_model-servable",
        lambda: write_saved_model(kr.GRU(UNITS), tempfile.mkdtemp()),
        r"Argument `servables\[0\]` must be a keras_rnncells.export.Servable",
    ),
    row(
        "write_onnx-servable",
        lambda: write_onnx(kr.GRU(UNITS), "model.onnx"),
        r"Argument `servable` must be a keras_rnncells.export.Servable",
    ),
    row(
        "write_onnx-tolerance",
        lambda: write_onnx(recurrent_layer_servable("gru"), "model.onnx", tolerance="x"),
        r"Argument `tolerance` must be a float in \(0, inf\), received: 'x'",
    ),
    row(
        "write_onnx-opset",
        lambda: write_onnx(recurrent_layer_servable("gru"), "model.onnx", opset=13),
        r"Argument `opset` must be an integer >= 17, received: 13",
    ),
    row(
        "verify_manifest-missing",
        lambda: verify_manifest(manifest_directory(None)),
        r"Argument `directory`: .* holds no manifest.json",
    ),
    row(
        "verify_manifest-truncated",
        lambda: verify_manifest(manifest_directory('{"files": {')),
        r"manifest.json is not valid JSON \(truncated or altered\)",
    ),
    row(
        "verify_manifest-not-an-object",
        lambda: verify_manifest(manifest_directory(json.dumps(["files"]))),
        r"manifest.json must be a JSON object with a `files` object",
    ),
    row(
        "load_task-name",
        lambda: load_task("no-such-task"),
        r"Argument `name` must be one of \['adding'",
    ),
    row(
        "load_task-unknown-option",
        lambda: load_task("adding", length=10),
        r"Task 'adding' takes the options \[.*'steps'.*\], received unknown: \['length'\]",
    ),
    row(
        "load_task-batch_size",
        lambda: load_task("adding", batch_size=0),
        positive_int("batch_size", 0),
    ),
    row(
        "load_task-seed",
        lambda: load_task("adding", seed="0"),
        r"Argument `seed` must be an integer, received: '0'",
    ),
    row(
        "load_task-steps",
        lambda: load_task("anbn", max_train_n=0),
        positive_int("max_train_n", 0),
    ),
]

ROWS = [
    *CELL_ROWS,
    *LAYER_ARGUMENT_ROWS,
    *INPUT_ROWS,
    *SEQ2SEQ_ROWS,
    *TEXT_ROWS,
    *APP_ROWS,
    *EXPORT_DATA_ROWS,
]


@pytest.mark.parametrize(("raises", "error", "match"), ROWS)
def test_bad_argument_or_input_raises_a_clear_error(
    raises: Callable[[], object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        raises()


def test_row_ids_are_unique() -> None:
    ids = [param.id for param in ROWS]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


# -- the checks themselves -----------------------------------------------------------------
INPUT_CHECKS = ("check_input", "check_shape")  # an input of a layer: (layer, name, value, ...)
ARGUMENT_CHECKS = [
    name for name in checks.__all__ if name.startswith("check_") and name not in INPUT_CHECKS
]


@pytest.mark.parametrize("check", ARGUMENT_CHECKS)
def test_argument_checks_take_the_name_then_the_value(check: str) -> None:
    assert list(inspect.signature(getattr(checks, check)).parameters)[:2] == ["name", "value"]


def test_generic_checks_live_in_checks_only() -> None:
    """No module defines a check of ``checks.py`` again, nor imports one from
    elsewhere (``from keras_rnncells.cells.base import check_positive_int``)."""
    for path in Path(kr.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.col_offset == 0:
                assert path.name == "checks.py" or node.name not in checks.__all__, (
                    f"{path} defines {node.name} again"
                )
            if isinstance(node, ast.ImportFrom) and node.module != "keras_rnncells.checks":
                names = {alias.name for alias in node.names} & set(checks.__all__)
                assert not names, f"{path} imports {sorted(names)} from {node.module}"
