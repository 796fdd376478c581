"""The cell contract: `AbstractRNNCell`, what every cell of this package is.

`AbstractRNNCell` is the Keras 2 ``AbstractRNNCell`` contract (which Keras 3
dropped) plus the split that makes cells fast:

* ``project_inputs(x)`` computes every input-side matmul, for one step
  ``(B, in)`` or a whole time-major sequence ``(T, B, in)``, and returns one
  tensor per weight block;
* ``step(projected, states, context)`` advances one time step given the
  projected input of that step and its `StepContext` (training, the
  sequence's recurrent masks, the fused path's recorder);
* loops call ``advance(projected, states, context)``: ``step`` here, with
  what a part of the cell adds around every step (the batch-norm step index,
  `keras_rnncells.cells.batch_norm`);
* ``call(x, states, training)`` builds the context and is
  ``advance(step_inputs(x), states, context)``, so every cell also runs
  inside plain ``keras.layers.RNN``.

The dense-gate cells are in `keras_rnncells.cells.dense_gates`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import keras
from keras import ops

# Keras 3 keeps its dropout-mask cache in this mixin (no public name).
# Subclassing it makes ``keras.layers.RNN`` create our masks once per
# sequence, before its loop.
from keras.src.layers.rnn.dropout_rnn_cell import DropoutRNNCell

from keras_rnncells.cells.context import RecurrentMasks, StepContext, Tensor
from keras_rnncells.cells.projection import Columns, select_columns
from keras_rnncells.checks import check_input, check_rate

States = list


def as_state_list(states: Any) -> list:
    """``states`` as a list: a list or tuple as is, one tensor as ``[states]``."""
    return list(states) if isinstance(states, (list, tuple)) else [states]


class AbstractRNNCell(DropoutRNNCell, keras.layers.Layer):
    """Base class of every recurrent cell of this package.

    Subclasses define ``state_size``, ``output_size``, ``project_inputs`` and
    ``step(projected, states, context)``. Input dropout (``dropout``) is
    applied by the caller to the raw input before projection, one mask per
    sequence; recurrent dropout (``recurrent_dropout``, variational: one mask
    per sequence) is applied by ``step`` through ``drop_recurrent``. Recurrent
    DropConnect (``recurrent_dropconnect``; Wan et al. 2013, "Regularization of
    neural networks using DropConnect", on the recurrent kernel as in Merity,
    Keskar & Socher 2017, "Regularizing and optimizing LSTM language models")
    drops entries of ``recurrent_kernel``, scaled by ``1 / (1 - rate)``, one
    mask per sequence, in every matmul made through ``recurrent_matmul``. All
    of them act in training only. The masks of a sequence are drawn and
    cached by ``get_recurrent_dropout_mask`` (Keras' protocol); a step reads
    them from its `StepContext` only.

    ``citation`` is a short reference (authors, year, title) shown by
    ``rnncells cells`` and the table of docs/cells.md.

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
    # This sequence's recurrent masks, cached by `get_recurrent_dropout_mask`
    # until `reset_recurrent_dropout_mask` (Keras' per-sequence protocol).
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
        return [
            ops.zeros((batch_size, size), dtype=self.compute_dtype)
            for size in as_state_list(self.state_size)
        ]

    def call(
        self,
        inputs: Tensor,
        states: Any,
        training: bool = False,
        statistics_rows: Tensor | None = None,
        update_statistics: bool = True,
    ) -> tuple:
        """One step of Keras' loop on ``inputs`` (batch, features): input
        dropout, ``step_inputs``, then ``advance`` in the `step_context` of
        this sequence. ``statistics_rows`` and ``update_statistics`` go into
        that context for a batch-norm step (`StepContext`; Keras' own loop
        passes neither, `keras_rnncells.RNN`'s passes the rows unmasked at
        the step). They are separate arguments, not a context: Keras refuses a
        call argument that mixes tensors and Python values."""
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
        context = self.step_context(states[0], training)._replace(
            statistics_rows=statistics_rows, update_statistics=update_statistics
        )
        return self.advance(self.step_inputs(inputs, training), states, context)

    def step_context(self, state: Tensor, training: bool = False) -> StepContext:
        """The context of a step of this sequence: ``training`` and, in
        training, the sequence's `RecurrentMasks` (``get_recurrent_dropout_mask``
        of the first state ``state``: drawn at the first step, then cached)."""
        masks = self.get_recurrent_dropout_mask(state) if training else None
        return StepContext(training=bool(training), masks=masks)

    # -- the fast split -------------------------------------------------------
    def project_inputs(self, inputs: Tensor) -> tuple:
        """Input-side matmuls for ``inputs`` of shape ``(..., input_dim)``."""
        raise NotImplementedError

    def step_inputs(self, inputs: Tensor, training: bool = False) -> tuple:
        """What ``step`` reads for ``inputs`` (one step or a time-major
        sequence): ``project_inputs(inputs)``, plus what a wrapper draws per
        step in training (``Zoneout``'s noise). Both paths call it; the fused
        path once for the whole sequence, so its gradient sees the same draws."""
        return self.project_inputs(inputs)

    def step(self, projected: tuple, states: States, context: StepContext) -> tuple:
        """One time step of the cell's equations: ``(output, new_states)``.
        Recurrent products go through ``recurrent_matmul(h, context, ...)``,
        recurrent dropout through ``drop_recurrent(state, context)``."""
        raise NotImplementedError

    def advance(self, projected: tuple, states: States, context: StepContext) -> tuple:
        """One time step as every loop runs it: ``step`` here. A part of the
        cell that acts around every step overrides it (the batch-norm step
        index, `keras_rnncells.cells.batch_norm.RecurrentBatchNorm`)."""
        return self.step(projected, states, context)

    def recurrent_kernel_columns(
        self, columns: Columns = None, masks: RecurrentMasks | None = None
    ) -> Tensor:
        """``recurrent_kernel`` (times ``masks.kernel``, the DropConnect mask,
        where given), or its columns ``start:stop`` (or several ranges, joined
        in order)."""
        kernel = self.recurrent_kernel
        if masks is not None and masks.kernel is not None:
            kernel = kernel * masks.kernel
        return select_columns(kernel, columns)

    def recurrent_matmul(self, h: Tensor, context: StepContext, columns: Columns = None) -> Tensor:
        """``h @ recurrent_kernel[:, columns]`` (DropConnect-masked by
        ``context.masks``).

        Cells make their matmuls on ``recurrent_kernel`` through this method:
        with ``context.recorder`` (the fused path) the product is
        ``recorder(h, read_kernel, columns)``, whose gradient replays it from
        the forward pass and computes the kernel's gradient as one matmul over
        all time steps; the recorder calls ``read_kernel()`` once per loop, so
        that no step of a loop reads the variable.
        """

        def read_kernel() -> Tensor:
            return self.recurrent_kernel_columns(columns, context.masks)

        if context.recorder is None:
            return ops.matmul(h, read_kernel())
        return context.recorder(h, read_kernel, columns)

    def drop_recurrent(self, state: Tensor, context: StepContext) -> Tensor:
        """``state`` times the sequence's recurrent dropout mask
        (``context.masks.state``), in training where there is one."""
        masks = context.masks
        if not context.training or masks is None or masks.state is None:
            return state
        return state * masks.state

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

    def scan_ineligibility(self) -> str | None:
        """Why ``implementation="scan"`` cannot run this cell (its state must
        advance as ``c_t = a_t * c_{t-1} + b_t`` with ``a_t``, ``b_t`` from the
        inputs only: `keras_rnncells.cells.linear.LinearRecurrenceCell`);
        ``None`` when it can."""
        return (
            f"{type(self).__name__}'s state is not a linear recurrence with "
            "coefficients from the inputs only"
        )

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
    """The name of a Keras activation (its function's ``__name__``)."""
    return getattr(activation, "__name__", repr(activation))
