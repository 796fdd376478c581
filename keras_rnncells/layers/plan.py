"""What the fused loops know of a step's recurrent products, read from one
traced step (`probe_step`): the products it makes, the column parts it uses
each in (`matmul_parts`), which of them it only adds to a projected input
(their gradients are then that input's: stored once), and which products
read a state as it is (`state_aliases`)."""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from keras_rnncells.layers.portable_loop import ColumnBlocks, scattering
from keras_rnncells.layers.recorder import MatmulRecorder, packed, traced_step


def state_aliases(matmul_inputs: list, states: list) -> list:
    """For each recurrent matmul's input, the index of the state it is (the
    same tensor: no recurrent dropout in between), or None. The forward pass
    does not save those inputs a second time; the backward pass reads them
    from the saved states."""
    return [next((j for j, s in enumerate(states) if h is s), None) for h in matmul_inputs]


class Part(NamedTuple):
    """Columns ``start:stop`` of a recurrent matmul's output. ``shared``: the
    index of the projected input the step adds these columns to, where that
    sum is the only use of both (their gradients are then equal), or None."""

    start: int
    stop: int
    shared: int | None


def sole_consumer(tensor: tf.Tensor) -> tf.Operation | None:
    consumers = tensor.consumers()
    return consumers[0] if len(consumers) == 1 else None


def other_input(op: tf.Operation, tensor: tf.Tensor) -> tf.Tensor:
    return op.inputs[1] if op.inputs[0] is tensor else op.inputs[0]


def past_biases(tensor: tf.Tensor) -> tf.Tensor:
    """Follows ``tensor`` through the biases added to it (a lower-rank operand
    of an ``AddV2`` that is its only use): the sum reached has the same
    gradient as ``tensor``."""
    op = sole_consumer(tensor)
    while op is not None and op.type == "AddV2":
        rank = other_input(op, tensor).shape.rank
        if rank is None or rank >= tensor.shape.rank:
            break
        tensor = op.outputs[0]
        op = sole_consumer(tensor)
    return tensor


def added_to(tensor: tf.Tensor, projected: list) -> int | None:
    """The index of the projected input that ``tensor`` (biases added) is added
    to, where that sum is the only use of both and their shapes are the same:
    then the gradient of one is the gradient of the other."""
    tensor = past_biases(tensor)
    op = sole_consumer(tensor)
    if op is None or op.type != "AddV2":
        return None
    other = other_input(op, tensor)
    same_shape = other.shape.rank == tensor.shape.rank and other.shape[-1] == tensor.shape[-1]
    matches = [j for j, x in enumerate(projected) if other is x and sole_consumer(x) is op]
    return matches[0] if matches and same_shape else None


def column_slice(op: tf.Operation, width: int) -> tuple[int, int] | None:
    """The columns ``(start, stop)`` a ``StridedSlice`` takes of a tensor of
    ``width`` columns, all of every other axis; None for any other op or slice."""
    if op.type != "StridedSlice" or any(
        op.get_attr(mask) for mask in ("ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
    ):
        return None
    begin, end, strides = (tf.get_static_value(tensor) for tensor in op.inputs[1:])
    if begin is None or end is None or strides is None or set(strides.tolist()) != {1}:
        return None
    last = 1 << (len(begin) - 1)
    whole = last - 1  # the bits of every other axis
    if op.get_attr("begin_mask") & whole != whole or op.get_attr("end_mask") & whole != whole:
        return None
    start = 0 if op.get_attr("begin_mask") & last else int(begin[-1])
    stop = width if op.get_attr("end_mask") & last else int(end[-1])
    start, stop = (min(max(i + width if i < 0 else i, 0), width) for i in (start, stop))
    return (start, stop) if start < stop else None


def column_pieces(tensor: tf.Tensor) -> list | None:
    """``tensor``'s uses when they take disjoint column ranges of it (one
    ``Split`` on the last axis, or ``StridedSlice`` ops): ``(start, stop,
    piece)`` in column order, or None."""
    width, consumers = tensor.shape[-1], tensor.consumers()
    if len(consumers) == 1 and consumers[0].type in ("Split", "SplitV"):
        op = consumers[0]
        axis = tf.get_static_value(op.inputs[0] if op.type == "Split" else op.inputs[2])
        if axis is None or int(axis) not in (-1, tensor.shape.rank - 1):
            return None
        bounds = np.cumsum([0] + [piece.shape[-1] for piece in op.outputs]).tolist()
        return list(zip(bounds, bounds[1:], op.outputs))
    ranges = [column_slice(op, width) for op in consumers]
    if not consumers or None in ranges:
        return None
    pieces = sorted((*columns, op.outputs[0]) for columns, op in zip(ranges, consumers))
    if any(after[0] < before[1] for before, after in itertools.pairwise(pieces)):
        return None  # overlapping slices
    return pieces


def matmul_parts(output: tf.Tensor, projected: list) -> list[Part]:
    """How the step uses a recurrent matmul's ``output`` (traced in a graph):
    the column parts it splits or slices it into (one part if it does not),
    in column order and covering every column, each with the projected input
    it is only added to, if any. The backward pass stores no gradient for such
    a part: it is that input's."""
    width = output.shape[-1]
    shared = added_to(output, projected)
    pieces = None if shared is not None else column_pieces(past_biases(output))
    if pieces is None:
        return [Part(0, width, shared)]
    parts, covered = [], 0
    for start, stop, piece in pieces:
        if start > covered:  # columns no op reads: their gradient is zero, stored all the same
            parts.append(Part(covered, start, None))
        parts.append(Part(start, stop, added_to(piece, projected)))
        covered = stop
    return parts + ([Part(covered, width, None)] if covered < width else [])


def columns_of(tensor: tf.Tensor, part: Part) -> tf.Tensor:
    """The columns of ``part`` of a recurrent matmul's output (or gradient)."""
    if part.stop - part.start == tensor.shape[-1]:
        return tensor
    return tensor[..., part.start : part.stop]


def probe_step(cell, template, px, states, recurrent_mask, training, parts, blocked=False):
    """One step traced on ``px`` and ``states`` (zeros shaped as one step) to
    find its recurrent matmuls: returns the recorder that saw them and, if
    ``parts``, each one's `matmul_parts` (a graph is needed: the portable loop
    also runs eagerly, without them). ``blocked``: products of few rows in
    column blocks (the portable loop: `ColumnBlocks`)."""
    blocked = blocked and not scattering()
    probe = MatmulRecorder(blocks=ColumnBlocks() if blocked else None)
    traced_step(cell, packed(template, px), states, probe, recurrent_mask, training)
    return probe, [matmul_parts(output, px) for output in probe.outputs] if parts else []


def sharing(parts: list, count: int) -> list:
    """For each of the ``count`` projected inputs, the (matmul, part) added to
    it, or None."""
    pairs = [(k, part) for k, each in enumerate(parts) for part in each]
    shared = {part.shared: (k, part) for k, part in pairs if part.shared is not None}
    return [shared.get(j) for j in range(count)]


def unshared(parts: list) -> list:
    """The (matmul, part) pairs not added to a projected input: their outputs
    and gradients are saved per step."""
    return [(k, part) for k, each in enumerate(parts) for part in each if part.shared is None]
