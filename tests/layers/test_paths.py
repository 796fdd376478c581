"""The fused path equals the generic one (``keras.layers.RNN``'s loop) for
every registered cell, its gradient equals finite differences, and it works
where layers are used: in ``tf.function``, in ``model.fit`` with and without
``jit_compile``, stacked, and under ``keras.layers.Bidirectional``."""

from __future__ import annotations

import itertools
import re
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_rnncells as krc

UNITS = 3
FEATURES = 4  # conftest's `sequences`
SEED = 11
DROPOUT = 0.25
# Compared to each other / to finite differences, per dtype:
# (path tolerance, finite-difference step, finite-difference tolerance)
TOLERANCES = {"float64": (1e-9, 1e-6, 1e-6), "float32": (1e-5, 1e-3, 2e-2)}


def supports_float64(name: str) -> bool:
    """Whether one step of the cell runs and stays in float64."""
    cell = krc.get_cell(name)(UNITS, dtype="float64")
    try:
        states = cell.get_initial_state(2)
        output, _ = cell(np.ones((2, UNITS)), states)
    except Exception as error:  # the cell's own limitation, reported below
        warnings.warn(
            f"cell {name!r} does not run in float64 ({error}); using float32", stacklevel=2
        )
        return False
    return keras.backend.standardize_dtype(output.dtype) == "float64"


def fused_and_generic(name, sequences, rng, helpers, dtype, options=None, **layer_kwargs):
    """The cell ``name`` (with the cell arguments ``options``) under both
    paths, with the same random weights and dropout seeds: ``(fused, generic)``."""
    layers = []
    cell_class = krc.get_cell(name)
    # a linear recurrence (MinGRU, MinLSTM, QRNN) refuses recurrent dropout
    linear = issubclass(cell_class, krc.LinearRecurrenceCell)
    recurrent = {} if linear else {"recurrent_dropout": DROPOUT, "recurrent_dropconnect": DROPOUT}
    for implementation in ("fused", "generic"):
        cell = cell_class(
            UNITS,
            dropout=DROPOUT,
            seed=SEED,
            dtype=dtype,
            **recurrent,
            **(options or {}),
        )
        layer = krc.RNN(cell, implementation=implementation, dtype=dtype, **layer_kwargs)
        layer.build(sequences.shape)
        layers.append(layer)
    fused, generic = layers
    assert (fused.path(), generic.path()) == ("fused", "generic")
    helpers.randomize_weights(fused, rng)
    generic.set_weights(fused.get_weights())
    return fused, generic


class SeedRestorer:
    """Puts the dropout seed generators of layers back to one saved state, so
    that each call draws the same dropout masks."""

    def __init__(self, *layers):
        self.generators = [layer.cell.seed_generator for layer in layers]
        self.state = self.generators[0].state.numpy()

    def __call__(self) -> None:
        for generator in self.generators:
            generator.state.assign(self.state)


@pytest.mark.parametrize(
    "name, options",
    [
        ("gru", {"reset_after": False}),
        ("gru", {"use_bias": False}),
        ("gru", {"layer_norm": True}),
        ("lstm", {"layer_norm": True}),
        ("lstm", {"use_bias": False}),
        ("mgu", {"reset_after": True}),
        ("mufuru", {"controller_units": 4}),
    ],
)
def test_fused_equals_generic_with_cell_options(name, options, sequences, mask, rng, helpers):
    """The fused backward pass takes a recurrent matmul's gradient from the
    projected input it is added to where the step's graph shows that the two
    are the same (``fused.matmul_parts``): other forms of the same cells, where
    a bias, a layer norm, a reset gate or a controller comes in between, still
    agree."""
    sequences = sequences.astype("float64")
    kwargs = {"return_sequences": True, "return_state": True}
    fused, generic = fused_and_generic(name, sequences, rng, helpers, "float64", options, **kwargs)
    restore_seeds = SeedRestorer(fused, generic)
    results = []
    for layer in (fused, generic):
        restore_seeds()
        results.append(helpers.outputs_and_gradients(layer, sequences, mask=mask, training=True))
    (outputs, grads), (expected_outputs, expected_grads) = results
    helpers.assert_all_close(outputs, expected_outputs, 1e-9, f"{name} {options}: outputs")
    helpers.assert_all_close(grads, expected_grads, 1e-9, f"{name} {options}: gradients")
    assert all(np.abs(g).max() > 0 for g in grads), f"{name} {options}: a gradient is zero"


@pytest.mark.parametrize("name", krc.list_cells())
def test_fused_equals_generic_and_finite_differences(name, sequences, mask, rng, helpers):
    """Outputs, final states and gradients (inputs, initial states, every
    trainable weight) of the fused path equal the generic path's with a mask
    with holes, ``go_backwards`` and input + recurrent dropout in training
    (same seed, so the same dropout masks); the fused gradient equals central
    finite differences along two random directions per tensor."""
    dtype = "float64" if supports_float64(name) else "float32"
    path_tol, step, fd_tol = TOLERANCES[dtype]
    sequences = sequences[:, :, :UNITS].astype(dtype)  # some cells need input size = units
    kwargs = {"go_backwards": True, "return_sequences": True, "return_state": True}
    fused, generic = fused_and_generic(name, sequences, rng, helpers, dtype, **kwargs)
    restore_seeds = SeedRestorer(fused, generic)
    states = [
        rng.normal(size=(len(sequences), size)).astype(dtype)
        for size in keras.tree.flatten(fused.cell.state_size)
    ]
    call = {"mask": mask, "training": True}

    restore_seeds()
    outputs, grads = helpers.outputs_and_gradients(fused, sequences, initial_state=states, **call)
    restore_seeds()
    expected_outputs, expected_grads = helpers.outputs_and_gradients(
        generic, sequences, initial_state=states, **call
    )
    helpers.assert_all_close(outputs, expected_outputs, path_tol, f"{name}: outputs, states")
    helpers.assert_all_close(grads, expected_grads, path_tol, f"{name}: gradients")
    assert all(np.abs(g).max() > 0 for g in grads), f"{name}: a gradient is zero"
    inference = keras.tree.flatten(generic(sequences, mask=mask, initial_state=states))
    assert not np.allclose(inference[0], expected_outputs[0]), "dropout had no effect"

    inputs, states = tf.Variable(sequences), [tf.Variable(s) for s in states]

    def loss() -> float:
        restore_seeds()
        outputs = fused(inputs, initial_state=states, **call)
        return float(helpers.linear_loss(keras.tree.flatten(outputs)))

    labels = ["inputs"] + [f"initial state {i}" for i in range(len(states))]
    labels += [weight.path for weight in fused.trainable_weights]
    for label, variable, grad in zip(labels, [inputs, *states, *fused.trainable_weights], grads):
        original = variable.numpy()
        for _ in range(2):
            direction = rng.normal(size=original.shape).astype(dtype)
            variable.assign(original + step * direction)
            plus = loss()
            variable.assign(original - step * direction)
            minus = loss()
            variable.assign(original)
            numeric = (plus - minus) / (2 * step)
            analytic = float(np.sum(np.asarray(grad) * direction))
            assert abs(numeric - analytic) <= fd_tol * max(1.0, abs(analytic)), (
                f"{name}: d/d({label}) along a random direction: finite differences "
                f"{numeric}, fused gradient {analytic}"
            )


# Batch 0 on every path for these cells in the default run (MuFuRU once failed
# there), for every other cell in the slow run.
NO_ROWS_DEFAULT_CELLS = ("gru", "mufuru")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=[] if name in NO_ROWS_DEFAULT_CELLS else [pytest.mark.slow])
        for name in krc.list_cells()
    ],
)
def test_a_batch_of_no_rows_on_every_path(name, sequences, mask, helpers):
    """A batch of 0 rows, masked or not, gets empty outputs of the shapes a
    batch of rows gets, (0, steps, units) with ``return_sequences`` and
    (0, units) without, its states (0, size), and an empty gradient, on every
    path: fused eager (compiled), a compiled training graph, a portable
    inference graph for a known batch and for any batch (an export), a
    compiled inference graph, and the generic loop eagerly and traced."""
    steps, features = sequences.shape[1], UNITS  # some cells need input size = units
    rows = sequences[:1, :, :features]

    def layers(implementation):
        keras.utils.set_random_seed(SEED)
        cell = krc.get_cell(name)
        kwargs = {"implementation": implementation, "return_state": True}
        every = krc.RNN(cell(UNITS, dropout=DROPOUT), return_sequences=True, **kwargs)
        last = krc.RNN(cell(UNITS), **kwargs)
        return lambda x, **call: [*every(x, **call), *last(x, **call)]

    fused, generic = layers("fused"), layers("generic")
    expected = [(0, *tuple(t.shape)[1:]) for t in fused(rows)]
    assert expected[0] == (0, steps, expected[0][2]) and len(expected[1]) == 2
    assert [shape[-1] for shape in expected] == [t.shape[-1] for t in generic(rows)]
    empty, no_mask = tf.constant(sequences[:0, :, :features]), mask[:0]
    any_batch = [tf.TensorSpec((None, None, features)), tf.TensorSpec((None, None), tf.bool)]
    in_graph = tf.function(lambda x, m: fused(x, mask=m, training=False))

    @tf.function
    def training(x, m):
        with tf.GradientTape() as tape:
            tape.watch(x)
            outputs = fused(x, mask=m, training=True)
            loss = helpers.linear_loss(outputs)
        return outputs, tape.gradient(loss, x)

    outputs, gradient = training(empty, no_mask)
    assert gradient.shape == empty.shape
    answers = {
        "fused eager": fused(empty, mask=no_mask),
        "compiled training graph": outputs,
        "portable graph": in_graph(empty, no_mask),
        "portable graph, any batch": tf.function(in_graph, input_signature=any_batch)(
            empty, no_mask
        ),
        "generic eager": generic(empty, mask=no_mask),
        "generic graph": tf.function(lambda x, m: generic(x, mask=m))(empty, no_mask),
    }
    with krc.compiled_inference():
        answers["compiled inference graph"] = in_graph(empty, None)
    for path, outputs in answers.items():
        shapes = [tuple(t.shape) for t in outputs]
        assert shapes == expected, f"{name}, {path}: {shapes} != {expected}"


def test_inside_tf_function(sequences, mask, rng, helpers):
    """Traced by ``tf.function``, the fused layer has the generic one's static
    output shapes, outputs and gradients."""
    fused, generic = fused_and_generic(
        "lstm", sequences, rng, helpers, "float32", return_sequences=True, return_state=True
    )
    shapes = [
        [
            tuple(t.shape)
            for t in tf.function(layer).get_concrete_function(sequences, mask=mask).outputs
        ]
        for layer in (fused, generic)
    ]
    assert (
        shapes[0]
        == shapes[1]
        == [(*sequences.shape[:2], UNITS), (len(sequences), UNITS), (len(sequences), UNITS)]
    )
    actual = tf.function(helpers.outputs_and_gradients)(fused, sequences, mask=mask)
    expected = helpers.outputs_and_gradients(generic, sequences, mask=mask)
    helpers.assert_all_close(actual[0], expected[0], what="outputs")
    helpers.assert_all_close(actual[1], expected[1], what="gradients")


def stacked_model(implementation: str, mask_value: float) -> keras.Model:
    """Masking, a bidirectional LSTM and a GRU, all returning sequences."""
    inputs = keras.Input((None, FEATURES))
    masked = keras.layers.Masking(mask_value)(inputs)
    lstm = krc.RNN(krc.LSTMCell(UNITS), return_sequences=True, implementation=implementation)
    hidden = keras.layers.Bidirectional(lstm, merge_mode="concat")(masked)
    gru = krc.RNN(krc.GRUCell(UNITS), return_sequences=True, implementation=implementation)
    return keras.Model(inputs, gru(hidden))


def test_stacked_and_bidirectional(sequences, mask, rng, helpers):
    """Two recurrent layers, the first bidirectional, the mask carried by
    Keras from a Masking layer: the fused model equals the generic one."""
    mask_value = 0.0
    sequences = np.where(mask[:, :, None], sequences, mask_value).astype("float32")
    fused, generic = stacked_model("fused", mask_value), stacked_model("generic", mask_value)
    bidirectional, gru = fused.layers[-2:]
    recurrent = [bidirectional.forward_layer, bidirectional.backward_layer, gru]
    assert [layer.path() for layer in recurrent] == ["fused"] * 3
    assert bidirectional.backward_layer.go_backwards
    helpers.randomize_weights(fused, rng)
    generic.set_weights(fused.get_weights())
    actual = helpers.outputs_and_gradients(fused, sequences)
    expected = helpers.outputs_and_gradients(generic, sequences)
    helpers.assert_all_close(actual[0], expected[0], what="outputs")
    helpers.assert_all_close(actual[1], expected[1], what="gradients")
    assert len(actual[1]) == 1 + 3 * 3  # inputs; kernel, recurrent kernel, bias per layer


@pytest.mark.parametrize("jit_compile", [False, True])
def test_fit_learns(jit_compile, rng):
    """A fused MGU learns a tiny regression (a sum over time) under
    ``model.fit``, compiled by XLA or not."""
    x = rng.normal(size=(64, 5, 2)).astype("float32")
    y = x[:, :, :1].sum(axis=1) * 0.5
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((5, 2)), krc.MGU(8, implementation="fused"), keras.layers.Dense(1)]
    )
    assert model.layers[0].path() == "fused"
    model.compile(keras.optimizers.Adam(0.03), "mse", jit_compile=jit_compile)
    assert model.jit_compile == jit_compile
    history = model.fit(x, y, batch_size=16, epochs=8, shuffle=False, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses))
    assert losses[-1] < 0.3 * losses[0], losses


class Wrapping(keras.layers.Layer):
    """A layer without ``build``: Keras builds it by running ``call`` on
    symbolic inputs, under a StatelessScope that lends variables stand-in
    values."""

    def __init__(self, implementation, **kwargs):
        super().__init__(**kwargs)
        self.rnn = krc.GRU(UNITS, return_sequences=True, implementation=implementation)

    def call(self, sequences):
        return self.rnn(sequences)


def test_built_inside_a_symbolic_run_reads_its_variables(sequences):
    fused, generic = Wrapping("fused"), Wrapping("generic")
    fused(sequences)
    generic(sequences)
    generic.set_weights(fused.get_weights())
    np.testing.assert_allclose(fused(sequences), generic(sequences), atol=1e-5)
    fused.rnn.cell.recurrent_kernel.assign(np.zeros((UNITS, 3 * UNITS)))  # still read live
    generic.rnn.cell.recurrent_kernel.assign(np.zeros((UNITS, 3 * UNITS)))
    np.testing.assert_allclose(fused(sequences), generic(sequences), atol=1e-5)


def demands_xla(function, *args) -> bool:
    """Whether the graph of ``function(*args)`` holds a function that must be
    XLA-compiled (which fails where XLA JIT is disabled, as in TF Serving)."""
    library = function.get_concrete_function(*args).graph.as_graph_def().library
    return any(f.attr["_XlaMustCompile"].b for f in library.function if "_XlaMustCompile" in f.attr)


def test_the_loop_is_compiled_for_training_and_portable_for_inference_graphs(sequences, helpers):
    layer = krc.MGU(UNITS, return_sequences=True)
    layer.build(sequences.shape)
    eager_outputs, eager_gradients = helpers.outputs_and_gradients(layer, sequences)

    def traced(training):
        return tf.function(lambda x: layer(x, training=training))

    assert demands_xla(traced(True), sequences)
    assert not demands_xla(traced(False), sequences)
    with krc.compiled_inference():
        assert demands_xla(traced(False), sequences)
    with krc.portable():
        assert not demands_xla(traced(True), sequences)
    # the portable loop's numbers and TensorFlow's own gradient of it
    outputs, gradients = tf.function(lambda x: helpers.outputs_and_gradients(layer, x))(sequences)
    helpers.assert_all_close(outputs, eager_outputs, what="portable outputs")
    helpers.assert_all_close(gradients, eager_gradients, what="portable gradients")


def test_the_portable_loop_at_lengths_around_its_unrolling(sequences, mask, rng, helpers):
    """The portable loop runs `fused.PORTABLE_UNROLL` steps an iteration, then
    the remaining steps one by one. At lengths below, at and past one and two
    iterations (0 steps: test_keras_arguments.py), with a mask with holes,
    ``go_backwards`` and initial states, its outputs, states and TensorFlow's
    gradients of them equal the generic path's. A graph that knows the length
    holds no loop that would run no iteration."""
    from keras_rnncells.layers.portable_loop import PORTABLE_UNROLL as k

    kwargs = {"go_backwards": True, "return_sequences": True, "return_state": True}
    lengths = sorted({1, k - 1, k, k + 1, 2 * k, 2 * k + 1})
    features = rng.normal(size=(len(sequences), lengths[-1], FEATURES)).astype("float32")
    holes = np.tile(mask, (1, lengths[-1]))[:, : lengths[-1]]
    fused, generic = fused_and_generic("gru", features, rng, helpers, "float32", **kwargs)
    states = [rng.normal(size=(len(features), UNITS)).astype("float32")]
    with krc.portable():
        for steps in lengths:
            call = {"initial_state": states, "mask": holes[:, :steps], "training": False}
            x = features[:, :steps]
            traced = tf.function(lambda x, c=call: helpers.outputs_and_gradients(fused, x, **c))
            actual = traced(x)
            expected = helpers.outputs_and_gradients(generic, x, **call)
            helpers.assert_all_close(actual[0], expected[0], what=f"{steps} steps: outputs")
            helpers.assert_all_close(actual[1], expected[1], what=f"{steps} steps: gradients")
            nodes = traced.get_concrete_function(x).graph.as_graph_def().node
            loops = [n.name.rsplit("/", 1)[-1] for n in nodes if n.op.endswith("While")]
            forward = sorted(name for name in loops if not name.endswith("_grad"))
            ran = ["steps"] * (steps % k > 0) + ["unrolled_steps"] * (steps >= k)
            assert forward == ran, (steps, loops)


def live_ops(graph: tf.Graph, outputs: list) -> list:
    """The ops of ``graph`` that ``outputs`` depend on (what TensorFlow runs
    of a function's graph: it prunes the rest)."""
    seen, stack = {}, [t.op for t in outputs]
    while stack:
        op = stack.pop()
        if op.name not in seen:
            seen[op.name] = op
            stack.extend(t.op for t in op.inputs)
            stack.extend(op.control_inputs)
    return list(seen.values())


@pytest.mark.parametrize(
    "name, gathers, projections",
    [("lstm", 1, 1), ("gru", 2, 2), ("peephole_lstm", 1, 1), ("mi_lstm", 8, 1), ("mgu", 2, 2)],
)
def test_the_portable_loop_adds_joined_inputs_to_a_product_at_once(
    name, gathers, projections, sequences, mask, rng, helpers
):
    """Where a cell adds two or more projected blocks to one recurrent product
    through ``combine`` (LSTM: all four; GRU: z and r; not MI-LSTM, whose
    ``combine`` takes a scale and an offset a block), a step of the portable
    loop gathers them as one tensor and adds it to the product at once
    (`portable_loop.joined_inputs`): a step reads ``gathers`` tensors and the mask,
    each gathered once an iteration of `fused.PORTABLE_UNROLL` steps. The
    joined blocks are one input product (`portable_loop.joined_product`): the
    forward graph runs ``projections`` input matmuls (MI-LSTM's projection is
    one product of its own). The numbers and
    TensorFlow's gradients equal the generic path's."""
    from keras_rnncells.layers.portable_loop import PORTABLE_UNROLL as k

    kwargs = {"go_backwards": True, "return_sequences": True, "return_state": True}
    features = rng.normal(size=(len(sequences), 2 * k, FEATURES)).astype("float32")
    holes = np.tile(mask, (1, 2 * k))[:, : 2 * k]
    fused, generic = fused_and_generic(name, features, rng, helpers, "float32", **kwargs)
    call = {"mask": holes, "training": False}
    with krc.portable():
        traced = tf.function(lambda x: helpers.outputs_and_gradients(fused, x, **call))
        actual = traced(features)
    expected = helpers.outputs_and_gradients(generic, features, **call)
    helpers.assert_all_close(actual[0], expected[0], what="outputs")
    helpers.assert_all_close(actual[1], expected[1], what="gradients")
    functions = traced.get_concrete_function(features).graph.as_graph_def().library.function
    (body,) = [f for f in functions if re.fullmatch(r".*unrolled_steps_body_\d+", f.signature.name)]
    assert sum(n.op == "GatherV2" for n in body.node_def) == gathers + 1
    with krc.portable():
        graph = tf.function(lambda x: fused(x, **call)).get_concrete_function(features).graph
    products = [op for op in live_ops(graph, graph.outputs) if op.type == "MatMul"]
    assert len(products) == projections, [op.name for op in products]


class OneProductLSTMCell(krc.LSTMCell):
    """A user's LSTM whose sequence projection is one product, then split
    (not `affine_blocks`' product a block)."""

    def project_inputs(self, inputs):
        projected = tf.matmul(tf.reshape(inputs, (-1, inputs.shape[-1])), self.kernel)
        projected = tf.reshape(projected + self.bias, (*tf.unstack(tf.shape(inputs)[:-1]), -1))
        return tuple(tf.split(projected, 4, axis=-1))


def test_the_portable_loop_copies_blocks_it_cannot_join_as_one_product(sequences, rng, helpers):
    """Blocks that are not `affine_blocks` products (here a split of one
    product) are joined by a copy (`fused.side_by_side`): a step still reads
    one tensor, and the numbers equal the generic path's."""
    from keras_rnncells.layers.portable_loop import PORTABLE_UNROLL as k

    features = rng.normal(size=(len(sequences), 2 * k, FEATURES)).astype("float32")
    fused, generic = (
        krc.RNN(OneProductLSTMCell(UNITS), implementation=path, return_sequences=True)
        for path in ("fused", "generic")
    )
    fused.build(features.shape)
    generic.build(features.shape)
    helpers.randomize_weights(fused, rng)
    generic.set_weights(fused.get_weights())
    with krc.portable():
        traced = tf.function(lambda x: fused(x, training=False))
        actual = traced(features)
    helpers.assert_all_close(actual, generic(features, training=False), what="outputs")
    functions = traced.get_concrete_function(features).graph.as_graph_def().library.function
    (body,) = [f for f in functions if re.fullmatch(r".*unrolled_steps_body_\d+", f.signature.name)]
    assert sum(n.op == "GatherV2" for n in body.node_def) == 1


def test_the_loop_switches_hold_for_their_thread_only(sequences):
    """One thread inside ``portable()`` while another traces a training step."""
    import threading

    layer = krc.MGU(UNITS)
    layer.build(sequences.shape)
    inside, traced = threading.Event(), threading.Event()
    found = {}

    def exporter():
        with krc.portable():
            inside.set()
            traced.wait(timeout=60)
            found["exporter"] = demands_xla(
                tf.function(lambda x: layer(x, training=True)), sequences
            )

    thread = threading.Thread(target=exporter)
    thread.start()
    assert inside.wait(timeout=60)
    found["trainer"] = demands_xla(tf.function(lambda x: layer(x, training=True)), sequences)
    traced.set()
    thread.join(timeout=120)
    assert found == {"exporter": False, "trainer": True}


def loop_calls(function, *args) -> dict:
    """How many compiled loops (calls of ``fused.differentiable_recurrence``)
    and portable loops the graph of ``function(*args)`` holds. A portable loop
    over steps that the graph does not know, or (as conftest's 5) that are not
    a multiple of `fused.PORTABLE_UNROLL` and not fewer, is two ``While`` ops:
    ``unrolled_steps`` (that many steps an iteration), then ``steps`` for the
    rest; this counts the ``steps``."""
    nodes = function.get_concrete_function(*args).graph.as_graph_def().node
    called = [n.attr["f"].func.name for n in nodes if n.op.endswith("PartitionedCall")]
    compiled = [f for f in called if "differentiable_recurrence" in f and "backward" not in f]
    loops = [n.name.rsplit("/", 1)[-1] for n in nodes if n.op in ("While", "StatelessWhile")]
    portable = [name for name in loops if name.startswith("steps")]
    assert len(portable) == len([n for n in loops if n.startswith("unrolled_steps")]), loops
    return {"compiled": len(compiled), "portable": len(portable)}


def loop_products(graph) -> list[int]:
    """The ``MatMul`` count of each loop body and ``tf.cond`` branch of
    ``graph`` (a portable loop's steps, and the column blocks' or one product's
    branch), sorted."""
    functions = graph.as_graph_def().library.function
    bodies = [f for f in functions if "_body_" in f.signature.name]
    branches = [f for f in functions if re.search("cond_(true|false)_", f.signature.name)]
    return sorted(sum(n.op == "MatMul" for n in f.node_def) for f in bodies + branches)


def cpu_host(monkeypatch, cores: int) -> None:
    """The fused path's rules as on a CPU host whose executor has ``cores``
    cores, also where a GPU is visible (where one loop runs a batch and our
    GRU and LSTM run cuDNN: `fused.loop_count`, `rnn.RNN.uses_cudnn`)."""
    from keras_rnncells.layers import fused, rnn

    monkeypatch.setattr(fused, "executor_cores", lambda: cores)
    monkeypatch.setattr(fused, "gpu_available", lambda: False)
    monkeypatch.setattr(rnn, "gpu_available", lambda: False)


@pytest.fixture
def four_cores(monkeypatch):
    """The fused path's rule for how many loops run a batch (layers/fused.py,
    ``loop_count``) as on a machine whose executor has 4 cores, with no least
    number of rows (or rows times steps) per loop: conftest's batch of 9 rows
    runs as 4 loops of 3, 2, 2 and 2 rows."""
    from keras_rnncells.layers import fused

    cpu_host(monkeypatch, 4)
    monkeypatch.setattr(fused, "LOOP_MIN_ROWS", 1)
    monkeypatch.setattr(fused, "PORTABLE_MIN_ROW_STEPS", 1)


@pytest.mark.cell_sweep
@pytest.mark.parametrize("name", ["gru", "lstm", "mufuru", "scrn", "mi_lstm"])
def test_one_loop_per_core_equals_one_loop(name, sequences, mask, rng, helpers, four_cores):
    """A traced training step (compiled loops) and an inference graph traced
    for a known batch (portable loops) run the batch as one loop per core,
    each over its own rows: outputs, final states and gradients (inputs,
    initial states, weights) equal the generic path's, with a mask with
    holes, ``go_backwards``, initial states and input and recurrent dropout
    (the recurrent-dropout mask split by rows too)."""
    sequences = sequences[:, :, :UNITS]
    kwargs = {"go_backwards": True, "return_sequences": True, "return_state": True}
    fused, generic = fused_and_generic(name, sequences, rng, helpers, "float32", **kwargs)
    restore_seeds = SeedRestorer(fused, generic)
    states = [
        rng.normal(size=(len(sequences), size)).astype("float32")
        for size in keras.tree.flatten(fused.cell.state_size)
    ]
    for training in (True, False):
        call = {"initial_state": states, "mask": mask, "training": training}
        forward = tf.function(lambda x, call=call: fused(x, **call))
        form = "compiled" if training else "portable"
        assert loop_calls(forward, sequences)[form] == 4, f"{name}: {form} loops"
        step = tf.function(lambda x, call=call: helpers.outputs_and_gradients(fused, x, **call))
        restore_seeds()
        outputs, grads = step(sequences)
        restore_seeds()
        expected = helpers.outputs_and_gradients(generic, sequences, **call)
        what = f"{name}, training={training}"
        helpers.assert_all_close(outputs, expected[0], 1e-5, f"{what}: outputs, states")
        helpers.assert_all_close(grads, expected[1], 1e-5, f"{what}: gradients")


@pytest.mark.parametrize("name", ["gru", "lstm", "mgu", "mufuru", "scrn"])
def test_a_training_step_in_two_halves_equals_the_generic_path(
    name, sequences, mask, rng, helpers, monkeypatch
):
    """A training step's compiled loop over at least `fused.HALVES_MIN_STEPS`
    steps (here 2: conftest's 5 steps as 3, then 2) runs as two loops, one
    per half of the sequence (`fused.time_halves`), and its outputs, final
    states and gradients (inputs, initial states, weights) equal the generic
    path's: without a mask, and with a mask with holes, with and without
    ``zero_output_for_mask`` (without it, a masked step at the start of the
    second half emits the first half's last output again), each with
    ``go_backwards``, initial states and dropout."""
    from keras_rnncells.layers import fused as fused_module

    cpu_host(monkeypatch, 1)  # one loop over the batch's rows
    monkeypatch.setattr(fused_module, "HALVES_MIN_STEPS", 2)
    dtype = "float64" if supports_float64(name) else "float32"
    tolerance = TOLERANCES[dtype][0]
    sequences = sequences[:, :, :UNITS].astype(dtype)
    for step_mask, zero_output in ((None, False), (mask, True), (mask, False)):
        kwargs = {"go_backwards": True, "return_sequences": True, "return_state": True}
        kwargs["zero_output_for_mask"] = zero_output
        fused, generic = fused_and_generic(name, sequences, rng, helpers, dtype, **kwargs)
        restore_seeds = SeedRestorer(fused, generic)
        states = [
            rng.normal(size=(len(sequences), size)).astype(dtype)
            for size in keras.tree.flatten(fused.cell.state_size)
        ]
        call = {"initial_state": states, "mask": step_mask, "training": True}
        what = f"{name}, mask={step_mask is not None}, zero_output_for_mask={zero_output}"
        forward = tf.function(lambda x, call=call, fused=fused: fused(x, **call))
        assert loop_calls(forward, sequences)["compiled"] == 2, f"{what}: loops"
        step = tf.function(
            lambda x, call=call, fused=fused: helpers.outputs_and_gradients(fused, x, **call)
        )
        restore_seeds()
        outputs, grads = step(sequences)
        restore_seeds()
        expected = helpers.outputs_and_gradients(generic, sequences, **call)
        helpers.assert_all_close(outputs, expected[0], tolerance, f"{what}: outputs, states")
        helpers.assert_all_close(grads, expected[1], tolerance, f"{what}: gradients")
        assert all(np.abs(g).max() > 0 for g in grads), f"{what}: a gradient is zero"


def test_time_halves_only_for_recording_loops_of_known_long_sequences():
    """The rule of `fused.time_halves`: two halves, the first the longer, only
    for a recording (training) loop over known steps, at least
    `HALVES_MIN_STEPS` of them."""
    from keras_rnncells.layers.fused import HALVES_MIN_STEPS, time_halves

    odd = HALVES_MIN_STEPS + 1
    assert time_halves(odd, True) == [odd // 2 + 1, odd // 2]
    assert time_halves(1000, True) == [500, 500]
    assert time_halves(HALVES_MIN_STEPS - 1, True) == [HALVES_MIN_STEPS - 1]
    assert time_halves(1000, False) == [1000]
    assert time_halves(None, True) == [None]


@pytest.mark.slow  # training graphs at four batch sizes (14 s of the default run)
def test_a_batch_known_at_run_time_runs_one_loop_per_core_in_training_only(sequences, helpers):
    """A training graph traced for any batch size splits the rows it gets at
    run time, down to a single row; an inference graph traced for any batch
    size, as an export is, keeps one loop (a batch of 1, as served, pays for no
    other); so do a known batch under ``LOOP_MIN_ROWS`` rows per loop and a
    step compiled whole by XLA."""
    from keras_rnncells.layers import fused

    layer = krc.GRU(UNITS, return_sequences=True)
    layer.build(sequences.shape)
    any_batch = [tf.TensorSpec((None, None, FEATURES))]

    def train(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(x, training=True))
        return loss, tape.gradient(loss, layer.trainable_variables)

    train_any = tf.function(train, input_signature=any_batch)
    infer_any = tf.function(lambda x: layer(x, training=False), input_signature=any_batch)
    cores = fused.executor_cores()
    assert (
        loop_calls(tf.function(lambda x: layer(x, training=True), input_signature=any_batch))[
            "compiled"
        ]
        == cores
    )
    assert loop_calls(infer_any)["portable"] == 1
    few = sequences[: fused.LOOP_MIN_ROWS * 2 - 1]
    assert loop_calls(tf.function(train), few)["compiled"] == 1
    # compiled whole by XLA (model.compile(jit_compile=True)): one loop
    assert loop_calls(tf.function(train, jit_compile=True), sequences)["compiled"] == 1
    for rows in (0, 1, 2, len(sequences)):
        x = sequences[:rows]
        loss, grads = train_any(x)
        expected_loss, expected_grads = tf.function(train)(x)  # a known batch
        np.testing.assert_allclose(loss, expected_loss, rtol=1e-5, atol=1e-6)
        helpers.assert_all_close(grads, expected_grads, 1e-5, f"{rows} rows: gradients")
        np.testing.assert_allclose(infer_any(x), layer(x), rtol=1e-5, atol=1e-6)


def test_no_step_of_the_portable_loop_reads_a_variable():
    """A recurrent matmul's kernel columns are read once per loop (the
    recorder calls ``read_kernel`` once), not in every step: the MGU's loop
    body read its kernel twice a step before."""
    layer = krc.MGU(UNITS)
    x = tf.zeros((2, 5, FEATURES))
    layer(x)
    graph = tf.function(lambda x: layer(x, training=False)).get_concrete_function(x).graph
    bodies = [f for f in graph.as_graph_def().library.function if "_body_" in f.signature.name]
    assert bodies
    reads = [node.name for body in bodies for node in body.node_def if node.op == "ReadVariableOp"]
    assert reads == []


@pytest.mark.parametrize(
    "name, blocks",
    [
        ("gru", 3),
        pytest.param("lstm", 4, marks=pytest.mark.slow),
        pytest.param("mgu", 2, marks=pytest.mark.slow),
    ],
)
def test_products_of_few_rows_run_in_column_blocks(name, blocks, rng, helpers, monkeypatch):
    """The portable loop runs a recurrent product of at most `portable_loop.BLOCK_ROWS`
    rows in column blocks (`portable_loop.column_blocks`): at 128 units the GRU's in 3,
    the LSTM's in 4, ``MGU(reset_after=True)``'s in 2; past that many rows, one
    product; for a batch known only at run time, a ``tf.cond`` picks. Its
    outputs and states equal the generic path's past one unrolled iteration,
    and where the batch is known, with initial states, so do TensorFlow's
    gradients (in float64: float32 sums of 128 terms differ by the order of
    the summands). One loop over the rows, whatever the cores; a layer made
    with ``column_blocks=True``."""
    from keras_rnncells.layers.portable_loop import BLOCK_ROWS

    cpu_host(monkeypatch, 1)
    options = {"reset_after": True} if name == "mgu" else {}
    kwargs = {"return_sequences": True, "return_state": True, "dtype": "float64"}
    fused, generic = (
        krc.RNN(
            krc.get_cell(name)(128, dtype="float64", **options),
            implementation=path,
            column_blocks=True,
            **kwargs,
        )
        for path in ("fused", "generic")
    )
    fused.build((None, None, FEATURES)), generic.build((None, None, FEATURES))
    helpers.randomize_weights(fused, rng)
    generic.set_weights(fused.get_weights())
    any_rows = tf.TensorSpec((None, 9, FEATURES), tf.float64)
    for rows, spec in itertools.product((1, BLOCK_ROWS + 1), (None, any_rows)):
        x = tf.constant(rng.normal(size=(rows, 9, FEATURES)))
        sizes = keras.tree.flatten(fused.cell.state_size)
        call = {"initial_state": [rng.normal(size=(rows, size)) for size in sizes]}
        signature = None if spec is None else [spec]
        what = f"{rows} rows, {'any' if spec else 'known'} batch"
        with krc.portable():
            traced = tf.function(lambda x: fused(x, training=False), input_signature=signature)
            graph = traced.get_concrete_function(*([] if spec else [x])).graph
            if spec is None:
                forward = tf.function(
                    lambda x, c=call: helpers.outputs_and_gradients(fused, x, training=False, **c)
                )
                actual = forward(x)
        if spec is None:
            expected = helpers.outputs_and_gradients(generic, x, training=False, **call)
            helpers.assert_all_close(actual[0], expected[0], what=f"{what}: outputs")
            helpers.assert_all_close(actual[1], expected[1], what=f"{what}: gradients")
        else:  # the cond picks at run time; given states would fix the batch size
            actual = keras.tree.flatten(traced(x))
            expected = keras.tree.flatten(generic(x, training=False))
            helpers.assert_all_close(actual, expected, what=f"{what}: outputs")
        products = loop_products(graph)
        if spec is not None:  # the steps' conds: branches of blocks and of one product
            pairs = (len(products) - 2) // 2
            assert pairs and products == [0, 0] + [1] * pairs + [blocks] * pairs, (what, products)
        elif rows == 1:
            assert products == [blocks, 4 * blocks], (what, products)
        else:
            assert products == [1, 4], (what, products)


def test_no_column_blocks_by_default(monkeypatch):
    """Without ``column_blocks`` (the default: they ran slower on the hosts we
    measure on), a loop that runs alone makes each recurrent product whole,
    with no ``tf.cond`` for a batch known only at run time."""
    cpu_host(monkeypatch, 1)
    layer = krc.GRU(128, return_sequences=True)
    layer.build((None, None, FEATURES))
    spec = [tf.TensorSpec((None, 9, FEATURES))]
    for signature, x in ((None, tf.zeros((1, 9, FEATURES))), (spec, None)):
        traced = tf.function(lambda x: layer(x, training=False), input_signature=signature)
        graph = traced.get_concrete_function(*([] if signature else [x])).graph
        functions = graph.as_graph_def().library.function
        assert not [f for f in functions if "cond_true" in f.signature.name]
        assert loop_products(graph) == [1, 4]


def test_column_blocks_is_an_option_of_the_layer_saved_in_its_config():
    """Whether a loop takes column blocks is the layer's ``column_blocks``
    (nothing timed on the host): saved in the config of `RNN` and of the named
    layers, and anything but a bool is refused in one line."""
    for layer in (krc.RNN(krc.GRUCell(4), column_blocks=True), krc.GRU(4, column_blocks=True)):
        config = layer.get_config()
        assert config["column_blocks"] is True
        assert type(layer).from_config(config).column_blocks is True
    assert krc.LSTM(4).get_config()["column_blocks"] is False
    with pytest.raises(ValueError, match="Argument `column_blocks` must be True or False"):
        krc.RNN(krc.GRUCell(4), column_blocks="yes")


def test_loops_per_core_run_whole_products(monkeypatch):
    """Where the portable path runs a loop per core (`fused.loop_count`), each
    loop runs its recurrent product whole, however few its rows: the column
    blocks are for a loop that runs alone. Our GRU at 128 units would run its
    product of 4 rows in 3 blocks (``column_blocks=True``)."""
    cpu_host(monkeypatch, 2)
    layer = krc.GRU(128, return_sequences=True, column_blocks=True)
    x = tf.zeros((8, 41, FEATURES))
    layer.build(x.shape)
    graph = tf.function(lambda x: layer(x, training=False)).get_concrete_function(x).graph
    products = loop_products(graph)
    assert products == [1, 1, 4, 4], products
