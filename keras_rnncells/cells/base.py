"""The cell contract and the helper base shared by the dense-gate cells.

`AbstractRNNCell` is the Keras 2 ``AbstractRNNCell`` contract (which Keras 3
dropped) plus the split that makes cells fast:

* ``project_inputs(x)`` computes every input-side matmul, for one step
  ``(B, in)`` or a whole time-major sequence ``(T, B, in)``, and returns one
  tensor per weight block;
* ``step(projected, states, training)`` advances one time step given the
  projected input of that step;
* ``call(x, states, training) = step(project_inputs(x), states, training)``,
  so every cell also runs inside plain ``keras.layers.RNN``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, NamedTuple

import keras
import tensorflow as tf
from keras import activations, constraints, initializers, ops, regularizers

# Keras 3 keeps its dropout-mask cache in this mixin. Subclassing it makes
# ``keras.layers.RNN`` create our masks once per sequence, before its loop.
from keras.src.layers.rnn.dropout_rnn_cell import DropoutRNNCell

from keras_rnncells.checks import (
    check_bool,
    check_input,
    check_keras_object,
    check_positive_int,
    check_rate,
    set_keras_objects,
)

Tensor = Any
States = list


def as_state_list(states: Any) -> list:
    return list(states) if isinstance(states, (list, tuple)) else [states]


Columns = Any  # None, a range ``(start, stop)``, or a tuple of ranges joined in order


def select_columns(tensor: Tensor, columns: Columns = None) -> Tensor:
    """The last-axis ``columns`` of ``tensor`` (all of it for ``None``)."""
    if columns is None:
        return tensor
    if isinstance(columns[0], tuple):
        return ops.concatenate([select_columns(tensor, c) for c in columns], axis=-1)
    return tensor[..., columns[0] : columns[1]]


def in_float32(initializer: Any) -> Any:
    """``initializer`` computed in float32, then cast to the dtype asked for:
    for bfloat16 weights, which Keras' orthogonal initializer (a QR
    decomposition, without a bfloat16 kernel) cannot make directly."""

    def initialize(shape: Any, dtype: Any = None) -> Tensor:
        return ops.cast(initializer(shape, dtype="float32"), dtype)

    return initialize


def forget_bias_initializer(units: int, blocks: int, forget: tuple[int, ...]) -> Any:
    """Zeros over ``blocks`` blocks of ``units``, ones in the ``forget`` blocks."""

    def initialize(shape: tuple, dtype: Any = None) -> Tensor:
        ones = [1.0 if block in forget else 0.0 for block in range(blocks)]
        return ops.cast(ops.repeat(ops.convert_to_tensor(ones), units), dtype or "float32")

    return initialize


LAYER_NORM_EPSILON = 1e-3


def affine_blocks(inputs: Tensor, kernels: Sequence, biases: Sequence) -> tuple:
    """``inputs @ kernel + bias`` for each kernel (and bias, or None) over the last
    axis of ``inputs`` (any rank): the inputs flattened to 2-D once, then one
    matmul and one ``BiasAdd`` per block, whose gradient is TensorFlow's fused
    ``BiasAddGrad`` (a broadcasting add over a 3-D product is differentiated by
    a slower ``Sum`` over two axes; a 3-D ``einsum`` ran 1.1x to 1.3x slower)."""
    flat = tf.reshape(inputs, (-1, inputs.shape[-1]))
    leading = unflattened_sizes(inputs)
    blocks = []
    for kernel, bias in zip(kernels, biases):
        product = tf.matmul(flat, kernel)
        if bias is not None:
            product = tf.nn.bias_add(product, bias)
        width = kernel.shape[-1]
        block = tf.reshape(product, tf.concat([leading, [width]], axis=0))
        block.set_shape((*inputs.shape[:-1], width))
        blocks.append(block)
    return tuple(blocks)


def input_product(inputs: Tensor, kernel: Tensor) -> Tensor:
    """``inputs @ kernel`` over the last axis of a step (2-D) or a sequence
    (`affine_blocks`: Keras' ``ops.matmul`` of a sequence is a ``tensordot``,
    whose ONNX form fails on an empty batch)."""
    if len(inputs.shape) == 2:
        return ops.matmul(inputs, kernel)
    (product,) = affine_blocks(inputs, [kernel], [None])
    return product


def unflattened_sizes(inputs: Tensor) -> Tensor:
    """The sizes of all but the last axis of ``inputs``, as the target of a
    ``Reshape`` of their flattened rows that means the same in TensorFlow and
    in ONNX. tf2onnx leaves ONNX's ``allowzero`` off, so a 0 in the target reads
    as "the input's size on that axis": a 0 first size copies the flat rows'
    0, but an empty batch (a 0 second size) would copy the width. So that 0 is
    given as -1 (inferred as 0) where the first size is not 0 (TensorFlow
    infers no size beside another 0). A batch of 0 rows in 0 steps is empty
    in both, with the width as its batch in ONNX."""
    sizes = tf.shape(inputs)[:-1]
    if len(inputs.shape) < 3 or inputs.shape[1]:  # no batch axis, or its size known
        return sizes
    empty_batch = tf.logical_and(tf.equal(sizes[1], 0), tf.not_equal(sizes[0], 0))
    batch = tf.where(empty_batch, -1, sizes[1])
    return tf.concat([sizes[:1], batch[None], sizes[2:]], axis=0)


def project_blocks(
    inputs: Tensor, kernel: Tensor, bias: Tensor | None, splits: int | Sequence[int]
) -> tuple:
    """``inputs @ kernel + bias`` split into column blocks at ``splits`` (a
    count of equal blocks, or the columns to split at, as ``ops.split``). A single
    step (Keras' loop, ONNX's ``Loop``) takes one matmul and a split of its
    small product: fewer ops per step. A sequence takes one matmul per block
    (`affine_blocks`): splitting one product would copy the whole projected
    sequence, and its gradient would concatenate it again."""
    if len(inputs.shape) == 2:
        projected = ops.matmul(inputs, kernel)
        if bias is not None:
            projected = projected + bias
        return (projected,) if splits == 1 else tuple(ops.split(projected, splits, axis=-1))
    kernels = ops.split(kernel, splits, axis=-1)
    biases = [None] * len(kernels) if bias is None else ops.split(bias, splits)
    return affine_blocks(inputs, kernels, biases)


def layer_normalize(x: Tensor, gain: Tensor, bias: Tensor) -> Tensor:
    """Layer normalization over the last axis (Ba, Kiros & Hinton 2016):
    ``gain * (x - mean) / sqrt(var + 1e-3) + bias``."""
    mean = ops.mean(x, axis=-1, keepdims=True)
    variance = ops.var(x, axis=-1, keepdims=True)
    return (x - mean) * ops.rsqrt(variance + LAYER_NORM_EPSILON) * gain + bias


BATCH_NORM_EPSILON = 1e-3
BATCH_NORM_MOMENTUM = 0.99  # as keras.layers.BatchNormalization
BATCH_NORM_GAMMA = 0.1  # Cooijmans et al. 2016, section 4
# The largest integer each 16-bit float counts to exactly: the bound on the
# step counter state (``batch_norm=True``) in that compute dtype.
EXACT_COUNTS = {"float16": 2048, "bfloat16": 256}


class BatchNormRows(NamedTuple):
    """What a layer's loop tells a ``batch_norm`` cell about a training step
    (`DenseGatesCell.batch_norm_bound`): ``rows`` (batch,) 1 for the rows the
    statistics are taken over (unmasked at this step), 0 for the others
    (None: every row); ``update``: whether the step updates the moving
    averages (False for a step whose result the loop discards)."""

    rows: Tensor | None = None
    update: bool = True


class BatchNormStep(NamedTuple):
    """What the batch normalizations of one step read (`DenseGatesCell`):
    ``index`` (batch,) int32, each row's statistics step; ``training``
    (batch statistics) or not (the moving averages); ``rows`` as in
    `BatchNormRows`, and ``update`` (training only)."""

    index: Tensor
    training: bool
    rows: Tensor | None
    update: bool


def step_statistics(x: Tensor, index: Tensor, rows: Tensor | None, steps: int) -> tuple:
    """Batch statistics of the rows of ``x`` (batch, width) grouped by their
    statistics step ``index`` (batch,), over the ``rows`` weighted 1: the
    rows centered on their group's mean, and per step (``steps``, width) the
    mean, the (biased, as Keras') variance, and (``steps``,) the row count."""
    weights = ops.ones_like(x[:, 0]) if rows is None else ops.cast(rows, x.dtype)
    counts = ops.segment_sum(weights, index, num_segments=steps)
    denominator = ops.maximum(counts, 1.0)[:, None]
    weights = weights[:, None]
    mean = ops.segment_sum(x * weights, index, num_segments=steps) / denominator
    centered = x - ops.take(mean, index, axis=0)
    variance = ops.segment_sum(ops.square(centered) * weights, index, steps) / denominator
    return centered, mean, variance, counts


def placed_columns(tensor: Tensor, columns: Columns, width: int) -> Tensor:
    """``tensor``, the last-axis ``columns`` (see `select_columns`) of a
    ``width``-column tensor, put back in place: zeros in the other columns."""
    if columns is None:
        return tensor
    ranges = columns if isinstance(columns[0], tuple) else (columns,)
    placed, offset = 0, 0
    for start, stop in ranges:
        piece = tensor[..., offset : offset + stop - start]
        padding = [[0, 0]] * (len(tensor.shape) - 1) + [[start, width - stop]]
        placed = placed + ops.pad(piece, padding)
        offset += stop - start
    return placed


class RecurrentMasks(NamedTuple):
    """The per-sequence masks of a cell's recurrent connections, ``None`` where
    off: ``state`` (batch, state) for ``recurrent_dropout`` and ``kernel``
    (shaped as ``recurrent_kernel``) for ``recurrent_dropconnect``."""

    state: Tensor | None
    kernel: Tensor | None


class AbstractRNNCell(DropoutRNNCell, keras.layers.Layer):
    """Base class of every recurrent cell of this package.

    Subclasses define ``state_size``, ``output_size``, ``project_inputs`` and
    ``step``. Input dropout (``dropout``) is applied by the caller to the raw
    input before projection, one mask per sequence; recurrent dropout
    (``recurrent_dropout``, variational: one mask per sequence) is applied by
    ``step`` through ``drop_recurrent``. Recurrent DropConnect
    (``recurrent_dropconnect``; Wan et al. 2013, "Regularization of neural
    networks using DropConnect", on the recurrent kernel as in Merity, Keskar &
    Socher 2017, "Regularizing and optimizing LSTM language models") drops
    entries of ``recurrent_kernel``, scaled by ``1 / (1 - rate)``, one mask per
    sequence, in every matmul made through ``recurrent_matmul``. All of them
    act in training only.

    ``citation`` is a short reference (authors, year, title) shown by
    ``rnncells cells`` and README's table.

    Library kernels of a cell's equations: ``cudnn_kernel`` (Keras' cuDNN
    kernel computes this class; inherited, so a subclass that changes the
    equations sets it False) and ``onnx_op`` (ONNX's native op computing this
    class, read on the class that declares it only: a subclass is a cell of
    its own). ``cudnn_ineligibility()`` and ``onnx_ineligibility()`` answer,
    for a configured cell, why such a kernel cannot compute it (``None``: it
    can); the layer and the ONNX exporter ask them and nothing else.
    """

    citation: str = ""
    cudnn_kernel: ClassVar[bool] = False
    onnx_op: ClassVar[str | None] = None
    # Set only by this class's own context managers: the recorder of the
    # recurrent matmuls (`matmuls_recorded`, while the fused path traces a
    # step) and the recurrent masks in force (`recurrent_masks_bound`).
    _matmul_recorder = None
    _recurrent_masks: RecurrentMasks | None = None

    def __init__(
        self,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        seed: int | None = None,
        recurrent_dropconnect: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        policy = self.dtype_policy
        if not all(
            map(keras.backend.is_float_dtype, (policy.compute_dtype, policy.variable_dtype))
        ):
            raise ValueError(
                "Argument `dtype` must be a floating-point dtype or policy (e.g. 'float32', "
                f"'float64', 'bfloat16', 'mixed_float16'), received: {policy.name!r}"
            )
        self.dropout = check_rate("dropout", dropout)
        self.recurrent_dropout = check_rate("recurrent_dropout", recurrent_dropout)
        self.recurrent_dropconnect = check_rate("recurrent_dropconnect", recurrent_dropconnect)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    # -- the Keras 2 contract -------------------------------------------------
    @property
    def state_size(self) -> int | list[int]:
        raise NotImplementedError

    @property
    def output_size(self) -> int:
        raise NotImplementedError

    def get_initial_state(self, batch_size: int | None = None) -> list:
        sizes = self.state_size
        sizes = sizes if isinstance(sizes, (list, tuple)) else [sizes]
        return [ops.zeros((batch_size, size), dtype=self.compute_dtype) for size in sizes]

    def call(self, inputs: Tensor, states: Any, training: bool = False) -> tuple:
        check_input(
            self,
            "inputs",
            inputs,
            ("batch", "features"),
            dtype="float",
            features=getattr(self, "input_dim", None),
        )
        states = as_state_list(states)
        if training and self.dropout > 0:
            inputs = inputs * self.get_dropout_mask(inputs)
        masks = self.get_recurrent_dropout_mask(states[0]) if training else None
        with self.recurrent_masks_bound(masks):
            return self.step(self.step_inputs(inputs, training), states, training)

    # -- the fast split -------------------------------------------------------
    def project_inputs(self, inputs: Tensor) -> tuple:
        """Input-side matmuls for ``inputs`` of shape ``(..., input_dim)``."""
        raise NotImplementedError

    def step(self, projected: tuple, states: States, training: bool = False) -> tuple:
        """One time step: returns ``(output, new_states)``."""
        raise NotImplementedError

    def step_inputs(self, inputs: Tensor, training: bool = False) -> tuple:
        """What ``step`` reads for ``inputs`` (one step or a time-major
        sequence): ``project_inputs(inputs)``, plus what a wrapper draws per
        step in training (``Zoneout``'s noise). Both paths call it; the fused
        path once for the whole sequence, so its gradient sees the same draws."""
        return self.project_inputs(inputs)

    def recurrent_kernel_columns(self, columns: Columns = None) -> Tensor:
        """``recurrent_kernel`` (times the DropConnect mask in force), or its
        columns ``start:stop`` (or several ranges, joined in order)."""
        kernel = self.recurrent_kernel
        masks = self._recurrent_masks
        if masks is not None and masks.kernel is not None:
            kernel = kernel * masks.kernel
        return select_columns(kernel, columns)

    def recurrent_matmul(self, h: Tensor, columns: Columns = None) -> Tensor:
        """``h @ recurrent_kernel[:, start:stop]``.

        Cells make their matmuls on ``recurrent_kernel`` through this method:
        the fused path's gradient then replays them from the forward pass and
        computes the kernel's gradient as one matmul over all time steps.
        """
        if self._matmul_recorder is None:
            return ops.matmul(h, self.recurrent_kernel_columns(columns))
        return self._matmul_recorder(h, lambda: self.recurrent_kernel_columns(columns), columns)

    @contextlib.contextmanager
    def matmuls_recorded(self, recorder: Callable | None) -> Iterator[None]:
        """Within this context every `recurrent_matmul` is
        ``recorder(h, read_kernel, columns)`` (the fused path's gradient records
        and replays them: `keras_rnncells.layers.recorder.MatmulRecorder`), where
        ``read_kernel()`` reads those columns: the recorder reads them once per
        loop, so that no step of a loop reads the variable."""
        outer = self._matmul_recorder
        self._matmul_recorder = recorder
        try:
            yield
        finally:
            self._matmul_recorder = outer

    def drop_recurrent(self, state: Tensor, training: bool) -> Tensor:
        """``state`` times the per-sequence recurrent dropout mask, if active."""
        if not training or self.recurrent_dropout == 0:
            return state
        return state * self.get_recurrent_dropout_mask(state).state

    # -- per-sequence masks -----------------------------------------------------
    def get_recurrent_dropout_mask(self, step_input: Tensor) -> RecurrentMasks | None:
        """The ``RecurrentMasks`` of this sequence (``None`` without recurrent
        dropout and DropConnect), drawn at the first call and cached until
        ``reset_recurrent_dropout_mask``: ``keras.layers.RNN`` and the fused
        path call it before their loop. (Keras' ``DropoutRNNCell`` caches a
        plain tensor under its own private attribute; this cache is ours.)"""
        if self._recurrent_masks is None and (
            self.recurrent_dropout > 0 or self.recurrent_dropconnect > 0
        ):
            state = kernel = None
            if self.recurrent_dropout > 0:
                state = self._create_dropout_mask(step_input, self.recurrent_dropout)
            if self.recurrent_dropconnect > 0:
                if getattr(self, "recurrent_kernel", None) is None:
                    raise ValueError(
                        "Argument `recurrent_dropconnect` needs a cell with a "
                        f"`recurrent_kernel`, {type(self).__name__} has none"
                    )
                ones = ops.ones(self.recurrent_kernel.shape, dtype=self.compute_dtype)
                kernel = keras.random.dropout(
                    ones, self.recurrent_dropconnect, seed=self.seed_generator
                )
            self._recurrent_masks = RecurrentMasks(state, kernel)
        return self._recurrent_masks

    def reset_recurrent_dropout_mask(self) -> None:
        """Forgets this sequence's recurrent masks (``keras.layers.RNN`` calls
        it after each call, as for Keras' cells)."""
        self._recurrent_masks = None

    @contextlib.contextmanager
    def recurrent_masks_bound(self, masks: RecurrentMasks | None) -> Iterator[None]:
        """Within this context ``masks`` are the recurrent masks in force
        (``None``: none, as outside training). A step must run under it: the
        generic path binds them per step in ``call``, the fused path (which
        passes them into its compiled loop) while it traces a step."""
        outer = self._recurrent_masks
        self._recurrent_masks = masks
        try:
            yield
        finally:
            self._recurrent_masks = outer

    # -- library kernels: cuDNN, ONNX's native recurrences -----------------------
    def cudnn_conflicts(self) -> list[str]:
        """The settings of this cell (``name=value``) that Keras' cuDNN kernel
        of its class does not compute."""
        return [
            f"{name}={getattr(self, name)}"
            for name in ("recurrent_dropout", "recurrent_dropconnect")
            if getattr(self, name) > 0
        ]

    def onnx_conflicts(self) -> list[str]:
        """The settings of this cell (``name=value``) that ONNX's native op of
        its class does not compute (the exporter writes float32 nodes)."""
        dtype = self.compute_dtype
        return [] if dtype == "float32" else [f"dtype={dtype!r}"]

    def fused_training_conflicts(self) -> list[str]:
        """The settings of this cell (``name=value``) that the fused path
        cannot train (its gradient replays steps): e.g. statistics updated at
        every step. `keras_rnncells.RNN` trains such a cell on Keras' loop."""
        return []

    def cudnn_ineligibility(self) -> str | None:
        """Why Keras' cuDNN kernel cannot compute this cell; ``None`` when it can."""
        return kernel_ineligibility(self, "cuDNN kernel", self.cudnn_kernel, self.cudnn_conflicts)

    def cudnn_compatible(self) -> bool:
        """Whether this cell's configuration has a cuDNN kernel."""
        return self.cudnn_ineligibility() is None

    def onnx_ineligibility(self) -> str | None:
        """Why ONNX's native op (``onnx_op``: GRU, LSTM, RNN) cannot compute
        this cell; ``None`` when it can."""
        declared = self.onnx_op is not None and "onnx_op" in vars(type(self))
        return kernel_ineligibility(self, "native ONNX op", declared, self.onnx_conflicts)

    def cudnn_loop(self, sequences, initial_state, mask, go_backwards, return_sequences):
        raise NotImplementedError

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            dropout=self.dropout,
            recurrent_dropout=self.recurrent_dropout,
            recurrent_dropconnect=self.recurrent_dropconnect,
            seed=self.seed,
        )
        return config


def kernel_ineligibility(
    cell: AbstractRNNCell, kernel: str, exists: bool, conflicts: Callable[[], list[str]]
) -> str | None:
    """``None`` where ``kernel`` (a library's kernel of the cell's class, if
    it ``exists``) computes ``cell``, else a sentence saying why not, naming
    the ``conflicts()`` (settings the kernel does not compute)."""
    name = type(cell).__name__
    if not exists:
        return f"{name} has no {kernel}"
    found = conflicts()
    return f"{name} with {', '.join(found)} has no {kernel}" if found else None


def activation_name(activation: Any) -> str:
    return getattr(activation, "__name__", repr(activation))


def stepping_class(cls: type) -> type:
    """The class that gives ``cls`` its ``step``."""
    return next(klass for klass in cls.__mro__ if "step" in vars(klass))


def steps_through_combine(cls: type) -> bool:
    """Whether ``cls``'s ``step`` comes from a class that declares
    ``uses_combine`` (`DenseGatesCell`)."""
    return bool(vars(stepping_class(cls)).get("uses_combine", False))


class DenseGatesCell(AbstractRNNCell):
    """A cell whose weights are one ``kernel``, ``recurrent_kernel`` and ``bias``
    with ``len(blocks)`` column blocks of ``units`` each (DESIGN.md's layout).

    ``project_inputs`` is ``x @ kernel + bias`` split into the blocks;
    subclasses write ``step`` and list their blocks in ``blocks``.

    ``layer_norm=True`` layer-normalizes the gate pre-activations as the
    LN-LSTM of Ba, Kiros & Hinton 2016 ("Layer normalization"):
    ``LN(W x; g_x, b_x) + LN(U h; g_h, b_h) + b``, each ``LN`` over the whole
    product (every block of ``W x``; the columns of each ``recurrent_matmul``),
    with the added weights ``input_norm_gain``, ``input_norm_bias`` (columns of
    ``kernel``) and ``recurrent_norm_gain``, ``recurrent_norm_bias`` (columns
    of ``recurrent_kernel``), created after ``bias``. (The paper's LN-LSTM also
    normalizes ``c_t`` before its output ``tanh``; this option does not.)
    Cells with their own ``project_inputs`` opt in through
    ``supports_layer_norm``.

    ``batch_norm=True`` is recurrent batch normalization (Cooijmans, Ballas,
    Laurent, Gülçehre & Courville 2016, "Recurrent batch normalization"): the
    input and recurrent products are batch-normalized separately, and a cell
    with a separate cell state (``normalizes_cell_state``: LSTM and its
    variants) normalizes that state before its output nonlinearity. For the
    LSTM:

    .. math::

        (i, f, c, o)_t &= BN(W_h h_{t-1}; γ_h, 0) + BN(W_x x_t; γ_x, 0) + b \\\\
        c_t &= σ(f_t) ⊙ c_{t-1} + σ(i_t) ⊙ \\tanh(\\tilde c_t) \\\\
        h_t &= σ(o_t) ⊙ \\tanh(BN(c_t; γ_c, β_c)) \\\\
        BN(x; γ, β) &= β + γ ⊙ (x - μ) / \\sqrt{σ^2 + 10^{-3}}

    ``c_t`` itself is carried un-normalized. Each ``BN`` is per column: of
    ``W x`` (every block, before the bias), of each ``recurrent_matmul``'s
    columns (before any bias the cell adds after it, e.g. the GRU's ``b'``)
    and of ``c_t``. Its weights, created after ``bias``: ``input_norm_gamma``,
    ``recurrent_norm_gamma`` (and ``cell_norm_gamma``, ``cell_norm_beta``),
    γ initialized to 0.1 and β to 0, and the non-trainable
    ``{input,recurrent,cell}_moving_mean`` and ``..._moving_variance``, one row
    per time step: (``batch_norm_steps``, columns).

    Statistics are per time step: the cell carries one more state, last in
    ``state_size``, (batch, 1): the step index of each row, counting from 0
    (``get_initial_state``), at most ``batch_norm_steps - 1``, whose statistics
    every later step reuses. A masked step keeps every state, the index
    included, so a row's index counts its unmasked steps (a left-padded row
    starts at step 0 with its first token). In training the mean and variance
    are those of the batch rows at the same index (all rows, without
    padding), over the rows unmasked at this step where the layer binds the
    mask (``batch_norm_bound``: `keras_rnncells.RNN` does; plain
    ``keras.layers.RNN`` passes the cell no mask, so there a masked row counts
    in the statistics of its index, and the step 0 it runs once more to learn
    the output's shape updates step 0's averages a second time), and each
    index's moving averages are
    updated (momentum 0.99, as ``keras.layers.BatchNormalization``); in
    inference (``training=False``) the moving averages are used. Because
    training updates variables at every step, `keras_rnncells.RNN` trains such
    a cell on Keras' loop (``fused_training_conflicts``); inference runs on
    every path. A 16-bit compute dtype holds the index exactly up to 256
    (bfloat16) or 2048 (float16) steps, so ``batch_norm_steps`` is bounded
    there. ``batch_norm`` and ``layer_norm`` exclude each other.

    Only cells with gates take ``recurrent_activation`` (`GatedCell`); the
    others refuse it as Keras refuses an unknown argument.

    ``uses_combine``: declared True by a class whose ``step`` makes every
    pre-activation as ``combine(projected block, recurrent term)``, the hook
    through which multiplicative integration (cells/mi.py) changes a cell; MI
    refuses a cell whose ``step`` comes from a class without it.
    """

    blocks: tuple[str, ...] = ()
    uses_combine: ClassVar[bool] = False
    # Whether ``batch_norm`` normalizes a separate cell state (the class's
    # ``step`` passes it through ``normalize_cell_state``).
    normalizes_cell_state: ClassVar[bool] = False
    # Set only by this class's own context managers (``batch_norm=True``):
    # what this step's normalizations read, and the rows unmasked at it.
    _batch_norm_step: BatchNormStep | None = None
    _batch_norm_rows: BatchNormRows = BatchNormRows()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        with_step_counter(cls)

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        recurrent_initializer: Any = "orthogonal",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        recurrent_regularizer: Any = None,
        bias_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        layer_norm: bool = False,
        batch_norm: bool = False,
        batch_norm_steps: int = 100,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.layer_norm = bool(layer_norm)
        self.batch_norm = check_bool("batch_norm", batch_norm)
        self.batch_norm_steps = check_positive_int("batch_norm_steps", batch_norm_steps)
        for name in ("layer_norm", "batch_norm"):
            if getattr(self, name) and not self.supports_layer_norm():
                raise ValueError(
                    f"Argument `{name}=True` needs a cell whose input matmul goes "
                    f"through `input_matmul`; {type(self).__name__} has its own "
                    "`project_inputs`"
                )
        if self.layer_norm and self.batch_norm:
            raise ValueError(
                "Arguments `batch_norm=True` and `layer_norm=True` exclude each other; "
                "pass one of them"
            )
        exact = EXACT_COUNTS.get(keras.backend.standardize_dtype(self.compute_dtype))
        if self.batch_norm and exact is not None and self.batch_norm_steps > exact:
            raise ValueError(
                f"Argument `batch_norm_steps` must be at most {exact} with compute dtype "
                f"{self.compute_dtype!r} (the step index state counts exactly that far), "
                f"received: {batch_norm_steps!r}"
            )
        self.use_bias = bool(use_bias)
        set_keras_objects(
            self,
            activation=(activation, activations.get),
            kernel_initializer=(kernel_initializer, initializers.get),
            recurrent_initializer=(recurrent_initializer, initializers.get),
            bias_initializer=(bias_initializer, initializers.get),
            kernel_regularizer=(kernel_regularizer, regularizers.get),
            recurrent_regularizer=(recurrent_regularizer, regularizers.get),
            bias_regularizer=(bias_regularizer, regularizers.get),
            kernel_constraint=(kernel_constraint, constraints.get),
            recurrent_constraint=(recurrent_constraint, constraints.get),
            bias_constraint=(bias_constraint, constraints.get),
        )

    @property
    def state_size(self) -> int | list[int]:
        return self.units

    @property
    def output_size(self) -> int:
        return self.units

    @property
    def width(self) -> int:
        """Number of columns of ``kernel``: one block of ``units`` per gate."""
        return len(self.blocks) * self.units

    def kernel_shape(self, input_dim: int) -> tuple[int, ...]:
        return (input_dim, self.width)

    def recurrent_kernel_shape(self) -> tuple[int, ...]:
        return (self.units, self.width)

    def bias_shape(self) -> tuple[int, ...]:
        return (self.width,)

    def bias_init(self, shape: tuple, dtype: Any = None) -> Tensor:
        return self.bias_initializer(shape, dtype=dtype)

    def build(self, input_shape: Sequence[int | None]) -> None:
        input_dim = input_shape[-1]
        if input_dim is None:
            raise ValueError(
                f"{type(self).__name__} needs a known input feature size (last "
                f"axis), received input shape {tuple(input_shape)}"
            )
        self.input_dim = input_dim
        self.kernel = self.add_weight_like("kernel", "kernel", self.kernel_shape(input_dim))
        self.recurrent_kernel = self.add_weight_like(
            "recurrent", "recurrent_kernel", self.recurrent_kernel_shape()
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight_like("bias", "bias", self.bias_shape(), self.bias_init)
        if self.layer_norm:
            self.input_norm_gain, self.input_norm_bias = self.add_layer_norm_weights(
                "input", self.kernel.shape[-1]
            )
            self.recurrent_norm_gain, self.recurrent_norm_bias = self.add_layer_norm_weights(
                "recurrent", self.recurrent_kernel.shape[-1]
            )
        if self.batch_norm:
            self.add_batch_norm_weights("input", self.kernel.shape[-1])
            self.add_batch_norm_weights("recurrent", self.recurrent_kernel.shape[-1])
            if self.normalizes_cell_state:
                self.add_batch_norm_weights("cell", self.units, beta=True)
        self.built = True

    def add_weight_like(
        self, role: str, name: str, shape: tuple, initializer: Any = None
    ) -> keras.Variable:
        """A weight named ``name`` initialized, regularized and constrained as
        ``kernel``, ``recurrent_kernel`` or ``bias`` are (``role``: "kernel",
        "recurrent" or "bias"); ``initializer`` overrides the role's."""
        initializer = initializers.get(initializer or getattr(self, f"{role}_initializer"))
        if keras.backend.standardize_dtype(self.variable_dtype) == "bfloat16":
            initializer = in_float32(initializer)
        return self.add_weight(
            shape=shape,
            name=name,
            initializer=initializer,
            regularizer=getattr(self, f"{role}_regularizer"),
            constraint=getattr(self, f"{role}_constraint"),
        )

    def add_layer_norm_weights(self, side: str, width: int) -> tuple:
        """The gain (ones) and bias (zeros) of one layer normalization."""
        return tuple(
            self.add_weight(shape=(width,), name=f"{side}_norm_{part}", initializer=initializer)
            for part, initializer in (("gain", "ones"), ("bias", "zeros"))
        )

    def add_batch_norm_weights(self, side: str, width: int, beta: bool = False) -> None:
        """``{side}_norm_gamma`` (0.1), with ``beta`` ``{side}_norm_beta`` (0),
        and the non-trainable ``{side}_moving_mean`` (0) and
        ``{side}_moving_variance`` (1), one row per statistics step."""
        parts = [("norm_gamma", (width,), initializers.Constant(BATCH_NORM_GAMMA), True)]
        if beta:
            parts.append(("norm_beta", (width,), "zeros", True))
        rows = (self.batch_norm_steps, width)
        parts += [("moving_mean", rows, "zeros", False), ("moving_variance", rows, "ones", False)]
        for part, shape, initializer, trainable in parts:
            weight = self.add_weight(
                shape=shape,
                name=f"{side}_{part}",
                initializer=initializer,
                trainable=trainable,
                autocast=trainable,  # statistics stay in the variable dtype
            )
            setattr(self, f"{side}_{part}", weight)

    @contextlib.contextmanager
    def batch_norm_bound(self, rows: Tensor | None = None, update: bool = True) -> Iterator[None]:
        """Within this context the batch statistics of a step (training with
        ``batch_norm``) are over the rows where ``rows`` (batch,) is 1, the
        rows unmasked at this step (``None``: every row), and the step updates
        the moving averages only if ``update``. `keras_rnncells.RNN` binds it
        around each step of Keras' loop, whose ``backend.rnn`` also calls the
        step once more on step 0 to learn the output's shape (not updating)."""
        outer = self._batch_norm_rows
        self._batch_norm_rows = BatchNormRows(rows, update)
        try:
            yield
        finally:
            self._batch_norm_rows = outer

    @contextlib.contextmanager
    def batch_norm_step_bound(self, bound: BatchNormStep) -> Iterator[None]:
        outer = self._batch_norm_step
        self._batch_norm_step = bound
        try:
            yield
        finally:
            self._batch_norm_step = outer

    def batch_normalized_step(
        self, step: Callable, projected: tuple, states: States, training: Any
    ) -> tuple:
        """``step`` with ``batch_norm``: the last state is the step index, read
        here and advanced (to at most ``batch_norm_steps - 1``); the projected
        input ``W x`` is normalized with that step's statistics, then biased."""
        *states, counter = as_state_list(states)
        training = bool(training)
        rows, update = self._batch_norm_rows
        index = ops.cast(counter[:, 0], "int32")
        bound = BatchNormStep(index, training, rows if training else None, training and update)
        with self.batch_norm_step_bound(bound):
            count = len(projected)
            inputs = projected[0] if count == 1 else ops.concatenate(projected, axis=-1)
            inputs = self.batch_normalize("input", inputs)
            if self.input_bias is not None:
                inputs = inputs + self.input_bias
            projected = tuple(ops.split(inputs, count, axis=-1)) if count > 1 else (inputs,)
            output, new_states = step(self, projected, states, training)
        counter = ops.minimum(counter + 1.0, float(self.batch_norm_steps - 1))
        return output, [*as_state_list(new_states), counter]

    def batch_normalize(self, side: str, x: Tensor, columns: Columns = None) -> Tensor:
        """``BN(x; γ, β)`` of the ``side`` ("input", "recurrent" or "cell") over
        its ``columns``, with the statistics of each row's step (see the class
        docstring); in training, also updates those steps' moving averages."""
        bound = self._batch_norm_step
        if bound is None:
            raise ValueError(
                f"{type(self).__name__} with batch_norm=True normalizes only within `step`, "
                "which reads the step index from the last state"
            )
        dtype = x.dtype
        stats_dtype = (
            "float64" if keras.backend.standardize_dtype(dtype) == "float64" else "float32"
        )
        x = ops.cast(x, stats_dtype)
        mean_variable = getattr(self, f"{side}_moving_mean")
        variance_variable = getattr(self, f"{side}_moving_variance")
        if bound.training:
            centered, mean, variance, counts = step_statistics(
                x, bound.index, bound.rows, self.batch_norm_steps
            )
            present = ops.cast(counts > 0, stats_dtype)[:, None] * (1.0 - BATCH_NORM_MOMENTUM)
            updates = ((mean_variable, mean), (variance_variable, variance)) if bound.update else ()
            for variable, batch in updates:
                moving = ops.cast(select_columns(variable.value, columns), stats_dtype)
                change = present * (ops.stop_gradient(batch) - moving)
                change = placed_columns(change, columns, variable.shape[-1])
                variable.assign_add(ops.cast(change, variable.dtype))
            variance = ops.take(variance, bound.index, axis=0)
        else:
            moving = [
                ops.cast(select_columns(v.value, columns), stats_dtype)
                for v in (mean_variable, variance_variable)
            ]
            centered = x - ops.take(moving[0], bound.index, axis=0)
            variance = ops.take(moving[1], bound.index, axis=0)
        normalized = ops.cast(centered * ops.rsqrt(variance + BATCH_NORM_EPSILON), dtype)
        normalized = normalized * select_columns(getattr(self, f"{side}_norm_gamma"), columns)
        beta = getattr(self, f"{side}_norm_beta", None)
        return normalized if beta is None else normalized + select_columns(beta, columns)

    def normalize_cell_state(self, c: Tensor) -> Tensor:
        """``BN(c; γ_c, β_c)`` with ``batch_norm`` (what a class that sets
        ``normalizes_cell_state`` feeds its output nonlinearity), else ``c``."""
        return self.batch_normalize("cell", c) if self.batch_norm else c

    def fused_training_conflicts(self) -> list[str]:
        return ["batch_norm=True"] if self.batch_norm else []

    @property
    def input_bias(self) -> Tensor | None:
        return self.bias

    @classmethod
    def supports_layer_norm(cls) -> bool:
        """Whether ``layer_norm`` reaches the input side: true where
        ``project_inputs`` is this class's, whose matmul is ``input_matmul``."""
        return cls.project_inputs is DenseGatesCell.project_inputs

    def input_matmul(self, inputs: Tensor) -> Tensor:
        """``inputs @ kernel``, layer-normalized with ``layer_norm`` (with
        ``batch_norm``, ``step`` normalizes it: its statistics are per step)."""
        product = input_product(inputs, self.kernel)
        if not self.layer_norm:
            return product
        return layer_normalize(product, self.input_norm_gain, self.input_norm_bias)

    def recurrent_matmul(self, h: Tensor, columns: Columns = None) -> Tensor:
        """``h @ recurrent_kernel[:, columns]``, layer-normalized over those
        columns with ``layer_norm``, batch-normalized with ``batch_norm``."""
        product = super().recurrent_matmul(h, columns)
        if self.batch_norm:
            return self.batch_normalize("recurrent", product, columns)
        if not self.layer_norm:
            return product
        gain = select_columns(self.recurrent_norm_gain, columns)
        return layer_normalize(product, gain, select_columns(self.recurrent_norm_bias, columns))

    def standard_form_conflicts(self) -> list[str]:
        """The settings (``name=value``) that leave the standard form of the
        cell's equations, the one library kernels compute: an activation other
        than tanh, layer or batch norm."""
        conflicts = []
        if activation_name(self.activation) != "tanh":
            conflicts.append(f"activation={activation_name(self.activation)!r}")
        for name in ("layer_norm", "batch_norm"):
            if getattr(self, name):
                conflicts.append(f"{name}=True")
        return conflicts

    def cudnn_conflicts(self) -> list[str]:
        bias = [] if self.use_bias else ["use_bias=False"]
        return self.standard_form_conflicts() + bias + super().cudnn_conflicts()

    def onnx_conflicts(self) -> list[str]:
        return self.standard_form_conflicts() + super().onnx_conflicts()

    def project_inputs(self, inputs: Tensor) -> tuple:
        """One ``W x + b`` per block, by `project_blocks`: a sequence takes one
        matmul per block (one split product cost 2 ms of an LSTM training step
        at batch 32, 100 steps, 128 units; benchmarks/README.md), a single step
        one matmul (the per-block form ran an MGU's ONNX Loop 2.4x slower at
        batch 64). ``layer_norm`` normalizes all blocks together: one product.
        With ``batch_norm`` the blocks are ``W x`` alone: ``step`` normalizes
        them with its step's statistics, then adds the bias."""
        count = len(self.blocks)
        if not (self.layer_norm or self.batch_norm):
            return project_blocks(inputs, self.kernel, self.input_bias, count)
        projected = self.input_matmul(inputs)
        if self.input_bias is not None and not self.batch_norm:
            projected = projected + self.input_bias
        return tuple(ops.split(projected, count, axis=-1)) if count > 1 else (projected,)

    def combine(self, projected: Tensor | None, recurrent: Tensor) -> Tensor:
        """A gate's pre-activation from its projected input block and its
        recurrent term: ``W x + b + U h``. Multiplicative integration
        (cells/mi.py) overrides it. ``projected`` is None where the portable
        loop has already added the block to the recurrent term
        (`portable_loop.joined_inputs`)."""
        return recurrent if projected is None else projected + recurrent

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            units=self.units,
            activation=activations.serialize(self.activation),
            use_bias=self.use_bias,
            kernel_initializer=initializers.serialize(self.kernel_initializer),
            recurrent_initializer=initializers.serialize(self.recurrent_initializer),
            bias_initializer=initializers.serialize(self.bias_initializer),
            kernel_regularizer=regularizers.serialize(self.kernel_regularizer),
            recurrent_regularizer=regularizers.serialize(self.recurrent_regularizer),
            bias_regularizer=regularizers.serialize(self.bias_regularizer),
            kernel_constraint=constraints.serialize(self.kernel_constraint),
            recurrent_constraint=constraints.serialize(self.recurrent_constraint),
            bias_constraint=constraints.serialize(self.bias_constraint),
            layer_norm=self.layer_norm,
            batch_norm=self.batch_norm,
            batch_norm_steps=self.batch_norm_steps,
        )
        return config


def with_step_counter(cls: type) -> None:
    """Make the ``step`` and ``state_size`` that ``cls`` defines (a
    `DenseGatesCell`) carry the step index state with ``batch_norm``: the
    class's ``step`` then sees its own states and projected inputs already
    normalized, and ``state_size`` lists the index last. Only the definition
    the instance's class resolves to acts, so a ``super()`` call is not
    counted twice."""
    own = vars(cls)
    if "step" in own:
        step = own["step"]

        @functools.wraps(step)
        def counted_step(self, projected, states, training=False):
            if not self.batch_norm or type(self).step is not counted_step:
                return step(self, projected, states, training)
            return self.batch_normalized_step(step, projected, states, training)

        cls.step = counted_step
    if isinstance(own.get("state_size"), property):
        sizes = own["state_size"].fget

        def counted_state_size(self):
            own_sizes = sizes(self)
            if not self.batch_norm or type(self).state_size is not counted:
                return own_sizes
            return [*(own_sizes if isinstance(own_sizes, (list, tuple)) else [own_sizes]), 1]

        counted = property(functools.wraps(sizes)(counted_state_size))
        cls.state_size = counted


with_step_counter(DenseGatesCell)


class GatedCell(DenseGatesCell):
    """A `DenseGatesCell` with gates: it takes ``recurrent_activation``, the
    gates' squashing function (sigmoid by default), which library kernels
    compute in its standard form only."""

    def __init__(self, units: int, recurrent_activation: Any = "sigmoid", **kwargs: Any) -> None:
        super().__init__(units, **kwargs)
        self.recurrent_activation = check_keras_object(
            "recurrent_activation", recurrent_activation, activations.get
        )

    def standard_form_conflicts(self) -> list[str]:
        conflicts = super().standard_form_conflicts()
        name = activation_name(self.recurrent_activation)
        if name != "sigmoid":
            conflicts.append(f"recurrent_activation={name!r}")
        return conflicts

    def get_config(self) -> dict:
        config = super().get_config()
        config["recurrent_activation"] = activations.serialize(self.recurrent_activation)
        return config
