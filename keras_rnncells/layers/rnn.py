"""`RNN`: ``keras.layers.RNN`` whose ``implementation`` picks one of three
paths; exports trace three more forms of them (DESIGN.md, "One layer, its
execution paths": the native ONNX ops, ONNX's loop, LiteRT's).

* ``cudnn``: GRU/LSTM cells in a cuDNN configuration on a GPU run Keras' cuDNN
  kernel with the same weights.
* ``fused``: the input projection of the whole sequence is one matmul
  (``cell.step_inputs``), then a ``tf.while_loop`` runs only the cell's step
  (``cell.advance``), traced in one of two forms (``layers/fused.py``):

  - compiled: XLA-compiled, with a cuDNN-style gradient, fast whether or not
    the model is compiled with ``jit_compile``; where no graph outlives the
    call (training steps, eager calls) or in ``compiled_inference()``.
  - portable: traced into the caller's graph, no ``jit_compile``,
    TensorFlow's own gradient; for every inference graph (``model.predict``,
    serving functions, ``model.export``) and inside ``portable()``: such a
    graph may be saved, and TF Serving runs with XLA JIT disabled by default.
* ``generic``: ``keras.layers.RNN``'s own loop, the reference semantics.
* ``scan``: cells whose state is a linear recurrence with coefficients from
  the inputs only (``cell.scan_ineligibility()`` is None: MinGRU, MinLSTM,
  QRNN) compute the whole sequence at once (``layers/scan.py``).

``implementation="auto"`` picks cudnn where it can run, scan for the cells
that can take it in inference graphs (where the fused loop would be
portable), and fused otherwise (generic for ``unroll=True`` and for
cells that are not ``AbstractRNNCell``).
On a CPU the fused path runs a batch as one loop per core over its own rows,
and a training step's long sequence as two loops over its halves, a fifth
less peak memory (``fused.loop_count``, ``fused.time_halves``).
All paths give the same numbers for the same weights: masks of any pattern,
``go_backwards``, ``zero_output_for_mask``, states and gradients.

The switches ``portable()``, ``compiled_inference()`` and ``loop_override()``
are context variables: they hold for the thread (or task) that entered them
only, and so is ``fed_states()``, within which every layer takes its initial
states from a feed and hands its final ones back (the step forms of
``keras_rnncells.export.streaming``).
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import keras
import tensorflow as tf
from keras import ops, tree
from keras.src import backend  # Keras' loop, as keras.layers.RNN.inner_loop calls it
from keras.src.backend.common.stateless_scope import in_stateless_scope  # no public name

from keras_rnncells.cells.base import AbstractRNNCell
from keras_rnncells.checks import check_bool, check_input, check_shape, shapes_compatible
from keras_rnncells.layers.fused import (
    fused_recurrence,
    gpu_available,
    loop_count,
    row_parts,
    time_pieces,
)
from keras_rnncells.layers.portable_loop import scattering
from keras_rnncells.layers.scan import scan_recurrence

IMPLEMENTATIONS = ("auto", "cudnn", "fused", "generic", "scan")
USE_CUDNN = ("auto", True, False)
# Keras 1 and 2's kernel choices, accepted (and ignored) by Keras 3's GRU and
# LSTM (and by its own test of them, with 0).
LEGACY_IMPLEMENTATIONS = (0, 1, 2)
SEQUENCES = ("batch", "timesteps", "features")

# How the fused loop is traced: "auto" (see the module docstring), "portable"
# (`portable()`) or "compiled" (`compiled_inference()`).
_loop_form = contextvars.ContextVar("keras_rnncells_loop_form", default="auto")
_loop_override: contextvars.ContextVar[Callable | None] = contextvars.ContextVar(
    "keras_rnncells_loop_override", default=None
)
# The feed of `fed_states` (None outside), and whether a fed layer's loop is being traced.
_state_feed: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "keras_rnncells_state_feed", default=None
)
_fed_loop: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "keras_rnncells_fed_loop", default=False
)


@contextlib.contextmanager
def portable() -> Iterator[None]:
    """Within this context layers trace what serves anywhere: no cuDNN op (a
    model trained on a GPU serves on a CPU) and no XLA-compiled function (TF
    Serving disables XLA JIT by default), whether training or not."""
    token = _loop_form.set("portable")
    try:
        yield
    finally:
        _loop_form.reset(token)


@contextlib.contextmanager
def compiled_inference() -> Iterator[None]:
    """Within this context inference graphs, too, trace the XLA-compiled loop:
    faster where the graph runs in this process (``model.predict`` traced
    here), but such a graph fails where XLA JIT is disabled, as in a default
    TF Serving: never export from here."""
    token = _loop_form.set("compiled")
    try:
        yield
    finally:
        _loop_form.reset(token)


def in_portable() -> bool:
    """Whether this thread is inside ``portable()``."""
    return _loop_form.get() == "portable"


def compiles_loop(training: Any) -> bool:
    """Whether the fused loop is traced compiled (else portable) here."""
    form = _loop_form.get()
    return form == "compiled" or (form == "auto" and (bool(training) or tf.executing_eagerly()))


@contextlib.contextmanager
def loop_override(loop: Callable) -> Iterator[None]:
    """Within this context every ``RNN`` layer runs its recurrence as
    ``loop(layer, sequences, initial_state, mask, training)``, which returns
    ``inner_loop``'s ``(last_output, outputs, states)``: how an exporter traces
    a path its converter understands (export/onnx_rnn.py)."""
    token = _loop_override.set(loop)
    try:
        yield
    finally:
        _loop_override.reset(token)


@contextlib.contextmanager
def fed_states(feed: Any) -> Iterator[None]:
    """Within this context every ``RNN`` layer called on tensors continues a
    sequence from states that ``feed`` gives, and hands its final states back
    to it, in the order the layers are called: how a function that calls
    layers (a model, a servable) is traced as a step form without knowing
    its structure (``keras_rnncells.export.streaming``). ``feed`` has three
    methods:

    * ``check(layer, initial_state_given)``, before the layer runs: raises a
      ``ValueError`` where the layer cannot continue a sequence;
    * ``initial_states(layer, initial_state, sequences, previous_needed)``:
      given the states Keras made (zeros, in the layer's structure), returns
      ``(initial_state, previous_output)``, the states to start from and,
      where ``previous_needed`` (a mask, without ``zero_output_for_mask``),
      the output of the step before the first: what a step masked before a
      row's first unmasked one emits again, as it would have had the sequence
      not been cut (`continued_outputs`);
    * ``final_states(layer, states, last_output)``: the final states (flat).

    Shape inference (a ``StatelessScope``) calls no feed, and neither does
    a layer's loop (an override calling ``inner_loop`` again): there,
    `in_fed_loop` is true."""
    token = _state_feed.set(feed)
    try:
        yield
    finally:
        _state_feed.reset(token)


def in_fed_loop() -> bool:
    """Whether the recurrence being traced continues fed states (`fed_states`):
    a ``loop_override`` must then compute the final states, which the feed
    hands on as the next call's initial ones."""
    return _fed_loop.get()


def state_feed() -> Any:
    """The feed of the enclosing `fed_states` where a layer's call may take
    from it, else None."""
    return None if in_stateless_scope() else _state_feed.get()


@keras.saving.register_keras_serializable(package="keras_rnncells")
class RNN(keras.layers.RNN):
    """A recurrent layer over any cell, with a fast path for ours.

    Takes every argument of ``keras.layers.RNN`` plus ``implementation``:
    ``"auto"`` (default), ``"cudnn"``, ``"fused"``, ``"generic"`` or
    ``"scan"`` (see the module docstring; ``"scan"`` raises a ``ValueError``
    for a cell whose ``scan_ineligibility()`` is not None). ``"cudnn"``
    raises a ``ValueError`` where the cuDNN kernel cannot run; ``"auto"``
    falls back to fused instead, also at run time for masks cuDNN cannot take
    (not right-padded, fully masked rows).

    ``column_blocks`` (default False, saved in the config: a model traces the
    same graph on every host, and its exports keep it): an inference graph's
    loop that runs alone makes each recurrent product of at most 64 rows in 2
    to 4 column blocks (``portable_loop.ColumnBlocks``). Same numbers; whether
    faster is the host's: a batch of 1 ran 1.4x to 1.8x faster on a 2-core
    AVX2 host, 1.03x to 1.26x slower on the 2-core AVX-512/AMX hosts we measure
    on (benchmarks/README.md, "Column blocks as an option").

    Keras' own arguments are accepted, so that this layer replaces Keras'
    GRU and LSTM unchanged:

    * ``use_cudnn`` (Keras 3): ``"auto"`` (default) changes nothing;
      ``True`` means ``implementation="cudnn"``; ``False`` means cuDNN is
      never used (``"auto"`` then picks fused or generic). Contradictions
      (``use_cudnn=True`` with ``"fused"`` or ``"generic"``, ``use_cudnn=False``
      with ``"cudnn"``) raise a ``ValueError`` naming both arguments.
    * ``implementation=0``, ``1`` or ``2`` (Keras 1 and 2's kernel choice,
      which Keras 3 ignores) means ``"auto"``, with a warning once per process.

    Integer and bool sequences are cast to the compute dtype, as Keras
    does. A sequence of zero steps raises a ``ValueError`` where the step
    count is known when the layer is called; in a graph traced for any
    length, the fused path answers zero steps as a fully masked sequence
    (initial states, zero outputs).
    """

    def __init__(
        self,
        cell: Any,
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        zero_output_for_mask: bool = False,
        implementation: str | int = "auto",
        use_cudnn: str | bool = "auto",
        column_blocks: bool = False,
        **kwargs: Any,
    ) -> None:
        implementation = resolve_implementation(implementation, use_cudnn)
        self.use_cudnn = use_cudnn
        self.column_blocks = check_bool("column_blocks", column_blocks)
        super().__init__(
            cell,
            return_sequences=return_sequences,
            return_state=return_state,
            go_backwards=go_backwards,
            stateful=stateful,
            unroll=unroll,
            zero_output_for_mask=zero_output_for_mask,
            **kwargs,
        )
        self.implementation = implementation
        ours = isinstance(self.cell, AbstractRNNCell)
        if implementation in ("fused", "cudnn") and not ours:
            raise ValueError(
                f"Argument `implementation={implementation!r}` needs a "
                f"keras_rnncells.AbstractRNNCell, received cell {self.cell!r}; "
                "use implementation='generic'"
            )
        if implementation in ("fused", "cudnn") and unroll:
            raise ValueError(
                f"Argument `unroll=True` runs on the generic path, not "
                f"implementation={implementation!r}; use implementation='generic'"
            )
        if implementation == "scan":
            reason = self.cell.scan_ineligibility() if ours else "not a keras_rnncells cell"
            if reason is not None or unroll:
                raise ValueError(
                    "Argument `implementation='scan'` needs a cell whose state is a linear "
                    "recurrence (MinGRUCell, MinLSTMCell, QRNNCell) and unroll=False: "
                    f"{reason or 'unroll=True'}; use implementation='auto'"
                )
        reason = self.cell.cudnn_ineligibility() if implementation == "cudnn" else None
        if reason is not None:
            raise ValueError(
                "Argument `implementation='cudnn'` needs a GRUCell(reset_after=True) or "
                f"LSTMCell in a configuration cuDNN computes: {reason} (config "
                f"{self.cell.get_config()})"
            )
        if self.uses_cudnn():
            self.supports_jit = False  # cuDNN ops cannot be XLA-compiled

    def uses_cudnn(self) -> bool:
        """Whether the cuDNN kernel runs (before any run-time mask check)."""
        return (
            self.implementation in ("auto", "cudnn")
            and self.use_cudnn is not False
            and not in_portable()
            and not self.unroll
            and isinstance(self.cell, AbstractRNNCell)
            and self.cell.cudnn_compatible()
            and gpu_available()
        )

    def path(self, training: bool = False) -> str:
        """The execution path this layer takes: cudnn, scan, fused or generic.
        ``auto`` takes scan for a cell that can (``cell.scan_ineligibility()``
        is None) where the fused loop would be portable (inference graphs,
        ``portable()``: faster there in benchmarks/scan.py) and the length is
        known (`inner_loop`; an export's unknown length takes the portable
        loop, which every exporter converts), and the fused
        loop where it would be XLA-compiled (training steps, eager calls,
        ``compiled_inference()``: faster there on CPUs), and in LiteRT's
        tracing (``portable_loop.scattering()``). A
        cell the fused path cannot train (``cell.fused_training_conflicts()``,
        e.g. ``batch_norm=True``) trains on the generic path; with
        ``implementation="fused"`` training it raises a ``ValueError``."""
        if self.uses_cudnn():
            return "cudnn"
        if self.implementation == "generic" or self.unroll:
            return "generic"
        if not isinstance(self.cell, AbstractRNNCell):
            return "generic"
        # LiteRT's tracing (`scattering`) takes the portable loop, which its
        # converter turns into builtin ops
        if not scattering() and (
            self.implementation == "scan"
            or (
                self.implementation == "auto"
                and self.cell.scan_ineligibility() is None
                and not compiles_loop(training)
            )
        ):
            return "scan"
        conflicts = self.cell.fused_training_conflicts() if training else []
        if conflicts and self.implementation == "fused":
            raise ValueError(
                "Argument `implementation='fused'` cannot train "
                f"{type(self.cell).__name__} with {', '.join(conflicts)} (the fused "
                "gradient replays steps, which update statistics); use "
                "implementation='auto' or 'generic'"
            )
        return "generic" if conflicts else "fused"

    # -- validation -------------------------------------------------------------
    def build(self, sequences_shape, initial_state_shape=None):
        check_input(self, "sequences", sequences_shape, SEQUENCES)
        if self.implementation == "cudnn" and not in_portable() and not gpu_available():
            raise ValueError(
                "Argument `implementation='cudnn'` needs a GPU and none is "
                "visible to TensorFlow; use implementation='auto'"
            )
        super().build(sequences_shape, initial_state_shape)
        self.input_dim = sequences_shape[-1]

    def check_call_args(self, sequences, initial_state, mask=None) -> None:
        shape = check_input(
            self,
            "sequences",
            sequences,
            SEQUENCES,
            dtype="numeric",
            features=getattr(self, "input_dim", None),
        )
        if shape[1] == 0:
            raise ValueError(
                f"Input `sequences` of layer {self.name!r} has 0 timesteps (axis 1), "
                f"received shape {shape}; a recurrent layer needs at least one step"
            )
        if initial_state is not None:
            check_initial_state(self, sequences, initial_state)
        if mask is not None:
            check_shape(self, "mask", tree.flatten(mask)[0], shape[:2], SEQUENCES[:2])

    def compute_output_spec(self, sequences, initial_state=None, mask=None, **kwargs):
        # Symbolic calls (functional models) skip `call`: validate here too.
        self.check_call_args(sequences, initial_state, mask)
        return super().compute_output_spec(
            sequences, initial_state=initial_state, mask=mask, **kwargs
        )

    def call(self, sequences, initial_state=None, mask=None, training=False):
        self.check_call_args(sequences, initial_state, mask)
        feed = state_feed()
        if feed is not None:
            feed.check(self, initial_state is not None)
        dtype = keras.backend.standardize_dtype(sequences.dtype)
        if not keras.backend.is_float_dtype(dtype):
            sequences = ops.cast(sequences, self.compute_dtype)  # as Keras' GRU and LSTM
        elif getattr(self.cell, "autocast", False) and dtype != self.cell.compute_dtype:
            # What the cell's own __call__ does at each step of Keras' loop (the
            # fused and cuDNN paths call no cell): e.g. float32 sequences into a
            # mixed_float16 layer made with autocast=False.
            sequences = ops.cast(sequences, self.cell.compute_dtype)
        return super().call(sequences, initial_state=initial_state, mask=mask, training=training)

    # -- the paths ----------------------------------------------------------------
    def inner_loop(self, sequences, initial_state, mask, training=False):
        if tree.is_nested(mask):
            mask = mask[0]
        feed = state_feed()
        if feed is None:
            return self.path_loop(sequences, initial_state, mask, training)
        previous_needed = mask is not None and not self.zero_output_for_mask
        initial_state, previous = feed.initial_states(
            self, initial_state, sequences, previous_needed
        )
        feed_token, loop_token = _state_feed.set(None), _fed_loop.set(True)
        try:
            last_output, outputs, states = self.path_loop(sequences, initial_state, mask, training)
        finally:
            _state_feed.reset(feed_token)
            _fed_loop.reset(loop_token)
        if previous_needed and previous is not None:
            last_output, outputs = continued_outputs(
                last_output, outputs, mask, previous, self.return_sequences
            )
        feed.final_states(self, tree.flatten(states), last_output)
        return last_output, outputs, states

    def path_loop(self, sequences, initial_state, mask, training=False):
        """The recurrence on this layer's path (`path`, or the loop of
        ``loop_override``): ``(last_output, outputs, states)``."""
        override = _loop_override.get()
        if override is not None and not in_stateless_scope():
            return override(self, sequences, initial_state, mask, training)
        path = self.path(bool(training))
        if path == "generic" or in_stateless_scope():
            # Keras' shape inference (and `stateless_call`) reads variables
            # through a StatelessScope: a compiled loop traced there would keep
            # those stand-in values for good. Keras' loop is traced afresh.
            return self.generic_loop(sequences, initial_state, mask, training)
        # Stateful layers pass their state variables: read them as tensors.
        initial_state = [
            ops.cast(tf.convert_to_tensor(s), self.cell.compute_dtype) for s in initial_state
        ]
        mask = None if mask is None else ops.cast(mask, "bool")
        args = (sequences, initial_state, mask, training)
        if path == "scan" and (self.implementation == "scan" or sequences.shape[1] is not None):
            return self.scan_loop(*args)
        # auto's scan at an unknown length (an export) takes the portable loop
        if path in ("scan", "fused"):
            return self.fused_loop(*args)
        if mask is None or self.implementation == "cudnn":
            return self.cudnn_loop(*args)
        return tf.cond(
            cudnn_accepts(mask),
            lambda: self.cudnn_loop(*args),
            lambda: self.fused_loop(*args),
        )

    def generic_loop(self, sequences, initial_state, mask, training):
        """Keras' loop (``keras.layers.RNN.inner_loop``). A cell taking batch
        statistics (``batch_norm=True``, in training) gets each step's mask
        for its step context (``cell.call``'s ``statistics_rows``), so its
        statistics are over the rows unmasked at that step, and the step that
        ``backend.rnn`` runs on step 0 only to learn the output's shape
        (without ``unroll``) updates no moving average
        (``update_statistics``); the loop is the same ``backend.rnn`` call."""
        cell = self.cell
        if not (training and getattr(cell, "batch_norm", False)):
            return super().inner_loop(sequences, initial_state, mask, training=training)
        calls = []

        def step(inputs, states):
            # The step's inputs, then its mask as one more feature: Keras'
            # loop takes nested inputs only when their length is known.
            x, rows = inputs[..., :-1], inputs[..., -1]
            update = bool(calls) or self.unroll
            calls.append(None)
            output, new_states = cell(
                x,
                states,
                training=training,
                statistics_rows=None if mask is None else rows,
                update_statistics=update,
            )
            return output, new_states if tree.is_nested(new_states) else [new_states]

        rows = ops.ones_like(sequences[..., :1]) if mask is None else mask
        rows = ops.cast(rows, sequences.dtype)
        rows = rows if len(rows.shape) == 3 else rows[:, :, None]
        return backend.rnn(
            step,
            ops.concatenate([sequences, rows], axis=-1),
            list(initial_state) if tree.is_nested(initial_state) else [initial_state],
            go_backwards=self.go_backwards,
            mask=mask,
            unroll=self.unroll,
            input_length=sequences.shape[1],
            zero_output_for_mask=self.zero_output_for_mask,
            return_all_outputs=self.return_sequences,
        )

    def fused_loop(self, sequences, initial_state, mask, training):
        """The fused path, compiled (training steps, eager calls) or portable
        (inference graphs, ``portable()``): see the module docstring. The
        batch runs as `fused.loop_count` loops, each over its own rows
        (`fused.row_parts`), split before the input projection: each loop
        projects its own rows, so no projected sequence is copied to be split.
        Dropout masks are drawn for the whole batch first."""
        cell = self.cell
        sequences = drop_inputs(cell, sequences, training)
        recurrent_mask = cell.get_recurrent_dropout_mask(initial_state[0]) if training else None
        compiled = compiles_loop(training)
        loops = loop_count(sequences.shape[0], sequences.shape[1], compiled)
        parts = row_parts(loops, sequences, initial_state, mask, recurrent_mask)
        results = [self.fused_rows(*part, training, compiled, loops == 1) for part in parts]
        last_output, outputs, *states = (
            part[0] if loops == 1 else tf.concat(part, axis=0)
            for part in zip(*(tree.flatten(result) for result in results))
        )
        if self.return_sequences:  # the loop's TensorArray loses the static step count
            outputs = tf.ensure_shape(outputs, (None, sequences.shape[1], None))
        return last_output, outputs, states

    def scan_loop(self, sequences, initial_state, mask, training):
        """The scan path (`keras_rnncells.layers.scan`): the cell's linear
        recurrence over the whole sequence at once."""
        return scan_recurrence(
            self.cell,
            drop_inputs(self.cell, sequences, training),
            initial_state,
            mask,
            bool(training),
            bool(self.go_backwards),
            bool(self.zero_output_for_mask),
            bool(self.return_sequences),
            compiled=compiles_loop(training),
        )

    def fused_rows(self, sequences, states, mask, recurrent_mask, training, compiled, alone):
        """The fused loop over batch-major ``sequences`` (some rows of the
        batch; ``alone``: all of them), or two, over the halves of the sequence
        one after the other (`fused.time_halves`): ``(last_output, outputs, states)``,
        ``outputs`` batch-major."""
        cell = self.cell
        inputs = ops.transpose(sequences, (1, 0, 2))
        if mask is not None:
            mask = ops.transpose(mask, (1, 0))
        if self.go_backwards:  # the inputs, not each projected block, in reverse
            inputs = ops.flip(inputs, axis=0)
            mask = None if mask is None else ops.flip(mask, axis=0)
        outputs, last_output = [], None
        for piece, piece_mask in time_pieces(inputs, mask, bool(training) and compiled):
            last_output, piece_outputs, states = fused_recurrence(
                cell,
                cell.step_inputs(piece, training),
                list(states),
                piece_mask,
                recurrent_mask,
                bool(training),
                bool(self.zero_output_for_mask),
                bool(self.return_sequences),
                compiled=compiled,
                blocked=alone and self.column_blocks,
                initial_output=last_output,  # what a masked step emits again
            )
            outputs.append(piece_outputs)
        # Without return_sequences a loop's outputs are its last output alone.
        whole = self.return_sequences and len(outputs) > 1
        joined = tf.concat(outputs, axis=0) if whole else outputs[-1]
        return last_output, ops.transpose(joined, (1, 0, 2)), states

    def cudnn_loop(self, sequences, initial_state, mask, training):
        """Keras' cuDNN kernel, its padded outputs made to match the other paths."""
        sequences = drop_inputs(self.cell, sequences, training)
        last, outputs, states = self.cell.cudnn_loop(
            sequences, initial_state, mask, self.go_backwards, self.return_sequences
        )
        if mask is not None:
            if self.zero_output_for_mask:
                final_valid = mask[:, :1] if self.go_backwards else mask[:, -1:]
                last = ops.where(final_valid, last, ops.zeros_like(last))
            elif self.return_sequences and not self.go_backwards:
                # cuDNN writes zeros past each sequence's end; Keras carries
                # the last valid output forward.
                outputs = ops.where(mask[:, :, None], outputs, last[:, None, :])
        return last, outputs, list(states)

    def get_config(self) -> dict:
        config = super().get_config()
        config["implementation"] = self.implementation
        config["column_blocks"] = self.column_blocks
        if self.use_cudnn != "auto":
            config["use_cudnn"] = self.use_cudnn
        return config


_warned_legacy = False


def resolve_implementation(implementation: Any, use_cudnn: Any) -> str:
    """``implementation`` as one of `IMPLEMENTATIONS`, given Keras' legacy
    integers and ``use_cudnn`` (see `RNN`); a ``ValueError`` otherwise."""
    global _warned_legacy
    if use_cudnn not in USE_CUDNN or not isinstance(use_cudnn, (str, bool)):
        raise ValueError(
            f"Argument `use_cudnn` must be one of {USE_CUDNN}, received: {use_cudnn!r}"
        )
    if implementation in LEGACY_IMPLEMENTATIONS and not isinstance(implementation, bool):
        if not _warned_legacy:
            _warned_legacy = True
            warnings.warn(
                f"Argument `implementation={implementation}` is Keras 2's kernel choice, which "
                "Keras 3 ignores; keras_rnncells reads it as implementation='auto' (its "
                f"choices: {IMPLEMENTATIONS})",
                stacklevel=4,
            )
        implementation = "auto"
    if implementation not in IMPLEMENTATIONS or not isinstance(implementation, str):
        raise ValueError(
            f"Argument `implementation` must be one of {IMPLEMENTATIONS} (or Keras' legacy "
            f"{LEGACY_IMPLEMENTATIONS}), received: {implementation!r}"
        )
    contradiction = (use_cudnn is True and implementation in ("fused", "generic")) or (
        use_cudnn is False and implementation == "cudnn"
    )
    if contradiction:
        raise ValueError(
            f"Arguments `use_cudnn={use_cudnn!r}` and `implementation={implementation!r}` "
            "contradict each other; pass one of them"
        )
    return "cudnn" if use_cudnn is True else implementation


def cudnn_accepts(mask):
    """cuDNN needs right-padded masks and no fully masked row."""
    lengths = ops.sum(ops.cast(mask, "int32"), axis=1)
    right_padded = ops.all(ops.equal(mask, tf.sequence_mask(lengths, tf.shape(mask)[1])))
    return ops.logical_and(right_padded, ops.all(lengths > 0))


def drop_inputs(cell, sequences, training):
    """Input dropout with one mask for the whole sequence, as keras.layers.RNN."""
    if not training or cell.dropout == 0:
        return sequences
    return sequences * ops.expand_dims(cell.get_dropout_mask(sequences[:, 0, :]), 1)


def continued_outputs(last_output, outputs, mask, previous, return_sequences):
    """``(last_output, outputs)`` of a masked recurrence (without
    ``zero_output_for_mask``) as they are where it continues a sequence whose
    step before the first output ``previous`` (B, output_size): every path
    emits zeros at a row's masked steps before its first unmasked one (and as
    the last output of a row without any), where the whole sequence emits
    that step's output again. Gathers only: a select of floats would leak a
    NaN from the branch not taken into ONNX (tf2onnx's ``tf.where``)."""
    seen = tf.minimum(tf.cumsum(ops.cast(mask, "int32"), axis=1), 1)  # (B, T)
    previous = ops.cast(previous, last_output.dtype)
    ran = tf.minimum(tf.reduce_sum(seen, axis=1), 1)[:, None]
    last_output = tf.gather(tf.stack([previous, last_output], 1), ran, batch_dims=1)[:, 0]
    if return_sequences:  # index 0: previous; t + 1: step t's output
        index = seen * tf.range(1, tf.shape(seen)[1] + 1)[None]
        outputs = tf.gather(tf.concat([previous[:, None], outputs], 1), index, batch_dims=1)
    return last_output, outputs


def check_initial_state(layer, sequences, initial_state) -> None:
    states = tree.flatten(initial_state)
    sizes = tree.flatten(layer.state_size)
    expected = [(sequences.shape[0], size) for size in sizes]
    received = [tuple(getattr(s, "shape", ())) for s in states]
    ok = len(states) == len(sizes) and all(
        shapes_compatible(r, e) and r[1] is not None for r, e in zip(received, expected)
    )
    if not ok:
        raise ValueError(
            f"Argument `initial_state` of layer {layer.name!r} must be "
            f"{len(sizes)} tensor(s) of shapes {expected}, received shapes {received}"
        )
