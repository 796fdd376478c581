"""What one step of a cell reads besides its projected inputs and its states.

A loop builds one `StepContext` per sequence (or per step) and hands it to
``cell.advance(projected, states, context)``; the cell's ``step`` passes it on
to ``recurrent_matmul``, ``drop_recurrent`` and the batch normalizations. The
context is immutable: a part that adds to it (the batch-norm step index)
derives a new one with ``context._replace(...)``. Nothing that a step reads
is held on the cell between calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

Tensor = Any


class RecurrentMasks(NamedTuple):
    """The per-sequence masks of a cell's recurrent connections, ``None`` where
    off: ``state`` (batch, state) for ``recurrent_dropout`` and ``kernel``
    (shaped as ``recurrent_kernel``) for ``recurrent_dropconnect``."""

    state: Tensor | None
    kernel: Tensor | None


class StepContext(NamedTuple):
    """What one step reads besides its projected inputs and states.

    * ``training``: dropout and batch statistics act (a Python bool).
    * ``masks``: this sequence's `RecurrentMasks` (``None``: none, as outside
      training): ``drop_recurrent`` multiplies the state by ``masks.state``,
      ``recurrent_matmul`` the kernel by ``masks.kernel`` (DropConnect).
    * ``recorder``: ``None``, or the fused path's recorder of recurrent
      products: every ``recurrent_matmul`` is then
      ``recorder(h, read_kernel, columns)``, where ``read_kernel()`` reads
      those columns of the (masked) kernel
      (`keras_rnncells.layers.recorder.MatmulRecorder` saves and replays
      them in the fused path's gradient).

    Recurrent batch normalization (``batch_norm=True``,
    `keras_rnncells.cells.batch_norm`) reads three more:

    * ``statistics_rows``: (batch,) 1 for the rows a training step takes its
      batch statistics over (those unmasked at this step), 0 for the others;
      ``None``: every row. The layer's loop sets it (Keras' loop in
      `keras_rnncells.RNN`).
    * ``update_statistics``: whether a training step updates the moving
      averages (False for a step whose result the loop discards).
    * ``statistics_index``: (batch,) int32, each row's statistics step. Set
      by the batch-norm ``advance`` from the step index state, for the step it
      runs; ``None`` outside a counted step.
    """

    training: bool = False
    masks: RecurrentMasks | None = None
    recorder: Callable | None = None
    statistics_rows: Tensor | None = None
    update_statistics: bool = True
    statistics_index: Tensor | None = None
