"""Multiplicative integration for the Elman RNN, the GRU and the LSTM."""

from __future__ import annotations

from typing import Any

from keras import initializers, ops

from keras_rnncells.cells.dense_gates import (
    DenseGatesCell,
    stepping_class,
    steps_through_combine,
)
from keras_rnncells.cells.gru import GRUCell
from keras_rnncells.cells.lstm import LSTMCell
from keras_rnncells.cells.projection import input_product
from keras_rnncells.cells.registry import register_cell
from keras_rnncells.cells.simple import SimpleRNNCell
from keras_rnncells.checks import set_keras_objects

CITATION = (
    "Wu, Zhang, Zhang, Bengio & Salakhutdinov 2016, "
    "On multiplicative integration with recurrent neural networks"
)
GATING_VECTORS = ("alpha", "beta1", "beta2")


class MultiplicativeIntegration(DenseGatesCell):
    """Multiplicative integration (Wu et al. 2016): every gate block's
    pre-activation ``W x + U h + b`` becomes

    .. math::

        \\alpha \\odot W x \\odot U h + \\beta_1 \\odot U h + \\beta_2 \\odot W x + b
        = (\\alpha \\odot W x + \\beta_1) \\odot U h + (\\beta_2 \\odot W x + b)

    with learned gating vectors ``α, β₁, β₂`` of ``width = blocks × units``.
    ``α = 0, β₁ = β₂ = 1`` is the additive cell. The right-hand form is what
    runs: both brackets are input-side, so ``project_inputs`` computes them
    (each projected block is the pair ``(α⊙Wx + β₁, β₂⊙Wx + b)``) and
    ``combine`` is one multiply-add per step.

    Mixed in front of a dense-gate cell (``class C(MultiplicativeIntegration,
    GRUCell)``), it keeps that cell's equations, weights and ``step``: only
    ``project_inputs`` and ``combine`` change. That holds for a cell whose
    ``step`` makes every pre-activation through ``combine``, which its class
    declares with ``uses_combine = True`` (SimpleRNN, Jordan, GRU, LSTM and the
    LSTM variants); mixed with any other (MGU, MUT1-3, SGU, SCRN, MuFuRU) the
    class definition raises a ``TypeError``. No cuDNN kernel or native ONNX op
    computes it.

    Initial values: α = 1, β₁ = β₂ = 0.5 (``alpha_initializer="ones"``;
    ``beta1_initializer`` and ``beta2_initializer`` of ``None`` mean
    ``Constant(0.5)``; any Keras initializer is accepted). We could not check these
    against the paper's text with the sources at hand, so take them as this
    package's choice: the second-order term starts at full weight and each
    first-order term at half.
    """

    citation = CITATION
    cudnn_kernel = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        mro = cls.__mro__
        cell = mro[mro.index(MultiplicativeIntegration) + 1]
        stepper = stepping_class(cls)
        if not steps_through_combine(cls):
            raise TypeError(
                f"{cls.__name__}: multiplicative integration cannot be mixed with "
                f"{cell.__name__}, whose step ({stepper.__name__}.step) does not make its "
                "pre-activations through `combine`, the hook MI changes (a class whose step "
                "does declares `uses_combine = True`, e.g. GRUCell)"
            )

    def __init__(
        self,
        units: int,
        alpha_initializer: Any = "ones",
        beta1_initializer: Any = None,
        beta2_initializer: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(units, **kwargs)
        half = initializers.Constant(0.5)
        set_keras_objects(
            self,
            alpha_initializer=(alpha_initializer, initializers.get),
            beta1_initializer=(beta1_initializer or half, initializers.get),
            beta2_initializer=(beta2_initializer or half, initializers.get),
        )

    def build(self, input_shape) -> None:
        super().build(input_shape)
        for name in GATING_VECTORS:
            vector = self.add_weight(
                shape=(self.width,), name=name, initializer=getattr(self, f"{name}_initializer")
            )
            setattr(self, name, vector)

    def project_inputs(self, inputs):
        wx = input_product(inputs, self.kernel)
        scale = self.alpha * wx + self.beta1
        offset = self.beta2 * wx
        if self.input_bias is not None:
            offset = offset + self.input_bias
        count = len(self.blocks)
        return tuple(
            zip(ops.split(scale, count, axis=-1), ops.split(offset, count, axis=-1), strict=True)
        )

    def combine(self, projected, recurrent):
        scale, offset = projected
        return scale * recurrent + offset

    def get_config(self) -> dict:
        config = super().get_config()
        for name in GATING_VECTORS:
            initializer = getattr(self, f"{name}_initializer")
            config[f"{name}_initializer"] = initializers.serialize(initializer)
        return config


@register_cell("mi_rnn")
class MIRNNCell(MultiplicativeIntegration, SimpleRNNCell):
    """Elman RNN with multiplicative integration (Wu, Zhang, Zhang, Bengio &
    Salakhutdinov 2016, "On multiplicative integration with recurrent neural
    networks"), their MI-RNN:

    .. math::

        h_t = \\phi(\\alpha \\odot W x_t \\odot U h_{t-1}
              + \\beta_1 \\odot U h_{t-1} + \\beta_2 \\odot W x_t + b)

    ``phi = activation`` (tanh). Weights: those of `SimpleRNNCell` (``kernel``
    W, ``recurrent_kernel`` U, ``bias`` b, one block ``h``), then ``alpha``,
    ``beta1``, ``beta2`` (units,). See `MultiplicativeIntegration` for the
    initial values and how the step is computed.
    """


@register_cell("mi_gru")
class MIGRUCell(MultiplicativeIntegration, GRUCell):
    """GRU with multiplicative integration (Wu, Zhang, Zhang, Bengio &
    Salakhutdinov 2016, "On multiplicative integration with recurrent neural
    networks"), their MI-GRU. With ``MI(a, u) = α⊙a⊙u + β₁⊙u + β₂⊙a + b``
    (per block):

    .. math::

        z_t &= \\sigma(\\mathrm{MI}(W_z x_t, U_z h_{t-1})) \\\\
        r_t &= \\sigma(\\mathrm{MI}(W_r x_t, U_r h_{t-1})) \\\\
        \\tilde h_t &= \\tanh(\\mathrm{MI}(W_h x_t, r_t \\odot (U_h h_{t-1} + b'_h)))
            \\quad\\text{(reset\\_after=True)} \\\\
        \\tilde h_t &= \\tanh(\\mathrm{MI}(W_h x_t, U_h (r_t \\odot h_{t-1})))
            \\quad\\text{(reset\\_after=False)} \\\\
        h_t &= z_t \\odot h_{t-1} + (1 - z_t) \\odot \\tilde h_t

    The reset gate acts where it acts in `GRUCell`: MI integrates ``W_h x``
    with the whole recurrent term the GRU would have added to it.
    ``reset_after=True`` (the default, as `GRUCell`) keeps one recurrent
    matmul per step; there every ``U h`` term also carries its recurrent bias
    ``b'`` (the bias' second row, Keras' layout). ``reset_after=False`` is
    Cho et al.'s original form.

    Weights: those of `GRUCell` (``kernel``, ``recurrent_kernel``, ``bias``,
    blocks ``z, r, h``, Keras' layout), then ``alpha``, ``beta1``, ``beta2``
    (3 units,), blocks ``z, r, h``. See `MultiplicativeIntegration` for the
    initial values and how the step is computed.
    """


@register_cell("mi_lstm")
class MILSTMCell(MultiplicativeIntegration, LSTMCell):
    """LSTM with multiplicative integration (Wu, Zhang, Zhang, Bengio &
    Salakhutdinov 2016, "On multiplicative integration with recurrent neural
    networks"), their MI-LSTM. With ``MI(a, u) = α⊙a⊙u + β₁⊙u + β₂⊙a + b``
    (per block):

    .. math::

        i_t &= \\sigma(\\mathrm{MI}(W_i x_t, U_i h_{t-1})) \\\\
        f_t &= \\sigma(\\mathrm{MI}(W_f x_t, U_f h_{t-1})) \\\\
        \\tilde c_t &= \\tanh(\\mathrm{MI}(W_c x_t, U_c h_{t-1})) \\\\
        o_t &= \\sigma(\\mathrm{MI}(W_o x_t, U_o h_{t-1})) \\\\
        c_t &= f_t \\odot c_{t-1} + i_t \\odot \\tilde c_t \\\\
        h_t &= o_t \\odot \\tanh(c_t)

    States ``[h, c]``. Weights: those of `LSTMCell` (``kernel``,
    ``recurrent_kernel``, ``bias``, blocks ``i, f, c, o``, Keras' layout;
    ``unit_forget_bias`` sets ``b_f = 1``), then ``alpha``, ``beta1``,
    ``beta2`` (4 units,), blocks ``i, f, c, o``. See
    `MultiplicativeIntegration` for the initial values and how the step is
    computed.
    """
