"""The end-to-end memory network (Sukhbaatar, Szlam, Weston & Fergus 2015,
"End-To-End Memory Networks", NeurIPS): K hops of soft attention over a memory
of sentence vectors. See `MemoryNetwork`."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_rnncells.checks import (
    check_bool,
    check_choice,
    check_input,
    check_optional_positive_int,
    check_positive_int,
)

__all__ = ["MemoryNetwork"]

Tensor = Any

WEIGHT_TYING = ("adjacent", "layerwise")
ATTENTION = ("softmax", "linear")
STORY = ("batch", "sentences", "words")
QUESTION = ("batch", "words")
# A masked attention score: exp(score + MASKED - max) is exactly 0 in float32.
MASKED = -1e9


def position_weights(words: Tensor, dim: int) -> Tensor:
    """``l_kj = (1 - j/J) - (k/d)(1 - 2j/J)`` for every word of ``words``
    (``[..., W]`` 0/1 floats, 1 for a real word), shape ``[..., W, d]``; ``j``
    (1-based) counts the real words up to this one and ``J`` the real words of
    its sentence, so padding anywhere changes nothing; padding words get 0."""
    j = ops.cumsum(words, axis=-1)
    sentence_length = ops.maximum(ops.sum(words, axis=-1, keepdims=True), 1.0)
    ratio = (j / sentence_length)[..., None]
    k = ops.arange(1, dim + 1, dtype="float32") / dim
    return ((1.0 - ratio) - k * (1.0 - 2.0 * ratio)) * words[..., None]


@keras.saving.register_keras_serializable(package="keras_rnncells")
class MemoryNetwork(keras.layers.Layer):
    """An end-to-end memory network, MemN2N (Sukhbaatar, Szlam, Weston &
    Fergus 2015, "End-To-End Memory Networks", NeurIPS), answering a question
    about a story by ``hops`` = K hops of attention over its sentences.

    Inputs ``[story, question]``: ``story`` ``[batch, sentences, words]`` and
    ``question`` ``[batch, words]`` integer word ids, 0 the padding (padding
    words, padding sentences and empty stories are allowed anywhere). Output:
    the answer's logits ``[batch, answer_size]`` (apply a softmax, or train
    with ``from_logits=True``).

    With ``x_ij`` the j-th word of sentence i, the embedding matrices ``A^k``,
    ``C^k`` (hop k) and ``B`` (all ``vocabulary_size x embedding_dim``)::

        m_i^k = Σ_j l_j ∘ A^k x_ij + T_A^k(i)      (memory vectors)
        c_i^k = Σ_j l_j ∘ C^k x_ij + T_C^k(i)      (output vectors)
        u^1   = Σ_j l_j ∘ B q_j                     (the question)
        p^k   = softmax_i(u^k · m_i^k)             over the story's sentences
        o^k   = Σ_i p_i^k c_i^k
        u^{k+1} = u^k + o^k        (hidden_map=True: H u^k + o^k)
        answer logits = W (o^K + u^K)

    * Position encoding (``position_encoding=True``; else ``l_j = 1``, a bag
      of words): ``l_kj = (1 - j/J) - (k/d)(1 - 2j/J)``, ``k = 1..d`` the
      embedding dimension, ``j = 1..J`` the word's place among the ``J`` words
      of its sentence (padding not counted).
    * Temporal encoding (``temporal_encoding=True``): ``T_A(i)``, ``T_C(i)``
      are rows of learned ``memory_size x d`` matrices; as in the paper, ``i``
      counts back from the story's last sentence (``i = 0`` the most recent,
      padding sentences not counted). The memory holds the ``memory_size``
      most recent sentences (the paper: 50); older ones are not attended to.
      Without temporal encoding ``memory_size=None`` keeps every sentence.
    * Weight tying: ``"adjacent"`` (the paper's default): ``A^{k+1} = C^k``
      and ``B = A^1`` (``T_A^{k+1} = T_C^k`` likewise), K + 1 embeddings;
      ``"layerwise"`` (RNN-like): one ``A``, one ``C`` for every hop and its
      own ``B``; the paper pairs it with ``hidden_map=True``.
    * A sentence with no word and an empty story are masked out: an empty
      story gives ``p = 0``, ``o = 0``. Differences from the paper: ``W`` is
      its own matrix (``answer_size`` rows, not tied to ``C^K``); the training
      trick random noise is not part of the layer; linear start is
      ``attention="linear"`` (``p^k = u^k · m^k`` over the story's sentences,
      no softmax), which a training loop sets for its first epochs, then
      sets back to ``"softmax"`` (and recompiles: the attribute is read when
      the training function is traced).

    Args:
        vocabulary_size: number of word ids (id 0 is the padding).
        embedding_dim: ``d``.
        answer_size: the number of answers (rows of ``W``).
        hops: ``K``.
        memory_size: the rows of ``T_A``/``T_C``: how many recent sentences
            are read (required with temporal encoding).
        position_encoding, temporal_encoding: see above.
        weight_tying: ``"adjacent"`` or ``"layerwise"``.
        hidden_map: whether ``u^{k+1} = H u^k + o^k`` (``H`` a linear map).
        attention: ``"softmax"`` (the model) or ``"linear"`` (linear start).
        embeddings_initializer: of ``A``, ``B``, ``C``, ``T`` (the paper: N(0, 0.1)).
        kernel_initializer: of ``W`` and ``H``.
    """

    def __init__(
        self,
        vocabulary_size: int,
        embedding_dim: int,
        answer_size: int,
        hops: int = 3,
        memory_size: int | None = 50,
        position_encoding: bool = True,
        temporal_encoding: bool = True,
        weight_tying: str = "adjacent",
        hidden_map: bool = False,
        attention: str = "softmax",
        embeddings_initializer: Any = None,
        kernel_initializer: Any = "glorot_uniform",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.vocabulary_size = check_positive_int("vocabulary_size", vocabulary_size)
        self.embedding_dim = check_positive_int("embedding_dim", embedding_dim)
        self.answer_size = check_positive_int("answer_size", answer_size)
        self.hops = check_positive_int("hops", hops)
        self.position_encoding = check_bool("position_encoding", position_encoding)
        self.temporal_encoding = check_bool("temporal_encoding", temporal_encoding)
        self.memory_size = check_optional_positive_int("memory_size", memory_size)
        if self.temporal_encoding and self.memory_size is None:
            raise ValueError(
                "Argument `memory_size` must be a positive integer with temporal encoding "
                "(the rows of T_A and T_C), received: None"
            )
        self.weight_tying = check_choice("weight_tying", weight_tying, WEIGHT_TYING)
        self.hidden_map = check_bool("hidden_map", hidden_map)
        self.attention = check_choice("attention", attention, ATTENTION)
        if embeddings_initializer is None:
            embeddings_initializer = keras.initializers.RandomNormal(stddev=0.1)
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        count = self.hops + 1 if self.weight_tying == "adjacent" else 3  # A, C, B
        self.embeddings = [
            keras.layers.Embedding(
                self.vocabulary_size,
                self.embedding_dim,
                embeddings_initializer=self.embeddings_initializer,
                name=f"embedding_{i}",
            )
            for i in range(count)
        ]
        self.answer = keras.layers.Dense(
            self.answer_size, use_bias=False, kernel_initializer=self.kernel_initializer, name="W"
        )
        self.map = (
            keras.layers.Dense(
                self.embedding_dim,
                use_bias=False,
                kernel_initializer=self.kernel_initializer,
                name="H",
            )
            if self.hidden_map
            else None
        )

    def build(self, input_shape: Any) -> None:
        for embedding in self.embeddings:
            embedding.build((None,))
        self.answer.build((None, self.embedding_dim))
        if self.map is not None:
            self.map.build((None, self.embedding_dim))
        self.temporal = [
            self.add_weight(
                (self.memory_size, self.embedding_dim),
                self.embeddings_initializer,
                name=f"temporal_{i}",
            )
            for i in range(len(self.embeddings) if self.temporal_encoding else 0)
        ]

    # The embedding (and temporal matrix) index of A^k, C^k (k = 0..K-1) and B.
    def index_a(self, hop: int) -> int:
        return hop if self.weight_tying == "adjacent" else 0

    def index_c(self, hop: int) -> int:
        return hop + 1 if self.weight_tying == "adjacent" else 1

    def index_b(self) -> int:
        return 0 if self.weight_tying == "adjacent" else 2

    def encode(self, index: int, ids: Tensor, words: Tensor) -> Tensor:
        """``Σ_j l_j ∘ E x_j`` over the last axis of ``ids`` with embedding ``index``."""
        embedded = self.embeddings[index](ids)
        if self.position_encoding:
            weights = position_weights(words, self.embedding_dim)
        else:
            weights = words[..., None]
        return ops.sum(weights * embedded, axis=-2)

    def call(self, inputs: Any) -> Tensor:
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(
                f"Layer {self.name!r} takes inputs [story, question], received: {inputs!r}"
            )
        story, question = inputs
        check_input(self, "story", story, STORY, dtype="ids")
        check_input(self, "question", question, QUESTION, dtype="ids")
        story = ops.cast(story, "int32")
        question = ops.cast(question, "int32")
        words = ops.cast(ops.not_equal(story, 0), "float32")
        sentences = ops.cast(ops.sum(words, axis=-1) > 0, "float32")  # [batch, sentences]
        # i: the real sentences after this one (0 = the most recent)
        recency = ops.sum(sentences, axis=-1, keepdims=True) - ops.cumsum(sentences, axis=-1)
        memory = sentences
        if self.memory_size is not None:
            memory = memory * ops.cast(recency < self.memory_size, "float32")
        if self.temporal_encoding:
            rows = ops.cast(ops.minimum(recency, self.memory_size - 1), "int32")
        encoded: dict[int, Tensor] = {}

        def memory_vectors(index: int) -> Tensor:
            if index not in encoded:
                vectors = self.encode(index, story, words)
                if self.temporal_encoding:
                    vectors = vectors + ops.take(self.temporal[index], rows, axis=0)
                encoded[index] = vectors
            return encoded[index]

        u = self.encode(self.index_b(), question, ops.cast(ops.not_equal(question, 0), "float32"))
        for hop in range(self.hops):
            m = memory_vectors(self.index_a(hop))
            c = memory_vectors(self.index_c(hop))
            scores = ops.sum(m * u[:, None, :], axis=-1)
            if self.attention == "softmax":
                p = ops.softmax(scores + (1.0 - memory) * MASKED, axis=-1) * memory
            else:
                p = scores * memory
            o = ops.sum(p[..., None] * c, axis=1)
            last = hop == self.hops - 1
            u = (u if last or self.map is None else self.map(u)) + o
        return self.answer(u)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return (input_shape[0][0], self.answer_size)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            vocabulary_size=self.vocabulary_size,
            embedding_dim=self.embedding_dim,
            answer_size=self.answer_size,
            hops=self.hops,
            memory_size=self.memory_size,
            position_encoding=self.position_encoding,
            temporal_encoding=self.temporal_encoding,
            weight_tying=self.weight_tying,
            hidden_map=self.hidden_map,
            attention=self.attention,
            embeddings_initializer=keras.initializers.serialize(self.embeddings_initializer),
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
        )
        return config
