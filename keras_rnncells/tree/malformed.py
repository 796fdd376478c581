"""What a tree layer does with a malformed row: an error wherever one can be
raised, NaN where none can."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

Tensor = Any


def refuse_malformed(outputs: list[Tensor], problems: list[tuple[Tensor, str]]) -> list[Tensor]:
    """For each ``(bad, message)`` (``bad``: one bool per row): when running
    eagerly a ``ValueError`` with ``message`` and the bad rows; in a graph
    (``model.fit``, a served SavedModel) an ``InvalidArgumentError`` when it
    runs. The ``outputs`` (batch-major) are returned with NaN in every bad
    row, which is what an ONNX runtime shows, as tf2onnx drops assertions."""
    for bad, message in problems:
        if tf.executing_eagerly():
            rows = np.flatnonzero(np.asarray(bad)).tolist()
            if rows:
                raise ValueError(f"{message} {rows}")
        else:
            tf.debugging.Assert(
                tf.logical_not(tf.reduce_any(bad)), [message, tf.where(bad)[:, 0]], summarize=10
            )
    bad_rows = tf.reduce_any(tf.stack([bad for bad, _ in problems], axis=-1), axis=-1)
    return [
        tf.where(
            tf.reshape(bad_rows, [-1] + [1] * (output.shape.rank - 1)),
            tf.constant(np.nan, output.dtype),
            output,
        )
        for output in outputs
    ]
