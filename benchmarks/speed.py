"""Speed table of the recurrent layers: forward pass and one training step.

For every registered cell (``keras_rnncells.RNN`` over it, implementation
"auto": the fused path on CPU), our named layers, Keras' own ``GRU``, ``LSTM``
and ``SimpleRNN`` and every cell under plain ``keras.layers.RNN``, all in one
run:

* forward: ``layer(x, training=False)`` inside a ``tf.function``. For our
  layers this is the portable loop, with no XLA: the form that every inference
  graph, ``model.predict`` and SavedModels get. With ``--any-shape`` it is
  traced for any batch and steps, as a served model's signature is (the
  batch then is known only at run time: ``layers/rnn.py: loop_count``).
  With ``--compiled-inference`` it is traced inside
  ``keras_rnncells.compiled_inference()``: our fused layers' XLA-compiled
  loop, which a graph that stays in the process may take.
* train: forward + mean-square loss + backward + Adam update inside one
  ``tf.function`` (as ``model.fit`` runs it: not XLA-compiled at the outer
  level unless ``--outer-jit``). Our layers run their XLA-compiled loop here.

Each function is built once per layer and warmed up; then ``--repeats``
rounds each call every function once (round robin, so a drift of the machine's
speed affects every layer alike), each call timed with ``time.perf_counter`` up
to the result's ``.numpy()``; the table shows the medians. Each round takes the
layers in a new order, drawn from a fixed seed, so that no layer always runs
right after the same one: in a fixed order, our GRU's served forward pass (after
Keras' training step over MGU or MuFuRU) read 1.2x to 1.55x the same graph's
time under ``rnncells.RNN`` (after Keras' SimpleRNN), though timed alone they
read alike. A retrace inside the timed rounds is an error.

Under the table, the floors of the Speed issue print as PASS/FAIL, each
computed from the rows of the same run:

1. ``rnncells.MGU``: forward <= 0.35x and training step <= 0.45x
   ``keras.layers.GRU`` (the same check for ``rnncells.MGU(reset_after=True)``);
2. ``rnncells.GRU``: training step <= 0.70x ``keras.layers.GRU``;
3. ``rnncells.LSTM``: training step <= 0.80x ``keras.layers.LSTM``;
4. ``rnncells.RNN(mufuru)``: training step <= 4.5x ``rnncells.RNN(mgu)``'s;
5. on a GPU, each of our layers on the fused path: forward and training step
   <= 2.0x ``keras.layers.GRU`` (there, cuDNN's kernel);
6. each of our layers: forward <= 1.0x its Keras counterpart (``keras.layers.GRU``,
   ``LSTM`` or ``SimpleRNN`` for the GRU, LSTM and SimpleRNN cells; the same cell
   under plain ``keras.layers.RNN`` for the others). The goal is meant for the
   serving shape, ``--batch 1 --steps 20``; it prints at any shape, and each line
   says at which shape it was measured.

Usage (from the repository root, with the package importable)::

    python benchmarks/speed.py                       # B=32, T=100, in 64, units 128
    python benchmarks/speed.py --batch 256 --steps 50 --units 256
    python benchmarks/speed.py --cells gru,mgu --json speed.json
    python benchmarks/speed.py --batch 1 --steps 20 --any-shape   # as served
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import tensorflow as tf

import keras_rnncells
from keras_rnncells.layers.rnn import gpu_available

DEFAULT_SHAPE = {"batch": 32, "steps": 100, "input": 64, "units": 128}
QUICK_SHAPE = {"batch": 3, "steps": 5, "input": 4, "units": 5}
PEAK_SIZE = {False: 2048, True: 128}  # side of the peak matmul, by --quick
DTYPES = ("float32", "float64", "float16", "bfloat16")
REFERENCE = "keras.layers.GRU"
KERAS_LAYERS = ("GRU", "LSTM", "SimpleRNN")  # Keras' own layers, measured as references
# The Keras counterpart of the cells that Keras has a layer for; any other cell's
# counterpart is the same cell under plain keras.layers.RNN.
KERAS_COUNTERPART = {
    "gru": "keras.layers.GRU",
    "lstm": "keras.layers.LSTM",
    "simple": "keras.layers.SimpleRNN",
}
# The Speed issue's floors.
MGU_FWD_VS_GRU, MGU_TRAIN_VS_GRU = 0.35, 0.45
GRU_TRAIN_VS_GRU = 0.70
LSTM_TRAIN_VS_LSTM = 0.80
MUFURU_TRAIN_VS_MGU = 4.5
FWD_VS_COUNTERPART = 1.0
FUSED_VS_CUDNN_GRU = 2.0  # on a GPU, where Keras' GRU runs cuDNN's kernel
SERVING_SHAPE = {"batch": 1, "steps": 20}  # the shape FWD_VS_COUNTERPART is meant for


@dataclass(frozen=True)
class Bench:
    """One layer to measure. ``plain`` is the label of the same cell under
    plain ``keras.layers.RNN`` (the row this one's speedup is computed against);
    ``counterpart`` the label of its Keras counterpart (the forward floor's)."""

    label: str
    build: Callable[[], keras.layers.Layer]
    plain: str | None = None
    counterpart: str | None = None


@dataclass
class Row:
    layer: str
    path: str
    plain: str | None  # the label of the same cell under plain keras.layers.RNN
    counterpart: str | None  # the label of its Keras counterpart, see KERAS_COUNTERPART
    params: int
    flops: int  # forward matmul FLOPs, see FLOPS_NOTE
    fwd_ms: float
    train_ms: float
    traces: int  # tracings of the forward + train functions (2 = no retrace)
    fwd_vs_gru: float = math.nan
    train_vs_gru: float = math.nan
    fwd_gflops: float = math.nan
    train_gflops: float = math.nan
    fwd_pct_peak: float = math.nan
    train_pct_peak: float = math.nan
    fwd_vs_counterpart: float | None = None  # None: no counterpart measured
    fwd_speedup: float | None = None
    train_speedup: float | None = None


@dataclass
class Goal:
    text: str
    measured: str
    passed: bool


FLOPS_NOTE = (
    "FLOPs count only matmuls, from the weight shapes: forward = 2·B·T·Σ rows·cols over "
    "the layer's 2-D kernels (input_dim·kernel_cols + units·recurrent_cols for the dense-gate "
    "cells); a training step counts 3x the forward. Elementwise ops and biases are not counted."
)


# -- arguments ---------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, help="batch size (default 32)")
    parser.add_argument("--steps", type=int, help="sequence length T (default 100)")
    parser.add_argument("--input", type=int, help="input features (default 64)")
    parser.add_argument("--units", type=int, help="units (default 128)")
    parser.add_argument("--dtype", default="float32", help=f"one of {DTYPES}")
    parser.add_argument("--cells", default="all", help="comma list of registered cells")
    parser.add_argument("--repeats", type=int, help="timed calls per function (default 7)")
    parser.add_argument("--warmup", type=int, help="untimed calls first (default 2)")
    parser.add_argument("--outer-jit", action="store_true", help="jit_compile the functions")
    parser.add_argument(
        "--any-shape",
        action="store_true",
        help="trace the forward pass for any batch and steps, as a served model's signature",
    )
    parser.add_argument(
        "--compiled-inference",
        action="store_true",
        help="trace the forward pass inside keras_rnncells.compiled_inference(): our fused "
        "layers' XLA-compiled loop, not the portable one",
    )
    parser.add_argument("--quick", action="store_true", help="tiny shapes, 1 warmup, 3 repeats")
    parser.add_argument("--json", metavar="PATH", help="also save the rows as JSON")
    args = parser.parse_args(argv)
    shape = QUICK_SHAPE if args.quick else DEFAULT_SHAPE
    for key, default in shape.items():
        if getattr(args, key) is None:
            setattr(args, key, default)
    if args.repeats is None:
        args.repeats = 3 if args.quick else 7
    if args.warmup is None:
        args.warmup = 1 if args.quick else 2
    validate(args)
    return args


def validate(args: argparse.Namespace) -> None:
    for key in ("batch", "steps", "input", "units", "repeats", "warmup"):
        value, least = getattr(args, key), 0 if key == "warmup" else 1
        if value < least:
            raise ValueError(f"Argument `--{key}` must be an integer >= {least}, received: {value}")
    if args.dtype not in DTYPES:
        raise ValueError(f"Argument `--dtype` must be one of {DTYPES}, received: {args.dtype!r}")
    registered = keras_rnncells.list_cells()
    if args.cells == "all":
        args.cells = registered
    else:
        args.cells = [name.strip() for name in args.cells.split(",") if name.strip()]
        unknown = [name for name in args.cells if name not in registered]
        if unknown or not args.cells:
            raise ValueError(
                f"Argument `--cells` must be a comma list of {registered} (or 'all'), "
                f"received: {unknown or args.cells}"
            )


def int_list(flag: str, text: str, least: int = 1) -> list[int]:
    """The integers of a comma list such as ``"1,8,32"``, each at least ``least``."""
    try:
        values = [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        values = []
    if not values or min(values) < least:
        raise ValueError(
            f"Argument `{flag}` must be a comma list of integers >= {least}, received: {text!r}"
        )
    return values


def name_list(flag: str, text: str, choices: Sequence[str]) -> list[str]:
    """The names of a comma list, each one of ``choices``, without repeats, in order."""
    names = list(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    if not names or any(name not in choices for name in names):
        raise ValueError(
            f"Argument `{flag}` must be a comma list of {list(choices)}, received: {text!r}"
        )
    return names


def output_path(flag: str, path: str | None) -> None:
    """Fail now, not after the measurements, when ``path``'s folder does not exist."""
    if path is not None and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise ValueError(
            f"Argument `{flag}` must be a file path in an existing folder, received: {path!r}"
        )


# -- what to measure -----------------------------------------------------------------
def benches(args: argparse.Namespace) -> list[Bench]:
    """Keras' own GRU (the reference), LSTM and SimpleRNN first, then each selected
    cell (ours, then plain Keras RNN), then our named layers whose cell is selected
    (a named layer whose cell takes other arguments than the registered cell's
    default is preceded by that cell under plain Keras RNN)."""
    units, dtype = args.units, args.dtype
    result = [
        Bench(f"keras.layers.{name}", lambda n=name: getattr(keras.layers, n)(units, dtype=dtype))
        for name in KERAS_LAYERS
    ]
    for name in args.cells:
        cell = keras_rnncells.get_cell(name)
        plain = f"keras.layers.RNN({name})"
        result += [
            Bench(
                f"rnncells.RNN({name})",
                lambda c=cell: keras_rnncells.RNN(c(units, dtype=dtype), dtype=dtype),
                plain,
                KERAS_COUNTERPART.get(name, plain),
            ),
            Bench(plain, lambda c=cell: keras.layers.RNN(c(units, dtype=dtype), dtype=dtype)),
        ]
    named = [
        ("GRU", keras_rnncells.GRU, {}),
        ("LSTM", keras_rnncells.LSTM, {}),
        ("SimpleRNN", keras_rnncells.SimpleRNN, {}),
        ("MGU", keras_rnncells.MGU, {}),
        ("MGU(reset_after=True)", keras_rnncells.MGU, {"reset_after": True}),
    ]
    names = {keras_rnncells.get_cell(name): name for name in args.cells}
    for label, layer_class, kwargs in named:
        cell_name = names.get(layer_class.cell_class)
        if cell_name is None:
            continue
        cell_class = layer_class.cell_class
        plain = f"keras.layers.RNN({cell_name})"
        if kwargs:  # not the registered cell's default: its own plain row
            plain = f"keras.layers.RNN({cell_name}, "
            plain += ", ".join(f"{key}={value!r}" for key, value in kwargs.items()) + ")"
            result.append(
                Bench(
                    plain,
                    lambda c=cell_class, k=kwargs: keras.layers.RNN(
                        c(units, dtype=dtype, **k), dtype=dtype
                    ),
                )
            )
        result.append(
            Bench(
                f"rnncells.{label}",
                lambda c=layer_class, k=kwargs: c(units, dtype=dtype, **k),
                plain,
                KERAS_COUNTERPART.get(cell_name, plain),
            )
        )
    return result


# -- measuring ---------------------------------------------------------------------------
def time_call(function: Callable, x: tf.Tensor) -> float:
    """Wall time of one ``function(x)`` call in ms, up to ``.numpy()``."""
    start = time.perf_counter()
    function(x).numpy()
    return 1e3 * (time.perf_counter() - start)


def round_orders(items: Sequence, seed: int = 0) -> Iterator[list]:
    """``items`` in a new order for each round, drawn from ``seed``: no item
    always runs after the same other one."""
    draw = random.Random(seed)
    while True:
        order = list(items)
        draw.shuffle(order)
        yield order


def round_robin(functions: dict, x: tf.Tensor, repeats: int, warmup: int = 3) -> dict:
    """Each of ``functions`` (by key) called ``warmup`` times, then ``repeats``
    rounds that time every one once (`round_orders`): the times (ms) of each,
    by key."""
    for function in functions.values():
        for _ in range(warmup):
            function(x).numpy()
    times: dict = {key: [] for key in functions}
    orders = round_orders(list(functions))
    for _ in range(repeats):
        for key in next(orders):
            times[key].append(time_call(functions[key], x))
    return times


def median_time(function: Callable, x: tf.Tensor, warmup: int, repeats: int) -> float:
    """Median wall time of ``function(x)`` in ms over ``repeats`` calls."""
    for _ in range(warmup):
        function(x).numpy()
    return statistics.median(time_call(function, x) for _ in range(repeats))


def peak_gflops(size: int, dtype: str, warmup: int, repeats: int, outer_jit: bool) -> float:
    """GFLOP/s of one large (size x size) @ (size x size) matmul."""
    a = tf.random.normal((size, size), dtype=dtype)
    b = tf.random.normal((size, size), dtype=dtype)
    matmul = tf.function(lambda a: tf.reduce_sum(tf.matmul(a, b)), jit_compile=outer_jit)
    return 2 * size**3 / median_time(matmul, a, max(warmup, 1), repeats) / 1e6


def matmul_flops(layer: keras.layers.Layer, batch: int, steps: int) -> int:
    kernels = [w for w in layer.trainable_weights if len(w.shape) == 2 and "bias" not in w.name]
    return 2 * batch * steps * sum(math.prod(w.shape) for w in kernels)


@dataclass
class Timed:
    """A built layer and its two traced functions, timed round by round."""

    bench: Bench
    layer: keras.layers.Layer
    functions: dict[str, Callable]
    traced: int
    times: dict[str, list[float]] = field(default_factory=lambda: {"fwd": [], "train": []})


def layer_functions(
    layer: keras.layers.Layer, outer_jit: bool = False, forward_spec: tf.TensorSpec | None = None
) -> dict[str, Callable]:
    """The (built) layer's forward and training-step functions, not yet traced:
    ``"fwd"`` is ``layer(x, training=False)`` (traced for ``forward_spec`` where
    given, else for each input's shape); ``"train"`` is forward, mean-square
    loss, backward and an Adam update, returning the loss."""
    optimizer = keras.optimizers.Adam(1e-3)
    optimizer.build(layer.trainable_variables)

    def forward(x):
        return layer(x, training=False)

    def train_step(x):
        with tf.GradientTape() as tape:
            loss = keras.ops.mean(keras.ops.square(layer(x, training=True)))
        grads = tape.gradient(loss, layer.trainable_variables)
        optimizer.apply(grads, layer.trainable_variables)
        return loss

    signature = None if forward_spec is None else [forward_spec]
    return {
        "fwd": tf.function(forward, jit_compile=outer_jit, input_signature=signature),
        "train": tf.function(train_step, jit_compile=outer_jit),
    }


def prepare(
    bench: Bench,
    layer: keras.layers.Layer,
    x: tf.Tensor,
    warmup: int,
    outer_jit: bool = False,
    any_shape: bool = False,
    compiled_inference: bool = False,
) -> Timed:
    """Build the two functions of the (built) layer once, traced and warmed up;
    with ``any_shape`` the forward pass for any batch and steps; with
    ``compiled_inference`` traced inside ``keras_rnncells.compiled_inference()``."""
    spec = tf.TensorSpec((None, None, x.shape[-1]), x.dtype) if any_shape else None
    functions = layer_functions(layer, outer_jit, spec)
    with keras_rnncells.compiled_inference() if compiled_inference else nullcontext():
        for function in functions.values():
            for _ in range(1 + warmup):  # trace and compile, then warm up
                function(x).numpy()
    traced = sum(f.experimental_get_tracing_count() for f in functions.values())
    return Timed(bench, layer, functions, traced)


def time_round_robin(
    timed: list[Timed], x: tf.Tensor, repeats: int, min_seconds: float = 0.0
) -> int:
    """``repeats`` rounds, each timing every function once (`round_orders`):
    a drift of the machine's speed during the run then affects every layer
    alike; then more rounds until the timed calls took ``min_seconds`` in all
    (a cheap shape's median rests on more rounds). Returns the rounds."""
    rounds, spent_ms, orders = 0, 0.0, round_orders(timed)
    while rounds < repeats or spent_ms < 1e3 * min_seconds:
        for entry in next(orders):
            for key, function in entry.functions.items():
                entry.times[key].append(time_call(function, x))
                spent_ms += entry.times[key][-1]
        rounds += 1
    return rounds


def layer_path(layer: keras.layers.Layer) -> str:
    """Our layers' execution path (fused, cudnn or generic); "keras" for Keras' own."""
    return layer.path() if isinstance(layer, keras_rnncells.RNN) else "keras"


def row(entry: Timed, x: tf.Tensor) -> Row:
    traces = sum(f.experimental_get_tracing_count() for f in entry.functions.values())
    if traces != entry.traced:
        raise RuntimeError(f"{entry.bench.label}: a function retraced while being timed")
    layer = entry.layer
    return Row(
        layer=entry.bench.label,
        path=layer_path(layer),
        plain=entry.bench.plain,
        counterpart=entry.bench.counterpart,
        params=layer.count_params(),
        flops=matmul_flops(layer, *x.shape[:2]),
        fwd_ms=statistics.median(entry.times["fwd"]),
        train_ms=statistics.median(entry.times["train"]),
        traces=traces,
    )


def derive(rows: list[Row], peak: float) -> None:
    """Fill the ratios from the rows measured in this run."""
    by_label = {row.layer: row for row in rows}
    reference = by_label[REFERENCE]
    for row in rows:
        row.fwd_vs_gru = row.fwd_ms / reference.fwd_ms
        row.train_vs_gru = row.train_ms / reference.train_ms
        row.fwd_gflops = row.flops / row.fwd_ms / 1e6
        row.train_gflops = 3 * row.flops / row.train_ms / 1e6
        row.fwd_pct_peak = 100 * row.fwd_gflops / peak
        row.train_pct_peak = 100 * row.train_gflops / peak
        if row.counterpart in by_label:
            row.fwd_vs_counterpart = row.fwd_ms / by_label[row.counterpart].fwd_ms
        if row.plain in by_label:
            plain = by_label[row.plain]
            row.fwd_speedup = plain.fwd_ms / row.fwd_ms
            row.train_speedup = plain.train_ms / row.train_ms


# -- goals ---------------------------------------------------------------------------
def shape_text(batch: int, steps: int) -> str:
    """Where the forward floor was measured, and the shape it is meant for."""
    text = f"at batch {batch}, steps {steps}"
    if {"batch": batch, "steps": steps} != SERVING_SHAPE:
        text += f" (meant for batch {SERVING_SHAPE['batch']}, steps {SERVING_SHAPE['steps']})"
    return text


def goals(rows: list[Row], batch: int, steps: int) -> list[Goal]:
    """The Speed issue's floors that the selected rows can check; ``batch`` and
    ``steps`` are the run's shape, named in the forward floor's text."""
    by_label = {row.layer: row for row in rows}
    result = []
    for label in ("rnncells.MGU", "rnncells.MGU(reset_after=True)"):
        if label in by_label:
            row = by_label[label]
            result.append(
                Goal(
                    f"{label}: forward <= {MGU_FWD_VS_GRU:.2f}x and train <= "
                    f"{MGU_TRAIN_VS_GRU:.2f}x of {REFERENCE}",
                    f"{row.fwd_vs_gru:.2f}x / {row.train_vs_gru:.2f}x",
                    row.fwd_vs_gru <= MGU_FWD_VS_GRU and row.train_vs_gru <= MGU_TRAIN_VS_GRU,
                )
            )
    if "rnncells.GRU" in by_label:
        row = by_label["rnncells.GRU"]
        result.append(
            Goal(
                f"rnncells.GRU ({row.path}): train <= {GRU_TRAIN_VS_GRU:.2f}x of {REFERENCE}",
                f"{row.train_vs_gru:.2f}x",
                row.train_vs_gru <= GRU_TRAIN_VS_GRU,
            )
        )
    lstm, keras_lstm = by_label.get("rnncells.LSTM"), by_label.get("keras.layers.LSTM")
    if lstm is not None and keras_lstm is not None:
        ratio = lstm.train_ms / keras_lstm.train_ms
        result.append(
            Goal(
                f"rnncells.LSTM ({lstm.path}): train <= {LSTM_TRAIN_VS_LSTM:.2f}x of "
                "keras.layers.LSTM",
                f"{ratio:.2f}x",
                ratio <= LSTM_TRAIN_VS_LSTM,
            )
        )
    mufuru, mgu = by_label.get("rnncells.RNN(mufuru)"), by_label.get("rnncells.RNN(mgu)")
    if mufuru is not None and mgu is not None:
        ratio = mufuru.train_ms / mgu.train_ms
        result.append(
            Goal(
                f"rnncells.RNN(mufuru): train <= {MUFURU_TRAIN_VS_MGU:.1f}x of rnncells.RNN(mgu)",
                f"{ratio:.2f}x",
                ratio <= MUFURU_TRAIN_VS_MGU,
            )
        )
    if gpu_available():
        for row in rows:
            if row.path == "fused":
                result.append(
                    Goal(
                        f"{row.layer} (fused, on a GPU): forward and train <= "
                        f"{FUSED_VS_CUDNN_GRU:.1f}x of {REFERENCE} (cuDNN)",
                        f"{row.fwd_vs_gru:.2f}x / {row.train_vs_gru:.2f}x",
                        max(row.fwd_vs_gru, row.train_vs_gru) <= FUSED_VS_CUDNN_GRU,
                    )
                )
    where = shape_text(batch, steps)
    for row in rows:
        if row.fwd_vs_counterpart is not None:
            result.append(
                Goal(
                    f"{row.layer} ({row.path}): forward <= {FWD_VS_COUNTERPART:.1f}x of "
                    f"{row.counterpart} {where}",
                    f"{row.fwd_vs_counterpart:.2f}x",
                    row.fwd_vs_counterpart <= FWD_VS_COUNTERPART,
                )
            )
    return result


# -- output ---------------------------------------------------------------------------
COLUMNS = (
    "layer",
    "params",
    "fwd ms",
    "train ms",
    "fwd vs Keras GRU",
    "train vs Keras GRU",
    "fwd vs Keras counterpart",
    "fwd GFLOP/s",
    "train GFLOP/s",
    "% of peak (fwd)",
    "% of peak (train)",
    "vs plain keras.layers.RNN (fwd/train)",
)


def table_line(row: Row) -> str:
    speedup = (
        "—" if row.fwd_speedup is None else f"{row.fwd_speedup:.2f}x / {row.train_speedup:.2f}x"
    )
    cells = (
        row.layer,
        f"{row.params:,}",
        f"{row.fwd_ms:.2f}",
        f"{row.train_ms:.2f}",
        f"{row.fwd_vs_gru:.2f}x",
        f"{row.train_vs_gru:.2f}x",
        "—" if row.fwd_vs_counterpart is None else f"{row.fwd_vs_counterpart:.2f}x",
        f"{row.fwd_gflops:.3g}",
        f"{row.train_gflops:.3g}",
        f"{row.fwd_pct_peak:.1f}",
        f"{row.train_pct_peak:.1f}",
        speedup,
    )
    return "| " + " | ".join(cells) + " |"


def device_text() -> str:
    """The device the layers ran on: the first GPU TensorFlow sees, else the CPU."""
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return f"CPU ({os.cpu_count()} cores visible)"
    details = tf.config.experimental.get_device_details(gpus[0])
    return f"GPU {details.get('device_name', gpus[0].name)}"


def report(
    args: argparse.Namespace,
    peak: float,
    rows: list[Row],
    goals_: list[Goal],
    skipped: dict[str, str],
) -> str:
    paths = sorted({row.path for row in rows if row.path != "keras"})
    lines = [
        f"Device: {device_text()}.",
        f"Shape: batch {args.batch}, steps {args.steps}, input {args.input}, units "
        f"{args.units}, {args.dtype}; outer jit_compile={args.outer_jit}; forward traced for "
        f"{'any batch and steps (as served)' if args.any_shape else 'this shape'}"
        f"{', in compiled_inference()' if args.compiled_inference else ''}; median of "
        f"{args.repeats} round-robin rounds after {args.warmup} warm-up call(s).",
        f"Peak: {peak:.1f} GFLOP/s ({PEAK_SIZE[args.quick]}² @ {PEAK_SIZE[args.quick]}² "
        f"{args.dtype} matmul, same run).",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join("---" if i == 0 else "---:" for i in range(len(COLUMNS))) + "|",
        *(table_line(row) for row in rows),
        "",
        f"{FLOPS_NOTE} Our layers ran on path(s): {', '.join(paths) or 'none'}.",
        *(
            f"Skipped {label} (cannot be built at this shape): {why}"
            for label, why in skipped.items()
        ),
        "",
        "Goals, the Speed issue's floors (forward / train where two numbers):",
        *(f"- {'PASS' if g.passed else 'FAIL'}: {g.text}: {g.measured}" for g in goals_),
    ]
    return "\n".join(lines)


def save_json(path: str | os.PathLike, data: object) -> None:
    """Write ``data`` as JSON atomically: a temporary file in the same folder, then
    ``os.replace``, so a run killed while writing leaves the previous file whole."""
    temporary = f"{os.fspath(path)}.{os.getpid()}.tmp"
    try:
        with open(temporary, "w") as file:
            json.dump(data, file, indent=2)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the benchmark, print the table; returns what ``--json`` saves."""
    args = parse_args(argv)
    # One tf.function pair per layer is by design; TensorFlow's retracing
    # heuristic would warn about it (a real retrace is checked in `row`).
    tf.get_logger().setLevel("ERROR")
    peak = peak_gflops(PEAK_SIZE[args.quick], args.dtype, args.warmup, args.repeats, args.outer_jit)
    x = tf.random.normal((args.batch, args.steps, args.input), dtype=args.dtype)
    timed, skipped = [], {}
    for bench in benches(args):
        layer = bench.build()
        try:
            layer.build(tuple(x.shape))
        except ValueError as error:  # a cell that cannot take this shape
            skipped[bench.label] = str(error)
            continue
        timed.append(
            prepare(
                bench,
                layer,
                x,
                args.warmup,
                args.outer_jit,
                args.any_shape,
                args.compiled_inference,
            )
        )
    time_round_robin(timed, x, args.repeats)
    rows = [row(entry, x) for entry in timed]
    derive(rows, peak)
    goals_ = goals(rows, args.batch, args.steps)
    print(report(args, peak, rows, goals_, skipped))
    result = {
        "config": {k: v for k, v in vars(args).items() if k != "json"},
        "peak_gflops": peak,
        "flops_note": FLOPS_NOTE,
        "rows": [asdict(row) for row in rows],
        "goals": [asdict(goal) for goal in goals_],
        "skipped": skipped,
    }
    if args.json:
        save_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
