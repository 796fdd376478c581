"""Words read from their characters: `CharacterWordEmbedding` (a char-CNN
with highway layers, Kim et al. 2016, or a character BiLSTM, Ling et al.
2015) and `GatedWordCharacterEmbedding` (the gated mix of a word's vector
and its character-built one, Miyamoto & Cho 2016).

Both read word ids ``(batch, steps)``, as ``keras.layers.Embedding`` does: the
layer holds a fixed ``(vocabulary_size, max_chars)`` table of each word's
character ids (`spell_words` builds it from a vocabulary), so a model built
on them still takes word ids in, and serves them, with no tokenizer of
characters outside the model. Word id 0 is padding (its mask is False);
character id 0 is padding inside a word's row (`PAD_CHARACTER`), 1 and 2
mark the word's beginning and end (`BEGIN_OF_WORD`, `END_OF_WORD`, Kim et
al.'s ``{`` and ``}``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

import keras
import numpy as np
from keras import ops

from keras_rnncells.cells.registry import make_cell
from keras_rnncells.checks import check_choice, check_input, check_integer, check_positive_int
from keras_rnncells.layers.rnn import RNN

__all__ = [
    "CharacterWordEmbedding",
    "GatedWordCharacterEmbedding",
    "SpelledWords",
    "proportional_filters",
    "spell_words",
]

Tensor = Any

KINDS = ("cnn", "bilstm")
PAD_CHARACTER, BEGIN_OF_WORD, END_OF_WORD = 0, 1, 2
# Kim et al.'s widths (both of their models) and filters per width (small model: 25 w).
KIM_WIDTHS = (1, 2, 3, 4, 5, 6)


class SpelledWords(NamedTuple):
    """A vocabulary's character table: ``table[word_id]`` holds the ids of
    ``<begin>``, the word's characters and ``<end>``, then padding (0);
    ``characters[i]`` is the character of id ``i`` (the first three: the
    padding and the two marks)."""

    table: np.ndarray
    characters: tuple[str, ...]


def spell_words(vocabulary: Sequence[str], max_chars: int | None = None) -> SpelledWords:
    """The character table of ``vocabulary`` (word id ``i`` is
    ``vocabulary[i]``; id 0 is padding and gets a row of padding only).
    Character ids: 0 padding, 1 begin-of-word, 2 end-of-word, then the
    characters of the words, most frequent first (ties in code-point order).
    ``max_chars``: the row length (None: the longest word plus its two
    marks); a longer word keeps its first ``max_chars - 2`` characters."""
    words = list(vocabulary)
    if not words or not all(isinstance(word, str) for word in words):
        raise ValueError(
            f"Argument `vocabulary` must be a non-empty sequence of str, received: "
            f"{type(vocabulary).__name__} of {len(words)}"
        )
    longest = max(len(word) for word in words[1:]) if len(words) > 1 else 0
    width = longest + 2 if max_chars is None else check_positive_int("max_chars", max_chars)
    if width < 3:
        raise ValueError(
            f"Argument `max_chars` must be at least 3 (the two marks and a character), "
            f"received: {max_chars}"
        )
    counts = Counter(character for word in words[1:] for character in word)
    ranked = sorted(counts, key=lambda c: (-counts[c], c))
    characters = ("<pad>", "<w>", "</w>", *ranked)
    index = {character: i for i, character in enumerate(characters) if i > END_OF_WORD}
    table = np.zeros((len(words), width), "int32")
    for row, word in enumerate(words[1:], start=1):
        ids = [BEGIN_OF_WORD, *(index[c] for c in word[: width - 2]), END_OF_WORD]
        table[row, : len(ids)] = ids
    return SpelledWords(table, characters)


def proportional_filters(total: int, widths: Sequence[int] = KIM_WIDTHS) -> tuple[int, ...]:
    """Filters per width in proportion to the width, as Kim et al.'s small
    model (25 w), summing to ``total`` (at least one per width)."""
    check_positive_int("total", total)
    if total < len(widths):
        raise ValueError(
            f"Argument `total` must be at least {len(widths)} (a filter per width), "
            f"received: {total}"
        )
    shares = [max(1, round(total * w / sum(widths))) for w in widths]
    shares[-1] += total - sum(shares)
    if shares[-1] < 1:
        raise ValueError(f"Argument `total` {total} cannot give each width {widths} a filter")
    return tuple(shares)


def check_widths(widths: Any, filters: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    widths = tuple(widths) if isinstance(widths, list | tuple) else (widths,)
    if not widths or not all(isinstance(w, int) and w > 0 for w in widths):
        raise ValueError(
            f"Argument `widths` must be a non-empty sequence of positive integers, "
            f"received: {widths!r}"
        )
    if filters is None:
        filters = tuple(25 * w for w in widths)
    filters = tuple(filters) if isinstance(filters, list | tuple) else (filters,)
    if len(filters) != len(widths) or not all(isinstance(f, int) and f > 0 for f in filters):
        raise ValueError(
            f"Argument `filters` must give a positive integer per width ({len(widths)}), "
            f"received: {filters!r}"
        )
    return widths, filters


@keras.saving.register_keras_serializable(package="keras_rnncells")
class CharacterWordEmbedding(keras.layers.Layer):
    """A word's vector built from its characters.

    Each word id ``w`` is spelled by the layer's fixed table (`spell_words`):
    characters ``c_1 … c_L`` (with the begin and end marks), embedded as
    ``e_j = Q[c_j]`` (``character_dim``), then, by ``kind``:

    ``"cnn"``, Kim, Jernite, Sontag & Rush 2016, "Character-Aware Neural
    Language Models": for each width ``w`` of ``widths``, ``filters[w]``
    convolutions ``H`` of that width over the characters, ``tanh``, and the
    maximum over positions::

        f_i = tanh(<[e_i … e_{i+w-1}], H> + b),   y_w = max_{i ≤ L} f_i

    where positions past the word read zero vectors and a window counts when
    it starts on one of the word's characters (so padding never changes a
    word's vector). ``y = [y_w]_w`` then goes through ``highway_layers``
    highway layers (Srivastava et al. 2015)::

        t = σ(W_T y + b_T),   z = t ⊙ relu(W_H y + b_H) + (1 − t) ⊙ y

    (``b_T`` starts at −2, their carry bias). Output ``z``, of ``Σ filters``
    features, or ``W_P z + b_P`` when ``output_dim`` is given.

    ``"bilstm"``, Ling et al. 2015, "Finding Function in Form: Compositional
    Character Models for Open Vocabulary Word Representation" (C2W): a
    recurrent layer of ``cell`` (LSTM by default, ``units``) reads the
    characters forward and another backward; their final states ``s^f``
    (after ``c_L``) and ``s^b`` (after ``c_1``) combine as::

        x = D^f s^f + D^b s^b + b_d         (output_dim, default units)

    The output is ``(batch, steps, output_dim)``; the mask is ``word_ids !=
    0`` (``mask_zero``). Word ids are ``(batch, steps)`` integers; give
    ``character_table`` (an int array ``(vocabulary_size, max_chars)``, e.g.
    ``spell_words(vocabulary).table``) or, to build an empty table that
    weights loaded later fill (what `from_config` does), ``vocabulary_size``,
    ``max_chars`` and ``num_characters``. The table is a non-trainable int32
    weight: it is saved with the model and exported with it.
    """

    def __init__(
        self,
        character_table: Any = None,
        kind: str = "cnn",
        *,
        vocabulary_size: int | None = None,
        max_chars: int | None = None,
        num_characters: int | None = None,
        character_dim: int = 15,
        widths: Sequence[int] = KIM_WIDTHS,
        filters: Sequence[int] | None = None,
        highway_layers: int = 1,
        units: int = 50,
        cell: str = "lstm",
        output_dim: int | None = None,
        mask_zero: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.kind = check_choice("kind", kind, KINDS)
        if character_table is not None:
            table = np.asarray(character_table)
            if table.ndim != 2 or not np.issubdtype(table.dtype, np.integer) or table.min() < 0:
                raise ValueError(
                    "Argument `character_table` must be a 2-D array of non-negative integer "
                    f"character ids (vocabulary_size, max_chars), received: {table.dtype} "
                    f"of shape {table.shape}"
                )
            given = {"vocabulary_size": vocabulary_size, "max_chars": max_chars}
            for name, size in zip(given, table.shape, strict=True):
                if given[name] not in (None, size):
                    raise ValueError(
                        f"Argument `{name}` must match `character_table` ({size}) or be "
                        f"None, received: {given[name]}"
                    )
            vocabulary_size, max_chars = table.shape
            needed = int(table.max()) + 1
            if num_characters is not None and num_characters < needed:
                raise ValueError(
                    f"Argument `num_characters` must exceed the table's largest id "
                    f"({needed - 1}), received: {num_characters}"
                )
            num_characters = num_characters or needed
        elif None in (vocabulary_size, max_chars, num_characters):
            raise ValueError(
                "Argument `character_table` is required, or else `vocabulary_size`, "
                "`max_chars` and `num_characters` (an empty table for weights to fill), "
                f"received: {vocabulary_size}, {max_chars}, {num_characters}"
            )
        else:
            table = None
        self.vocabulary_size = check_positive_int("vocabulary_size", vocabulary_size)
        self.max_chars = check_positive_int("max_chars", max_chars)
        self.num_characters = check_positive_int("num_characters", num_characters)
        self.character_dim = check_positive_int("character_dim", character_dim)
        self.widths, self.filters = check_widths(widths, filters)
        self.highway_layers = check_integer("highway_layers", highway_layers, 0)
        self.units = check_positive_int("units", units)
        self.cell = cell
        self.mask_zero = bool(mask_zero)
        if output_dim is not None:
            check_positive_int("output_dim", output_dim)
        self.projected = output_dim is not None or kind == "bilstm"
        natural = sum(self.filters) if kind == "cnn" else self.units
        self.output_dim = output_dim or natural
        self.supports_masking = True
        self.table = self.add_weight(
            shape=(self.vocabulary_size, self.max_chars),
            dtype="int32",
            initializer=keras.initializers.Constant(table) if table is not None else "zeros",
            trainable=False,
            name="character_table",
        )
        self.character_embedding = keras.layers.Embedding(
            self.num_characters, self.character_dim, name="characters"
        )
        if kind == "cnn":
            self.convolutions = [
                keras.layers.Conv1D(f, w, activation="tanh", name=f"width_{w}")
                for w, f in zip(self.widths, self.filters, strict=True)
            ]
            self.transforms = [
                keras.layers.Dense(natural, "relu", name=f"highway_{i + 1}")
                for i in range(self.highway_layers)
            ]
            self.gates = [
                keras.layers.Dense(
                    natural,
                    "sigmoid",
                    bias_initializer=keras.initializers.Constant(-2.0),
                    name=f"highway_gate_{i + 1}",
                )
                for i in range(self.highway_layers)
            ]
        else:
            self.forward = RNN(make_cell(cell, self.units), name="forward")
            self.backward = RNN(make_cell(cell, self.units), go_backwards=True, name="backward")
        self.projection = keras.layers.Dense(self.output_dim, name="projection")

    def build(self, input_shape: tuple) -> None:
        chars = (None, self.max_chars)
        self.character_embedding.build(chars)
        shape = (None, self.max_chars, self.character_dim)
        if self.kind == "cnn":
            for convolution, width in zip(self.convolutions, self.widths, strict=True):
                convolution.build((None, self.max_chars + width - 1, self.character_dim))
            for layer in (*self.transforms, *self.gates):
                layer.build((None, sum(self.filters)))
            natural = sum(self.filters)
        else:
            self.forward.build(shape)
            self.backward.build(shape)
            natural = 2 * self.units
        if self.projected:
            self.projection.build((None, natural))

    def spell(self, word_ids: Tensor) -> Tensor:
        """The character ids of ``word_ids``: ``(batch, steps, max_chars)``."""
        return ops.take(self.table, ops.cast(word_ids, "int32"), axis=0)

    def call(self, word_ids: Tensor) -> Tensor:
        check_input(self, "word_ids", word_ids, ("batch", "steps"), dtype="integer")
        chars = self.spell(word_ids)
        batch, steps = ops.shape(word_ids)[0], ops.shape(word_ids)[1]
        chars = ops.reshape(chars, (-1, self.max_chars))
        present = ops.not_equal(chars, PAD_CHARACTER)
        embedded = self.character_embedding(chars)
        embedded = embedded * ops.cast(present, embedded.dtype)[..., None]
        if self.kind == "cnn":
            vectors = self.highway(self.pool(embedded, present))
        else:
            vectors = ops.concatenate(
                [
                    self.forward(embedded, mask=present),
                    self.backward(embedded, mask=present),
                ],
                axis=-1,
            )
        if self.projected:
            vectors = self.projection(vectors)
        return ops.reshape(vectors, (batch, steps, self.output_dim))

    def pool(self, embedded: Tensor, present: Tensor) -> Tensor:
        """Each width's convolutions, maximum over the windows that start on
        a character of the word (0 for a word with none: padding words)."""
        pooled = []
        for convolution, width in zip(self.convolutions, self.widths, strict=True):
            padded = ops.pad(embedded, ((0, 0), (0, width - 1), (0, 0)))
            features = convolution(padded)
            lowest = ops.convert_to_tensor(-2.0, features.dtype)  # below tanh's range
            best = ops.max(ops.where(present[..., None], features, lowest), axis=1)
            pooled.append(ops.where(best < -1.5, ops.zeros_like(best), best))
        return ops.concatenate(pooled, axis=-1)

    def highway(self, y: Tensor) -> Tensor:
        for transform, gate in zip(self.transforms, self.gates, strict=True):
            t = gate(y)
            y = t * transform(y) + (1.0 - t) * y
        return y

    def compute_mask(self, word_ids: Tensor, mask: Tensor | None = None) -> Tensor | None:
        return ops.not_equal(word_ids, 0) if self.mask_zero else None

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return (*input_shape[:2], self.output_dim)

    def example_ids(self, shape: tuple[int, int], ids: int, rng: np.random.Generator) -> np.ndarray:
        """Word ids in ``[1, min(ids, vocabulary_size))``, (batch, steps) =
        ``shape``, the second row's last two steps padding: what an export's
        parity check runs (`keras_rnncells.export` asks a model's layers for
        them; its smallest ``Embedding`` here is the characters', not the words')."""
        value = rng.integers(1, max(2, min(ids, self.vocabulary_size)), size=shape)
        if shape[0] >= 2 and shape[1] >= 3:
            value[1, -2:] = 0
        return value

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "kind": self.kind,
            "vocabulary_size": self.vocabulary_size,
            "max_chars": self.max_chars,
            "num_characters": self.num_characters,
            "character_dim": self.character_dim,
            "widths": list(self.widths),
            "filters": list(self.filters),
            "highway_layers": self.highway_layers,
            "units": self.units,
            "cell": self.cell,
            "output_dim": self.output_dim if self.projected else None,
            "mask_zero": self.mask_zero,
        }


@keras.saving.register_keras_serializable(package="keras_rnncells")
class GatedWordCharacterEmbedding(keras.layers.Layer):
    """The gated mix of a word's own vector and its character-built one
    (Miyamoto & Cho 2016, "Gated Word-Character Recurrent Language Model")::

        x^word = E[w],   x^char = characters(w)   (a `CharacterWordEmbedding`)
        g = σ(v_g^T x^word + b_g)                 (one gate per word, a scalar)
        x = (1 − g) x^word + g x^char

    ``characters``: the `CharacterWordEmbedding` whose table spells the same
    vocabulary; the word embedding ``E`` has its ``vocabulary_size`` rows and
    ``output_dim`` columns. Reads word ids ``(batch, steps)``; output
    ``(batch, steps, output_dim)``, masked where the word id is 0. `gate`
    gives ``g``.
    """

    def __init__(
        self,
        characters: CharacterWordEmbedding | dict,
        embeddings_initializer: Any = "uniform",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(characters, dict):
            characters = keras.saving.deserialize_keras_object(characters)
        if not isinstance(characters, CharacterWordEmbedding):
            raise ValueError(
                "Argument `characters` must be a CharacterWordEmbedding, received: "
                f"{type(characters).__name__}"
            )
        self.characters = characters
        self.output_dim = characters.output_dim
        self.supports_masking = True
        self.words = keras.layers.Embedding(
            characters.vocabulary_size,
            self.output_dim,
            embeddings_initializer=embeddings_initializer,
            name="words",
        )
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)

    def build(self, input_shape: tuple) -> None:
        for layer in (self.characters, self.words):
            if not layer.built:  # a `characters` deserialized with its build config is built
                layer.build(input_shape)
        self.gate_vector = self.add_weight(
            shape=(self.output_dim,), initializer="glorot_uniform", name="gate_vector"
        )
        self.gate_bias = self.add_weight(shape=(), initializer="zeros", name="gate_bias")

    def gate(self, word_ids: Tensor) -> Tensor:
        """``g``, ``(batch, steps, 1)``: the weight of the character vector."""
        return self.mix(word_ids)[1]

    def mix(self, word_ids: Tensor) -> tuple[Tensor, Tensor]:
        check_input(self, "word_ids", word_ids, ("batch", "steps"), dtype="integer")
        word = self.words(word_ids)
        g = ops.sigmoid(ops.matmul(word, self.gate_vector[:, None]) + self.gate_bias)
        return (1.0 - g) * word + g * self.characters(word_ids), g

    def call(self, word_ids: Tensor) -> Tensor:
        return self.mix(word_ids)[0]

    def compute_mask(self, word_ids: Tensor, mask: Tensor | None = None) -> Tensor | None:
        return self.characters.compute_mask(word_ids)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return (*input_shape[:2], self.output_dim)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "characters": keras.saving.serialize_keras_object(self.characters),
            "embeddings_initializer": keras.initializers.serialize(self.embeddings_initializer),
        }
