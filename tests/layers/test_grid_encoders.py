"""`rnncells train ... --model mdrnn|rowlstm`: a feature task's sequences read
as a grid by `build_model`, and its one-line refusals."""

from __future__ import annotations

import numpy as np
import pytest

import keras_rnncells as kr
from keras_rnncells.data import load_task
from keras_rnncells.experiments import build_model


@pytest.fixture(scope="module")
def adding():
    """A generated feature task: steps of 2 features, a regression target."""
    return load_task("adding", batch_size=4, train_size=8)


@pytest.mark.parametrize(("model", "cell"), [("mdrnn", "mgu"), ("rowlstm", "lstm")])
def test_grid_models_read_the_steps_as_rows(adding, model, cell):
    built = build_model(adding, cell, 3, model=model)
    layer = {"mdrnn": kr.MultiDimensionalRNN, "rowlstm": kr.RowLSTM}[model]
    (grid_layer,) = [x for x in built.layers if isinstance(x, layer)]
    assert grid_layer.units == 3
    inputs, targets = next(iter(adding.train))
    assert built.get_layer("grid").output.shape == (None, None, inputs.shape[-1], 1)
    assert built(inputs).shape == targets.shape


@pytest.mark.slow  # traces the gradient of four sweeps (a minute on 2 shared cores)
def test_an_mdrnn_model_trains(adding):
    built = build_model(adding, "gru", 3, model="mdrnn")
    history = built.fit(adding.train.take(1), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_grid_models_refuse_in_one_line(adding):
    with pytest.raises(ValueError, match=r"^Argument `cell` must be 'lstm' for model 'rowlstm'"):
        build_model(adding, "gru", 3, model="rowlstm")
    with pytest.raises(ValueError, match=r"^Argument `layers` applies to model 'rnn'"):
        build_model(adding, "gru", 3, model="mdrnn", layers=2)
    logic = load_task("logic", batch_size=4, train_size=8, validation_size=4, test_size=4)
    with pytest.raises(
        ValueError, match=r"^Argument `model` 'mdrnn' reads a feature task's sequences as a grid"
    ):
        build_model(logic, "gru", 3, model="mdrnn")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["train", "mnist_rows", "--model", "rowlstm"],
            "`cell` must be 'lstm' for model 'rowlstm'",
        ),
        (["train", "logic", "--model", "mdrnn"], "reads a feature task's sequences as a grid"),
        (
            ["train", "mnist_rows", "--model", "mdrnn", "--layers", "2"],
            "`layers` applies to model",
        ),
    ],
    ids=["rowlstm-cell", "tokens", "layers"],
)
def test_the_command_refuses_in_one_line(refused_in_one_line, require_data, argv, message):
    if argv[1] == "mnist_rows":
        require_data("mnist")
    refused_in_one_line(argv, message)
