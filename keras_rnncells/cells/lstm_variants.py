"""LSTM variants: peepholes, coupled gates, gate ablations, the simplified LSTM.

One configurable cell, `LSTMVariantCell`, computes them all; each published
variant is a registered subclass that presets its options.
"""

from __future__ import annotations

from typing import Any, ClassVar

import keras
from keras import constraints, initializers, ops, regularizers

from keras_rnncells.cells.dense_gates import GatedCell
from keras_rnncells.cells.registry import register_cell
from keras_rnncells.checks import set_keras_objects

GREFF = "Greff et al. 2015, LSTM: A search space odyssey"


@keras.saving.register_keras_serializable(package="keras_rnncells")
class LSTMVariantCell(GatedCell):
    """An LSTM with optional peepholes, a coupled input gate and each gate
    removable (the variants of Greff et al. 2015, "LSTM: A search space
    odyssey", and Wu & King 2016's simplified LSTM).

    .. math::

        i_t &= \\sigma(W_i x_t + U_i h_{t-1} + p_i \\odot c_{t-1} + b_i) \\\\
        f_t &= \\sigma(W_f x_t + U_f h_{t-1} + p_f \\odot c_{t-1} + b_f) \\\\
        \\tilde c_t &= \\tanh(W_c x_t + U_c h_{t-1} + b_c) \\\\
        c_t &= f_t \\odot c_{t-1} + i_t \\odot \\tilde c_t \\\\
        o_t &= \\sigma(W_o x_t + U_o h_{t-1} + p_o \\odot c_t + b_o) \\\\
        h_t &= o_t \\odot \\tanh(c_t)

    Options (the peephole terms ``p ⊙ c`` exist only with ``peephole=True``):

    * ``input_gate=False``: ``i = 1``; ``forget_gate=False``: ``f = 1``;
      ``output_gate=False``: ``o = 1``. A removed gate has no weight block.
    * ``coupled=True`` (CIFG): ``i = 1 - f``, no ``i`` block. Greff et al.
      write ``f = 1 - i``; as ``1 - σ(z) = σ(-z)`` that is the same family,
      with this ``f`` block (and peephole) the negative of their ``i``'s.
    * ``forget_bias``: the initial value of ``b_f`` (1, as Jozefowicz et al.
      2015 recommend and Keras' ``unit_forget_bias``); unused without a
      forget gate.

    With every option at its default this is `LSTMCell`: same weights, same
    numbers. States ``[h, c]``, output ``h``. ``batch_norm=True``
    (`DenseGatesCell`) normalizes ``c_t`` before the output ``tanh`` only: the
    peepholes read it un-normalized.

    Weights: ``kernel`` (input_dim, G units), ``recurrent_kernel``
    (units, G units), ``bias`` (G units,) with the column blocks of the present
    gates in the order ``i, f, c, o`` (``cell.blocks``; G = their number), then,
    with ``peephole=True``, ``peephole_kernel`` (P, units): the diagonal
    peephole weights, one row per present sigmoid gate in the order ``i, f, o``
    (not ``i`` when coupled), zeros-initialized so that the cell starts as the
    LSTM and learns how much to look at its cell.
    """

    citation = GREFF
    uses_combine = True
    normalizes_cell_state = True

    def __init__(
        self,
        units: int,
        input_gate: bool = True,
        forget_gate: bool = True,
        output_gate: bool = True,
        coupled: bool = False,
        peephole: bool = False,
        forget_bias: float = 1.0,
        peephole_initializer: Any = "zeros",
        peephole_regularizer: Any = None,
        peephole_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        if coupled and not (input_gate and forget_gate):
            raise ValueError(
                "Argument `coupled=True` derives the input gate from the forget gate and "
                "needs input_gate=True and forget_gate=True, received "
                f"input_gate={input_gate!r}, forget_gate={forget_gate!r}"
            )
        if isinstance(forget_bias, bool) or not isinstance(forget_bias, (int, float)):
            raise ValueError(f"Argument `forget_bias` must be a float, received: {forget_bias!r}")
        super().__init__(units, **kwargs)
        self.input_gate = bool(input_gate)
        self.forget_gate = bool(forget_gate)
        self.output_gate = bool(output_gate)
        self.coupled = bool(coupled)
        self.peephole = bool(peephole)
        self.forget_bias = float(forget_bias)
        set_keras_objects(
            self,
            peephole_initializer=(peephole_initializer, initializers.get),
            peephole_regularizer=(peephole_regularizer, regularizers.get),
            peephole_constraint=(peephole_constraint, constraints.get),
        )
        present = {
            "i": self.input_gate and not self.coupled,
            "f": self.forget_gate,
            "c": True,
            "o": self.output_gate,
        }
        self.blocks = tuple(name for name, kept in present.items() if kept)
        self.peephole_gates = tuple(g for g in self.blocks if g != "c") if self.peephole else ()

    @property
    def step_state_size(self) -> list[int]:
        return [self.units, self.units]

    def bias_init(self, shape, dtype=None):
        n = self.units
        return ops.concatenate(
            [
                ops.full((n,), self.forget_bias, dtype=dtype)
                if block == "f"
                else self.bias_initializer((n,), dtype=dtype)
                for block in self.blocks
            ]
        )

    def build(self, input_shape) -> None:
        super().build(input_shape)
        self.peephole_kernel = None
        if self.peephole:
            self.peephole_kernel = self.add_weight(
                shape=(len(self.peephole_gates), self.units),
                name="peephole_kernel",
                initializer=self.peephole_initializer,
                regularizer=self.peephole_regularizer,
                constraint=self.peephole_constraint,
            )

    def step(self, projected, states, context):
        h_prev, c_prev = states[0], states[1]
        inner = self.recurrent_matmul(self.drop_recurrent(h_prev, context), context)
        recurrent = ops.split(inner, len(self.blocks), axis=-1)
        pre = {b: self.combine(x, u) for b, x, u in zip(self.blocks, projected, recurrent)}

        def gate(name, cell):
            """σ of the gate's pre-activation (plus its peephole on ``cell``);
            None for an absent gate, which stands for 1."""
            if name not in pre:
                return None
            z = pre[name]
            if name in self.peephole_gates:
                z = z + self.peephole_kernel[self.peephole_gates.index(name)] * cell
            return self.recurrent_activation(z)

        f = gate("f", c_prev)
        i = 1.0 - f if self.coupled else gate("i", c_prev)
        candidate = self.activation(pre["c"])
        c = (c_prev if f is None else f * c_prev) + (candidate if i is None else i * candidate)
        o = gate("o", c)
        squashed = self.activation(self.normalize_cell_state(c, context))
        h = squashed if o is None else o * squashed
        return h, [h, c]

    def get_config(self):
        config = super().get_config()
        config.update(
            input_gate=self.input_gate,
            forget_gate=self.forget_gate,
            output_gate=self.output_gate,
            coupled=self.coupled,
            peephole=self.peephole,
            forget_bias=self.forget_bias,
            peephole_initializer=initializers.serialize(self.peephole_initializer),
            peephole_regularizer=regularizers.serialize(self.peephole_regularizer),
            peephole_constraint=constraints.serialize(self.peephole_constraint),
        )
        return config


class PresetLSTMVariantCell(LSTMVariantCell):
    """A named variant: `LSTMVariantCell` with the options in ``preset`` fixed
    (passing one of them with another value is an error); the other options
    stay free, e.g. ``CIFGLSTMCell(units, peephole=True)`` is Greff et al.'s
    CIFG, whose baseline LSTM has peepholes."""

    preset: ClassVar[dict[str, bool]] = {}

    def __init__(self, units: int, **kwargs: Any) -> None:
        for name, value in self.preset.items():
            if kwargs.setdefault(name, value) != value:
                raise ValueError(
                    f"Argument `{name}` is {value} for {type(self).__name__}, received: "
                    f"{kwargs[name]!r}; use LSTMVariantCell for other combinations"
                )
        super().__init__(units, **kwargs)


@register_cell("peephole_lstm")
class PeepholeLSTMCell(PresetLSTMVariantCell):
    """LSTM with peephole connections (Gers, Schraudolph & Schmidhuber 2002,
    "Learning precise timing with LSTM recurrent networks").

    .. math::

        i_t &= \\sigma(W_i x_t + U_i h_{t-1} + p_i \\odot c_{t-1} + b_i) \\\\
        f_t &= \\sigma(W_f x_t + U_f h_{t-1} + p_f \\odot c_{t-1} + b_f) \\\\
        c_t &= f_t \\odot c_{t-1} + i_t \\odot \\tanh(W_c x_t + U_c h_{t-1} + b_c) \\\\
        o_t &= \\sigma(W_o x_t + U_o h_{t-1} + p_o \\odot c_t + b_o) \\\\
        h_t &= o_t \\odot \\tanh(c_t)

    Weights: `LSTMCell`'s (blocks ``i, f, c, o``, 4 units wide) then
    ``peephole_kernel`` (3, units), rows ``p_i, p_f, p_o``, zeros-initialized
    (the cell starts as the LSTM). Options: see `LSTMVariantCell`.
    """

    preset: ClassVar[dict[str, bool]] = {"peephole": True}
    citation = "Gers, Schraudolph & Schmidhuber 2002, Learning precise timing with LSTM"


@register_cell("cifg_lstm")
class CIFGLSTMCell(PresetLSTMVariantCell):
    """LSTM with coupled input and forget gates, CIFG (Greff et al. 2015, "LSTM:
    A search space odyssey").

    .. math::

        f_t &= \\sigma(W_f x_t + U_f h_{t-1} + b_f), \\qquad i_t = 1 - f_t \\\\
        c_t &= f_t \\odot c_{t-1} + (1 - f_t) \\odot \\tanh(W_c x_t + U_c h_{t-1} + b_c) \\\\
        h_t &= \\sigma(W_o x_t + U_o h_{t-1} + b_o) \\odot \\tanh(c_t)

    Weights: blocks ``f, c, o`` (3 units wide); ``peephole=True`` adds
    ``peephole_kernel`` (2, units), rows ``p_f, p_o``. Options: see
    `LSTMVariantCell`.
    """

    preset: ClassVar[dict[str, bool]] = {"coupled": True}


@register_cell("lstm_no_input_gate")
class LSTMNoInputGateCell(PresetLSTMVariantCell):
    """LSTM without input gate, NIG (Greff et al. 2015, "LSTM: A search space
    odyssey").

    .. math::

        f_t &= \\sigma(W_f x_t + U_f h_{t-1} + b_f) \\\\
        c_t &= f_t \\odot c_{t-1} + \\tanh(W_c x_t + U_c h_{t-1} + b_c) \\\\
        h_t &= \\sigma(W_o x_t + U_o h_{t-1} + b_o) \\odot \\tanh(c_t)

    Weights: blocks ``f, c, o`` (3 units wide); ``peephole=True`` adds
    ``peephole_kernel`` (2, units), rows ``p_f, p_o``. Options: see
    `LSTMVariantCell`.
    """

    preset: ClassVar[dict[str, bool]] = {"input_gate": False}


@register_cell("lstm_no_forget_gate")
class LSTMNoForgetGateCell(PresetLSTMVariantCell):
    """LSTM without forget gate, NFG (Greff et al. 2015, "LSTM: A search space
    odyssey"; the original LSTM of Hochreiter & Schmidhuber 1997).

    .. math::

        c_t &= c_{t-1} + \\sigma(W_i x_t + U_i h_{t-1} + b_i)
            \\odot \\tanh(W_c x_t + U_c h_{t-1} + b_c) \\\\
        h_t &= \\sigma(W_o x_t + U_o h_{t-1} + b_o) \\odot \\tanh(c_t)

    Weights: blocks ``i, c, o`` (3 units wide); ``peephole=True`` adds
    ``peephole_kernel`` (2, units), rows ``p_i, p_o``. ``forget_bias`` is
    unused. Options: see `LSTMVariantCell`.
    """

    preset: ClassVar[dict[str, bool]] = {"forget_gate": False}


@register_cell("lstm_no_output_gate")
class LSTMNoOutputGateCell(PresetLSTMVariantCell):
    """LSTM without output gate, NOG (Greff et al. 2015, "LSTM: A search space
    odyssey").

    .. math::

        i_t &= \\sigma(W_i x_t + U_i h_{t-1} + b_i) \\\\
        f_t &= \\sigma(W_f x_t + U_f h_{t-1} + b_f) \\\\
        c_t &= f_t \\odot c_{t-1} + i_t \\odot \\tanh(W_c x_t + U_c h_{t-1} + b_c) \\\\
        h_t &= \\tanh(c_t)

    Weights: blocks ``i, f, c`` (3 units wide); ``peephole=True`` adds
    ``peephole_kernel`` (2, units), rows ``p_i, p_f``. Options: see
    `LSTMVariantCell`.
    """

    preset: ClassVar[dict[str, bool]] = {"output_gate": False}


@register_cell("slstm")
class SLSTMCell(PresetLSTMVariantCell):
    """Simplified LSTM, S-LSTM (Wu & King 2016, "Investigating gated recurrent
    networks for speech synthesis"): the forget gate alone, coupled to the
    input, and no output gate.

    .. math::

        f_t &= \\sigma(W_f x_t + U_f h_{t-1} + b_f) \\\\
        c_t &= f_t \\odot c_{t-1} + (1 - f_t) \\odot \\tanh(W_c x_t + U_c h_{t-1} + b_c) \\\\
        h_t &= \\tanh(c_t)

    States ``[h, c]`` as every LSTM here (``h = tanh(c)`` is redundant but keeps
    the LSTM state contract, so S-LSTM states plug in wherever LSTM states
    do), output ``h``. Weights: blocks ``f, c`` (2 units wide, half an LSTM);
    ``peephole=True`` adds ``peephole_kernel`` (1, units), row ``p_f``.
    Options: see `LSTMVariantCell`.
    """

    preset: ClassVar[dict[str, bool]] = {"coupled": True, "output_gate": False}
    citation = "Wu & King 2016, Investigating gated recurrent networks for speech synthesis"
