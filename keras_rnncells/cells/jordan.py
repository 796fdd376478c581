"""Jordan's recurrent network: the state fed back is the network's output."""

from __future__ import annotations

from typing import Any

from keras import activations, ops

from keras_rnncells.cells.dense_gates import DenseGatesCell
from keras_rnncells.cells.registry import register_cell
from keras_rnncells.checks import check_keras_object, check_positive_int


@register_cell("jordan")
class JordanRNNCell(DenseGatesCell):
    """Jordan recurrent cell (Jordan 1986, "Serial order: a parallel distributed
    processing approach"; reprinted 1997): the hidden layer sees the input and
    the previous *output*, and the output is the state.

    .. math::

        h_t &= \\phi(W x_t + U y_{t-1} + b) \\\\
        y_t &= \\phi_y(V h_t + c)

    with ``phi = activation`` and ``phi_y = output_activation`` (both tanh by
    default: a bounded, zero-centred feedback; Jordan used logistic units, pass
    ``"sigmoid"`` for them). Jordan's state units also decay into themselves
    (``s_t = mu s_{t-1} + y_{t-1}``); here the state is ``y_{t-1}`` itself.

    Sizes: ``units`` is the hidden size (``h``), ``output_units`` the size of
    ``y`` (default ``units``). Output and the single state are ``y_t``.

    Weights, in ``get_weights()`` order: ``kernel`` (input_dim, units),
    ``recurrent_kernel`` (output_units, units), ``bias`` (units,) (one block,
    ``h``), then ``output_kernel`` (units, output_units) and ``output_bias``
    (output_units,). The output weights use the kernel's and the bias'
    initializer, regularizer and constraint; ``use_bias=False`` drops both biases.
    """

    blocks = ("h",)
    # Its step for the complexity measures (keras_rnncells.analysis.complexity):
    # x -> h -> y, and y back into h one step later.
    recurrence_edges = (("x", "h", 0), ("h", "y", 0), ("y", "h", 1))
    recurrence_outputs = ("y",)
    citation = "Jordan 1986, Serial order: a parallel distributed processing approach"
    uses_combine = True

    def __init__(
        self,
        units: int,
        output_units: int | None = None,
        activation: Any = "tanh",
        output_activation: Any = "tanh",
        **kwargs: Any,
    ) -> None:
        super().__init__(units, activation=activation, **kwargs)
        self.output_units = (
            self.units if output_units is None else check_positive_int("output_units", output_units)
        )
        self.output_activation = check_keras_object(
            "output_activation", output_activation, activations.get
        )

    @property
    def step_state_size(self) -> int:
        return self.output_units

    @property
    def output_size(self) -> int:
        return self.output_units

    def recurrent_kernel_shape(self) -> tuple[int, ...]:
        return (self.output_units, self.units)

    def build(self, input_shape) -> None:
        super().build(input_shape)
        self.output_kernel = self.add_weight_like(
            "kernel", "output_kernel", (self.units, self.output_units)
        )
        self.output_bias = None
        if self.use_bias:
            self.output_bias = self.add_weight_like("bias", "output_bias", (self.output_units,))

    def step(self, projected, states, context):
        (x_h,) = projected
        y_prev = self.drop_recurrent(states[0], context)
        h = self.activation(self.combine(x_h, self.recurrent_matmul(y_prev, context)))
        y = ops.matmul(h, self.output_kernel)
        if self.output_bias is not None:
            y = y + self.output_bias
        y = self.output_activation(y)
        return y, [y]

    def get_config(self):
        config = super().get_config()
        config.update(
            output_units=self.output_units,
            output_activation=activations.serialize(self.output_activation),
        )
        return config
