"""The step context (``cells/context.py``) and the batch-norm mixin
(``cells/batch_norm.py``) on their own: a step reads its masks, its recorder
and its statistics index from the context it is given and from nothing set
on the cell, and no class rewrites another's ``step`` or ``state_size``.
Eager, tiny shapes."""

from __future__ import annotations

import numpy as np
import pytest
from keras import ops

import keras_rnncells as krc
from keras_rnncells.cells.batch_norm import RecurrentBatchNorm
from keras_rnncells.cells.dense_gates import DenseGatesCell

BATCH, FEATURES, UNITS = 3, 2, 4


def built(cell):
    cell.build((None, FEATURES))
    return cell


def inputs(seed=0):
    return np.random.default_rng(seed).normal(size=(BATCH, FEATURES)).astype("float32")


def test_the_context_is_immutable_and_derived_with_replace():
    context = krc.StepContext()
    assert context == (False, None, None, None, True, None)
    training = context._replace(training=True)
    assert (context.training, training.training) == (False, True)
    with pytest.raises(AttributeError):
        context.training = True


def test_a_step_reads_the_masks_of_its_context_and_no_others():
    """Recurrent dropout and DropConnect act through ``context.masks`` alone:
    the same step in training without masks is the plain step."""
    cell = built(krc.GRUCell(UNITS, reset_after=False))
    x, h = inputs(), np.random.default_rng(1).normal(size=(BATCH, UNITS)).astype("float32")
    projected = cell.step_inputs(x)
    plain, _ = cell.advance(projected, [h], krc.StepContext())
    unmasked, _ = cell.advance(projected, [h], krc.StepContext(training=True))
    np.testing.assert_allclose(unmasked, plain)

    state_mask = np.full((BATCH, UNITS), 2.0, "float32")
    kernel_mask = np.zeros(cell.recurrent_kernel.shape, "float32")
    masks = krc.RecurrentMasks(state=state_mask, kernel=kernel_mask)
    masked, _ = cell.advance(projected, [h], krc.StepContext(training=True, masks=masks))
    # No recurrent product (the kernel masked to 0); h enters where it is carried, and
    # the state mask reaches only the products: the step is that of h with U = 0.
    zero_kernel = krc.GRUCell.from_config(cell.get_config())
    built(zero_kernel).set_weights(cell.get_weights())
    zero_kernel.recurrent_kernel.assign(np.zeros_like(kernel_mask))
    expected, _ = zero_kernel.advance(projected, [h], krc.StepContext())
    np.testing.assert_allclose(masked, expected, rtol=1e-6)
    assert cell.drop_recurrent(h, krc.StepContext(masks=masks)) is h  # not training


def test_the_recorder_of_the_context_makes_every_recurrent_product():
    cell = built(krc.MGUCell(UNITS))
    calls = []

    def recorder(h, read_kernel, columns):
        calls.append(columns)
        return ops.matmul(h, read_kernel())

    h = np.ones((BATCH, UNITS), "float32")
    projected = cell.step_inputs(inputs())
    recorded, _ = cell.advance(projected, [h], krc.StepContext(recorder=recorder))
    plain, _ = cell.advance(projected, [h], krc.StepContext())
    assert calls == [(0, UNITS), (UNITS, 2 * UNITS)]  # MGU's two products, its f then h
    np.testing.assert_allclose(recorded, plain, rtol=1e-6)


def test_the_kernel_columns_take_the_masks_as_an_argument():
    cell = built(krc.LSTMCell(UNITS))
    mask = np.zeros(cell.recurrent_kernel.shape, "float32")
    mask[:, :UNITS] = 1.0
    masks = krc.RecurrentMasks(state=None, kernel=mask)
    kernel = cell.recurrent_kernel.numpy()
    np.testing.assert_array_equal(cell.recurrent_kernel_columns(), kernel)
    np.testing.assert_array_equal(
        cell.recurrent_kernel_columns((0, 2 * UNITS), masks),
        np.concatenate([kernel[:, :UNITS], np.zeros_like(kernel[:, :UNITS])], axis=1),
    )


def test_batch_norm_advance_reads_and_advances_the_index_around_the_step():
    """The class's ``step`` sees its own states and the statistics index in
    its context; ``advance`` counts the index up to ``batch_norm_steps - 1``."""
    seen = []

    class Probe(krc.SimpleRNNCell):
        def step(self, projected, states, context):
            seen.append((len(states), np.asarray(context.statistics_index).tolist()))
            return super().step(projected, states, context)

    cell = built(Probe(UNITS, batch_norm=True, batch_norm_steps=3))
    states = cell.get_initial_state(BATCH)
    assert [s.shape[-1] for s in states] == [UNITS, 1]
    states[1] = ops.convert_to_tensor([[0.0], [1.0], [2.0]])
    projected = cell.step_inputs(inputs())
    _, new_states = cell.advance(projected, states, krc.StepContext())
    assert seen == [(1, [0, 1, 2])]
    np.testing.assert_array_equal(np.asarray(new_states[1])[:, 0], [1.0, 2.0, 2.0])


def test_batch_norm_outside_a_counted_step_is_a_clear_error():
    cell = built(krc.LSTMCell(UNITS, batch_norm=True))
    with pytest.raises(ValueError, match=r"^LSTMCell with batch_norm=True normalizes only"):
        cell.normalize_cell_state(np.zeros((BATCH, UNITS), "float32"), krc.StepContext())


def test_training_rows_and_update_come_from_the_context():
    """Rows weighted 0 take no part in the statistics; no update without
    ``update_statistics``."""
    cell = built(krc.SimpleRNNCell(UNITS, batch_norm=True, batch_norm_steps=2))
    index = ops.zeros((BATCH,), "int32")
    x = np.array([[1.0] * UNITS, [3.0] * UNITS, [100.0] * UNITS], "float32")
    context = krc.StepContext(training=True, statistics_index=index, update_statistics=False)
    rows = context._replace(statistics_rows=np.array([1.0, 1.0, 0.0], "float32"))
    normalized = np.asarray(cell.batch_normalize("recurrent", x, rows))
    np.testing.assert_allclose(normalized[:2, 0], 0.1 * np.array([-1, 1]) / np.sqrt(1 + 1e-3))
    np.testing.assert_array_equal(cell.recurrent_moving_mean.numpy(), 0.0)
    cell.batch_normalize("recurrent", x, rows._replace(update_statistics=True))
    np.testing.assert_allclose(cell.recurrent_moving_mean.numpy()[0], 0.01 * 2.0, rtol=1e-6)
    np.testing.assert_array_equal(cell.recurrent_moving_mean.numpy()[1], 0.0)


def test_no_class_rewrites_the_step_or_state_size_of_another():
    for cell_class in map(krc.get_cell, krc.list_cells()):
        for klass in cell_class.__mro__:
            for name in ("step", "state_size"):
                member = vars(klass).get(name)
                function = getattr(member, "fget", member)
                if function is not None:
                    assert function.__qualname__ == f"{klass.__name__}.{name}", (klass, name)
    assert "__init_subclass__" not in vars(DenseGatesCell)
    assert issubclass(DenseGatesCell, RecurrentBatchNorm)


def test_batch_norm_refuses_a_cell_that_overrides_state_size():
    class OwnStates(krc.SimpleRNNCell):
        @property
        def state_size(self):
            return [self.units]

    OwnStates(UNITS)  # fine without batch norm
    with pytest.raises(ValueError, match=r"^Argument `batch_norm=True` needs .*step_state_size"):
        OwnStates(UNITS, batch_norm=True)
