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

from collections.abc import Sequence
from typing import Any

import keras
from keras import activations, constraints, initializers, ops, regularizers

# Keras 3 keeps its dropout-mask cache in this mixin. Subclassing it makes
# ``keras.layers.RNN`` create our masks once per sequence, before its loop.
from keras.src.layers.rnn.dropout_rnn_cell import DropoutRNNCell

Tensor = Any
States = list


def check_positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"Argument `{name}` must be a positive integer, received: {value!r}")
    return value


def check_rate(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"Argument `{name}` must be a float in [0, 1), received: {value!r}")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"Argument `{name}` must be a float in [0, 1), received: {value!r}")
    return float(value)


def as_state_list(states: Any) -> list:
    return list(states) if isinstance(states, (list, tuple)) else [states]


class AbstractRNNCell(DropoutRNNCell, keras.layers.Layer):
    """Base class of every recurrent cell of this package.

    Subclasses define ``state_size``, ``output_size``, ``project_inputs`` and
    ``step``. Input dropout (``dropout``) is applied by the caller to the raw
    input before projection, one mask per sequence; recurrent dropout
    (``recurrent_dropout``, variational: one mask per sequence) is applied by
    ``step`` through ``drop_recurrent``.

    ``citation`` is a short reference (authors, year, title) shown by
    ``rnncells cells`` and README's table.
    """

    citation: str = ""

    def __init__(
        self,
        dropout: float = 0.0,
        recurrent_dropout: float = 0.0,
        seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.dropout = check_rate("dropout", dropout)
        self.recurrent_dropout = check_rate("recurrent_dropout", recurrent_dropout)
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
        if training and self.dropout > 0:
            inputs = inputs * self.get_dropout_mask(inputs)
        return self.step(self.project_inputs(inputs), as_state_list(states), training)

    # -- the fast split -------------------------------------------------------
    def project_inputs(self, inputs: Tensor) -> tuple:
        """Input-side matmuls for ``inputs`` of shape ``(..., input_dim)``."""
        raise NotImplementedError

    def step(self, projected: tuple, states: States, training: bool = False) -> tuple:
        """One time step: returns ``(output, new_states)``."""
        raise NotImplementedError

    def drop_recurrent(self, state: Tensor, training: bool) -> Tensor:
        """``state`` times the per-sequence recurrent dropout mask, if active."""
        if not training or self.recurrent_dropout == 0:
            return state
        return state * self.get_recurrent_dropout_mask(state)

    # -- cuDNN ------------------------------------------------------------------
    def cudnn_compatible(self) -> bool:
        """Whether this cell's configuration has a cuDNN kernel."""
        return False

    def cudnn_loop(self, sequences, initial_state, mask, go_backwards, return_sequences):
        raise NotImplementedError

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            dropout=self.dropout, recurrent_dropout=self.recurrent_dropout, seed=self.seed
        )
        return config


class DenseGatesCell(AbstractRNNCell):
    """A cell whose weights are one ``kernel``, ``recurrent_kernel`` and ``bias``
    with ``len(blocks)`` column blocks of ``units`` each (DESIGN.md's layout).

    ``project_inputs`` is ``x @ kernel + bias`` split into the blocks;
    subclasses write ``step`` and list their blocks in ``blocks``.
    """

    blocks: tuple[str, ...] = ()

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        recurrent_activation: Any = "sigmoid",
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
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

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
        self.kernel = self.add_weight(
            shape=(input_dim, self.width),
            name="kernel",
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, self.width),
            name="recurrent_kernel",
            initializer=self.recurrent_initializer,
            regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                shape=self.bias_shape(),
                name="bias",
                initializer=self.bias_init,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        self.built = True

    @property
    def input_bias(self) -> Tensor | None:
        return self.bias

    def project_inputs(self, inputs: Tensor) -> tuple:
        projected = ops.matmul(inputs, self.kernel)
        if self.input_bias is not None:
            projected = projected + self.input_bias
        if len(self.blocks) == 1:
            return (projected,)
        return tuple(ops.split(projected, len(self.blocks), axis=-1))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            units=self.units,
            activation=activations.serialize(self.activation),
            recurrent_activation=activations.serialize(self.recurrent_activation),
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
        )
        return config
