"""Recurrent batch normalization (Cooijmans, Ballas, Laurent, Gülçehre &
Courville 2016, "Recurrent batch normalization"): the ``batch_norm=True``
option of the dense-gate cells, as the mixin `RecurrentBatchNorm`.

Everything the option adds to a step is on this screen: the step index state
read and advanced, the projected inputs normalized (`RecurrentBatchNorm.advance`),
the normalization itself with its per-step statistics (`batch_normalize`),
and the weights. `keras_rnncells.cells.dense_gates.DenseGatesCell` mixes it
in and calls it at three places: ``build`` (`build_batch_norm`),
``recurrent_matmul`` (the recurrent side) and ``state_size`` (the index
state, last).
"""

from __future__ import annotations

from typing import ClassVar

import keras
from keras import initializers, ops

from keras_rnncells.cells.base import as_state_list
from keras_rnncells.cells.context import StepContext, Tensor
from keras_rnncells.cells.projection import Columns, placed_columns, select_columns
from keras_rnncells.checks import check_bool, check_float, check_positive_int

BATCH_NORM_EPSILON = 1e-3
BATCH_NORM_GAMMA = 0.1  # Cooijmans et al. 2016, section 4
# The size of the step index state (batch, 1), the last of ``state_size``.
STEP_INDEX_SIZE = 1
# The largest integer each 16-bit float counts to exactly: the bound on the
# step index state in that compute dtype.
EXACT_COUNTS = {"float16": 2048, "bfloat16": 256}


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


class RecurrentBatchNorm:
    """Recurrent batch normalization, mixed into a dense-gate cell.

    The input and recurrent products are batch-normalized separately, and a
    cell with a separate cell state (``normalizes_cell_state``: LSTM and its
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
    and of ``c_t``. Its weights, created after the cell's others:
    ``input_norm_gamma``, ``recurrent_norm_gamma`` (and ``cell_norm_gamma``,
    ``cell_norm_beta``), γ initialized to 0.1 and β to 0, and the
    non-trainable ``{input,recurrent,cell}_moving_mean`` and
    ``..._moving_variance``, one row per time step: (``batch_norm_steps``,
    columns).

    Statistics are per time step: the cell carries one more state, last in
    ``state_size``, (batch, 1): the step index of each row, counting from 0
    (``get_initial_state``), at most ``batch_norm_steps - 1``, whose
    statistics every later step reuses. `advance` reads it, runs the class's
    ``step`` on the states before it, and advances it. A masked step keeps
    every state, the index included, so a row's index counts its unmasked
    steps (a left-padded row starts at step 0 with its first token). In
    training the mean and variance are those of the batch rows at the same
    index (all rows, without padding), over the rows unmasked at this step
    where the layer's loop says which (``context.statistics_rows``:
    `keras_rnncells.RNN` does; plain ``keras.layers.RNN`` passes the cell no
    mask, so there a masked row counts in the statistics of its index, and the
    step 0 it runs once more to learn the output's shape updates step 0's
    averages a second time), and each index's moving averages are updated
    (``batch_norm_momentum``, 0.99 as ``keras.layers.BatchNormalization``'s) unless
    ``context.update_statistics`` is False; in inference
    (``context.training`` False) the moving averages are used. Because
    training updates variables at every step, `keras_rnncells.RNN` trains such
    a cell on Keras' loop (`fused_training_conflicts`); inference runs on
    every path. A 16-bit compute dtype holds the index exactly up to 256
    (bfloat16) or 2048 (float16) steps, so ``batch_norm_steps`` is bounded
    there.

    The host class (`DenseGatesCell`) provides ``kernel``,
    ``recurrent_kernel``, ``units``, ``input_bias`` (added after ``BN(W x)``:
    its ``project_inputs`` leaves ``W x`` unbiased with ``batch_norm``) and
    ``step``, and calls `configure_batch_norm` and `build_batch_norm`.
    """

    # Whether ``batch_norm`` normalizes a separate cell state (the class's
    # ``step`` passes it through ``normalize_cell_state``).
    normalizes_cell_state: ClassVar[bool] = False
    batch_norm: bool = False
    batch_norm_steps: int = 100
    batch_norm_momentum: float = 0.99  # as keras.layers.BatchNormalization's

    def configure_batch_norm(
        self, batch_norm: bool, batch_norm_steps: int, batch_norm_momentum: float
    ) -> None:
        """Checks and sets the ``batch_norm``, ``batch_norm_steps`` and
        ``batch_norm_momentum`` arguments."""
        self.batch_norm = check_bool("batch_norm", batch_norm)
        self.batch_norm_steps = check_positive_int("batch_norm_steps", batch_norm_steps)
        self.batch_norm_momentum = check_float("batch_norm_momentum", batch_norm_momentum, "[0, 1)")
        exact = EXACT_COUNTS.get(keras.backend.standardize_dtype(self.compute_dtype))
        if self.batch_norm and exact is not None and self.batch_norm_steps > exact:
            raise ValueError(
                f"Argument `batch_norm_steps` must be at most {exact} with compute dtype "
                f"{self.compute_dtype!r} (the step index state counts exactly that far), "
                f"received: {batch_norm_steps!r}"
            )

    def build_batch_norm(self) -> None:
        """The weights of the input, recurrent (and cell state) normalizations,
        with ``batch_norm``; called by ``build`` after the cell's own weights."""
        if not self.batch_norm:
            return
        self.add_batch_norm_weights("input", self.kernel.shape[-1])
        self.add_batch_norm_weights("recurrent", self.recurrent_kernel.shape[-1])
        if self.normalizes_cell_state:
            self.add_batch_norm_weights("cell", self.units, beta=True)

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

    def advance(self, projected: tuple, states: list, context: StepContext) -> tuple:
        """One step with ``batch_norm``: the last state is the step index,
        read here (``context.statistics_index`` for the step) and advanced,
        to at most ``batch_norm_steps - 1``; the projected input ``W x`` is
        normalized with that step's statistics, then biased; the class's
        ``step`` runs on the other states. Without ``batch_norm``: the
        cell's ``advance``."""
        if not self.batch_norm:
            return super().advance(projected, states, context)
        *states, counter = states
        context = context._replace(statistics_index=ops.cast(counter[:, 0], "int32"))
        count = len(projected)
        inputs = projected[0] if count == 1 else ops.concatenate(projected, axis=-1)
        inputs = self.batch_normalize("input", inputs, context)
        if self.input_bias is not None:
            inputs = inputs + self.input_bias
        projected = tuple(ops.split(inputs, count, axis=-1)) if count > 1 else (inputs,)
        output, new_states = super().advance(projected, states, context)
        counter = ops.minimum(counter + 1.0, float(self.batch_norm_steps - 1))
        return output, [*as_state_list(new_states), counter]

    def batch_normalize(
        self, side: str, x: Tensor, context: StepContext, columns: Columns = None
    ) -> Tensor:
        """``BN(x; γ, β)`` of the ``side`` ("input", "recurrent" or "cell") over
        its ``columns``, with the statistics of each row's step
        (``context.statistics_index``); in training, over the rows
        ``context.statistics_rows``, also updating those steps' moving
        averages where ``context.update_statistics``."""
        index = context.statistics_index
        if index is None:
            raise ValueError(
                f"{type(self).__name__} with batch_norm=True normalizes only within "
                "`advance`, which reads the step index from the last state"
            )
        dtype = x.dtype
        stats_dtype = (
            "float64" if keras.backend.standardize_dtype(dtype) == "float64" else "float32"
        )
        x = ops.cast(x, stats_dtype)
        mean_variable = getattr(self, f"{side}_moving_mean")
        variance_variable = getattr(self, f"{side}_moving_variance")
        if context.training:
            centered, mean, variance, counts = step_statistics(
                x, index, context.statistics_rows, self.batch_norm_steps
            )
            present = ops.cast(counts > 0, stats_dtype)[:, None] * (1.0 - self.batch_norm_momentum)
            updates = (
                ((mean_variable, mean), (variance_variable, variance))
                if context.update_statistics
                else ()
            )
            for variable, batch in updates:
                moving = ops.cast(select_columns(variable.value, columns), stats_dtype)
                change = present * (ops.stop_gradient(batch) - moving)
                change = placed_columns(change, columns, variable.shape[-1])
                variable.assign_add(ops.cast(change, variable.dtype))
            variance = ops.take(variance, index, axis=0)
        else:
            moving = [
                ops.cast(select_columns(v.value, columns), stats_dtype)
                for v in (mean_variable, variance_variable)
            ]
            centered = x - ops.take(moving[0], index, axis=0)
            variance = ops.take(moving[1], index, axis=0)
        normalized = ops.cast(centered * ops.rsqrt(variance + BATCH_NORM_EPSILON), dtype)
        normalized = normalized * select_columns(getattr(self, f"{side}_norm_gamma"), columns)
        beta = getattr(self, f"{side}_norm_beta", None)
        return normalized if beta is None else normalized + select_columns(beta, columns)

    def normalize_cell_state(self, c: Tensor, context: StepContext) -> Tensor:
        """``BN(c; γ_c, β_c)`` with ``batch_norm`` (what a class that sets
        ``normalizes_cell_state`` feeds its output nonlinearity), else ``c``."""
        return self.batch_normalize("cell", c, context) if self.batch_norm else c

    def fused_training_conflicts(self) -> list[str]:
        """``batch_norm=True`` where set (statistics updated at every step),
        then the cell's other conflicts."""
        own = ["batch_norm=True"] if self.batch_norm else []
        return own + super().fused_training_conflicts()
