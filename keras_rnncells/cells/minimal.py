"""The minimal GRU and LSTM of Feng et al. 2024: gates that read the input only."""

from __future__ import annotations

from typing import Any

from keras import ops

from keras_rnncells.cells.context import Tensor
from keras_rnncells.cells.linear import LinearRecurrenceCell
from keras_rnncells.cells.registry import register_cell
from keras_rnncells.checks import check_bool

CITATION = "Feng et al. 2024, Were RNNs all we needed?"


def positive_g(x: Tensor) -> Tensor:
    """Feng et al.'s ``g``: ``x + 0.5`` for ``x ≥ 0``, ``sigmoid(x)`` otherwise
    (continuous, positive, increasing)."""
    return ops.where(x >= 0, x + 0.5, ops.sigmoid(x))


class MinimalCell(LinearRecurrenceCell):
    """What minGRU and minLSTM share: the candidate ``h~ = φ(W_h x + b_h)``,
    φ the ``activation`` (linear by default, as in the paper), or
    ``g(φ(W_h x + b_h))`` with ``log_space_form=True``."""

    def __init__(self, units: int, log_space_form: bool = False, **kwargs: Any) -> None:
        super().__init__(units, **kwargs)
        self.log_space_form = check_bool("log_space_form", log_space_form)

    def candidate(self, x_h: Tensor) -> Tensor:
        candidate = self.activation(x_h)
        return positive_g(candidate) if self.log_space_form else candidate

    def get_config(self) -> dict:
        config = super().get_config()
        config["log_space_form"] = self.log_space_form
        return config


@register_cell("min_gru")
class MinGRUCell(MinimalCell):
    """Minimal GRU (Feng, Tung, Ahmed, Bengio & Hajimirsadeghi 2024, "Were RNNs
    all we needed?"): a GRU whose update gate and candidate read the input
    only, so its recurrence is linear in ``h``.

    .. math::

        z_t &= \\sigma(W_z x_t + b_z) \\\\
        \\tilde h_t &= W_h x_t + b_h \\\\
        h_t &= (1 - z_t) \\odot h_{t-1} + z_t \\odot \\tilde h_t

    ``log_space_form=True`` uses the paper's log-space variant of the
    candidate, ``h~_t = g(W_h x_t + b_h)`` with ``g(x) = x + 0.5`` for
    ``x ≥ 0`` and ``σ(x)`` otherwise, which keeps ``h`` positive so the paper
    can scan in log space. It is an option, not the default: this package's
    scan (`implementation="scan"`) multiplies the coefficients in linear
    space, in chunks, with no division, which is stable without it (products
    of gates in (0, 1) can only underflow to 0, which is their value), so the
    plain form of the paper's equations is kept.

    ``activation`` (default linear, the paper's) is applied to the candidate.

    Weights: ``kernel`` (input_dim, 2 units), ``bias`` (2 units,), column
    blocks ``z, h``; no recurrent kernel (a third of a GRU's parameters at
    equal input and state sizes). State: ``h`` (units).
    """

    blocks = ("z", "h")
    citation = CITATION

    def coefficients(self, blocks):
        x_z, x_h = blocks
        z = ops.sigmoid(x_z)
        return 1.0 - z, z * self.candidate(x_h)


@register_cell("min_lstm")
class MinLSTMCell(MinimalCell):
    """Minimal LSTM (Feng, Tung, Ahmed, Bengio & Hajimirsadeghi 2024, "Were
    RNNs all we needed?"): forget and input gates that read the input only,
    normalized to sum to one (the paper's time-independent form), and no
    output gate or cell state apart from ``h``.

    .. math::

        f_t &= \\sigma(W_f x_t + b_f), \\quad i_t = \\sigma(W_i x_t + b_i) \\\\
        f'_t &= \\frac{f_t}{f_t + i_t}, \\quad i'_t = \\frac{i_t}{f_t + i_t} \\\\
        \\tilde h_t &= W_h x_t + b_h \\\\
        h_t &= f'_t \\odot h_{t-1} + i'_t \\odot \\tilde h_t

    ``f'`` is computed as ``σ(log σ(W_f x + b_f) − log σ(W_i x + b_i))`` (and
    ``i' = σ`` of the negated difference), equal to the ratio but finite where
    both gates underflow. ``log_space_form=True`` puts the candidate through
    ``g`` as in `MinGRUCell` (which see for why it is not the default);
    ``activation`` (default linear) is applied to the candidate.

    Weights: ``kernel`` (input_dim, 3 units), ``bias`` (3 units,), column
    blocks ``f, i, h``; no recurrent kernel. State: ``h`` (units).
    """

    blocks = ("f", "i", "h")
    citation = CITATION

    def coefficients(self, blocks):
        x_f, x_i, x_h = blocks
        difference = ops.log_sigmoid(x_f) - ops.log_sigmoid(x_i)
        return ops.sigmoid(difference), ops.sigmoid(-difference) * self.candidate(x_h)
