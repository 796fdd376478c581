"""The structurally constrained recurrent network."""

from __future__ import annotations

import math
from typing import Any

from keras import initializers, ops

from keras_rnncells.cells.dense_gates import DenseGatesCell
from keras_rnncells.cells.projection import input_product
from keras_rnncells.cells.registry import register_cell
from keras_rnncells.checks import check_positive_int


def check_alpha(alpha: Any, learn_alpha: bool) -> float:
    """``alpha`` in [0, 1], or in (0, 1) when it is learned through its logit."""
    numeric = isinstance(alpha, (int, float)) and not isinstance(alpha, bool)
    if learn_alpha:
        valid, interval = numeric and 0.0 < alpha < 1.0, "(0, 1) with learn_alpha=True"
    else:
        valid, interval = numeric and 0.0 <= alpha <= 1.0, "[0, 1]"
    if not valid:
        raise ValueError(f"Argument `alpha` must be a float in {interval}, received: {alpha!r}")
    return float(alpha)


@register_cell("scrn")
class SCRNCell(DenseGatesCell):
    """Structurally constrained recurrent network (Mikolov, Joulin, Chopra,
    Mathieu & Ranzato 2015, "Learning longer memory in recurrent neural
    networks"): a simple recurrent network plus a slow context state ``s``
    whose recurrent matrix is fixed to a diagonal ``Q = αI`` close to identity.

    .. math::

        s_t &= (I - Q) B x_t + Q s_{t-1} \\\\
        h_t &= \\sigma(P s_t + A x_t + R h_{t-1} + b) \\\\
        y_t &= [h_t; s_t]

    ``σ = activation`` (the logistic sigmoid, as in the paper). The paper's
    output layer ``f(U h_t + V s_t)`` is a ``Dense`` on the cell output
    ``[h_t; s_t]``, so ``output_size = units + context_units``; states
    ``[h, s]``. ``b`` is not in the paper's equations (its inputs are one-hot
    words): ``use_bias=False`` gives the published form.

    ``Q = alpha I`` is fixed (the paper: α = 0.95, its diagonal not trained).
    With ``learn_alpha=True`` each context unit learns its own
    ``α_j = sigmoid(a_j)``, which keeps it in (0, 1); ``a`` starts at
    ``logit(alpha)``, so at initialization the cell equals the fixed one.
    ``context_units`` defaults to ``max(1, units // 5)``, the ratio of the
    authors' example run (100 hidden, 20 context units; the paper's tables use
    10 to 40 context units with 40 to 300 hidden ones).

    Weights (``get_weights()`` order): ``kernel`` (input_dim, units +
    context_units), column blocks ``h`` (``A``) then ``s`` (``B``);
    ``recurrent_kernel`` ``R`` (units, units); ``bias`` ``b`` (units,) if
    ``use_bias``; ``context_kernel`` ``P`` (context_units, units), initialized,
    regularized and constrained as ``kernel``; ``alpha_logit`` ``a``
    (context_units,) if ``learn_alpha``. ``recurrent_dropout`` drops
    ``h_{t-1}`` before ``R``. ``A x_t + b`` and ``(1 - α) B x_t`` are the
    projected inputs.
    """

    blocks = ("h", "s")
    # Its step for the complexity measures (keras_rnncells.analysis.complexity):
    # the context s (from x and itself) beside h (from x, s and itself); y = [h; s].
    recurrence_edges = (
        ("x", "s", 0),
        ("s", "s", 1),
        ("x", "h", 0),
        ("s", "h", 0),
        ("h", "h", 1),
    )
    recurrence_outputs = ("h", "s")
    citation = "Mikolov et al. 2015, Learning longer memory in recurrent neural networks"

    def __init__(
        self,
        units: int,
        context_units: int | None = None,
        alpha: float = 0.95,
        learn_alpha: bool = False,
        activation: Any = "sigmoid",
        **kwargs: Any,
    ) -> None:
        super().__init__(units, activation=activation, **kwargs)
        if context_units is None:
            context_units = max(1, self.units // 5)
        self.context_units = check_positive_int("context_units", context_units)
        self.learn_alpha = bool(learn_alpha)
        self.alpha = check_alpha(alpha, self.learn_alpha)

    @property
    def step_state_size(self) -> list[int]:
        return [self.units, self.context_units]

    @property
    def output_size(self) -> int:
        return self.units + self.context_units

    @property
    def width(self) -> int:
        return self.units + self.context_units

    def recurrent_kernel_shape(self) -> tuple[int, ...]:
        return (self.units, self.units)

    def bias_shape(self) -> tuple[int, ...]:
        return (self.units,)

    def build(self, input_shape) -> None:
        super().build(input_shape)
        self.context_kernel = self.add_weight_like(
            "kernel", "context_kernel", (self.context_units, self.units)
        )
        if self.learn_alpha:
            self.alpha_logit = self.add_weight(
                shape=(self.context_units,),
                name="alpha_logit",
                initializer=initializers.Constant(math.log(self.alpha / (1.0 - self.alpha))),
            )

    def decay(self) -> Any:
        """The diagonal of ``Q``: the float ``alpha``, or ``sigmoid(alpha_logit)``."""
        return ops.sigmoid(self.alpha_logit) if self.learn_alpha else self.alpha

    def project_inputs(self, inputs):
        x_h, x_s = ops.split(input_product(inputs, self.kernel), [self.units], axis=-1)
        if self.bias is not None:
            x_h = x_h + self.bias
        return x_h, (1.0 - self.decay()) * x_s

    def step(self, projected, states, context):
        x_h, x_s = projected
        h_prev, s_prev = states[0], states[1]
        s = x_s + self.decay() * s_prev
        h_in = self.drop_recurrent(h_prev, context)
        recurrent = self.recurrent_matmul(h_in, context)
        h = self.activation(x_h + recurrent + ops.matmul(s, self.context_kernel))
        return ops.concatenate([h, s], axis=-1), [h, s]

    def get_config(self):
        config = super().get_config()
        config.update(
            context_units=self.context_units, alpha=self.alpha, learn_alpha=self.learn_alpha
        )
        return config
