"""The quasi-recurrent cell of Bradbury et al. 2017, with fo-pooling."""

from __future__ import annotations

from typing import Any

from keras import ops

from keras_rnncells.cells.linear import LinearRecurrenceCell
from keras_rnncells.cells.registry import register_cell

WINDOWS = (1, 2)


@register_cell("qrnn")
class QRNNCell(LinearRecurrenceCell):
    """Quasi-recurrent cell (Bradbury, Merity, Xiong & Socher 2017,
    "Quasi-recurrent neural networks") with fo-pooling: a convolution of
    width ``window`` (k = 1 or 2) over the inputs gives every gate, and the
    only recurrence is an elementwise one.

    .. math::

        z_t &= \\tanh(W_z [x_{t-k+1}; \\dots; x_t] + b_z) \\\\
        f_t &= \\sigma(W_f [x_{t-k+1}; \\dots; x_t] + b_f) \\\\
        o_t &= \\sigma(W_o [x_{t-k+1}; \\dots; x_t] + b_o) \\\\
        c_t &= f_t \\odot c_{t-1} + (1 - f_t) \\odot z_t \\\\
        h_t &= o_t \\odot c_t

    The output is ``h_t``; the state is ``c_t`` and, with ``window=2``, the
    previous input's product with the window's older kernel rows
    (``W_{prev} x_{t-1}``, 3 units wide): what the next step adds to its own
    product, so one step at a time (streaming) computes what the whole
    sequence does. A masked step keeps both, so the step after it reads the
    last unmasked input, and an initial state of zeros means ``x_{-1} = 0``
    (the convolution's zero padding on the left).

    ``activation`` (default tanh, the paper's) is ``z``'s.

    Weights: ``kernel`` (window * input_dim, 3 units), its rows the window's
    inputs oldest first (for ``window=2``: ``x_{t-1}``'s rows, then
    ``x_t``'s), ``bias`` (3 units,), column blocks ``z, f, o``; no recurrent
    kernel.
    """

    blocks = ("z", "f", "o")
    default_activation = "tanh"
    citation = "Bradbury et al. 2017, Quasi-recurrent neural networks"

    def __init__(self, units: int, window: int = 1, **kwargs: Any) -> None:
        if isinstance(window, bool) or window not in WINDOWS:
            raise ValueError(f"Argument `window` must be one of {WINDOWS}, received: {window!r}")
        self.window = int(window)
        super().__init__(units, **kwargs)

    @property
    def window_rows(self) -> int:  # type: ignore[override]
        return self.window - 1

    def coefficients(self, blocks):
        x_z, x_f, _ = blocks
        f = ops.sigmoid(x_f)
        return f, (1.0 - f) * self.activation(x_z)

    def emitted(self, blocks, c):
        return ops.sigmoid(blocks[2]) * c

    def get_config(self) -> dict:
        config = super().get_config()
        config["window"] = self.window
        return config
