"""Step forms (``streaming=True``): a sequence fed in chunks of 1, 3 and 5
steps, then the rest, from zero states, gives the whole-sequence outputs at
every step, and a head on the final state the model's output on the
sequence so far after every chunk.

Run as users run the artifacts, in child processes (tests/tools/stream_runner.py,
a client reading the manifest's states): the SavedModel's ``"step"`` signature
as a stock TF Serving runs it (XLA JIT off, keras_rnncells not importable), and
``model_step.onnx`` in onnxruntime without TensorFlow, ``model_step.tflite``
in LiteRT's interpreter where TensorFlow cannot be imported. Masked layers (ids
with padding, holes and a chunk of padding only, an empty row) and an unmasked
one; a stack of two different cells (SCRN, whose output is not its first
state, so it carries its last output as one more state, then a GRU read by a
head); batches of 0, 1, 4 and 33 rows, 1 to 13 steps. The default run's model
holds four cells, each once: MGU over the ids (masked; an ONNX Loop), LSTM over
the frames (unmasked; ONNX's LSTM node), SCRN then GRU stacked (masked; a Loop,
then ONNX's GRU node); the slow one puts every registered cell over the ids.
What cannot stream is refused in one line naming the layer.
"""

from __future__ import annotations

import json
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_rnncells import RNN, get_cell, list_cells
from keras_rnncells.export import (
    check_streaming,
    servable_from_model,
    step_form,
    write_litert,
    write_onnx,
    write_saved_model,
)
from keras_rnncells.export.streaming import chunk_bounds
from keras_rnncells.layers.rnn import in_fed_loop, loop_override

UNITS = 4  # = the embedding size, which the MUT cells require
VOCABULARY = 9
# Over the ids in the default run: GRU and LSTM stream there too, in the stack and
# over the frames (one layer of each cell: the exporters trace and convert each).
DEFAULT_CELLS = ("mgu",)


def streaming_model(cells) -> keras.Model:
    """Ids (masked by an ``Embedding(mask_zero=True)``) and float frames in:
    one layer of each cell over the ids (its outputs at every step), an LSTM
    over the frames (unmasked), and a stack of an SCRN and a GRU over the ids,
    the GRU's final state read by a Dense head."""
    keras.utils.set_random_seed(3)
    ids = keras.Input((None,), dtype="int32", name="ids")
    frames = keras.Input((None, 3), name="frames")
    embedded = keras.layers.Embedding(VOCABULARY, UNITS, mask_zero=True)(ids)
    outputs = {
        cell: RNN(get_cell(cell)(UNITS), return_sequences=True, name=cell)(embedded)
        for cell in cells
    }
    outputs["frames_lstm"] = keras.layers.Dense(2)(
        RNN(get_cell("lstm")(UNITS), return_sequences=True, name="frames_rnn")(frames)
    )
    stacked = RNN(get_cell("scrn")(UNITS), return_sequences=True, name="stack_scrn")(embedded)
    stacked = RNN(get_cell("gru")(UNITS), name="stack_gru")(stacked)
    outputs["head"] = keras.layers.Dense(3, name="head")(stacked)
    model = keras.Model({"ids": ids, "frames": frames}, outputs, name="streaming")
    rng = np.random.default_rng(4)
    for weight in model.trainable_weights:  # biases too, so none hides behind a zero
        weight.assign(rng.uniform(-0.6, 0.6, weight.shape).astype("float32"))
    return model


def requests() -> list[dict[str, np.ndarray]]:
    """Batches of 4 rows and 12 steps (a full row; right padding; holes with
    steps 1 to 4, the second chunk whole, masked; all padding), 1 row and 1
    step, 33 rows and 13 steps, and 0 rows."""
    rng = np.random.default_rng(0)
    ids = rng.integers(1, VOCABULARY, size=(4, 12)).astype("int32")
    ids[1, 7:] = 0
    ids[2, [1, 2, 3, 4, 8]] = 0
    ids[3] = 0
    long = rng.integers(0, VOCABULARY, size=(33, 13)).astype("int32")

    def batch(ids):
        frames = rng.normal(size=(*ids.shape, 3)).astype("float32")
        return {"ids": ids, "frames": frames}

    return [batch(ids), batch(ids[:1, :1]), batch(long), batch(ids[:0, :5])]


def whole(function, inputs: dict[str, np.ndarray], end: int | None = None) -> dict:
    """``function`` on the whole sequences (or their first ``end`` steps)."""
    cut = {key: value[:, :end] if value.ndim >= 2 else value for key, value in inputs.items()}
    outputs = function(**{key: tf.constant(value) for key, value in cut.items()})
    return {key: np.asarray(value) for key, value in outputs.items()}


def assert_streamed(streamed, function, inputs, step_outputs, current_outputs, tol, what):
    """The step outputs joined equal ``function``'s on the whole sequences, at
    every step; each other output, after each chunk, ``function``'s on the
    sequences up to the chunk's end."""
    assert isinstance(streamed, dict), f"{what}: {streamed}"
    expected = whole(function, inputs)
    for name in step_outputs:
        np.testing.assert_allclose(
            streamed[name], expected[name], atol=tol, rtol=tol, err_msg=f"{what}: {name}"
        )
    steps = next(iter(inputs.values())).shape[1]
    ends = [end for _, end in chunk_bounds(steps)]
    assert list(streamed["chunk_ends"]) == ends, what
    for chunk, end in enumerate(ends):
        prefix = whole(function, inputs, end)
        for name in current_outputs:
            np.testing.assert_allclose(
                streamed[name][chunk],
                prefix[name],
                atol=tol,
                rtol=tol,
                err_msg=f"{what}: {name} after {end} steps",
            )


def check_model_streams(cells, tmp_path, check: bool, stream_in_child) -> None:
    """``streaming_model(cells)`` written with its step forms (with the
    writers' own checks where ``check``), streamed in children; the
    manifests' states checked."""
    model = streaming_model(cells)
    servable = servable_from_model(model)
    directory = write_saved_model(servable, tmp_path / "export", check=check, streaming=True)
    onnx_file = tmp_path / "onnx" / "model.onnx"
    manifest = write_onnx(servable, onnx_file, check=check, streaming=True)
    streaming = json.loads((directory / "manifest.json").read_text())["streaming"]
    assert streaming["signature"] == "step" and manifest["streaming"]["file"] == "model_step.onnx"
    # every state of every layer, in the order the model calls them: its
    # cell's states, and the masked SCRN's last output (its output is not its
    # first state)
    kinds: dict[str, list] = {}
    for index, state in enumerate(streaming["states"]):
        assert state["name"] == f"state_{index}" and state["next"] == f"next_state_{index}"
        assert state["shape"][0] is None and state["dtype"] == "float32"
        kinds.setdefault(state["layer"], []).append(state["state"])
    expected = {"frames_rnn": [0, 1], "stack_scrn": [0, 1, "last_output"], "stack_gru": [0]}
    for cell in cells:
        count = len(keras.tree.flatten(get_cell(cell)(UNITS).state_size))
        # SCRN's and QRNN's outputs are not their first states: a masked step keeps the last output
        expected[cell] = [*range(count), *(["last_output"] if cell in ("scrn", "qrnn") else [])]
    assert kinds == expected
    assert sorted(streaming["sequence_inputs"]) == ["frames", "ids"]
    if check:
        parity = streaming["parity"]
        assert parity["chunked"]["chunks"] == [1, 3, 1]
        assert set(parity["fresh_process"]["outputs"]) == {"load", "session"}
        assert manifest["streaming"]["parity"]["onnxruntime"]["max_abs_error"]
    assert set(streaming["step_outputs"]) == {*cells, "frames_lstm"}
    assert streaming["current_outputs"] == ["head"]
    assert manifest["streaming"]["states"] == streaming["states"]
    assert (tmp_path / "onnx" / "model_step.onnx").is_file()
    litert = write_litert(servable, tmp_path / "litert", check=check, streaming=True)
    on_phone = json.loads((litert / "manifest.json").read_text())["streaming"]
    assert on_phone["file"] == "model_step.tflite" and on_phone["states"] == streaming["states"]
    assert not [op for op in on_phone["ops"] if op.startswith("CUSTOM")]

    batches = requests()
    served = stream_in_child([(directory, b) for b in batches], tmp_path / "served")
    in_onnx = stream_in_child(
        [(tmp_path / "onnx" / "model_step.onnx", b) for b in batches], tmp_path / "ort"
    )
    in_litert = stream_in_child(
        [(litert / "model_step.tflite", b) for b in batches], tmp_path / "litert-run"
    )
    steps, current = streaming["step_outputs"], streaming["current_outputs"]
    for index, batch in enumerate(batches):
        runs = (
            (served[index], "SavedModel"),
            (in_onnx[index], "ONNX"),
            (in_litert[index], "LiteRT"),
        )
        for streamed, what in runs:
            assert_streamed(
                streamed, servable.serve, batch, steps, current, 1e-5, f"{what} batch {index}"
            )


def test_every_default_cell_and_a_stack_stream_chunk_by_chunk(tmp_path, stream_in_child):
    check_model_streams(DEFAULT_CELLS, tmp_path, False, stream_in_child)


@pytest.mark.slow  # every cell, both formats, checked (4 to 11.5 minutes on 2 busy cores)
def test_every_registered_cell_streams_chunk_by_chunk(tmp_path, stream_in_child):
    check_model_streams(list_cells(), tmp_path, True, stream_in_child)


# -- the applications -----------------------------------------------------------------


@pytest.mark.slow  # two applications, both formats (2.5 to 3 minutes on 2 busy cores)
def test_the_apps_stream_token_by_token(tmp_path, tiny_app_models, stream_in_child):
    """Sentiment (its head on the current state) and name-to-color: their id
    functions' step forms, fed a few tokens at a time, give the probability
    and the colors of the text so far after every chunk."""
    from keras_rnncells.apps import servable_for
    from keras_rnncells.apps.sentiment import SentimentClassifier
    from keras_rnncells.cli import main
    from keras_rnncells.training import save_model

    sentiment, color_namer, name_to_color, seq2seq = tiny_app_models()
    both_ways = SentimentClassifier(sentiment.tokenizer, units=4, embedding_dim=4)
    for model, message in (
        (color_namer, "none of its inputs [('rgb', [None, 3])] has steps"),
        (seq2seq, "(Attention) attends over the whole input"),
        (both_ways, "layer 'backward_0' (RNN) runs backwards"),
    ):
        refusal = f"^Argument `servable` cannot stream: .*{re.escape(message)}"
        with pytest.raises(ValueError, match=refusal):
            write_saved_model(model, tmp_path / "refused", streaming=True)
        assert not (tmp_path / "refused").exists()
    # sentiment through `rnncells export --streaming`, name-to-color through the writers
    save_model(sentiment, tmp_path / "sentiment.keras")
    main(["export", str(tmp_path / "sentiment.keras"), "--streaming", "--out", str(tmp_path)])
    servable = servable_for(name_to_color)
    write_saved_model(servable, tmp_path, version=1, streaming=True)
    write_onnx(servable, tmp_path / "onnx" / servable.name / "1" / "model.onnx", streaming=True)
    rng = np.random.default_rng(1)
    for model in (sentiment, name_to_color):
        servable = servable_for(model)
        directory = tmp_path / servable.name / "1"
        step_file = tmp_path / "onnx" / servable.name / "1" / "model_step.onnx"
        streaming = json.loads((directory / "manifest.json").read_text())["streaming"]
        assert streaming["parity"]["fresh_process"]  # checked at export
        assert streaming["step_outputs"] == []
        vocabulary = model.encoder.vocabulary_size
        ids = rng.integers(4, vocabulary, size=(3, 11)).astype("int32")
        ids[1, 6:] = 0  # padding: the text ended
        batches = [{"token_ids": ids}, {"token_ids": ids[:1, :2]}]
        function, _ = servable.onnx()
        served = stream_in_child([(directory, b) for b in batches], tmp_path / "s" / servable.name)
        in_onnx = stream_in_child([(step_file, b) for b in batches], tmp_path / "o" / servable.name)
        for streamed, tol in ((served, 1e-5), (in_onnx, 1e-5)):
            for index, batch in enumerate(batches):
                assert_streamed(
                    streamed[index],
                    function,
                    batch,
                    [],
                    streaming["current_outputs"],
                    tol,
                    f"{servable.name} batch {index}",
                )


def test_the_cli_refuses_a_model_that_cannot_stream_in_one_line(tmp_path, refused_in_one_line):
    from keras_rnncells.training import save_model

    path = tmp_path / "bidirectional.keras"
    save_model(frames_model(keras.layers.Bidirectional(gru(), name="both_ways")), path)
    refused_in_one_line(
        ["export", str(path), "--streaming"], "layer 'both_ways' (Bidirectional) reads the input"
    )


# -- what cannot stream -------------------------------------------------------------


def frames_model(*layers, steps=None) -> keras.Model:
    frames = keras.Input((steps, 3), name="frames")
    x = frames
    for layer in layers:
        x = layer(x)
    return keras.Model(frames, x)


def gru(**kwargs) -> RNN:
    return RNN(get_cell("gru")(UNITS), return_sequences=True, **kwargs)


def test_what_cannot_stream_is_refused_in_one_line_naming_the_layer():
    from keras_rnncells.tree import ChildSumTreeLSTM

    def attended():
        frames = keras.Input((None, 3), name="frames")
        h = gru()(frames)
        return keras.Model(frames, keras.layers.Attention(name="attention")([h, h]))

    def tree():
        tokens = keras.Input((None,), dtype="int32", name="tokens")
        parents = keras.Input((None,), dtype="int32", name="parents")
        embedded = keras.layers.Embedding(5, 4)(tokens)
        root = ChildSumTreeLSTM(3, name="tree")([embedded, parents])
        return keras.Model({"tokens": tokens, "parents": parents}, root)

    def clashing():
        frames = keras.Input((None, 3), name="state_0")
        return keras.Model(frames, gru()(frames))

    def started():  # initial states of the model's own making
        frames = keras.Input((None, 3), name="frames")
        start = keras.Input((UNITS,), name="start")
        h = gru(name="started")(frames, initial_state=[start])
        return keras.Model({"frames": frames, "start": start}, h)

    cases = {
        "layer 'bidirectional' (Bidirectional) reads the input backwards": frames_model(
            keras.layers.Bidirectional(gru(), name="bidirectional")
        ),
        "layer 'backwards' (RNN) runs backwards": frames_model(
            gru(name="backwards", go_backwards=True)
        ),
        "layer 'keras_gru' (GRU) is Keras' own recurrent layer": frames_model(
            keras.layers.GRU(UNITS, name="keras_gru")
        ),
        "layer 'attention' (Attention) attends over the whole input": attended(),
        "layer 'pooling' (GlobalAveragePooling1D) pools over the whole input": frames_model(
            gru(), keras.layers.GlobalAveragePooling1D(name="pooling")
        ),
        "layer 'tree' (ChildSumTreeLSTM) composes a tree": tree(),
        "layer 'started' (RNN) is called with an `initial_state`": started(),
        "none of its inputs [('frames', [None, 7, 3])] has steps of any length": frames_model(
            gru(), steps=7
        ),
        "calls no keras_rnncells RNN layer": frames_model(keras.layers.Dense(2)),
        "its inputs or outputs ['state_0'] take the names of the step form's states": clashing(),
    }
    for message, model in cases.items():
        with pytest.raises(ValueError) as error:
            step_form(model)
        text = str(error.value)
        assert text.startswith("Argument `servable` cannot stream: ") and "\n" not in text
        assert message in text, text


def test_a_stateful_layer_is_refused():
    frames = keras.Input(batch_shape=(2, None, 3), name="frames")
    model = keras.Model(frames, gru(name="kept", stateful=True)(frames))
    with pytest.raises(ValueError, match="layer 'kept' \\(RNN\\) is stateful"):
        step_form(model)


def test_a_layer_reading_later_steps_fails_the_chunk_check():
    """A convolution over time (not refused by name) reads steps after the
    chunk's: the chunk-by-chunk check every writer runs catches it."""
    model = frames_model(gru(), keras.layers.Conv1D(2, 3, padding="same"))
    form = step_form(model)
    with pytest.raises(ValueError, match="fed in chunks of \\[1, 3, 1\\] steps differs"):
        check_streaming(form, 1e-5)


def test_a_loop_override_that_runs_the_layer_again_streams():
    """An exporter's loop (``loop_override``) that hands a layer back to its
    own loop (``layer.inner_loop``, as the LiteRT exporter does) does not
    take the layer's states twice, and knows it computes fed states."""
    seen = []

    def again(layer, sequences, initial_state, mask, training):
        seen.append(in_fed_loop())
        with loop_override(None):
            return layer.inner_loop(sequences, initial_state, mask, training=training)

    model = frames_model(gru(), RNN(get_cell("mgu")(UNITS), return_sequences=True))
    servable = servable_from_model(model)  # its whole-sequence function: no override
    with loop_override(again):
        form = step_form(servable)
    assert check_streaming(form, 1e-5)["chunks"] == [1, 3, 1]
    assert seen == [True, True]  # the step form's trace (discovery runs Keras' loop)
    assert not in_fed_loop()
