"""What a recurrent layer computes at every step: its output ``h`` and its gates.

A gate is an output of a cell's ``recurrent_activation`` (cells derived from
`keras_rnncells.cells.GatedCell`: GRU z, r; LSTM i, f, o; MGU f; ...). The
cells are not changed to be read: `recorded_recurrences` runs every
`keras_rnncells.RNN` layer of a forward pass through its own loop
(`keras_rnncells.layers.loop_override`), which runs the cell's steps with
``recurrent_activation`` wrapped by a recorder for the duration of the trace,
and returns what the layer's own loop returns (Keras' masking semantics:
masked steps keep the states and carry the output, or give zeros with
``zero_output_for_mask``), so the model computes what it always does.

Which block each recorded gate belongs to is read once per cell by
`gate_labels`: one probe step from zero states, under a gradient tape; a
gate's label is the block of ``cell.blocks`` (the kernel's column blocks, as
`project_inputs` returns them) whose projected input its pre-activation
depends on most. A gate ``σ(W_b x + U_b h + b_b)`` depends on ``W_b x`` with
derivative 1 and on the other blocks not at all (a peephole's path through
the cell state is scaled by the peephole weight and two derivatives below 1).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_rnncells.cells.base import AbstractRNNCell
from keras_rnncells.cells.context import StepContext
from keras_rnncells.cells.dense_gates import GatedCell
from keras_rnncells.layers.rnn import RNN, loop_override

__all__ = [
    "LayerRecord",
    "gate_labels",
    "recorded_gates",
    "recorded_recurrences",
    "recurrent_layers",
]


@dataclass
class LayerRecord:
    """One call of a recurrent layer: ``signals`` maps ``"h"`` (the output)
    and each gate's label to float32 arrays ``(batch, steps, units)``, in the
    input's time order (a ``go_backwards`` layer's steps flipped back: step
    ``t`` holds the state after reading the input from its end back to
    ``t``)."""

    layer: Any
    cell: str
    signals: dict[str, np.ndarray] = field(default_factory=dict)


@contextlib.contextmanager
def recorded_gates(cell: Any, calls: list) -> Iterator[None]:
    """Within this context every ``cell.recurrent_activation(a)`` appends
    ``(a, σ(a))`` to ``calls`` (the cell's attribute is restored after)."""
    if not isinstance(cell, GatedCell):
        yield
        return
    original = cell.recurrent_activation

    def recorder(preactivation: Any) -> Any:
        value = original(preactivation)
        calls.append((preactivation, value))
        return value

    cell.recurrent_activation = recorder
    try:
        yield
    finally:
        cell.recurrent_activation = original


def gate_labels(cell: Any) -> list[str]:
    """The block of each ``units``-wide column chunk of the cell's
    ``recurrent_activation`` calls in one step, in call order (GRU:
    ``["z", "r"]``; LSTM: ``["i", "f", "o"]``; cells without gates: ``[]``).
    See the module for how it is read."""
    return probe(cell)[0]


def probe(cell: Any) -> tuple[list[str], int]:
    """`gate_labels` and the number of ``recurrent_activation`` calls per step."""
    if not isinstance(cell, GatedCell):
        return [], 0
    units = cell.units
    x = tf.random.stateless_normal((2, cell.input_dim), seed=(1, 2), dtype=cell.compute_dtype)
    states = [ops.zeros((2, size)) for size in state_sizes(cell)]
    calls: list = []
    with tf.GradientTape(persistent=True) as tape:
        projected = cell.step_inputs(x, False)
        leaves = tf.nest.flatten(projected)
        for leaf in leaves:
            tape.watch(leaf)
        with recorded_gates(cell, calls):
            cell.advance(projected, states, StepContext())
        chunks = [
            preactivation[:, start : start + units]
            for preactivation, _ in calls
            for start in range(0, preactivation.shape[-1], units)
        ]
        sums = [tf.reduce_sum(chunk) for chunk in chunks]
    names = block_names(cell, projected)
    labels: list[str] = []
    for index, total in enumerate(sums):
        gradients = tape.gradient(total, leaves, unconnected_gradients="zero")
        by_leaf = tf.nest.pack_sequence_as(projected, [np.abs(np.asarray(g)) for g in gradients])
        # One |d a / d column| per column of each projected block, its leaves summed.
        columns = np.concatenate(
            [sum(g.mean(axis=0) for g in tf.nest.flatten(entry)) for entry in by_leaf]
        )
        strength = [columns[start : start + units].sum() for start in range(0, len(columns), units)]
        label = names[int(np.argmax(strength))] if max(strength) > 0 else f"gate{index + 1}"
        labels.append(unique(label, labels))
    del tape
    return labels, len(calls)


def block_names(cell: Any, projected: Any) -> list[str]:
    """A name per ``units``-wide column block of the projected inputs (each
    entry of ``projected`` one block or several side by side, a nested entry,
    as multiplicative integration's pairs, as wide as its first tensor): the
    cell's ``blocks`` where they fit, else ``block1``, ``block2``, ..."""
    widths = [int(tf.nest.flatten(entry)[0].shape[-1]) for entry in projected]
    chunks = sum(-(-width // cell.units) for width in widths)
    blocks = list(getattr(cell, "blocks", ()))
    if len(blocks) >= chunks:
        return blocks[:chunks]
    return blocks + [f"block{k + 1}" for k in range(len(blocks), chunks)]


def unique(label: str, taken: Sequence[str]) -> str:
    if label not in taken:
        return label
    count = 2
    while f"{label}{count}" in taken:
        count += 1
    return f"{label}{count}"


def state_sizes(cell: Any) -> list[int]:
    sizes = cell.state_size
    return list(sizes) if isinstance(sizes, (list, tuple)) else [sizes]


class RecordingLoop:
    """The ``loop_override`` of `recorded_recurrences`: one compiled scan per
    cell (a ``tf.function`` over a ``tf.while_loop``), its records kept in
    ``records``."""

    def __init__(self) -> None:
        self.records: list[LayerRecord] = []
        self.scans: dict[int, Callable] = {}
        self.labels: dict[int, list[str]] = {}
        self.calls: dict[int, int] = {}

    def __call__(self, layer: Any, sequences: Any, initial_state: Any, mask: Any, training: Any):
        cell = layer.cell
        if not isinstance(cell, AbstractRNNCell):  # a Keras cell: its own loop, unrecorded
            return keras.layers.RNN.inner_loop(layer, sequences, initial_state, mask, training)
        key = id(layer)
        if key not in self.scans:
            self.labels[key], self.calls[key] = probe(cell)
            self.scans[key] = self.scan_function(layer)
        steps = tf.shape(sequences)[1]
        if mask is None:
            mask = tf.ones(tf.stack([tf.shape(sequences)[0], steps]), tf.bool)
        states = [tf.convert_to_tensor(s, cell.compute_dtype) for s in initial_state]
        outputs, final_states, gates = self.scans[key](
            tf.convert_to_tensor(sequences, cell.compute_dtype), states, tf.cast(mask, tf.bool)
        )
        signals = {"h": outputs}
        chunks = [
            gate[..., start : start + cell.units]
            for gate in gates
            for start in range(0, gate.shape[-1], cell.units)
        ]
        signals.update(zip(self.labels[key], chunks))
        flip = layer.go_backwards
        self.records.append(
            LayerRecord(
                layer,
                type(cell).__name__,
                {
                    name: np.asarray(value[:, ::-1] if flip else value, np.float32)
                    for name, value in signals.items()
                },
            )
        )
        last_output = outputs[:, -1]
        return last_output, outputs, list(final_states)

    def scan_function(self, layer: Any) -> Callable:
        cell = layer.cell
        backwards = bool(layer.go_backwards)
        zero_output = bool(layer.zero_output_for_mask)

        @tf.function(reduce_retracing=True)
        def scan(sequences: tf.Tensor, states: list, mask: tf.Tensor) -> tuple:
            x = tf.transpose(sequences, (1, 0, 2))
            valid = tf.transpose(mask, (1, 0))
            if backwards:
                x, valid = tf.reverse(x, [0]), tf.reverse(valid, [0])
            projected = cell.step_inputs(x, False)
            steps = tf.shape(x)[0]
            output_ta = tf.TensorArray(cell.compute_dtype, size=steps)
            count = self.calls[id(layer)]
            gate_tas = [tf.TensorArray(cell.compute_dtype, size=steps) for _ in range(count)]
            previous = tf.zeros((tf.shape(x)[1], cell.output_size), cell.compute_dtype)

            def body(t, previous, states, output_ta, gate_tas):
                calls: list = []
                step_input = tf.nest.map_structure(lambda p: p[t], projected)
                with recorded_gates(cell, calls):
                    output, new_states = cell.advance(step_input, states, StepContext())
                new_states = new_states if isinstance(new_states, (list, tuple)) else [new_states]
                keep = valid[t][:, None]
                written = tf.where(keep, output, tf.zeros_like(output) if zero_output else previous)
                new_states = [tf.where(keep, n, s) for n, s in zip(new_states, states)]
                gate_tas = [ta.write(t, value) for ta, (_, value) in zip(gate_tas, calls)]
                previous = tf.where(keep, output, previous)
                return t + 1, previous, new_states, output_ta.write(t, written), gate_tas

            _, _, states, output_ta, gate_tas = tf.while_loop(
                lambda t, *_: t < steps,
                body,
                (tf.constant(0), previous, list(states), output_ta, gate_tas),
            )
            outputs = tf.transpose(output_ta.stack(), (1, 0, 2))
            gates = [tf.transpose(ta.stack(), (1, 0, 2)) for ta in gate_tas]
            return outputs, states, gates

        return scan


@contextlib.contextmanager
def recorded_recurrences() -> Iterator[list[LayerRecord]]:
    """Within this context every `keras_rnncells.RNN` layer called runs the
    recording loop (see the module); the list yielded receives one
    `LayerRecord` per layer call, in call order. Inference only: no dropout,
    no training-time noise."""
    loop = RecordingLoop()
    with loop_override(loop):
        yield loop.records


def recurrent_layers(model: Any) -> list[RNN]:
    """Every `keras_rnncells.RNN` layer reachable from ``model`` (inside
    ``Bidirectional``, encoders and decoders included), in tracking order."""
    found: list[RNN] = []
    for layer in model._flatten_layers(include_self=True, recursive=True):
        if isinstance(layer, RNN) and all(layer is not seen for seen in found):
            found.append(layer)
    return found
