"""`DenseWeightsCell`: the weight options every cell with a dense ``kernel``
and ``bias`` in column blocks shares, the gated cells (`DenseGatesCell`) and
the linear-recurrence cells (`LinearRecurrenceCell`) alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import keras
from keras import activations, constraints, initializers, regularizers

from keras_rnncells.cells.base import AbstractRNNCell
from keras_rnncells.cells.projection import in_float32
from keras_rnncells.checks import check_positive_int, set_keras_objects

# The three options a weight role ("kernel", "bias", "recurrent") takes.
ROLE_OPTIONS = (
    ("initializer", initializers),
    ("regularizer", regularizers),
    ("constraint", constraints),
)


class DenseWeightsCell(AbstractRNNCell):
    """A cell whose weights include ``kernel`` (input_dim, ``width``) and,
    with ``use_bias``, ``bias`` (``width``,), in ``len(blocks)`` column blocks
    of ``units`` each; its output has ``units`` features.

    It holds the options of those weights as Keras' dense cells take them
    (``activation``, ``use_bias``, ``kernel_*`` and ``bias_*`` initializer,
    regularizer and constraint), creates weights by role (`add_weight_like`)
    and serializes the options. A subclass with more weight roles (the
    recurrent kernel of `DenseGatesCell`) sets them with `set_role_options`
    and serializes them with `role_config`.
    """

    blocks: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.use_bias = bool(use_bias)
        set_keras_objects(self, activation=(activation, activations.get))
        self.set_role_options("kernel", kernel_initializer, kernel_regularizer, kernel_constraint)
        self.set_role_options("bias", bias_initializer, bias_regularizer, bias_constraint)

    def set_role_options(
        self, role: str, initializer: Any, regularizer: Any, constraint: Any
    ) -> None:
        """Set ``{role}_initializer``, ``_regularizer`` and ``_constraint``
        (checked: a bad one is a one-line error naming the argument)."""
        values = (initializer, regularizer, constraint)
        set_keras_objects(
            self,
            **{
                f"{role}_{option}": (value, module.get)
                for (option, module), value in zip(ROLE_OPTIONS, values)
            },
        )

    def role_config(self, role: str) -> dict:
        """The serialized ``{role}_initializer``, ``_regularizer`` and ``_constraint``."""
        return {
            f"{role}_{option}": module.serialize(getattr(self, f"{role}_{option}"))
            for option, module in ROLE_OPTIONS
        }

    @property
    def width(self) -> int:
        """Number of columns of ``kernel``: one block of ``units`` per name in ``blocks``."""
        return len(self.blocks) * self.units

    @property
    def output_size(self) -> int:
        return self.units

    def known_input_dim(self, input_shape: Sequence[int | None]) -> int:
        """The input's feature size (its last axis), which must be known to
        build the kernel."""
        input_dim = input_shape[-1]
        if input_dim is None:
            raise ValueError(
                f"{type(self).__name__} needs a known input feature size (last "
                f"axis), received input shape {tuple(input_shape)}"
            )
        return input_dim

    def add_weight_like(
        self, role: str, name: str, shape: tuple, initializer: Any = None
    ) -> keras.Variable:
        """A weight named ``name`` initialized, regularized and constrained as
        the role ``role`` ("kernel", "bias", or a subclass's, e.g.
        "recurrent") says; ``initializer`` overrides the role's. With bfloat16
        variables the initializer draws in float32 first."""
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

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            units=self.units,
            activation=activations.serialize(self.activation),
            use_bias=self.use_bias,
            **self.role_config("kernel"),
            **self.role_config("bias"),
        )
        return config
