"""Recurrent layers as ONNX sees them: native GRU/LSTM/RNN nodes, or a Loop.

tf2onnx cannot convert the fused path (an XLA-compiled ``tf.function`` under
``tf.custom_gradient``: it stays a ``StatefulPartitionedCall``), and its RNN
rewriters match the per-step input matmul of Keras' own cells, which our cells
hoist out of the loop. So while a model is traced for ONNX (``onnx_tracing``),
every ``RNN`` layer takes one of two paths:

* native: a cell that ONNX's op of its class computes (a ``GRUCell``,
  ``LSTMCell`` or ``SimpleRNNCell`` whose ``onnx_ineligibility()`` is ``None``:
  tanh / sigmoid, no layer norm, float32) in a forward, not stateful layer
  emits a placeholder op (a ``tf.numpy_function``) whose inputs are already
  ONNX's ``X, W, R, B, sequence_lens, initial_h(, initial_c)`` and whose
  outputs are ONNX's ``Y, Y_h(, Y_c)``; ``native_op_handlers`` turns it into
  the ONNX node. ONNX's ``sequence_lens`` means right padding, so a mask of
  any pattern (left padding, holes, empty rows) is handled around the node by
  index gathers (`native_loop`), exact and convertible.
* generic: Keras' own ``while_loop`` (``implementation="generic"``), which
  tf2onnx converts to a ``Loop``.

Weight layouts: Keras' column blocks (GRU z, r, h; LSTM i, f, c, o) become
ONNX's row blocks (GRU z, r, h; LSTM i, o, f, c), one direction:
``W`` (1, G units, input), ``R`` (1, G units, units), ``B`` (1, 2 G units) =
input bias then recurrent bias. GRU ``reset_after=True`` is ONNX's
``linear_before_reset=1``.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

import keras
import tensorflow as tf
from keras import tree

from keras_rnncells.cells.base import AbstractRNNCell
from keras_rnncells.layers.rnn import loop_override, portable

PLACEHOLDER = "PyFunc"  # the TF op type of tf.numpy_function
# Keras block order -> ONNX block order, per ONNX op (a cell's `onnx_op`).
BLOCK_ORDER = {"GRU": (0, 1, 2), "LSTM": (0, 3, 1, 2), "RNN": (0,)}

# numpy_function token -> ONNX op and attributes. Tokens are unique per
# placeholder, so threads tracing at once never share an entry.
_placeholders: dict[str, dict[str, Any]] = {}


def native_op(layer: Any) -> tuple[str | None, str]:
    """The ONNX op of ``layer`` (``"GRU"``, ``"LSTM"``, ``"RNN"``) or ``None``,
    with the reason when ``None``: the cell's ``onnx_ineligibility()``, and
    what this exporter does not write (a backward or stateful layer)."""
    cell = layer.cell
    if isinstance(cell, AbstractRNNCell):
        reason = cell.onnx_ineligibility()
    else:
        reason = f"{type(cell).__name__} has no native ONNX op"
    unwritten = [f"{name}=True" for name in ("go_backwards", "stateful") if getattr(layer, name)]
    if unwritten:
        layer_reason = f"no native ONNX op is written for a layer with {', '.join(unwritten)}"
        reason = layer_reason if reason is None else f"{reason}; {layer_reason}"
    if reason is not None:
        return None, reason
    return cell.onnx_op, "native"


def onnx_weights(cell: Any) -> tuple:
    """``W, R, B`` in ONNX's layout (one direction) from the cell's variables."""
    order = BLOCK_ORDER[cell.onnx_op]
    units = cell.units

    def rows(matrix):  # (rows, G units) Keras columns -> (1, G units, rows) ONNX rows
        blocks = tf.split(tf.transpose(tf.convert_to_tensor(matrix)), len(order), axis=0)
        return tf.concat([blocks[i] for i in order], axis=0)[None]

    def row_bias(vector):
        blocks = tf.split(vector, len(order))
        return tf.concat([blocks[i] for i in order], axis=0)

    zeros = tf.zeros((len(order) * units,), cell.compute_dtype)
    if cell.bias is None:
        input_bias, recurrent_bias = zeros, zeros
    elif cell.onnx_op == "GRU" and cell.reset_after:
        bias = tf.convert_to_tensor(cell.bias)
        input_bias, recurrent_bias = bias[0], bias[1]
    else:
        input_bias, recurrent_bias = tf.convert_to_tensor(cell.bias), zeros
    bias = tf.concat([row_bias(input_bias), row_bias(recurrent_bias)], axis=0)[None]
    return rows(cell.kernel), rows(cell.recurrent_kernel), bias


def as_text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def not_in_tensorflow(*_: Any) -> Any:
    raise RuntimeError("this graph was traced for ONNX export only; run the ONNX model instead")


def with_zero_step(tensor, first: bool):
    """``tensor`` (B, T, F) with a step of zeros before (``first``) or after
    its steps: the slot an index points at to select nothing."""
    zero = tf.zeros_like(tensor[:, :1])
    return tf.concat([zero, tensor] if first else [tensor, zero], axis=1)


def with_zero_row(tensor):
    """``tensor`` with one more row (axis 0) of zeros."""
    zero = tf.zeros(tf.concat([[1], tf.shape(tensor)[1:]], axis=0), tensor.dtype)
    return tf.concat([tensor, zero], axis=0)


def taken(tensor, indices):
    """``tensor[b, indices[b, ...]]`` per row ``b``: a gather, never a select
    (tf2onnx turns a float ``tf.where`` into ``c * x + (1 - c) * y``, so a NaN or
    Inf in the branch not taken would leak)."""
    return tf.gather(tensor, indices, batch_dims=1)


def native_loop(layer: Any, op: str, sequences, initial_state, mask) -> tuple:
    """The layer's recurrence as one ONNX ``op`` node (placeholder in TF).

    With a mask of any pattern, each row's unmasked steps are gathered to the
    front in order, the node runs on their count (``sequence_lens``), and the
    outputs are gathered back to the steps Keras' mask semantics give them: a
    masked step repeats the last output (zeros before the first, and always
    zeros with ``zero_output_for_mask``)."""
    cell = layer.cell
    states = [tf.convert_to_tensor(s) for s in tree.flatten(initial_state)]
    lengths = None
    if mask is not None:
        mask = tf.cast(mask, tf.bool)
        steps = tf.shape(mask)[1]
        done = tf.cumsum(tf.cast(mask, tf.int32), axis=1)  # unmasked steps up to each step
        lengths = done[:, -1]
        # the j-th unmasked step is the number of steps before it; past the
        # row's count, the zero step appended at index `steps`
        rank = tf.range(steps)[None, :, None]
        source = tf.reduce_sum(tf.cast(done[:, None, :] <= rank, tf.int32), axis=2)
        sequences = taken(with_zero_step(sequences, first=False), tf.minimum(source, steps))
    # onnxruntime's GRU and LSTM kernels crash the process (abort, segfault) on
    # a batch of 0 rows: the node always gets one row of zeros more, dropped after.
    rows = tf.shape(sequences)[0]
    inputs = [tf.transpose(with_zero_row(sequences), (1, 0, 2)), *onnx_weights(cell)]
    # ONNX Runtime rejects zero lengths: run those rows one step (on zeros), then undo.
    inputs += [] if lengths is None else [tf.maximum(with_zero_row(lengths), 1)]
    inputs += [with_zero_row(s)[None] for s in states]
    dtype = sequences.dtype
    results = tf.numpy_function(
        not_in_tensorflow, inputs, [dtype] * (1 + len(states)), stateful=True, name=f"onnx_{op}"
    )
    _placeholders[as_text(results[0].op.get_attr("token"))] = {
        "op": op,
        "hidden_size": cell.units,
        "has_lengths": lengths is not None,
        "linear_before_reset": int(op == "GRU" and cell.reset_after),
    }
    units = cell.units
    y = tf.ensure_shape(results[0], (None, 1, None, units))
    outputs = tf.transpose(y[:, 0, :rows], (1, 0, 2))
    final = [tf.ensure_shape(r, (1, None, units))[0, :rows] for r in results[1:]]
    last = final[0]
    if mask is not None:
        # outputs with a zero step first: index k is the k-th unmasked step's output
        outputs = with_zero_step(outputs, first=True)
        if layer.zero_output_for_mask:
            done = done * tf.cast(mask, tf.int32)
        last = taken(outputs, done[:, -1:])[:, 0]
        outputs = taken(outputs, done)
        ran = tf.cast(lengths > 0, tf.int32)[:, None]  # empty rows keep their states
        final = [taken(tf.stack([s, f], axis=1), ran)[:, 0] for s, f in zip(states, final)]
    if not layer.return_sequences:
        outputs = last[:, None]
    return last, outputs, final


def onnx_loop(layer: Any, sequences, initial_state, mask, training) -> tuple:
    """``loop_override`` for ONNX tracing: native op where it fits, else Keras' loop."""
    op, reason = native_op(layer)
    if training:
        op, reason = None, "traced in training mode"

    traced_layers = _traced_layers.get()
    if traced_layers is not None:
        record = {"layer": layer.name, "cell": type(layer.cell).__name__}
        record.update(onnx=op or "Loop", note=reason)
        if mask is not None and op is not None:
            record["note"] = "native; masked steps compacted out (any padding pattern)"
        traced_layers[:] = [r for r in traced_layers if r["layer"] != layer.name] + [record]
    if op is None:
        return keras.layers.RNN.inner_loop(layer, sequences, initial_state, mask, training=training)
    return native_loop(layer, op, sequences, initial_state, mask)


# What each layer traced in this thread's `onnx_tracing` became (None outside).
_traced_layers: contextvars.ContextVar[list | None] = contextvars.ContextVar(
    "keras_rnncells_onnx_traced_layers", default=None
)


@contextlib.contextmanager
def onnx_tracing() -> Iterator[list[dict[str, str]]]:
    """Within this context layers trace what tf2onnx converts: no cuDNN, no
    XLA function; native GRU/LSTM/RNN placeholders or Keras' loop. Yields the
    list it fills with what each layer became (``layer``, ``cell``, ``onnx``:
    the op or ``"Loop"``, ``note``)."""
    layers: list[dict[str, str]] = []
    token = _traced_layers.set(layers)
    try:
        with portable(), loop_override(onnx_loop):
            yield layers
    finally:
        _traced_layers.reset(token)


def convert_placeholder(ctx: Any, node: Any, name: str, args: Any) -> None:
    """tf2onnx custom-op handler: a ``onnx_tracing`` placeholder -> its ONNX node."""
    token = as_text(node.get_attr_value("token"))
    if token not in _placeholders:
        raise ValueError(f"{node.name}: a tf.numpy_function tf2onnx cannot convert")
    spec = _placeholders[token]
    inputs = list(node.input)
    x, w, r, b, rest = inputs[0], inputs[1], inputs[2], inputs[3], inputs[4:]
    lengths = rest.pop(0) if spec["has_lengths"] else ""  # int32, as ONNX wants
    ctx.replace_inputs(node, [x, w, r, b, lengths, *rest])
    node.type = spec["op"]
    for attribute in ("token", "Tin", "Tout", "_output_shapes"):
        if attribute in node.attr:
            del node.attr[attribute]
    node.set_attr("hidden_size", spec["hidden_size"])
    if spec["op"] == "GRU":
        node.set_attr("linear_before_reset", spec["linear_before_reset"])


def native_op_handlers() -> dict[str, tuple]:
    """``custom_op_handlers`` for ``tf2onnx.convert.from_function``."""
    return {PLACEHOLDER: (convert_placeholder, [])}


def graph_op_types(graph: Any) -> set[str]:
    """Every op type of an ONNX graph, its subgraphs (Loop, If bodies) included."""
    types = set()
    for node in graph.node:
        types.add(node.op_type)
        for attribute in node.attribute:
            if attribute.g is not None and attribute.g.node:
                types |= graph_op_types(attribute.g)
    return types


__all__ = ["graph_op_types", "native_op", "native_op_handlers", "onnx_tracing"]
