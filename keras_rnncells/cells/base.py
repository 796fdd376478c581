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
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, NamedTuple

import keras
import tensorflow as tf
from keras import activations, constraints, initializers, ops, regularizers

# Keras 3 keeps its dropout-mask cache in this mixin. Subclassing it makes
# ``keras.layers.RNN`` create our masks once per sequence, before its loop.
from keras.src.layers.rnn.dropout_rnn_cell import DropoutRNNCell

from keras_rnncells.checks import (
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


LAYER_NORM_EPSILON = 1e-3


def affine_blocks(inputs: Tensor, kernels: Sequence, biases: Sequence) -> tuple:
    """``inputs @ kernel + bias`` for each kernel (and bias, or None) over the last
    axis of ``inputs`` (any rank): the inputs flattened to 2-D once, then one
    matmul and one ``BiasAdd`` per block, whose gradient is TensorFlow's fused
    ``BiasAddGrad`` (a broadcasting add over a 3-D product is differentiated by
    a slower ``Sum`` over two axes)."""
    flat = tf.reshape(inputs, (-1, inputs.shape[-1]))
    leading = tf.shape(inputs)[:-1]
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


def layer_normalize(x: Tensor, gain: Tensor, bias: Tensor) -> Tensor:
    """Layer normalization over the last axis (Ba, Kiros & Hinton 2016):
    ``gain * (x - mean) / sqrt(var + 1e-3) + bias``."""
    mean = ops.mean(x, axis=-1, keepdims=True)
    variance = ops.var(x, axis=-1, keepdims=True)
    return (x - mean) * ops.rsqrt(variance + LAYER_NORM_EPSILON) * gain + bias


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
        kernel = self.recurrent_kernel_columns(columns)
        if self._matmul_recorder is None:
            return ops.matmul(h, kernel)
        return self._matmul_recorder(h, kernel, columns)

    @contextlib.contextmanager
    def matmuls_recorded(self, recorder: Callable | None) -> Iterator[None]:
        """Within this context every `recurrent_matmul` is
        ``recorder(h, kernel, columns)`` (the fused path's gradient records and
        replays them: `keras_rnncells.layers.fused.MatmulRecorder`)."""
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

    Only cells with gates take ``recurrent_activation`` (`GatedCell`); the
    others refuse it as Keras refuses an unknown argument.

    ``uses_combine``: declared True by a class whose ``step`` makes every
    pre-activation as ``combine(projected block, recurrent term)``, the hook
    through which multiplicative integration (cells/mi.py) changes a cell; MI
    refuses a cell whose ``step`` comes from a class without it.
    """

    blocks: tuple[str, ...] = ()
    uses_combine: ClassVar[bool] = False

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
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.layer_norm = bool(layer_norm)
        if self.layer_norm and not self.supports_layer_norm():
            raise ValueError(
                "Argument `layer_norm=True` needs a cell whose input matmul goes "
                f"through `input_matmul`; {type(self).__name__} has its own "
                "`project_inputs`"
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

    @property
    def input_bias(self) -> Tensor | None:
        return self.bias

    @classmethod
    def supports_layer_norm(cls) -> bool:
        """Whether ``layer_norm`` reaches the input side: true where
        ``project_inputs`` is this class's, whose matmul is ``input_matmul``."""
        return cls.project_inputs is DenseGatesCell.project_inputs

    def input_matmul(self, inputs: Tensor) -> Tensor:
        """``inputs @ kernel``, layer-normalized with ``layer_norm``."""
        product = ops.matmul(inputs, self.kernel)
        if not self.layer_norm:
            return product
        return layer_normalize(product, self.input_norm_gain, self.input_norm_bias)

    def recurrent_matmul(self, h: Tensor, columns: Columns = None) -> Tensor:
        """``h @ recurrent_kernel[:, columns]``, layer-normalized over those
        columns with ``layer_norm``."""
        product = super().recurrent_matmul(h, columns)
        if not self.layer_norm:
            return product
        gain = select_columns(self.recurrent_norm_gain, columns)
        return layer_normalize(product, gain, select_columns(self.recurrent_norm_bias, columns))

    def standard_form_conflicts(self) -> list[str]:
        """The settings (``name=value``) that leave the standard form of the
        cell's equations, the one library kernels compute: an activation other
        than tanh, layer norm."""
        conflicts = []
        if activation_name(self.activation) != "tanh":
            conflicts.append(f"activation={activation_name(self.activation)!r}")
        if self.layer_norm:
            conflicts.append("layer_norm=True")
        return conflicts

    def cudnn_conflicts(self) -> list[str]:
        bias = [] if self.use_bias else ["use_bias=False"]
        return self.standard_form_conflicts() + bias + super().cudnn_conflicts()

    def onnx_conflicts(self) -> list[str]:
        return self.standard_form_conflicts() + super().onnx_conflicts()

    def project_inputs(self, inputs: Tensor) -> tuple:
        """One ``W x + b`` per block. A sequence (the fused path's time-major
        projection) takes one matmul per block over its columns of the kernel:
        splitting one product would copy the whole projected sequence, and its
        gradient would concatenate it again (2 ms of an LSTM training step at
        batch 32, 100 steps, 128 units; benchmarks/README.md). A single step
        (Keras' loop, ONNX's Loop) takes one matmul and a split of its small
        product: fewer ops per step (the per-block form ran an MGU's ONNX Loop
        2.4x slower at batch 64). ``layer_norm`` normalizes all blocks together:
        one product."""
        count = len(self.blocks)
        if self.layer_norm or len(inputs.shape) == 2:
            projected = self.input_matmul(inputs)
            if self.input_bias is not None:
                projected = projected + self.input_bias
            return tuple(ops.split(projected, count, axis=-1)) if count > 1 else (projected,)
        kernels = ops.split(self.kernel, count, axis=-1)
        biases = [None] * count if self.input_bias is None else ops.split(self.input_bias, count)
        return affine_blocks(inputs, kernels, biases)

    def combine(self, projected: Tensor, recurrent: Tensor) -> Tensor:
        """A gate's pre-activation from its projected input block and its
        recurrent term: ``W x + b + U h``. Multiplicative integration
        (cells/mi.py) overrides it."""
        return projected + recurrent

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
        )
        return config


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
