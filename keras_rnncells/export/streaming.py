"""Step forms: a model fed k >= 1 new steps at a time, its states in and out.

Real-time users (keyword spotting, typing, sensors) feed one frame or token at
a time; running the whole sequence again at each one costs O(T²). The step
form of a servable (`step_form`) is its function on the new steps plus the
states the sequence so far left: every state of every recurrent layer, in the
order the layers are called, named ``state_0`` ... ``state_{n-1}``, batch
dimension ``None``. It returns the model's outputs for those steps and the new
value of each ``state_i`` as ``next_state_i``, which the next call takes as
its ``state_i`` (ONNX cannot name an output as an input, so no format does).
Zero states start a sequence, so feeding a sequence chunk by chunk gives the
whole-sequence outputs at every step (`check_streaming`):

* an output with a steps axis (axis 1 of any length, e.g. a layer with
  ``return_sequences=True`` and a per-step head) holds the new steps' outputs;
* every other output (a head reading the final state, as the sentiment
  classifier's) is the model's output on the sequence so far, its head on
  the current state.

The function is traced on the portable path from the servable's function on
ids or numbers (``servable.onnx()``: text cannot be cut into chunks exactly),
with plain tensors in and out and no Python-side state, so SavedModel
(a ``"step"`` signature), tf2onnx (``model_step.onnx``) and the LiteRT
converter all take it as it is.

How: inside ``keras_rnncells.layers.rnn.fed_states`` every ``RNN`` layer
continues from the states a feed gives and hands its final ones back, so any
function calling our layers streams without knowing the model's structure.
What cannot continue a sequence is refused in one line naming the layer:
Keras' own recurrent layers (their states are out of reach), ``Bidirectional``
and ``go_backwards`` layers, attention and global pooling over the whole
input, the tree layers, stateful layers and layers called with an
``initial_state`` of the model's own. Any other layer that reads more than the
steps before (a convolution over time, say) is caught by `check_streaming`,
which every writer runs before writing.

A masked layer (an ``Embedding`` with ``mask_zero``, padding) emits, at a masked
step, the output of the last unmasked one. A chunk that starts with masked
steps gets that output from the sequence so far: its first state where the
cell's output is its first state (every registered cell but SCRN), else one
more state per such layer, ``"last_output"`` in the manifest (`LayerStates`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from keras import tree

from keras_rnncells.export.check import full_float32
from keras_rnncells.export.manifest import state_spec, tensor_spec
from keras_rnncells.export.servable import Servable, as_servable, traced
from keras_rnncells.layers.rnn import RNN, fed_states, loop_override, portable
from keras_rnncells.seq2seq.attention import Attention

STEP_SIGNATURE = "step"  # the SavedModel signature of the step form
# The chunk lengths a sequence is fed in to check a step form: these, then the rest.
CHUNKS = (1, 3, 5)
ATTENTION_LAYERS = (
    Attention,
    keras.layers.Attention,
    keras.layers.AdditiveAttention,
    keras.layers.MultiHeadAttention,
    keras.layers.GroupQueryAttention,
)
POOLING_LAYERS = (keras.layers.GlobalAveragePooling1D, keras.layers.GlobalMaxPooling1D)
TREE_PACKAGE = "keras_rnncells.tree"  # named, not imported: export sits below tree/


@dataclass
class LayerStates:
    """What one call of a recurrent layer takes and gives in a step form: its
    states (specs with a ``None`` batch dimension, flat, in the cell's order)
    and, where a mask can hide a whole chunk from it and its cell's output is
    not its first state, its last output (``output``), carried as one more
    state."""

    layer: Any
    states: list[tf.TensorSpec]
    output: tf.TensorSpec | None = None

    @property
    def count(self) -> int:
        return len(self.states) + (self.output is not None)


@dataclass
class StepForm:
    """A servable's step form (see the module docstring).

    * ``function``: a ``tf.function`` with an ``input_signature`` of the
      servable's inputs (``sequence_inputs``: the new steps on axis 1; any
      other input as the whole function takes it) and ``state_0`` ...
      ``state_{n-1}``, returning a dict of the outputs and the new states
      (``next_state_0`` ...).
    * ``states``: what each ``state_i`` is, as the manifest lists it
      (`keras_rnncells.export.manifest.state_spec`).
    * ``step_outputs``: the outputs holding one entry per new step (axis 1);
      ``current_outputs``: those on the sequence so far.
    * ``examples``: inputs of ``function`` that continue a sequence (the
      servable's examples after their first step, and the states that step
      left), for parity checks; ``zero_states(batch)`` starts one.
    * ``whole`` and ``whole_examples``: the whole-sequence function it was
      traced from and its examples (`check_streaming` compares the two).
    """

    name: str
    function: Any
    states: list[dict[str, Any]]
    sequence_inputs: tuple[str, ...]
    step_outputs: tuple[str, ...]
    current_outputs: tuple[str, ...]
    whole: Any
    whole_examples: dict[str, np.ndarray]
    examples: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def state_names(self) -> list[str]:
        """The state inputs, ``state_0`` ..."""
        return [state["name"] for state in self.states]

    @property
    def next_names(self) -> list[str]:
        """The outputs holding the new states, ``next_state_0`` ..., in the
        order of `state_names`."""
        return [state["next"] for state in self.states]

    def next_states(self, outputs: dict[str, Any]) -> dict[str, Any]:
        """The state inputs of the next call, from a call's ``outputs``."""
        return {
            name: outputs[next_name] for name, next_name in zip(self.state_names, self.next_names)
        }

    def zero_states(self, batch: int) -> dict[str, np.ndarray]:
        """The states that start a sequence of ``batch`` rows."""
        return {
            state["name"]: np.zeros((batch, *state["shape"][1:]), state["dtype"])
            for state in self.states
        }

    def description(self) -> dict[str, Any]:
        """What a manifest says of the step form (JSON-able)."""
        return {
            "sequence_inputs": list(self.sequence_inputs),
            "states": self.states,
            "start": "zero states start a sequence",
            "step_outputs": list(self.step_outputs),
            "current_outputs": list(self.current_outputs),
        }


def step_form(servable: Servable | keras.Model, name: str = "servable") -> StepForm:
    """The step form of ``servable`` (a `Servable` or any Keras model,
    `keras_rnncells.export.servable.as_servable`), traced from its function on
    ids or numbers (``servable.onnx()``). ``name``: the argument named in
    errors. Raises a one-line ``ValueError`` naming the layer that cannot
    stream, or where the function has no input with steps of any length or
    calls no recurrent layer of this package."""
    servable = as_servable(name, servable)
    function, whole_examples = servable.onnx()
    for layer in servable_layers(servable.module):
        reason = refusal(layer)
        if reason is not None:
            raise ValueError(f"Argument `{name}` cannot stream: {reason}")
    signature = list(function.input_signature)
    sequence_inputs = tuple(
        spec.name
        for spec in signature
        if spec.shape.rank and spec.shape.rank >= 2 and spec.shape[1] is None
    )
    if not sequence_inputs:
        raise ValueError(
            f"Argument `{name}` cannot stream: none of its inputs "
            f"{[(s.name, s.shape.as_list()) for s in signature]} has steps of any length "
            "(axis 1 None, e.g. keras.Input((None, features))) to feed k at a time"
        )
    plan, outputs = discover(function, signature, name)
    if not plan:
        raise ValueError(
            f"Argument `{name}` cannot stream: its function calls no keras_rnncells RNN "
            "layer, so it has no states to carry"
        )
    states, state_specs = described_states(plan)
    clash = sorted(
        ({spec.name for spec in signature} & set(state_specs))
        | (set(outputs) & {state["next"] for state in states})
    )
    if clash:
        raise ValueError(
            f"Argument `{name}` cannot stream: its inputs or outputs {clash} take the names "
            "of the step form's states; rename them"
        )
    step = traced(
        stepping(function, signature, plan, list(state_specs), name),
        {**{spec.name: spec for spec in signature}, **state_specs},
    )
    step_outputs, current_outputs = output_kinds(step, list(state_specs))
    form = StepForm(
        name=servable.name,
        function=step,
        states=states,
        sequence_inputs=sequence_inputs,
        step_outputs=step_outputs,
        current_outputs=current_outputs,
        whole=function,
        whole_examples=dict(whole_examples),
    )
    form.examples = continuing_examples(form)
    return form


# -- what cannot stream ----------------------------------------------------------


def servable_layers(module: tf.Module) -> list[keras.layers.Layer]:
    """Every Keras layer ``module`` tracks, nested layers included, each once."""
    tops = module._flatten(predicate=lambda value: isinstance(value, keras.layers.Layer))
    layers: dict[int, keras.layers.Layer] = {}
    for top in tops:
        for layer in top._flatten_layers(include_self=True, recursive=True):
            layers.setdefault(id(layer), layer)
    return list(layers.values())


def refusal(layer: Any) -> str | None:
    """Why ``layer`` cannot continue a sequence from fed states (a sentence
    naming it), or None."""
    what = f"layer {layer.name!r} ({type(layer).__name__})"
    if isinstance(layer, keras.layers.Bidirectional):
        return f"{what} reads the input backwards from its end too; stream a forward model"
    if isinstance(layer, RNN) and layer.go_backwards:
        return f"{what} runs backwards (go_backwards=True), from the input's end"
    if isinstance(layer, RNN) and layer.stateful:
        return (
            f"{what} is stateful: its states live in variables; export its stateless copy, "
            "whose states the step form carries"
        )
    if isinstance(layer, keras.layers.RNN) and not isinstance(layer, RNN):
        return (
            f"{what} is Keras' own recurrent layer, whose states a step form cannot reach; "
            "use keras_rnncells' layers (keras_rnncells.GRU, LSTM, RNN(cell), ...)"
        )
    if isinstance(layer, ATTENTION_LAYERS):
        return f"{what} attends over the whole input"
    if isinstance(layer, POOLING_LAYERS):
        return f"{what} pools over the whole input"
    if type(layer).__module__.startswith(TREE_PACKAGE):
        return f"{what} composes a tree over the whole input"
    return None


# -- tracing -----------------------------------------------------------------------


class StateFeed:
    """The feed of ``keras_rnncells.layers.rnn.fed_states`` for one trace.
    Without a ``plan`` it discovers: each layer starts from the zeros Keras
    made, and its `LayerStates` is recorded in ``layers``. With one (the
    discovered `LayerStates`, in call order) it hands out ``tensors`` (the
    step form's state inputs) to the same calls and gathers the final states
    in ``final``."""

    def __init__(
        self, argument: str, plan: Sequence[LayerStates] | None = None, tensors: Sequence = ()
    ) -> None:
        self.argument = argument
        self.plan = plan
        self.tensors = list(tensors)
        self.layers: list[LayerStates] = []
        self.final: list[tf.Tensor] = []
        self.refused: str | None = None  # the message of the refusal raised

    def check(self, layer: Any, initial_state_given: bool) -> None:
        """Raises a ``ValueError`` where ``layer`` cannot continue a sequence
        (`refusal`, or an ``initial_state`` of the model's own)."""
        reason = refusal(layer)
        if initial_state_given:
            reason = (
                f"layer {layer.name!r} ({type(layer).__name__}) is called with an "
                "`initial_state` of the model's own (an encoder's states, say), which the "
                "step form's states would replace"
            )
        if reason is not None:
            self.refused = f"Argument `{self.argument}` cannot stream: {reason}"
            raise ValueError(self.refused)

    def initial_states(self, layer, initial_state, sequences, previous_needed):
        """The states ``layer`` starts from, in the structure of
        ``initial_state`` (Keras' zeros), and the output before its first
        step where ``previous_needed``: recorded while discovering, the
        step form's inputs otherwise."""
        flat = tree.flatten(initial_state)
        if self.plan is None:
            entry = LayerStates(layer, [unbatched(state) for state in flat])
            previous = flat[0] if previous_needed else None
            if previous_needed:
                output = cell_output(layer, initial_state, sequences)
                if output is not None:  # not the first state: carried as one more
                    entry.output = output
                    previous = tf.zeros(
                        tf.concat([tf.shape(sequences)[:1], output.shape[1:]], 0), output.dtype
                    )
            self.layers.append(entry)
            return initial_state, previous
        if len(self.layers) >= len(self.plan) or self.plan[len(self.layers)].layer is not layer:
            raise RuntimeError(
                f"{self.argument}: layer {layer.name!r} was called where the step form's "
                "first trace called another; a step form needs a function that calls the "
                "same layers in the same order each time it is traced"
            )
        entry = self.plan[len(self.layers)]
        start = sum(e.count for e in self.layers)
        given = self.tensors[start : start + entry.count]
        self.layers.append(entry)
        states = [tf.cast(s, zero.dtype) for s, zero in zip(given, flat)]
        previous = None
        if previous_needed:
            previous = given[-1] if entry.output is not None else states[0]
        return tree.pack_sequence_as(initial_state, states), previous

    def final_states(self, layer, states, last_output) -> None:
        """Keeps ``layer``'s final states (and last output, where carried)."""
        entry = self.layers[-1]
        self.final.extend(states)
        if entry.output is not None:
            self.final.append(last_output)

    def finished(self) -> list[tf.Tensor]:
        """The final states, once every layer of the plan was called."""
        if self.plan is not None and len(self.layers) != len(self.plan):
            raise RuntimeError(
                f"{self.argument}: the step form's trace called {len(self.layers)} "
                f"recurrent layer(s), its first trace {len(self.plan)}"
            )
        return self.final


def unbatched(tensor: tf.Tensor) -> tf.TensorSpec:
    """The spec of ``tensor`` with a ``None`` batch dimension."""
    return tf.TensorSpec((None, *tensor.shape[1:]), tensor.dtype)


def cell_output(layer: Any, initial_state: Any, sequences: tf.Tensor) -> tf.TensorSpec | None:
    """None where ``layer``'s cell returns its first new state as its output
    (the same tensor), else the spec of its output: the cell traced once, on
    its own, for one step."""
    found = []
    flat = tree.flatten(initial_state)

    def probe(inputs, *states):
        output, new_states = layer.cell(
            inputs, tree.pack_sequence_as(initial_state, list(states)), training=False
        )
        found.append(None if output is tree.flatten(new_states)[0] else unbatched(output))
        return output

    inputs = tf.TensorSpec((None, *sequences.shape[2:]), sequences.dtype)
    tf.function(probe, autograph=False).get_concrete_function(inputs, *(unbatched(s) for s in flat))
    return found[0]


def discover(
    function: Any, signature: list[tf.TensorSpec], argument: str
) -> tuple[list[LayerStates], list[str]]:
    """The recurrent layers ``function`` calls, in order, with their states,
    and the names of its outputs: ``function`` traced once with every layer
    on Keras' loop, which traces one step where the portable loop traces five."""
    feed = StateFeed(argument)

    def fed(*inputs):
        with fed_states(feed):
            return function.python_function(*inputs)

    try:
        with portable(), loop_override(keras_loop):
            concrete = tf.function(fed, input_signature=signature).get_concrete_function()
    except Exception:  # tracing (autograph, Keras) rewords what it passes on
        if feed.refused is None:
            raise
        raise ValueError(feed.refused) from None
    outputs = concrete.structured_outputs
    return feed.layers, list(outputs) if isinstance(outputs, dict) else []


def keras_loop(layer: Any, sequences, initial_state, mask, training) -> tuple:
    """``loop_override``: Keras' own loop (``keras.layers.RNN.inner_loop``)."""
    return keras.layers.RNN.inner_loop(layer, sequences, initial_state, mask, training=training)


def described_states(
    plan: Sequence[LayerStates],
) -> tuple[list[dict[str, Any]], dict[str, tf.TensorSpec]]:
    """The manifest's description of every state, and their specs by name."""
    described, specs = [], {}
    for entry in plan:
        kinds = [
            *enumerate(entry.states),
            *([("last_output", entry.output)] if entry.output else []),
        ]
        for kind, spec in kinds:
            name = f"state_{len(specs)}"
            specs[name] = tf.TensorSpec(spec.shape, spec.dtype, name=name)
            described.append(
                state_spec(name, spec.dtype.name, spec.shape.as_list(), entry.layer.name, kind)
            )
    return described, specs


def stepping(
    function: Any,
    signature: list[tf.TensorSpec],
    plan: list[LayerStates],
    state_names: list[str],
    argument: str,
) -> Any:
    """The step form's Python function, ``step(**inputs_and_states)``: every
    trace (TensorFlow's, tf2onnx's, the LiteRT converter's) feeds the states
    through a feed of its own."""
    input_names = [spec.name for spec in signature]

    def step(**tensors):
        feed = StateFeed(argument, plan, [tensors[name] for name in state_names])
        with fed_states(feed):
            outputs = function.python_function(*(tensors[name] for name in input_names))
        next_names = [f"next_{name}" for name in state_names]
        return {**outputs, **dict(zip(next_names, feed.finished()))}

    return step


def output_kinds(step: Any, state_names: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The outputs with steps (axis 1 of any length), and the others."""
    outputs = step.get_concrete_function().structured_outputs
    steps, current = [], []
    for name, tensor in outputs.items():
        if name in {f"next_{state}" for state in state_names}:
            continue
        has_steps = tensor.shape.rank is not None and tensor.shape.rank >= 2
        (steps if has_steps and tensor.shape[1] is None else current).append(name)
    return tuple(sorted(steps)), tuple(sorted(current))


# -- feeding a sequence in chunks ---------------------------------------------------


def chunk_bounds(steps: int, chunks: Sequence[int] = CHUNKS) -> list[tuple[int, int]]:
    """``(start, end)`` of the chunks of a sequence of ``steps``: ``chunks``
    first, then the rest (the last chunk cut at the end)."""
    bounds, start = [], 0
    for length in [*chunks, max(steps - sum(chunks), 0)]:
        end = min(start + length, steps)
        if end > start:
            bounds.append((start, end))
        start = end
    return bounds


def sliced(
    form: StepForm, inputs: dict[str, np.ndarray], start: int, end: int
) -> dict[str, np.ndarray]:
    """``inputs`` with their sequences cut to steps ``start:end``."""
    return {
        key: value[:, start:end] if key in form.sequence_inputs else value
        for key, value in inputs.items()
    }


def sequence_steps(form: StepForm, inputs: dict[str, np.ndarray]) -> int:
    """The steps of ``inputs``' sequences (one number for them all)."""
    steps = {np.shape(inputs[key])[1] for key in form.sequence_inputs}
    if len(steps) != 1:
        raise ValueError(
            f"Argument `inputs` must hold sequences of one length, received lengths {steps}"
        )
    return steps.pop()


def run_function(function: Any, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
    """``function(**inputs)`` as numpy arrays by output name."""
    outputs = function(**{key: tf.constant(value) for key, value in inputs.items()})
    return {key: np.asarray(value) for key, value in outputs.items()}


def continuing_examples(form: StepForm) -> dict[str, np.ndarray]:
    """Inputs of the step form that continue a sequence: the whole examples'
    steps after the first, with the states the first left (zero states where
    the examples have one step), so a check reads every state input."""
    examples = form.whole_examples
    batch = len(next(iter(examples.values())))
    steps = sequence_steps(form, examples)
    if steps < 2:
        return {**examples, **form.zero_states(batch)}
    first = run_function(form.function, {**sliced(form, examples, 0, 1), **form.zero_states(batch)})
    return {
        **sliced(form, examples, 1, steps),
        **form.next_states(first),
    }


def check_streaming(
    form: StepForm, tolerance: float, chunks: Sequence[int] = CHUNKS
) -> dict[str, Any]:
    """Feeds the whole function's examples to the step form chunk by chunk
    (``chunks``, then the rest) from zero states, in this process (in full
    float32): the step outputs joined must equal the whole function's at
    every step, and the other outputs after each chunk the whole function's
    on the sequence up to its end. Returns the largest absolute errors (per
    output) and the chunks; raises a ``ValueError`` above ``tolerance``."""
    examples = form.whole_examples
    batch = len(next(iter(examples.values())))
    bounds = chunk_bounds(sequence_steps(form, examples), chunks)
    errors = dict.fromkeys((*form.step_outputs, *form.current_outputs), 0.0)
    with full_float32():
        whole = run_function(form.whole, examples)
        states = form.zero_states(batch)
        pieces: dict[str, list[np.ndarray]] = {name: [] for name in form.step_outputs}
        for start, end in bounds:
            outputs = run_function(form.function, {**sliced(form, examples, start, end), **states})
            states = form.next_states(outputs)
            for name in form.step_outputs:
                pieces[name].append(outputs[name])
            if form.current_outputs:
                prefix = run_function(form.whole, sliced(form, examples, 0, end))
                for name in form.current_outputs:
                    errors[name] = max(errors[name], difference(outputs[name], prefix[name]))
        for name in form.step_outputs:
            errors[name] = difference(np.concatenate(pieces[name], axis=1), whole[name])
    too_far = {name: error for name, error in errors.items() if not error <= tolerance}
    lengths = [end - start for start, end in bounds]
    if too_far:
        raise ValueError(
            f"The step form of {form.name!r} fed in chunks of {lengths} steps differs from "
            f"the whole-sequence model by {too_far} (max abs error per output), above "
            f"tolerance={tolerance}: a layer of the model reads more than the steps before "
            "(a convolution or pooling over time?)"
        )
    return {"chunks": lengths, "max_abs_error": errors, "tolerance": tolerance}


def difference(actual: np.ndarray, expected: np.ndarray) -> float:
    """The largest absolute difference (inf for another shape; exact for
    integers and strings: 0 or inf)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        return float("inf")
    if not np.issubdtype(expected.dtype, np.number):
        return 0.0 if np.array_equal(actual, expected) else float("inf")
    return float(np.max(np.abs(actual.astype(np.float64) - expected), initial=0.0))


def step_specs(form: StepForm) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The step function's inputs and outputs as the manifest lists them."""
    concrete = form.function.get_concrete_function()
    inputs = [
        tensor_spec(spec.name, spec.dtype.name, spec.shape.as_list())
        for spec in form.function.input_signature
    ]
    outputs = [
        tensor_spec(name, tensor.dtype.name, tensor.shape.as_list())
        for name, tensor in sorted(concrete.structured_outputs.items())
    ]
    return inputs, outputs


__all__ = ["STEP_SIGNATURE", "StepForm", "check_streaming", "refusal", "step_form"]
