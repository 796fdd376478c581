"""What an application hands the exporters: its serving functions and
examples (`Servable`), the contract of its string front end for ONNX
(`StringFrontEnd`, `padded_ids`), and the models whose class serves through
a function of its own (`register_model_servable`, called by the application
registry: export never imports the applications)."""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_rnncells.cells.registry import get_cell, list_cells
from keras_rnncells.export.limits import RequestLimits, check_limits, checked_texts
from keras_rnncells.layers.rnn import RNN, portable
from keras_rnncells.text.vocabulary import PAD_ID


@dataclass
class StringFrontEnd:
    """What a `Servable` needs for an ONNX model with a string input (built
    by `keras_rnncells.export.onnx_text_graph`, checked and written by
    `keras_rnncells.export.onnx_text`).

    * ``tokenizer``: the application's tokenizer: a `WordPieceTokenizer`
      (``lowercase``), `SentencePieceTokenizer`, `CharTokenizer` or
      `WordTokenizer`.
    * ``function``: ragged token ids ``(batch, None)`` (the tokenizer's
      ``tokenize``) -> dict of named outputs, in TensorFlow.
    * ``replacements``: ``(RE2 pattern, rewrite)`` applied to the text first.
    * ``input_name``: the string input's name, a key of the servable's examples.
    * ``detokenizers``: string output name -> (name of an int ids output
      ``(batch, length)`` of ``function``, its `CharTokenizer` or
      `SentencePieceTokenizer`): the model
      gives that output as text (``tokenizer.detokenize``) instead of the ids.
    * ``pad_to_multiple``: ``function`` pads the ids' columns up to a
      multiple of it (`padded_ids`), as the id form's inputs are padded: what
      an app that tokenizes on its side pads to
      (`keras_rnncells.export.tokenizer_files`).
    """

    tokenizer: Any
    function: Callable[[tf.RaggedTensor], dict[str, tf.Tensor]]
    replacements: tuple[tuple[str, str], ...] = ()
    input_name: str = "text"
    detokenizers: dict[str, tuple[str, Any]] = field(default_factory=dict)
    pad_to_multiple: int = 1


@dataclass
class Servable:
    """A trained model ready for export.

    * ``name``: the model's name in TF Serving's layout (``EXPORT/<name>/<version>``).
    * ``module``: a ``tf.Module`` tracking every variable and lookup table the
      functions use (the Keras model, tokenizers).
    * ``serve``: a ``tf.function`` with an ``input_signature`` of named
      tensors (batch dimension ``None``), returning a dict of named outputs:
      the SavedModel's ``serving_default``. Strings in and out where the
      application reads or writes text; tokenization and decoding inside.
    * ``examples``: a batch of valid inputs of ``serve``, by input name,
      used to measure parity and to check the reloaded artifact.
    * ``onnx_function`` / ``onnx_examples``: the same model on token ids or
      numbers (no string ops), for ONNX; ``None`` where ``serve`` has no
      string input and converts as it is.
    * ``onnx_text``: a `StringFrontEnd`
      where the ONNX export also writes a model on strings (the app's
      tokenizer rebuilt from onnx and onnxruntime-extensions ops), else ``None``.
    * ``vocabulary_files``: file name -> tokens, written next to the model.
    * ``limits``: the `RequestLimits` that ``serve`` (and ``onnx_text``'s
      model) refuse a request past, on its string inputs (`with_limits`);
      ``None`` where it has none, or is not bounded yet (the writers bound
      it with the defaults, `as_servable`).
    * ``detokenizers``: string output name of ``serve`` -> (name of the int
      ids output ``(batch, length)`` of the id form, `onnx`, its tokenizer),
      for the outputs that the id form gives as ids and ``onnx_text`` does not
      already name: what an app detokenizes on its side
      (`keras_rnncells.export.tokenizer_files`).
    """

    name: str
    cell: str | None
    module: tf.Module
    serve: Any
    examples: dict[str, np.ndarray]
    onnx_function: Any = None
    onnx_examples: dict[str, np.ndarray] | None = None
    onnx_text: StringFrontEnd | None = None
    vocabulary_files: dict[str, list[str]] = field(default_factory=dict)
    limits: RequestLimits | None = None
    detokenizers: dict[str, tuple[str, Any]] = field(default_factory=dict)

    def onnx(self) -> tuple[Any, dict[str, np.ndarray]]:
        """The function and examples to convert to ONNX."""
        if self.onnx_function is None:
            return self.serve, self.examples
        return self.onnx_function, self.onnx_examples


# Model classes served by a function of their own (`register_model_servable`).
_MODEL_SERVABLES: dict[type, Callable[[Any], Servable]] = {}


def register_model_servable(model_class: type, servable: Callable[[Any], Servable]) -> None:
    """Models of ``model_class`` (and of its subclasses) are served through
    ``servable(model)`` in `model_servable`, so in every writer, instead of
    `servable_from_model`; a ``servable`` with a ``limits`` parameter (an
    application reading text) is given the request limits asked for.
    ``keras_rnncells.apps.registry.register_app`` registers each
    application's model class here."""
    if not isinstance(model_class, type) or not callable(servable):
        raise ValueError(
            "Arguments `model_class` and `servable` must be a class and a function, "
            f"received: {model_class!r}, {servable!r}"
        )
    _MODEL_SERVABLES[model_class] = servable


def as_servable(name: str, servable: Any) -> Servable:
    """``servable`` if it is a `Servable`, a ``keras.Model`` as its `Servable`
    (`model_servable`), else a ``ValueError`` naming the argument ``name``.
    A `Servable` with a string input and no ``limits`` is bounded by the
    default limits (`with_limits`): no text model is exported unbounded."""
    if isinstance(servable, keras.Model):
        return model_servable(servable)
    if not isinstance(servable, Servable):
        raise ValueError(
            f"Argument `{name}` must be a keras_rnncells.export.Servable or a built "
            f"keras.Model, received: {servable!r}"
        )
    return with_limits(servable)


def traced(function: Callable, input_signature: dict[str, tf.TensorSpec]) -> Any:
    """``function(**inputs)`` as a ``tf.function`` whose signature names its
    inputs, traced on the portable path (no cuDNN-only op, so an artifact
    written on a GPU serves on a CPU)."""
    names = list(input_signature)

    def call(*tensors):
        return function(**dict(zip(names, tensors)))

    call.__signature__ = inspect.Signature(  # callable by input name
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names]
    )

    specs = [
        tf.TensorSpec(spec.shape, spec.dtype, name=name) for name, spec in input_signature.items()
    ]
    serve = tf.function(call, input_signature=specs)
    with portable():
        serve.get_concrete_function()
    return serve


def served_ids(token_ids, vocabulary_size: int, name: str = "token_ids_must_be_in_vocabulary"):
    """Token ids ``(batch, steps)`` as an application's id signature takes
    them, alike in TensorFlow and in ONNX:

    * an id outside ``[0, vocabulary_size)`` fails the request. Unchecked,
      Keras' ``Embedding`` reads a negative id from the end of its table
      (``ops.take`` wraps it once) and ONNX's ``Gather`` wraps what is still
      negative once more, so ids in ``[-2 V, -V)`` were refused by TensorFlow
      and answered by onnxruntime, and ``[-V, 0)`` answered by both. ONNX has
      no assertion op: the check is a gather out of range, from an op named
      ``name``, which both runtimes' errors name (as
      `keras_rnncells.apps.colors.finite_or_failing` checks colors);
    * a batch of no steps gets one step of padding, so it is answered as the
      empty text is (the encoders read the last step of their recurrence).
    """
    token_ids = tf.convert_to_tensor(token_ids)
    outside = tf.logical_or(token_ids < 0, token_ids >= vocabulary_size)
    failing = tf.cast(tf.reduce_any(outside), tf.int32)
    token_ids += tf.gather(tf.zeros((1,), token_ids.dtype), failing[None], name=name)
    missing = tf.maximum(1 - tf.shape(token_ids)[1], 0)
    return tf.pad(token_ids, [[0, 0], [0, missing]])


def padded_ids(ids: tf.RaggedTensor, max_length: int | None, multiple: int = 1) -> tf.Tensor:
    """Ragged int ids ``(batch, None)`` as ``Tokenizer.pad`` makes them
    (without ``[START]`` and ``[END]``): each row truncated to
    ``max_length`` (None: not), padded with ``PAD_ID`` to the longest row
    (at least one column), the columns then rounded up to a multiple of
    ``multiple``.

    Built from the row lengths with range, comparison and gather ops only,
    which tf2onnx converts exactly at every length: its conversion of
    ``RaggedTensor.to_tensor`` divides by the longest row's length (an
    onnxruntime "integer division by zero" when every text is empty), and it
    makes TensorFlow's integer floor division ONNX's truncating ``Div``
    (wrong for a negative operand, so the width is computed on non-negative
    numbers)."""
    lengths = ids.row_lengths()
    if max_length is not None:
        lengths = tf.minimum(lengths, tf.cast(max_length, lengths.dtype))
    longest = tf.maximum(tf.reduce_max(tf.concat([lengths, [0]], 0)), 1)
    width = (longest + multiple - 1) // multiple * multiple
    columns = tf.range(width, dtype=lengths.dtype)
    positions = ids.row_starts()[:, None] + columns[None, :]
    padding = tf.size(ids.values, out_type=lengths.dtype)  # the index of the PAD_ID added
    values = tf.concat([ids.values, tf.constant([PAD_ID], ids.values.dtype)], 0)
    return tf.gather(values, tf.where(columns[None, :] < lengths[:, None], positions, padding))


def layer_servable(
    layer: keras.layers.Layer, name: str, input_dim: int, cell: str | None = None, seed: int = 0
) -> Servable:
    """A bare sequence-to-sequence layer on float sequences ``(batch, steps,
    input_dim)``, returning its outputs and their last step."""
    layer.build((None, None, input_dim))
    module = tf.Module()
    module.layer = layer

    def run(sequences):
        outputs = layer(sequences)
        return {"outputs": outputs, "last": outputs[:, -1]}

    serve = traced(run, {"sequences": tf.TensorSpec((None, None, input_dim), tf.float32)})
    rng = np.random.default_rng(seed)
    examples = {"sequences": rng.normal(size=(2, 5, input_dim)).astype("float32")}
    return Servable(name=name, cell=cell, module=module, serve=serve, examples=examples)


def recurrent_layer_servable(
    cell: str, units: int = 4, input_dim: int = 3, seed: int = 0, **layer_kwargs: Any
) -> Servable:
    """``layer_servable`` of ``RNN(get_cell(cell)(units), return_sequences=True)``:
    what the exporters' tests convert for every cell."""
    keras.utils.set_random_seed(seed)
    layer = RNN(get_cell(cell)(units), return_sequences=True, **layer_kwargs)
    return layer_servable(layer, f"rnn-{cell}", input_dim, cell, seed)


# -- any Keras model -------------------------------------------------------------

# Names Keras gives unnamed inputs (``keras.Input(shape)``): not worth serving under.
AUTOMATIC_INPUT_NAME = re.compile(r"keras_tensor(_\d+)?")
EXAMPLE_BATCH, EXAMPLE_STEPS = 2, 5  # the examples' size where the signature has None
EXAMPLE_TEXTS = ("a short text", "light greenish blue")


def model_servable(
    model: keras.Model, name: str | None = None, limits: RequestLimits | None = None
) -> Servable:
    """The `Servable` of any built Keras model: a model of a class registered
    with `register_model_servable` (an application model, as ``rnncells
    train`` writes it: text in and out) through its function, every other
    model through `servable_from_model`.

    ``limits``: the `RequestLimits` of its string inputs (a limit left None:
    the application's default, else `limits.DEFAULT_LIMITS`); given for a
    model without string input, a ``ValueError``."""
    check_limits("limits", limits)
    serve = next(
        (_MODEL_SERVABLES[cls] for cls in type(model).__mro__ if cls in _MODEL_SERVABLES), None
    )
    if serve is None:
        return servable_from_model(model, name, limits=limits)
    bounded = "limits" in inspect.signature(serve).parameters  # an application reading text
    if limits is not None and not bounded:
        raise ValueError(
            f"Argument `limits`: a {type(model).__name__} takes no text; request limits "
            "bound string inputs only"
        )
    servable = serve(model, limits=limits) if bounded else serve(model)
    servable.name = servable.name if name is None else check_model_name(name)
    return with_limits(servable)


def servable_from_model(
    model: keras.Model,
    name: str | None = None,
    input_signature: Any = None,
    seed: int = 0,
    limits: RequestLimits | None = None,
) -> Servable:
    """A `Servable` serving ``model(..., training=False)``: any Keras model
    (Sequential, functional, subclassed) with any layers, ours or Keras'.

    * Inputs: ``input_signature`` where given, else the model's inputs as
      Keras' ``model.export`` derives them (a subclassed model: the shapes of
      its first call, in ``model.input_dtype``). ``input_signature`` is what
      ``model.export`` takes: a list with one entry per positional argument of
      ``model.call``, each a ``tf.TensorSpec``, ``keras.InputSpec`` or
      ``keras.KerasTensor``, or a list or dict of them. The batch dimension
      is always ``None``. Each input is named by its dict key, else by its
      spec's name (``keras.Input(..., name=...)``), else ``inputs`` (or
      ``inputs_<i>`` for several).
    * Outputs: a dict output keeps its keys; other outputs are named
      ``output_0``, ``output_1``, ... (as Keras' ``model.export`` names them).
    * ``name``: the model's name in the export layout, default ``model.name``.
    * Examples (for the parity checks), drawn with ``seed``: ``(2, 5, ...)``
      where the signature has ``None``; floats ~ N(0, 1); integers are ids in
      ``[1, n)`` for the smallest ``Embedding`` input size ``n`` of the model
      (2 without one), booleans true, both with the last two steps of the
      second row set to 0 / false (right padding, as masks expect); where a
      layer of the model has ``example_ids(shape, n, rng)`` (the tree layers'
      `keras_rnncells.tree.TransitionsFromTokens`: postfix trees), it draws
      the integer examples instead.
    * ``limits``: a model with a string input (one that starts with a
      ``TextVectorization``, say) refuses a request past these
      `RequestLimits` (`with_limits`; a limit left None:
      `limits.DEFAULT_LIMITS`); given for a model without one, a ``ValueError``.
    """
    check_limits("limits", limits)
    if not isinstance(model, keras.Model):
        raise ValueError(f"Argument `model` must be a keras.Model, received: {model!r}")
    name = check_model_name(model.name if name is None else name)
    arguments = model_signature(model, input_signature)
    paths_and_specs = keras.tree.flatten_with_path(arguments)
    specs = input_names([path for path, _ in paths_and_specs], [s for _, s in paths_and_specs])
    examples = model_examples(model, specs, seed)
    names = list(specs)

    def run(**inputs):
        tensors = [inputs[key] for key in names]
        outputs = model(*keras.tree.pack_sequence_as(arguments, tensors), training=False)
        if isinstance(outputs, dict):
            return dict(outputs)
        return {f"output_{i}": tensor for i, tensor in enumerate(keras.tree.flatten(outputs))}

    if not model.built:  # an input_signature given for a model never called
        run(**{key: tf.constant(value) for key, value in examples.items()})
    module = tf.Module()
    module.model = model
    servable = Servable(
        name=name,
        cell=model_cells(model),
        module=module,
        serve=traced(run, specs),
        examples=examples,
    )
    return with_limits(servable, limits)


def check_model_name(name: Any) -> str:
    """``name`` if it can name a directory of the export layout."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ValueError(
            "Argument `name` must be letters, digits, '.', '_' or '-' (a directory name), "
            f"received: {name!r}"
        )
    return name


def model_signature(model: keras.Model, input_signature: Any) -> list:
    """The positional arguments of ``model.call`` as a structure of
    ``tf.TensorSpec`` (batch dimension ``None``)."""
    from keras.src.export.export_utils import get_input_signature  # no public name

    if input_signature is None:
        if not model.built or not (
            getattr(model, "inputs", None) or getattr(model, "_build_shapes_dict", None)
        ):
            raise ValueError(
                f"Argument `model` ({model.name!r}) has no known inputs: call it on a batch "
                "or build it first, or pass `input_signature`"
            )
        input_signature = get_input_signature(model)
    if not isinstance(input_signature, (list, tuple)) or not input_signature:
        raise ValueError(
            "Argument `input_signature` must be a non-empty list with one spec (or list or "
            f"dict of specs) per positional argument of model.call, received: {input_signature!r}"
        )
    return keras.tree.map_structure(tensor_spec_of, list(input_signature))


def tensor_spec_of(spec: Any) -> tf.TensorSpec:
    """A ``tf.TensorSpec``, ``keras.InputSpec`` or ``keras.KerasTensor`` as a
    ``tf.TensorSpec`` with a ``None`` batch dimension."""
    shape = getattr(spec, "shape", None)
    dtype = getattr(spec, "dtype", None)
    if not isinstance(spec, (tf.TensorSpec, keras.InputSpec, keras.KerasTensor)) or None in (
        shape,
        dtype,
    ):
        raise ValueError(
            "Argument `input_signature` must hold tf.TensorSpec, keras.InputSpec or "
            f"keras.KerasTensor with a shape and dtype, received: {spec!r}"
        )
    shape = tf.TensorShape(shape).as_list()
    if not shape:
        raise ValueError(
            f"Argument `input_signature`: {spec!r} has no batch dimension (a scalar input)"
        )
    return tf.TensorSpec([None, *shape[1:]], tf.as_dtype(dtype), getattr(spec, "name", None))


def input_names(paths: list[tuple], specs: list[tf.TensorSpec]) -> dict[str, tf.TensorSpec]:
    """The flat inputs by serving name: the innermost dict key of each path,
    else the spec's own name (unless Keras made it up), else ``inputs``."""
    named: dict[str, tf.TensorSpec] = {}
    for index, (path, spec) in enumerate(zip(paths, specs)):
        keys = [key for key in path if isinstance(key, str)]
        given = spec.name if spec.name and not AUTOMATIC_INPUT_NAME.fullmatch(spec.name) else None
        default = "inputs" if len(specs) == 1 else f"inputs_{index}"
        key = re.sub(r"[^A-Za-z0-9_.-]", "_", keys[-1] if keys else given or default)
        key = key if re.match(r"[A-Za-z0-9.]", key) else f"input{key}"
        if key in named:
            raise ValueError(
                f"Argument `input_signature`: two inputs are named {key!r}; name them apart "
                "(keras.Input(..., name=...) or dict keys)"
            )
        named[key] = spec
    return named


def model_examples(
    model: keras.Model, specs: dict[str, tf.TensorSpec], seed: int
) -> dict[str, np.ndarray]:
    """A batch of valid inputs for ``specs`` (see `servable_from_model`)."""
    rng = np.random.default_rng(seed)
    embeddings = [
        layer.input_dim
        for layer in model._flatten_layers()
        if isinstance(layer, keras.layers.Embedding)
    ]
    ids = min(embeddings, default=2)
    # A layer that only reads some id sequences (the tree layers' postfix
    # trees) draws the integer examples itself.
    drawers = [
        layer.example_ids for layer in model._flatten_layers() if hasattr(layer, "example_ids")
    ]
    examples = {}
    for key, spec in specs.items():
        shape = [EXAMPLE_BATCH, *(EXAMPLE_STEPS if d is None else d for d in spec.shape[1:])]
        dtype = spec.dtype
        if dtype.is_floating:
            value = rng.normal(size=shape).astype(dtype.as_numpy_dtype)
        elif dtype.is_integer and drawers:
            value = drawers[0](shape, ids, rng).astype(dtype.as_numpy_dtype)
        elif dtype.is_integer:
            value = rng.integers(min(1, ids - 1), max(ids, 1), size=shape)
            value = right_padded(value.astype(dtype.as_numpy_dtype), 0)
        elif dtype == tf.bool:
            value = right_padded(np.ones(shape, bool), False)
        elif dtype == tf.string:
            value = np.resize(np.array(EXAMPLE_TEXTS, object), shape)
        else:
            raise ValueError(
                f"Argument `model`: input {key!r} is {dtype.name}; examples are made for "
                "float, integer, bool and string inputs only"
            )
        examples[key] = value
    return examples


def right_padded(value: np.ndarray, padding: Any) -> np.ndarray:
    """``value`` with the last two steps of its second row set to ``padding``."""
    if value.ndim >= 2 and value.shape[0] >= 2 and value.shape[1] >= 3:
        value[1, -2:] = padding
    return value


def model_cells(model: keras.Model) -> str | None:
    """The registered names of the cells in ``model``'s recurrent layers
    (comma-separated, sorted), or ``None`` without any."""
    names = {get_cell(name): name for name in list_cells()}
    found = set()
    for layer in model._flatten_layers():
        cell = getattr(layer, "cell", None)
        while cell is not None and type(cell) not in names:
            cell = getattr(cell, "cell", None)  # wrappers (dropout, zoneout)
        if cell is not None:
            found.add(names[type(cell)])
    return ",".join(sorted(found)) or None


# -- request limits ----------------------------------------------------------------


def with_limits(
    servable: Servable,
    limits: RequestLimits | None = None,
    defaults: RequestLimits | None = None,
) -> Servable:
    """``servable`` bounded: a copy whose ``serve`` checks its string inputs
    against ``limits`` (`keras_rnncells.export.limits.checked_texts`) before
    anything reads them, and whose ``limits`` says so (the writers record
    them, and the string-input ONNX model checks them too). A limit left
    None in ``limits`` is taken from ``defaults`` (an application's), else
    from `limits.DEFAULT_LIMITS`. Its ``examples`` are cut to what the limits
    admit (`admitted_examples`).

    A servable without string input is returned as it is (``limits`` given:
    a ``ValueError``), and so is one already bounded when ``limits`` is
    None (given: a ``ValueError``; bound a servable once)."""
    check_limits("limits", limits)
    texts = [spec.name for spec in servable.serve.input_signature if spec.dtype == tf.string]
    if not texts or servable.limits is not None:
        if limits is not None:
            reason = "has no string input" if not texts else "is already bounded"
            raise ValueError(
                f"Argument `limits`: servable {servable.name!r} {reason}; request limits "
                "bound string inputs, once"
            )
        return servable
    limits = (limits or RequestLimits()).resolved(defaults)
    serve = servable.serve

    def run(**inputs):
        checked = {name: checked_texts(inputs[name], limits, name) for name in texts}
        return serve(**{**inputs, **checked})

    return dataclasses.replace(
        servable,
        serve=traced(run, {spec.name: spec for spec in serve.input_signature}),
        examples=admitted_examples(servable.examples, texts, limits),
        limits=limits,
    )


def admitted_examples(
    examples: dict[str, np.ndarray], texts: list[str], limits: RequestLimits
) -> dict[str, np.ndarray]:
    """``examples`` cut to what ``limits`` admit: each text of the string
    inputs ``texts`` to ``max_chars`` characters, then the first rows, up to
    ``max_batch`` and ``max_total_chars`` (at least one row: its texts cut
    to nothing if they must)."""

    def cut(value: Any) -> str:
        text = value.decode("utf-8") if isinstance(value, bytes) else str(value)
        return text[: limits.max_chars]

    examples = {key: np.asarray(value) for key, value in examples.items()}
    for key in texts:
        value = examples[key]
        examples[key] = np.array([cut(t) for t in value.ravel()], str).reshape(value.shape)
    rows = len(next(iter(examples.values())))
    characters = sum(
        np.array([sum(len(t) for t in np.ravel(row)) for row in examples[key]], np.int64)
        for key in texts
    )
    kept = int(np.sum(np.cumsum(characters[: limits.max_batch]) <= limits.max_total_chars))
    if rows and not kept:
        examples = {key: value[:1] for key, value in examples.items()}
        return {**examples, **{key: np.full_like(examples[key], "") for key in texts}}
    return {key: value[:kept] for key, value in examples.items()}
