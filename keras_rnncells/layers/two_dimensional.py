"""Recurrences over 2-D grids: the multi-dimensional RNN and PixelRNN's row LSTM.

`MultiDimensionalRNN` (Graves, Fernández & Schmidhuber 2007,
"Multi-dimensional recurrent neural networks"; the DAG-RNN of Shuai et al.
2015, "DAG-recurrent neural networks for scene labeling") sweeps a grid
``[batch, height, width, features]`` from one corner: the state at ``(i, j)``
reads the input there and the states of its two neighbours behind the sweep,
the one along the row and the one along the column. A sweep runs over the
grid's anti-diagonals, ``height + width - 1`` steps: every position of one
anti-diagonal depends on the one before only, so each step advances the
whole diagonal (``batch × height`` rows of the cell at once) where a
row-by-row loop would take ``height × width`` steps of ``batch`` rows.

`RowLSTM` (van den Oord, Kalchbrenner & Kavukcuoglu 2016, "Pixel recurrent
neural networks", §3.1) runs an LSTM down the rows, a whole row at a time,
its gates made by a 1×k convolution of the input row and a 1×k convolution
of the previous row's hidden state.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from keras import ops

from keras_rnncells.cells.base import as_state_list
from keras_rnncells.cells.context import StepContext
from keras_rnncells.cells.lstm import LSTMCell
from keras_rnncells.cells.projection import affine_blocks, forget_bias_initializer
from keras_rnncells.checks import check_bool, check_choice, check_input, check_positive_int

# Each direction: the corner the sweep starts from, as (flip the rows, flip
# the columns) of the grid it runs "down_right" on.
DIRECTIONS = {
    "down_right": (False, False),
    "down_left": (False, True),
    "up_right": (True, False),
    "up_left": (True, True),
}
MERGE_MODES = ("concat", "sum")
INPUT_MASKS = (None, "A", "B")
GRID_LAYOUT = ("batch", "height", "width", "features")


def scan(step: Any, initial: tuple, sequences: tuple) -> tuple:
    """``step(states, inputs) -> states`` over the first axis of every tensor
    of ``sequences``, from ``initial``: every step's states, stacked
    (time-major). One ``tf.while_loop`` over ``TensorArray``s: Keras'
    ``ops.scan`` (TensorFlow backend) fails on a sequence whose sizes past the
    first are unknown, which is every traced grid."""
    steps = tf.shape(sequences[0])[0]
    inputs = [tf.TensorArray(x.dtype, size=steps).unstack(x) for x in sequences]
    outputs = [tf.TensorArray(s.dtype, size=steps, element_shape=s.shape) for s in initial]

    def body(t: Any, states: tuple, outputs: list) -> tuple:
        states = tuple(step(states, tuple(x.read(t) for x in inputs)))
        return t + 1, states, [o.write(t, s) for o, s in zip(outputs, states)]

    _, _, outputs = tf.while_loop(
        lambda t, *_: t < steps, body, (tf.constant(0), tuple(initial), outputs)
    )
    return tuple(o.stack() for o in outputs)


def skew(grid: Any) -> Any:
    """``[B, H, W, F]`` as its anti-diagonals, time-major ``[H + W - 1, B * H, F]``:
    diagonal ``d``, row ``b * H + i`` holds ``grid[b, i, d - i]`` (zeros where
    ``d - i`` is outside ``[0, W)``). Row ``i`` is shifted right by ``i`` by
    padding every row to ``W + H`` and reading the flat rows ``W + H - 1`` at
    a time (PixelRNN's skewing)."""
    sizes = ops.shape(grid)
    batch, height, width, features = sizes[0], sizes[1], sizes[2], grid.shape[-1]
    diagonals = height + width - 1
    padded = ops.pad(grid, [[0, 0], [0, 0], [0, height], [0, 0]])
    flat = ops.reshape(padded, (batch, height * (width + height), features))
    skewed = ops.reshape(flat[:, : height * diagonals], (batch, height, diagonals, features))
    return ops.reshape(ops.transpose(skewed, (2, 0, 1, 3)), (diagonals, batch * height, features))


def unskew(diagonals: Any, batch: Any, height: Any, width: Any) -> Any:
    """The inverse of `skew` for ``[H + W - 1, B * H, U]``: ``[B, H, W, U]``."""
    count, units = height + width - 1, diagonals.shape[-1]
    skewed = ops.transpose(ops.reshape(diagonals, (count, batch, height, units)), (1, 2, 0, 3))
    flat = ops.reshape(skewed, (batch, height * count, units))
    padded = ops.pad(flat, [[0, 0], [0, height], [0, 0]])
    return ops.reshape(padded, (batch, height, width + height, units))[:, :, :width]


def grid_features(layer: keras.layers.Layer, input_shape: tuple) -> int:
    """The features of a grid ``[batch, height, width, features]`` that
    ``layer`` is built for; a one-line ``ValueError`` for another shape."""
    check_input(layer, "inputs", input_shape, GRID_LAYOUT)
    if input_shape[-1] is None:
        raise ValueError(
            f"Input `inputs` of layer {layer.name!r} must have a known number of "
            f"features (last axis), received shape {tuple(input_shape)}"
        )
    return input_shape[-1]


def flip_grid(grid: Any, direction: str) -> Any:
    """``grid`` with the axes reversed that turn ``direction`` into "down_right"
    (its own inverse)."""
    for axis, flipped in zip((1, 2), DIRECTIONS[direction]):
        if flipped:
            grid = ops.flip(grid, axis=axis)
    return grid


def check_grid_cell(cell: Any) -> bool:
    """Whether ``cell`` runs as the MD-LSTM (an `LSTMCell`); a one-line
    ``ValueError`` for a cell `MultiDimensionalRNN` cannot run."""
    name = type(cell).__name__
    if not isinstance(cell, keras.layers.Layer) or not hasattr(cell, "state_size"):
        raise ValueError(f"Argument `cell` must be a recurrent cell instance, received: {cell!r}")
    for option in ("dropout", "recurrent_dropout", "recurrent_dropconnect"):
        if getattr(cell, option, 0):
            raise ValueError(
                f"Argument `cell` of MultiDimensionalRNN must have no `{option}` (the layer "
                f"draws no masks), received {name} with {option}={getattr(cell, option)}"
            )
    if type(cell) is LSTMCell:
        if cell.layer_norm or getattr(cell, "batch_norm", False):
            raise ValueError(
                "Argument `cell` of MultiDimensionalRNN: its MD-LSTM form computes LSTMCell "
                "without layer_norm and batch_norm, received LSTMCell with them"
            )
        return True
    if getattr(cell, "input_dim_must_equal_units", False):
        raise ValueError(
            f"Argument `cell` of MultiDimensionalRNN: {name} adds its input itself to a "
            "units-sized block, and here it reads [x; s_up], features + units wide"
        )
    states = len(as_state_list(cell.state_size))
    if states != 1:
        raise ValueError(
            "Argument `cell` of MultiDimensionalRNN must be a cell with one state or an "
            f"LSTMCell (the MD-LSTM), received {name} with {states} states"
        )
    return False


def check_directions(directions: Any) -> tuple[str, ...]:
    """``directions`` as a tuple of distinct names of `DIRECTIONS`."""
    names = (directions,) if isinstance(directions, str) else directions
    ok = isinstance(names, (list, tuple)) and len(names) > 0
    ok = ok and all(name in DIRECTIONS for name in names) and len(set(names)) == len(names)
    if not ok:
        raise ValueError(
            f"Argument `directions` must be distinct names among {tuple(DIRECTIONS)}, "
            f"received: {directions!r}"
        )
    return tuple(names)


@keras.saving.register_keras_serializable(package="keras_rnncells")
class MultiDimensionalRNN(keras.layers.Layer):
    """A recurrent cell swept over a 2-D grid (Graves, Fernández & Schmidhuber
    2007, "Multi-dimensional recurrent neural networks"; Shuai, Zuo, Wang &
    Wang 2015, "DAG-recurrent neural networks for scene labeling").

    Input ``[batch, height, width, features]``. In the sweep "down_right" the
    state at ``(i, j)`` reads the input ``x_ij``, the state ``s_left`` of
    ``(i, j-1)`` and ``s_up`` of ``(i-1, j)`` (zeros outside the grid). A
    cell with one state (Elman/SimpleRNN, GRU, MGU, ...) reads ``s_left`` as
    its recurrent state and ``s_up`` beside its input:

    .. math::

        h_{ij}, s_{ij} = \\mathrm{cell}([x_{ij}; s_{i-1,j}],\\ s_{i,j-1})

    so that the Elman cell is Graves' MD-RNN and Shuai's DAG-RNN
    (untied weights per predecessor),
    ``h_ij = tanh(W x_ij + V s_{i-1,j} + U s_{i,j-1} + b)``;
    a gated cell gates its row neighbour (``z ⊙ s_left``, GRU) with gates
    that read both. An `LSTMCell` runs as Graves' MD-LSTM, with one forget
    gate per neighbour (the cell's ``f`` for the left one, and a fifth block
    of this layer's, ``f_up``, biased to 1):

    .. math::

        [i; f; g; o; f_{up}] &= W [x_{ij}; h_{i-1,j}] + U h_{i,j-1} + b \\\\
        c_{ij} &= \\sigma(f) \\odot c_{i,j-1} + \\sigma(f_{up}) \\odot c_{i-1,j}
                 + \\sigma(i) \\odot \\tanh(g) \\\\
        h_{ij} &= \\sigma(o) \\odot \\tanh(c_{ij})

    (the cell's ``activation`` and ``recurrent_activation`` in place of tanh
    and σ). ``directions``: the sweeps, among "down_right" (from the top-left
    corner), "down_left", "up_right" and "up_left" (default: all four, as
    Graves et al.); each has its own copy of the cell (the first is ``cell``
    itself). ``merge_mode``: their outputs concatenated ("concat", in the
    order of ``directions``) or summed ("sum"). ``return_grid``: the output at
    every position ``[batch, height, width, units']``, or else each sweep's
    output at its last corner (which has read the whole grid),
    ``[batch, units']``.

    A sweep runs over the anti-diagonals (``height + width - 1`` steps, each
    advancing ``batch × height`` rows; positions before a row starts stay at
    zero). The MD-LSTM's input product ``W_x x + b`` is made for the whole
    grid before the loop; a generic cell projects ``[x; s_up]`` with its own
    ``project_inputs`` at each step. Grids of any size; no masks. The cell
    must have no dropout options (the layer draws no dropout masks).
    """

    def __init__(
        self,
        cell: Any,
        directions: Any = tuple(DIRECTIONS),
        merge_mode: str = "concat",
        return_grid: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(cell, dict):
            cell = keras.saving.deserialize_keras_object(cell)
        self.md_lstm = check_grid_cell(cell)
        self.directions = check_directions(directions)
        self.merge_mode = check_choice("merge_mode", merge_mode, MERGE_MODES)
        self.return_grid = check_bool("return_grid", return_grid)
        self.cell = cell
        self.direction_cells = [cell] + [
            type(cell).from_config({**cell.get_config(), "name": f"{cell.name}_{direction}"})
            for direction in self.directions[1:]
        ]
        self.units = as_state_list(cell.state_size)[0]
        self.up_forget: list[tuple] = []

    def build(self, input_shape: tuple) -> None:
        self.features = features = grid_features(self, input_shape)
        for direction, cell in zip(self.directions, self.direction_cells):
            if not cell.built:  # a cell loaded from a .keras file comes built
                cell.build((None, features + self.units))
            if self.md_lstm:
                self.up_forget.append(
                    (
                        self.add_weight(
                            (features + self.units, self.units),
                            "glorot_uniform",
                            name=f"{direction}_up_forget_kernel",
                        ),
                        self.add_weight(
                            (self.units, self.units),
                            "orthogonal",
                            name=f"{direction}_up_forget_recurrent_kernel",
                        ),
                        self.add_weight((self.units,), "ones", name=f"{direction}_up_forget_bias"),
                    )
                )

    def call(self, inputs: Any, training: bool = False) -> Any:
        check_input(self, "inputs", inputs, GRID_LAYOUT, dtype="float", features=self.features)
        sizes = ops.shape(inputs)
        outputs = []
        for index, (direction, cell) in enumerate(zip(self.directions, self.direction_cells)):
            grid = flip_grid(inputs, direction)
            diagonals = skew(grid)
            if self.md_lstm:
                swept = self.sweep_md_lstm(cell, self.up_forget[index], diagonals, sizes[1])
            else:
                swept = self.sweep_cell(cell, diagonals, sizes[1], training)
            swept = unskew(swept, sizes[0], sizes[1], sizes[2])
            outputs.append(flip_grid(swept, direction) if self.return_grid else swept[:, -1, -1])
        if len(outputs) == 1:
            return outputs[0]
        return ops.concatenate(outputs, axis=-1) if self.merge_mode == "concat" else sum(outputs)

    def sweep_cell(self, cell: Any, diagonals: Any, height: Any, training: bool) -> Any:
        """A one-state cell over ``diagonals`` (`skew`): its outputs there."""
        rows = row_index(diagonals, height)
        context = StepContext(training=bool(training))

        def diagonal(carried: tuple, step: tuple) -> tuple:
            state, x, d = carried[0], *step
            up = shifted_down(state, rows)
            output, states = cell.advance(
                cell.project_inputs(ops.concatenate([x, up], axis=-1)), [state], context
            )
            return (states[0] * ops.cast(rows <= d, state.dtype), output)

        initial = ops.zeros_like(diagonals[0, :, :1]) * ops.zeros((1, self.units))
        output = ops.zeros_like(diagonals[0, :, :1]) * ops.zeros((1, cell.output_size))
        steps = ops.arange(ops.shape(diagonals)[0], dtype="int32")
        return scan(diagonal, (initial, output), (diagonals, steps))[1]

    def sweep_md_lstm(self, cell: Any, up_forget: tuple, diagonals: Any, height: Any) -> Any:
        """The MD-LSTM (see the class) over ``diagonals``: its ``h`` there."""
        up_kernel, up_recurrent, up_bias = up_forget
        kernel = ops.concatenate([cell.kernel, up_kernel], axis=1)
        bias = None
        if cell.bias is not None:
            bias = ops.concatenate([cell.bias, up_bias])
        (projected,) = affine_blocks(diagonals, [kernel[: self.features]], [bias])
        if cell.bias is None:
            projected = projected + ops.pad(up_bias, [[4 * self.units, 0]])
        state_kernel = ops.concatenate(
            [kernel[self.features :], ops.concatenate([cell.recurrent_kernel, up_recurrent], 1)],
            axis=0,
        )
        rows = row_index(diagonals, height)
        sigmoid, tanh = cell.recurrent_activation, cell.activation

        def diagonal(states: tuple, step: tuple) -> tuple:
            h, c = states
            x, d = step
            h_up, c_up = shifted_down(h, rows), shifted_down(c, rows)
            gates = x + ops.matmul(ops.concatenate([h_up, h], axis=-1), state_kernel)
            i, f, g, o, f_up = ops.split(gates, 5, axis=-1)
            c = sigmoid(f) * c + sigmoid(f_up) * c_up + sigmoid(i) * tanh(g)
            h = sigmoid(o) * tanh(c)
            started = ops.cast(rows <= d, h.dtype)
            return h * started, c * started

        zeros = ops.zeros_like(projected[0, :, : self.units])
        steps = ops.arange(ops.shape(diagonals)[0], dtype="int32")
        return scan(diagonal, (zeros, zeros), (projected, steps))[0]

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        width = self.cell.output_size * (len(self.directions) if self.merge_mode == "concat" else 1)
        if self.return_grid:
            return (*input_shape[:3], width)
        return (input_shape[0], width)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "cell": keras.saving.serialize_keras_object(self.cell),
            "directions": list(self.directions),
            "merge_mode": self.merge_mode,
            "return_grid": self.return_grid,
        }


def row_index(diagonals: Any, height: Any) -> Any:
    """For the rows ``b * H + i`` of `skew`'s diagonals: ``i``, as ``[B * H, 1]``."""
    flat = ops.arange(ops.shape(diagonals)[1], dtype="int32")
    return ops.expand_dims(flat % ops.cast(height, "int32"), -1)


def shifted_down(state: Any, rows: Any) -> Any:
    """``state`` of the rows ``b * H + i`` moved to ``b * H + i + 1``: each
    position's upper neighbour on the next diagonal (zeros in row 0)."""
    moved = ops.concatenate([ops.zeros_like(state[:1]), state[:-1]], axis=0)
    return moved * ops.cast(rows > 0, state.dtype)


@keras.saving.register_keras_serializable(package="keras_rnncells")
class RowLSTM(keras.layers.Layer):
    """PixelRNN's row LSTM (van den Oord, Kalchbrenner & Kavukcuoglu 2016,
    "Pixel recurrent neural networks", §3.1): an LSTM down the rows of a grid
    ``[batch, height, width, features]``, one row at a time, with
    convolutions along the row in place of matrix products:

    .. math::

        [i; f; g; o]_r &= K^{ss} \\circledast h_{r-1} + K^{is} \\circledast x_r + b \\\\
        c_r &= \\sigma(f_r) \\odot c_{r-1} + \\sigma(i_r) \\odot \\tanh(g_r) \\\\
        h_r &= \\sigma(o_r) \\odot \\tanh(c_r)

    ``K^{is}``: a 1×``kernel_size`` convolution of the input row
    (``features → 4 units``), made for the whole grid before the loop;
    ``K^{ss}``: a 1×``kernel_size`` convolution of the previous row's hidden
    state (``units → 4 units``), "same" padding (zeros past the row's ends),
    ``h_0 = c_0 = 0``, the forget bias 1. Position ``j`` thus reads a triangle
    of the rows above. ``input_mask``: None (the input convolution centred on
    ``j``), "B" (it reads columns ``≤ j`` only) or "A" (``< j`` only): the
    paper's causal masks along the row, for generation. ``kernel_size`` odd.
    ``return_grid``: every row's ``h`` ``[batch, height, width, units]``, or
    else the last row's ``[batch, width, units]``.
    """

    def __init__(
        self,
        units: int,
        kernel_size: int = 3,
        input_mask: str | None = None,
        return_grid: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = check_positive_int("units", units)
        self.kernel_size = check_positive_int("kernel_size", kernel_size)
        if self.kernel_size % 2 == 0:
            raise ValueError(
                f"Argument `kernel_size` must be an odd positive integer, received: {kernel_size!r}"
            )
        self.input_mask = check_choice("input_mask", input_mask, INPUT_MASKS)
        self.return_grid = check_bool("return_grid", return_grid)

    def build(self, input_shape: tuple) -> None:
        self.features = grid_features(self, input_shape)
        k, gates = self.kernel_size, 4 * self.units
        self.input_kernel = self.add_weight(
            (k, self.features, gates), "glorot_uniform", name="input_kernel"
        )
        self.state_kernel = self.add_weight(
            (k, self.units, gates), "orthogonal", name="state_kernel"
        )
        self.bias = self.add_weight(
            (gates,), forget_bias_initializer(self.units, 4, (1,)), name="bias"
        )

    def masked_input_kernel(self) -> Any:
        """``input_kernel`` with the taps right of the centre (and the centre's,
        mask "A") at zero."""
        if self.input_mask is None:
            return self.input_kernel
        centre = self.kernel_size // 2
        last = centre + 1 if self.input_mask == "B" else centre
        taps = [1.0 if tap < last else 0.0 for tap in range(self.kernel_size)]
        mask = ops.reshape(ops.convert_to_tensor(taps, self.input_kernel.dtype), (-1, 1, 1))
        return self.input_kernel * mask

    def convolve(self, rows: Any, kernel: Any, bias: Any = None) -> Any:
        """The 1×k convolution ("same") along axis -2 of ``rows`` with
        ``kernel`` ``(k, in, out)``: the k shifted rows side by side, times the
        kernel as ``(k * in, out)`` (`affine_blocks`: one matmul, and an empty
        batch that means the same in ONNX, where a convolution of none fails)."""
        k, width = self.kernel_size, ops.shape(rows)[-2]
        pad = [[0, 0]] * (len(rows.shape) - 2) + [[k // 2, k // 2], [0, 0]]
        padded = ops.pad(rows, pad)
        taps = ops.concatenate([padded[..., t : t + width, :] for t in range(k)], axis=-1)
        flat_kernel = ops.reshape(kernel, (k * kernel.shape[1], kernel.shape[2]))
        (product,) = affine_blocks(taps, [flat_kernel], [bias])
        return product

    def call(self, inputs: Any) -> Any:
        check_input(self, "inputs", inputs, GRID_LAYOUT, dtype="float", features=self.features)
        projected = self.convolve(inputs, self.masked_input_kernel(), self.bias)
        rows = ops.transpose(projected, (1, 0, 2, 3))  # [H, B, W, 4 units]

        def row(states: tuple, x: tuple) -> tuple:
            (h, c), (x,) = states, x
            gates = x + self.convolve(h, self.state_kernel)
            i, f, g, o = ops.split(gates, 4, axis=-1)
            c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
            h = ops.sigmoid(o) * ops.tanh(c)
            return h, c

        zeros = ops.zeros_like(rows[0, :, :, : self.units])
        grid = scan(row, (zeros, zeros), (rows,))[0]
        return ops.transpose(grid, (1, 0, 2, 3)) if self.return_grid else grid[-1]

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        if self.return_grid:
            return (*input_shape[:3], self.units)
        return (input_shape[0], input_shape[2], self.units)

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "units": self.units,
            "kernel_size": self.kernel_size,
            "input_mask": self.input_mask,
            "return_grid": self.return_grid,
        }
