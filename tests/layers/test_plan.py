"""The fused loops' plan (`keras_rnncells.layers.plan`) on its own.

For every registered cell and key configurations, the plan read from the
cell's traced step equals the table written out here, and what it claims holds
numerically on one step run eagerly: where it says a product part is only
added to projected input ``j``, the gradient of the step's output and states
with respect to that part equals the gradient with respect to input ``j``
(the backward loop stores one for both); where it says a part is added to no
input, its gradient differs from that of every input of its shape; where it
says a product's input is state ``j``, the two are the same values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops, tree

import keras_rnncells as krc
from keras_rnncells.layers.plan import Part, Plan, check_products, columns_of, plan
from keras_rnncells.layers.recorder import MatmulRecorder, plain_products, traced_step
from keras_rnncells.layers.wrappers import Zoneout

UNITS = FEATURES = 3  # the MUT cells take inputs as wide as their units
ROWS = 2
ALL = None  # a product of every kernel column

# The plan of each registered cell (default arguments, 3 units), one row per
# recurrent product in the order its step makes it: (kernel columns, the state
# that is its input as it is, or None; its column parts as (start, stop,
# the projected input it is only added to, or None)), then the products whose
# added inputs the portable loop joins.
REGISTERED = {
    "cifg_lstm": ([(ALL, 0, [(0, 3, 0), (3, 6, 1), (6, 9, 2)])], (0,)),
    "dsgu": (
        [
            ((0, 3), None, [(0, 3, None)]),  # the gate's product of x ⊙ h
            ((6, 9), None, [(0, 3, None)]),
            ((3, 6), 0, [(0, 3, 1)]),
        ],
        (),
    ),
    "gru": ([(ALL, 0, [(0, 3, 0), (3, 6, 1), (6, 9, None)])], (0,)),  # r ⊙ (h U_h)
    "irnn": ([(ALL, 0, [(0, 3, 0)])], ()),
    "jordan": ([(ALL, 0, [(0, 3, 0)])], ()),
    "lstm": ([(ALL, 0, [(0, 3, 0), (3, 6, 1), (6, 9, 2), (9, 12, 3)])], (0,)),
    "lstm_no_forget_gate": ([(ALL, 0, [(0, 3, 0), (3, 6, 1), (6, 9, 2)])], (0,)),
    "lstm_no_input_gate": ([(ALL, 0, [(0, 3, 0), (3, 6, 1), (6, 9, 2)])], (0,)),
    "lstm_no_output_gate": ([(ALL, 0, [(0, 3, 0), (3, 6, 1), (6, 9, 2)])], (0,)),
    "mgu": ([((0, 3), 0, [(0, 3, 0)]), ((3, 6), None, [(0, 3, 1)])], ()),  # (f ⊙ h) U_h
    # the linear recurrences: no recurrent product
    "min_gru": ([], ()),
    "min_lstm": ([], ()),
    "qrnn": ([], ()),
    # multiplicative integration: α ⊙ Wx ⊙ Uh + β₁ ⊙ Uh + ...: no part only added
    "mi_gru": ([(ALL, 0, [(0, 3, None), (3, 6, None), (6, 9, None)])], ()),
    "mi_lstm": ([(ALL, 0, [(0, 3, None), (3, 6, None), (6, 9, None), (9, 12, None)])], ()),
    "mi_rnn": ([(ALL, 0, [(0, 3, None)])], ()),
    "mufuru": (
        [(((0, 3), (6, 27)), 0, [(0, 3, 0), (3, 24, 2)]), ((3, 6), None, [(0, 3, 1)])],
        (),  # its step adds the blocks itself, not through `combine`
    ),
    "mut1": ([((0, 3), 0, [(0, 3, 1)]), ((3, 6), None, [(0, 3, 2)])], ()),
    "mut2": ([((0, 6), 0, [(0, 3, 0), (3, 6, 1)]), ((6, 9), None, [(0, 3, 2)])], ()),
    "mut3": (
        [((0, 3), None, [(0, 3, 0)]), ((3, 6), 0, [(0, 3, 1)]), ((6, 9), None, [(0, 3, 2)])],
        (),
    ),
    "peephole_lstm": ([(ALL, 0, [(0, 3, 0), (3, 6, 1), (6, 9, 2), (9, 12, 3)])], (0,)),
    "scrn": ([(ALL, 0, [(0, 3, 0)])], ()),
    "sgu": ([((0, 3), None, [(0, 3, None)]), ((3, 6), 0, [(0, 3, 1)])], ()),
    "simple": ([(ALL, 0, [(0, 3, 0)])], ()),
    "slstm": ([(ALL, 0, [(0, 3, 0), (3, 6, 1)])], (0,)),
}


class PlainCell(krc.AbstractRNNCell):
    """A user's cell written without ``combine``: ``a = σ(x_a + [hU]_a)``,
    ``h' = a ⊙ h + (1 - a) ⊙ tanh(x_b ⊙ [hU]_b)``; with ``shared_input``, ``x_a``
    also scales the candidate (then read twice: its sum is not its only use)."""

    def __init__(self, units: int, shared_input: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.units, self.shared_input = units, shared_input

    @property
    def state_size(self) -> int:
        return self.units

    @property
    def output_size(self) -> int:
        return self.units

    def build(self, input_shape) -> None:
        self.kernel = self.add_weight(shape=(input_shape[-1], 2 * self.units))
        self.recurrent_kernel = self.add_weight(shape=(self.units, 2 * self.units))
        self.built = True

    def project_inputs(self, inputs):
        return tuple(ops.split(ops.matmul(inputs, self.kernel), 2, axis=-1))

    def step(self, projected, states, context):
        (x_a, x_b), h = projected, states[0]
        u = self.recurrent_matmul(h, context)
        a = ops.sigmoid(x_a + u[:, : self.units])
        candidate = ops.tanh(x_b * u[:, self.units :])
        if self.shared_input:
            candidate = candidate * x_a
        h = a * h + (1 - a) * candidate
        return h, [h]


def cell_of(name: str, **options) -> Callable:
    return lambda: krc.get_cell(name)(UNITS, **options)


class Case(NamedTuple):
    make: Callable
    training: bool
    products: list
    joins: tuple


# Configurations beyond the defaults: what comes between a product and its
# input sum, recurrent dropout and DropConnect, a wrapper, users' cells.
CONFIGURED = {
    "gru reset_after=False": Case(
        cell_of("gru", reset_after=False),
        False,
        [((0, 6), 0, [(0, 3, 0), (3, 6, 1)]), ((6, 9), None, [(0, 3, 2)])],
        (0,),
    ),
    "gru use_bias=False": Case(
        cell_of("gru", use_bias=False),
        False,
        [(ALL, 0, [(0, 3, 0), (3, 6, 1), (6, 9, None)])],
        (0,),
    ),
    "gru layer_norm": Case(  # normalized as a whole: one part, added to nothing
        cell_of("gru", layer_norm=True), False, [(ALL, 0, [(0, 9, None)])], ()
    ),
    "lstm layer_norm": Case(
        cell_of("lstm", layer_norm=True), False, [(ALL, 0, [(0, 12, None)])], ()
    ),
    "gru batch_norm, inference": Case(
        cell_of("gru", batch_norm=True), False, [(ALL, 0, [(0, 9, None)])], ()
    ),
    "lstm batch_norm, inference": Case(
        cell_of("lstm", batch_norm=True), False, [(ALL, 0, [(0, 12, None)])], ()
    ),
    "mgu reset_after=True": Case(
        cell_of("mgu", reset_after=True), False, [(ALL, 0, [(0, 3, 0), (3, 6, None)])], ()
    ),
    "mufuru controller_units=4": Case(
        cell_of("mufuru", controller_units=4),
        False,
        [(((0, 3), (6, 10)), 0, [(0, 3, 0), (3, 7, 2)]), ((3, 6), None, [(0, 3, 1)])],
        (),
    ),
    "mi_gru reset_after=False": Case(
        cell_of("mi_gru", reset_after=False),
        False,
        [((0, 6), 0, [(0, 3, None), (3, 6, None)]), ((6, 9), None, [(0, 3, None)])],
        (),
    ),
    "gru recurrent_dropout, training": Case(  # the product's input is h ⊙ mask
        cell_of("gru", recurrent_dropout=0.25, seed=1),
        True,
        [(ALL, None, [(0, 3, 0), (3, 6, 1), (6, 9, None)])],
        (0,),
    ),
    "lstm recurrent_dropout, training": Case(
        cell_of("lstm", recurrent_dropout=0.25, seed=1),
        True,
        [(ALL, None, [(0, 3, 0), (3, 6, 1), (6, 9, 2), (9, 12, 3)])],
        (0,),
    ),
    "lstm recurrent_dropout, inference": Case(
        cell_of("lstm", recurrent_dropout=0.25),
        False,
        [(ALL, 0, [(0, 3, 0), (3, 6, 1), (6, 9, 2), (9, 12, 3)])],
        (0,),
    ),
    "gru recurrent_dropconnect, training": Case(  # the kernel is masked, not h
        cell_of("gru", recurrent_dropconnect=0.25, seed=1),
        True,
        [(ALL, 0, [(0, 3, 0), (3, 6, 1), (6, 9, None)])],
        (0,),
    ),
    "lstm in Zoneout, training": Case(  # 4 blocks, then 2 noise inputs; no `combine` step
        lambda: Zoneout(krc.LSTMCell(UNITS), 0.2, seed=1),
        True,
        [(ALL, 0, [(0, 3, 0), (3, 6, 1), (6, 9, 2), (9, 12, 3)])],
        (),
    ),
    "a user's cell without combine": Case(
        lambda: PlainCell(UNITS), False, [(ALL, 0, [(0, 3, 0), (3, 6, None)])], ()
    ),
    "a user's cell reading its input twice": Case(
        lambda: PlainCell(UNITS, shared_input=True),
        False,
        [(ALL, 0, [(0, 3, None), (3, 6, None)])],
        (),
    ),
}


def table(step_plan: Plan) -> list:
    """``step_plan``'s products as the rows written out above."""
    return [
        (product.columns, product.state, [tuple(part) for part in product.parts])
        for product in step_plan.products
    ]


def one_step(cell, training: bool, rng) -> tuple:
    """Random step inputs (``cell.step_inputs`` of one step of random
    features) and states for ``ROWS`` rows."""
    cell.build((None, FEATURES))
    x = tf.constant(rng.normal(size=(ROWS, FEATURES)), cell.compute_dtype)
    projected = cell.step_inputs(x, training)
    sizes = tree.flatten(cell.state_size)
    states = [tf.constant(rng.normal(size=(ROWS, size)), cell.compute_dtype) for size in sizes]
    return projected, states


def step_gradients(cell, projected, states, masks, training, rng) -> tuple:
    """One step run eagerly, each recurrent product watched: the gradients of
    a random weighting of its output and new states with respect to each
    product's output and each projected input, and the products' inputs."""
    flat = tree.flatten(projected)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(flat)

        def watched(k, h, read_kernel, columns):
            output = plain_products(k, h, read_kernel, columns)
            tape.watch(output)
            return output

        recorder = MatmulRecorder(watched)
        inputs = tree.pack_sequence_as(projected, flat)
        output, new_states = traced_step(cell, inputs, states, recorder, masks, training)
        values = [v for v in [output, *new_states] if v.dtype.is_floating]
        loss = sum(tf.reduce_sum(v * rng.normal(size=v.shape)) for v in values)
    zero = tf.UnconnectedGradients.ZERO
    g_products = tape.gradient(loss, recorder.outputs, unconnected_gradients=zero)
    g_inputs = tape.gradient(loss, flat, unconnected_gradients=zero)
    return g_products, g_inputs, recorder.inputs


def check_plan(cell, training: bool, products: list, joins: tuple, rng) -> None:
    projected, states = one_step(cell, training, rng)
    masks = cell.get_recurrent_dropout_mask(states[0]) if training else None
    try:
        step_plan = plan(cell, projected, states, masks, training)
        assert table(step_plan) == products
        assert step_plan.joins == joins
        assert step_plan.inputs == len(tree.flatten(projected))
        g_products, g_inputs, matmul_inputs = step_gradients(
            cell, projected, states, masks, training, rng
        )
    finally:
        cell.reset_recurrent_dropout_mask()
    for k, product in enumerate(step_plan.products):
        h = np.asarray(matmul_inputs[k])
        if product.state is not None:
            np.testing.assert_array_equal(h, states[product.state], f"product {k}: its state")
        else:
            assert not any(s.shape == h.shape and np.allclose(h, s) for s in states), k
        for part in product.parts:
            g_part = np.asarray(columns_of(g_products[k], part))
            what = f"product {k}, columns {part.start}:{part.stop}"
            if part.added_to is not None:
                g_input = np.asarray(g_inputs[part.added_to])
                np.testing.assert_allclose(g_part, g_input, rtol=1e-6, atol=1e-7, err_msg=what)
                assert np.abs(g_part).max() > 0, what
                continue
            for j, g_input in enumerate(g_inputs):
                if g_input.shape == g_part.shape and np.abs(g_input).max() > 0:
                    assert not np.allclose(g_part, g_input, rtol=1e-3, atol=1e-4), (what, j)


def test_every_registered_cell_has_its_plan_here():
    assert sorted(REGISTERED) == krc.list_cells()


@pytest.mark.parametrize("name", sorted(REGISTERED))
def test_the_plan_of_a_registered_cell(name, rng):
    products, joins = REGISTERED[name]
    check_plan(krc.get_cell(name)(UNITS), False, products, joins, rng)


@pytest.mark.parametrize("case", sorted(CONFIGURED))
def test_the_plan_of_a_configuration(case, rng):
    make, training, products, joins = CONFIGURED[case]
    check_plan(make(), training, products, joins, rng)


def test_what_the_loops_read_off_a_plan(rng):
    """Which parts are saved per step, which projected inputs carry a part,
    which inputs the portable loop joins, the shapes the forward loop saves."""
    cell = krc.GRUCell(UNITS)
    projected, states = one_step(cell, False, rng)
    step_plan = plan(cell, projected, states)
    z, r, h = step_plan.products[0].parts
    assert (z, r, h) == (Part(0, 3, 0), Part(3, 6, 1), Part(6, 9))
    assert step_plan.carried == ((0, z), (0, r), None)
    assert step_plan.saved == ((0, h),)
    assert step_plan.joined == {0, 1}
    assert step_plan.products[0].input_shape == (ROWS, UNITS)
    assert step_plan.products[0].dtype == "float32"
    assert hash(step_plan) == hash(plan(cell, projected, states))  # a tf.function argument


def test_column_blocks_in_the_plan():
    """With ``blocked`` (a portable loop that runs alone with column blocks)
    a product of at most `BLOCK_ROWS` rows (or rows known at run time only)
    gets 2 to 4 blocks of at most 16,384 one-row multiply-adds, else none."""
    from keras_rnncells.layers.portable_loop import BLOCK_ROWS

    def blocks(cell, rows, blocked=True):
        specs = cell.get_initial_state(1)
        state_specs = [tf.TensorSpec((rows, s.shape[-1])) for s in specs]
        cell.build((None, FEATURES))
        step = cell.step_inputs(tf.zeros((1, FEATURES)))
        step_specs = tree.map_structure(lambda x: tf.TensorSpec((rows, x.shape[-1])), step)
        step_plan = plan(cell, step_specs, state_specs, blocked=blocked)
        return [product.blocks for product in step_plan.products]

    assert blocks(krc.GRUCell(128), 1) == [(128, 128, 128)]
    assert blocks(krc.GRUCell(128), None) == [(128, 128, 128)]
    assert blocks(krc.GRUCell(128), BLOCK_ROWS + 1) == [()]
    assert blocks(krc.GRUCell(128), 1, blocked=False) == [()]
    assert blocks(krc.LSTMCell(128), 1) == [(128,) * 4]
    assert blocks(krc.MGUCell(128, reset_after=True), 1) == [(128, 128)]
    assert blocks(krc.MGUCell(128), 1) == [(), ()]  # 128 x 128: one block already
    assert blocks(krc.GRUCell(256), 1) == [()]  # 6 blocks: more than MAX_BLOCKS


def test_a_step_that_makes_other_products_than_its_plan_is_refused(rng):
    cell = krc.MGUCell(UNITS)
    projected, states = one_step(cell, False, rng)
    step_plan = plan(cell, projected, states)
    recorder = MatmulRecorder()
    recorder.columns = [(0, 3)]
    with pytest.raises(RuntimeError, match=r"columns \[\(0, 3\)\], where its plan"):
        check_products(step_plan, recorder)


def test_the_plan_runs_nothing(rng):
    """The step is traced in a scratch graph: no random number drawn, no
    variable read into this context, whatever the cell's step would do."""
    cell = Zoneout(krc.LSTMCell(UNITS, recurrent_dropout=0.5, seed=3), 0.2, seed=3)
    projected, states = one_step(cell, True, rng)
    masks = cell.get_recurrent_dropout_mask(states[0])
    before = [keras.ops.convert_to_numpy(v) for v in cell.variables]
    plan(cell, projected, states, masks, True)
    cell.reset_recurrent_dropout_mask()
    after = [keras.ops.convert_to_numpy(v) for v in cell.variables]
    assert all(np.array_equal(a, b) for a, b in zip(before, after))
