"""The dense-gate cells: one ``kernel``, ``recurrent_kernel`` and ``bias`` in
column blocks (`DenseGatesCell`), and those with gates (`GatedCell`).

Their options: ``layer_norm`` (here) and ``batch_norm``
(`keras_rnncells.cells.batch_norm.RecurrentBatchNorm`, mixed in).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, ClassVar

from keras import activations, ops

from keras_rnncells.cells.base import activation_name, as_state_list
from keras_rnncells.cells.batch_norm import STEP_INDEX_SIZE, RecurrentBatchNorm
from keras_rnncells.cells.context import StepContext, Tensor
from keras_rnncells.cells.dense_weights import DenseWeightsCell
from keras_rnncells.cells.projection import (
    Columns,
    input_product,
    layer_normalize,
    project_blocks,
    select_columns,
)
from keras_rnncells.checks import check_keras_object


def stepping_class(cls: type) -> type:
    """The class that gives ``cls`` its ``step``."""
    return next(klass for klass in cls.__mro__ if "step" in vars(klass))


def steps_through_combine(cls: type) -> bool:
    """Whether ``cls``'s ``step`` comes from a class that declares
    ``uses_combine`` (`DenseGatesCell`)."""
    return bool(vars(stepping_class(cls)).get("uses_combine", False))


class DenseGatesCell(RecurrentBatchNorm, DenseWeightsCell):
    """A cell whose weights are one ``kernel``, ``recurrent_kernel`` and ``bias``
    with ``len(blocks)`` column blocks of ``units`` each (DESIGN.md's layout).
    The options of ``kernel`` and ``bias`` are `DenseWeightsCell`'s; this
    class adds the ``recurrent_*`` ones (initializer, regularizer, constraint).

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

    ``batch_norm=True`` is recurrent batch normalization (Cooijmans et al.
    2016), `keras_rnncells.cells.batch_norm.RecurrentBatchNorm`: the input
    and recurrent products normalized with per-step statistics, and the cell
    state of a class with ``normalizes_cell_state``. Its step index is one
    more state, (batch, 1), last in ``state_size``: a subclass declares the
    states its ``step`` reads and returns as ``step_state_size`` (``units`` by
    default), and ``state_size`` adds the index. ``batch_norm`` and
    ``layer_norm`` exclude each other.

    Only cells with gates take ``recurrent_activation`` (`GatedCell`); the
    others refuse it as Keras refuses an unknown argument.

    ``uses_combine``: declared True by a class whose ``step`` makes every
    pre-activation as ``combine(projected block, recurrent term)``, the hook
    through which multiplicative integration (cells/mi.py) changes a cell; MI
    refuses a cell whose ``step`` comes from a class without it.
    """

    uses_combine: ClassVar[bool] = False

    def __init__(
        self,
        units: int,
        recurrent_initializer: Any = "orthogonal",
        recurrent_regularizer: Any = None,
        recurrent_constraint: Any = None,
        layer_norm: bool = False,
        batch_norm: bool = False,
        batch_norm_steps: int = 100,
        batch_norm_momentum: float = 0.99,
        **kwargs: Any,
    ) -> None:
        super().__init__(units, **kwargs)
        self.layer_norm = bool(layer_norm)
        self.configure_batch_norm(batch_norm, batch_norm_steps, batch_norm_momentum)
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
        if self.batch_norm and type(self).state_size is not DenseGatesCell.state_size:
            raise ValueError(
                f"Argument `batch_norm=True` needs a cell that declares its step's states "
                f"as `step_state_size` (the step index state is added after them); "
                f"{type(self).__name__} overrides `state_size`"
            )
        self.set_role_options(
            "recurrent", recurrent_initializer, recurrent_regularizer, recurrent_constraint
        )

    @property
    def step_state_size(self) -> int | list[int]:
        """The sizes of the states that ``step`` reads and returns: ``units``
        (a subclass with other states declares its own)."""
        return self.units

    @property
    def state_size(self) -> int | list[int]:
        """``step_state_size``, then with ``batch_norm`` the step index state
        (batch, 1) that `RecurrentBatchNorm.advance` reads and advances."""
        sizes = self.step_state_size
        if not self.batch_norm:
            return sizes
        return [*as_state_list(sizes), STEP_INDEX_SIZE]

    def kernel_shape(self, input_dim: int) -> tuple[int, ...]:
        return (input_dim, self.width)

    def recurrent_kernel_shape(self) -> tuple[int, ...]:
        return (self.units, self.width)

    def bias_shape(self) -> tuple[int, ...]:
        return (self.width,)

    def bias_init(self, shape: tuple, dtype: Any = None) -> Tensor:
        return self.bias_initializer(shape, dtype=dtype)

    def build(self, input_shape: Sequence[int | None]) -> None:
        self.input_dim = input_dim = self.known_input_dim(input_shape)
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
        self.build_batch_norm()
        self.built = True

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
        """``inputs @ kernel``, layer-normalized with ``layer_norm`` (with
        ``batch_norm``, ``advance`` normalizes it: its statistics are per step)."""
        product = input_product(inputs, self.kernel)
        if not self.layer_norm:
            return product
        return layer_normalize(product, self.input_norm_gain, self.input_norm_bias)

    def recurrent_matmul(self, h: Tensor, context: StepContext, columns: Columns = None) -> Tensor:
        """``h @ recurrent_kernel[:, columns]``, layer-normalized over those
        columns with ``layer_norm``, batch-normalized with ``batch_norm``."""
        product = super().recurrent_matmul(h, context, columns)
        if self.batch_norm:
            return self.batch_normalize("recurrent", product, context, columns)
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
        With ``batch_norm`` the blocks are ``W x`` alone: ``advance`` normalizes
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
            **self.role_config("recurrent"),
            layer_norm=self.layer_norm,
            batch_norm=self.batch_norm,
            batch_norm_steps=self.batch_norm_steps,
            batch_norm_momentum=self.batch_norm_momentum,
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

    def keras_cudnn(
        self,
        kernel: str,
        sequences: Tensor,
        states: Sequence[Tensor],
        mask: Tensor | None,
        go_backwards: bool,
        return_sequences: bool,
        **options: Any,
    ) -> tuple:
        """Keras' ``gru`` or ``lstm`` (``kernel``) of its TensorFlow backend,
        which runs cuDNN's kernel, on this cell's weights and activations:
        ``(last_output, outputs, new_states)``. The backend module is imported
        by its name: ``keras.src.backend.tensorflow`` binds ``rnn`` to the
        module's function of that name. ``options``: the kernel's own
        (the GRU's ``reset_after``)."""
        backend = importlib.import_module("keras.src.backend.tensorflow.rnn")
        return getattr(backend, kernel)(
            sequences,
            *states,
            mask,
            kernel=self.kernel,
            recurrent_kernel=self.recurrent_kernel,
            bias=self.bias,
            activation=self.activation,
            recurrent_activation=self.recurrent_activation,
            return_sequences=return_sequences,
            go_backwards=go_backwards,
            **options,
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config["recurrent_activation"] = activations.serialize(self.recurrent_activation)
        return config
