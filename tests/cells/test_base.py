"""What the base classes promise, checked on every registered cell: only cells
with gates take ``recurrent_activation``; multiplicative integration mixes
only with a step that goes through ``combine``; the cell alone answers whether
cuDNN's kernel or ONNX's native op computes it, and the layer and the ONNX
exporter repeat its answer."""

from __future__ import annotations

import keras
import pytest

import keras_rnncells as kr
from keras_rnncells.cells.mi import MultiplicativeIntegration
from keras_rnncells.cells.registry import make_cell
from keras_rnncells.export.onnx_rnn import native_op

UNITS = 3
CELLS = kr.list_cells()
GATELESS = [name for name in CELLS if not issubclass(kr.get_cell(name), kr.GatedCell)]
GATED = [name for name in CELLS if issubclass(kr.get_cell(name), kr.GatedCell)]


def test_the_gateless_cells_are_those_without_gates() -> None:
    assert GATELESS == ["irnn", "jordan", "mi_rnn", "min_gru", "min_lstm", "qrnn", "scrn", "simple"]


@pytest.mark.parametrize("name", GATELESS)
def test_gateless_cells_refuse_recurrent_activation_as_keras_does(name: str) -> None:
    with pytest.raises(ValueError) as keras_error:
        keras.layers.SimpleRNNCell(UNITS, recurrent_activation="relu")
    cell_class = kr.get_cell(name)
    with pytest.raises(type(keras_error.value)) as ours:
        cell_class(UNITS, recurrent_activation="relu")
    expected = str(keras_error.value).replace("SimpleRNNCell", cell_class.__name__)
    assert str(ours.value) == expected
    cell = cell_class(UNITS)
    assert not hasattr(cell, "recurrent_activation")
    assert "recurrent_activation" not in cell.get_config()


@pytest.mark.parametrize("name", GATED)
def test_gated_cells_take_recurrent_activation(name: str) -> None:
    cell = kr.get_cell(name)(UNITS, recurrent_activation="hard_sigmoid")
    assert cell.get_config()["recurrent_activation"] == "hard_sigmoid"


def test_the_named_layer_of_a_gateless_cell_refuses_recurrent_activation() -> None:
    with pytest.raises(ValueError, match=r"Unrecognized keyword.*'recurrent_activation'"):
        kr.SimpleRNN(UNITS, recurrent_activation="relu")


# -- multiplicative integration: only over `combine` ------------------------------------


@pytest.mark.parametrize(
    "cell_class",
    [kr.MGUCell, kr.MUT1Cell, kr.MUT2Cell, kr.MUT3Cell, kr.SGUCell, kr.SCRNCell, kr.MuFuRUCell],
)
def test_mi_refuses_a_cell_whose_step_bypasses_combine(cell_class: type) -> None:
    with pytest.raises(TypeError, match=rf"MIMixed: .*cannot be mixed with {cell_class.__name__}"):
        type("MIMixed", (MultiplicativeIntegration, cell_class), {})


@pytest.mark.parametrize(
    "cell_class",
    [kr.SimpleRNNCell, kr.JordanRNNCell, kr.GRUCell, kr.LSTMCell, kr.PeepholeLSTMCell],
)
def test_mi_takes_a_cell_whose_step_goes_through_combine(cell_class: type) -> None:
    mixed = type("MIMixed", (MultiplicativeIntegration, cell_class), {})
    cell = mixed(UNITS)
    cell.build((None, 2))
    output, _ = cell(keras.ops.ones((2, 2)), cell.get_initial_state(2))
    assert output.shape[-1] == cell.output_size


def test_mi_reads_the_declaration_of_the_class_whose_step_runs() -> None:
    """A subclass with a step of its own must say again that it uses `combine`."""

    class OwnStepGRUCell(kr.GRUCell):
        def step(self, projected, states, context):
            return super().step(projected, states, context)

    with pytest.raises(TypeError, match=r"OwnStepGRUCell.step"):
        type("MIMixed", (MultiplicativeIntegration, OwnStepGRUCell), {})
    OwnStepGRUCell.uses_combine = True
    type("MIMixed", (MultiplicativeIntegration, OwnStepGRUCell), {})


# -- library kernels: the cell answers --------------------------------------------------


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda: kr.GRUCell(UNITS), None),
        (lambda: kr.LSTMCell(UNITS), None),
        (lambda: kr.GRUCell(UNITS, reset_after=False), "GRUCell with reset_after=False has"),
        (lambda: kr.LSTMCell(UNITS, use_bias=False), "LSTMCell with use_bias=False has"),
        (
            lambda: kr.LSTMCell(UNITS, activation="relu", recurrent_activation="hard_sigmoid"),
            "LSTMCell with activation='relu', recurrent_activation='hard_sigmoid' has",
        ),
        (lambda: kr.GRUCell(UNITS, layer_norm=True), "layer_norm=True"),
        (lambda: kr.GRUCell(UNITS, recurrent_dropout=0.5), "recurrent_dropout=0.5"),
        (lambda: kr.LSTMCell(UNITS, recurrent_dropconnect=0.5), "recurrent_dropconnect=0.5"),
        (lambda: kr.SimpleRNNCell(UNITS), "SimpleRNNCell has no cuDNN kernel"),
        (lambda: kr.MGUCell(UNITS), "MGUCell has no cuDNN kernel"),
        (lambda: kr.MIGRUCell(UNITS), "MIGRUCell has no cuDNN kernel"),
        (lambda: kr.Zoneout(kr.GRUCell(UNITS), 0.1), "Zoneout has no cuDNN kernel"),
    ],
)
def test_cudnn_ineligibility_names_what_cudnn_cannot_compute(make, reason) -> None:
    cell = make()
    answer = cell.cudnn_ineligibility()
    assert cell.cudnn_compatible() is (reason is None)
    if reason is None:
        assert answer is None
        return
    assert reason in answer and answer.endswith("has no cuDNN kernel")
    with pytest.raises(ValueError) as error:
        kr.RNN(cell, implementation="cudnn")
    message = str(error.value)
    assert message.startswith("Argument `implementation='cudnn'` needs a GRUCell(reset_after=True)")
    assert answer in message


@pytest.mark.parametrize(
    "make, op, reason",
    [
        (lambda: kr.GRUCell(UNITS), "GRU", None),
        (lambda: kr.GRUCell(UNITS, reset_after=False, use_bias=False), "GRU", None),
        (lambda: kr.LSTMCell(UNITS, recurrent_dropout=0.5), "LSTM", None),
        (lambda: kr.SimpleRNNCell(UNITS), "RNN", None),
        (lambda: kr.SimpleRNNCell(UNITS, activation="relu"), None, "activation='relu'"),
        (lambda: kr.LSTMCell(UNITS, layer_norm=True), None, "layer_norm=True"),
        (lambda: kr.GRUCell(UNITS, dtype="float64"), None, "dtype='float64'"),
        (
            lambda: kr.GRUCell(UNITS, recurrent_activation="hard_sigmoid"),
            None,
            "recurrent_activation='hard_sigmoid'",
        ),
        # a subclass is a cell of its own, even where the equations agree
        (lambda: kr.IRNNCell(UNITS, activation="tanh"), None, "IRNNCell has no native ONNX op"),
        (lambda: kr.MIGRUCell(UNITS), None, "MIGRUCell has no native ONNX op"),
        (lambda: kr.MGUCell(UNITS), None, "MGUCell has no native ONNX op"),
    ],
)
def test_onnx_native_op_is_the_cells_answer(make, op, reason) -> None:
    cell = make()
    answer = cell.onnx_ineligibility()
    layer = kr.RNN(cell)
    if reason is None:
        assert answer is None
        assert native_op(layer) == (op, "native")
    else:
        assert reason in answer and answer.endswith("has no native ONNX op")
        assert native_op(layer) == (None, answer)


def test_onnx_native_op_adds_what_the_exporter_does_not_write() -> None:
    backward = kr.RNN(kr.GRUCell(UNITS), go_backwards=True)
    assert native_op(backward) == (
        None,
        "no native ONNX op is written for a layer with go_backwards=True",
    )
    both = kr.RNN(kr.MGUCell(UNITS), go_backwards=True, stateful=True)
    op, reason = native_op(both)
    assert op is None
    assert reason.startswith("MGUCell has no native ONNX op; ")
    assert reason.endswith("go_backwards=True, stateful=True")
    assert native_op(kr.RNN(keras.layers.GRUCell(UNITS))) == (
        None,
        "GRUCell has no native ONNX op",
    )


# -- the registry -----------------------------------------------------------------------


def test_make_cell_builds_a_registered_cell_naming_the_arguments() -> None:
    cell = make_cell("gru", UNITS, {"reset_after": False})
    assert type(cell) is kr.GRUCell and cell.units == UNITS and not cell.reset_after
    with pytest.raises(ValueError, match=r"Argument `cell` must be one of .*'nope'"):
        make_cell("nope", UNITS)
    with pytest.raises(ValueError, match=r"Argument `cell_options` must be a dict"):
        make_cell("gru", UNITS, ["reset_after"])
