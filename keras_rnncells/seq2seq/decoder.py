"""The decoder: a vector (and a memory to attend to) to a token sequence."""

from __future__ import annotations

import math
from typing import Any

import keras
import tensorflow as tf
from keras import ops

from keras_rnncells.cells.base import as_state_list
from keras_rnncells.cells.registry import make_cell
from keras_rnncells.checks import (
    check_choice,
    check_float,
    check_input,
    check_mapping,
    check_positive_int,
)
from keras_rnncells.layers.rnn import RNN
from keras_rnncells.seq2seq.attention import SCORES, Attention
from keras_rnncells.seq2seq.encoder import TOKENS


@keras.saving.register_keras_serializable(package="keras_rnncells")
class Decoder(keras.layers.Layer):
    """Generates tokens, one step at a time, each step prompted by the previous token.

    At step t the cell reads x_t = [E y_{t-1}; p]: the embedding of the
    previous token and, optionally, a prompt p held fixed over the sequence
    (a color for a decoder that describes colors). Its initial state is
    ``tanh(W_i v + b_i)`` for each state tensor i of the cell, from a vector v
    (``summary``: an encoder's summary of the source), or zeros without one.
    With ``attention`` (a score of ``Attention``: ``"dot"``, ``"general"``,
    ``"concat"``) the output h_t attends to a memory (an encoder's outputs) and
    the logits read Luong et al.'s attentional state h~_t = tanh(W_c [c_t; h_t]);
    otherwise they read h_t.

    Attention sits on top of the recurrence (Luong et al.'s global attention,
    without input feeding), so in training with teacher forcing the recurrence
    runs over the whole target on the fast ``RNN`` paths (fused, cuDNN) and
    attention over every step at once: Keras 3's ``RNN`` has no
    ``constants=``, and nothing here needs it. ``step`` runs one step for
    decoding (greedy or beam search).

    ``copy_map`` (a list of target ids, one per source id) adds a copy
    mechanism, the pointer-generator mixture of Gulcehre et al. 2016 ("Pointing
    the unknown words"), Gu et al. 2016 (CopyNet) and See et al. 2017 ("Get to
    the point"). A switch g_t = σ(w_g·[c_t; h_t; x_t] + b_g) mixes the
    vocabulary distribution with the attention weights a_t over the source
    positions s, each read as its token m(x_s) = ``copy_map[source_ids[s]]``:

        P(y_t = w) = g_t softmax(W h~_t + b)_w + (1 − g_t) Σ_{s: m(x_s) = w} a_{t,s}

    Its "logits" are then log P, which a softmax (the losses' ``from_logits``,
    the searches' log-softmax) leaves as they are; an empty source, with no
    position to copy from, leaves the vocabulary the whole mass once
    renormalized. It needs ``attention`` and the source ids (``source_ids``)
    wherever the memory is given.

    ``scheduled_sampling=True`` (Bengio et al. 2015, "Scheduled sampling for
    sequence prediction with recurrent neural networks") feeds, in training,
    each step a token sampled from the model's own previous prediction with
    probability ``sampling_probability`` (a variable, 0 at first; the
    ``ScheduledSampling`` callback raises it over training) and the true
    previous token otherwise. That loop runs step by step.

    ``call(target_in, summary=None, memory=None, memory_mask=None,
    prompt=None, source_ids=None)`` takes the teacher-forced input tokens
    ``(B, T)`` (the target shifted right behind a start token) and returns
    logits ``(B, T, V)``.
    """

    def __init__(
        self,
        vocabulary_size: int,
        embedding_dim: int = 64,
        cell: str = "gru",
        units: int = 128,
        attention: str | None = None,
        attention_units: int | None = None,
        scheduled_sampling: bool = False,
        cell_options: dict | None = None,
        seed: int | None = None,
        copy_map: list[int] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.vocabulary_size = check_positive_int("vocabulary_size", vocabulary_size)
        self.embedding_dim = check_positive_int("embedding_dim", embedding_dim)
        self.units = check_positive_int("units", units)
        check_choice("attention", attention, (None, *SCORES))
        self.cell_name = cell
        self.cell_options = check_mapping("cell_options", cell_options)
        self.attention_score = attention
        self.attention_units = attention_units
        self.scheduled_sampling = bool(scheduled_sampling)
        self.seed = seed
        self.embedding = keras.layers.Embedding(vocabulary_size, embedding_dim, name="embedding")
        self.rnn = RNN(make_cell(cell, units, cell_options), return_sequences=True, name="rnn")
        self.cell = self.rnn.cell
        sizes = self.cell.state_size
        self.bridges = [
            keras.layers.Dense(size, activation="tanh", name=f"bridge_{i}")
            for i, size in enumerate(sizes if isinstance(sizes, (list, tuple)) else [sizes])
        ]
        self.attention = None
        if attention is not None:
            self.attention = Attention(attention, attention_units, name="attention")
            self.attentional = keras.layers.Dense(
                units, activation="tanh", use_bias=False, name="attentional"
            )
        self.projection = keras.layers.Dense(vocabulary_size, name="logits")
        self.copy_map = check_copy_map(copy_map, vocabulary_size, attention)
        if self.copy_map is not None:
            self.switch = keras.layers.Dense(1, activation="sigmoid", name="copy_switch")
        self.sampling_probability = self.add_weight(
            name="sampling_probability", shape=(), initializer="zeros", trainable=False
        )
        self.seed_generator = keras.random.SeedGenerator(seed)

    def build(
        self,
        target_in_shape,
        summary_shape=None,
        memory_shape=None,
        memory_mask_shape=None,
        prompt_shape=None,
    ) -> None:
        self.embedding.build(target_in_shape)
        features = self.embedding_dim + (prompt_shape[-1] if prompt_shape else 0)
        self.rnn.build((None, None, features))
        for bridge in self.bridges if summary_shape else ():
            bridge.build(summary_shape)
        output_size = self.cell.output_size
        if self.attention is not None and memory_shape is not None:
            self.attention.build((None, output_size), memory_shape)
            self.attentional.build((None, output_size + memory_shape[-1]))
            if self.copy_map is not None:
                self.switch.build((None, memory_shape[-1] + self.cell.output_size + features))
            output_size = self.units
        self.projection.build((None, output_size))

    # -- pieces shared by training and decoding ---------------------------------
    def initial_state(self, batch_size, summary=None) -> list:
        if summary is None:
            return as_state_list(self.cell.get_initial_state(batch_size))
        return [bridge(summary) for bridge in self.bridges]

    def features(self, tokens, prompt=None):
        """x = [E y; p], for one step ``(N,)`` or a sequence ``(B, T)`` of tokens."""
        x = self.embedding(tokens)
        if prompt is None:
            return x
        prompt = ops.cast(prompt, x.dtype)
        if len(x.shape) == 3:
            prompt = ops.broadcast_to(prompt[:, None, :], (*ops.shape(x)[:2], prompt.shape[-1]))
        return ops.concatenate([x, prompt], axis=-1)

    def readout(
        self, outputs, memory=None, memory_mask=None, keys=None, inputs=None, source_ids=None
    ):
        """Logits from the cell's outputs (one step or all), through attention;
        with the copy mechanism, the mixture's log-probabilities (``inputs``:
        the cell's inputs x)."""
        if self.attention is None:
            return self.projection(outputs)
        if memory is None:
            raise ValueError(
                f"Decoder with attention={self.attention_score!r} needs `memory` "
                "(the encoder outputs, shape (batch, source steps, features))"
            )
        context, weights = self.attention(outputs, memory, memory_mask=memory_mask, keys=keys)
        logits = self.projection(self.attentional(ops.concatenate([context, outputs], axis=-1)))
        if self.copy_map is None:
            return logits
        if source_ids is None:
            raise ValueError(
                "Decoder with `copy_map` needs `source_ids` (the source token ids, shape "
                "(batch, source steps)) wherever it is given `memory`"
            )
        # float32 probabilities: a float16 mixture underflows in the log
        generate = self.switch(ops.concatenate([context, outputs, inputs], axis=-1))
        generate, logits, weights = (ops.cast(t, "float32") for t in (generate, logits, weights))
        targets = ops.take(self.copy_map, ops.cast(source_ids, "int32"))
        copied = ops.one_hot(targets, self.vocabulary_size)
        pattern = "bs,bsv->bv" if len(weights.shape) == 2 else "bts,bsv->btv"
        copy = ops.einsum(pattern, weights, ops.cast(copied, "float32"))
        mixture = generate * ops.softmax(logits) + (1 - generate) * copy
        return ops.log(ops.maximum(mixture, 1e-30))

    def step(
        self,
        tokens,
        states,
        memory=None,
        memory_mask=None,
        prompt=None,
        keys=None,
        source_ids=None,
    ):
        """One decoding step (inference): ``(logits (N, V), new_states)``."""
        x = self.features(tokens, prompt)
        output, states = self.cell(x, states, training=False)
        logits = self.readout(output, memory, memory_mask, keys, x, source_ids)
        return logits, as_state_list(states)

    def log_prob_step(self, memory=None, memory_mask=None, prompt=None, source_ids=None):
        """The step function of ``keras_rnncells.seq2seq.search`` for this
        memory, prompt and source: ``(tokens, states) -> (log-probabilities, states)``."""
        keys = None if self.attention is None or memory is None else self.attention.keys(memory)

        def step(tokens, states):
            logits, states = self.step(
                tokens, states, memory, memory_mask, prompt, keys, source_ids
            )
            return tf.nn.log_softmax(tf.cast(logits, tf.float32)), states

        return step

    # -- training -----------------------------------------------------------------
    def call(
        self,
        target_in,
        summary=None,
        memory=None,
        memory_mask=None,
        prompt=None,
        source_ids=None,
        training=None,
    ):
        check_input(self, "target_in", target_in, TOKENS, dtype="ids")
        states = self.initial_state(ops.shape(target_in)[0], summary)
        if self.scheduled_sampling and training:
            return self.sampled_logits(target_in, states, memory, memory_mask, prompt, source_ids)
        x = self.features(target_in, prompt)
        outputs = self.rnn(x, initial_state=states, training=training)
        return self.readout(outputs, memory, memory_mask, inputs=x, source_ids=source_ids)

    def sampled_logits(self, target_in, states, memory, memory_mask, prompt, source_ids=None):
        """Teacher forcing where each step's input token is, with probability
        ``sampling_probability``, sampled from the previous step's prediction."""
        batch, steps = ops.shape(target_in)[0], ops.shape(target_in)[1]
        keys = None if self.attention is None else self.attention.keys(memory)
        # Draw the cell's dropout masks once, outside the loop (one per sequence).
        cell = self.cell
        first = self.features(target_in[:, 0], prompt)
        if cell.dropout > 0:
            cell.get_dropout_mask(first)
        context = cell.step_context(states[0], training=True)

        def body(t, previous_logits, states, logits):
            sampled = ops.cast(
                keras.random.categorical(previous_logits, 1, seed=self.seed_generator)[:, 0],
                target_in.dtype,
            )
            draw = keras.random.uniform((batch,), seed=self.seed_generator)
            use_model = ops.logical_and(t > 0, draw < self.sampling_probability)
            tokens = ops.where(use_model, sampled, target_in[:, t])
            x = self.features(tokens, prompt)
            if cell.dropout > 0:
                x = x * cell.get_dropout_mask(x)
            output, states = cell.advance(cell.step_inputs(x, True), states, context)
            step_logits = self.readout(output, memory, memory_mask, keys, x, source_ids)
            return t + 1, step_logits, as_state_list(states), logits.write(t, step_logits)

        logits = tf.TensorArray(self.compute_dtype, size=steps)
        start = ops.zeros((batch, self.vocabulary_size), self.compute_dtype)
        _, _, _, logits = tf.while_loop(
            lambda t, *_: t < steps, body, (tf.constant(0), start, states, logits)
        )
        cell.reset_dropout_mask()  # drawn anew for the next sequence
        cell.reset_recurrent_dropout_mask()
        return ops.transpose(logits.stack(), (1, 0, 2))

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "vocabulary_size": self.vocabulary_size,
            "embedding_dim": self.embedding_dim,
            "cell": self.cell_name,
            "units": self.units,
            "attention": self.attention_score,
            "attention_units": self.attention_units,
            "scheduled_sampling": self.scheduled_sampling,
            "cell_options": self.cell_options,
            "seed": self.seed,
            "copy_map": None if self.copy_map is None else list(self.copy_map),
        }


def check_copy_map(copy_map: Any, vocabulary_size: int, attention: str | None) -> tuple | None:
    """``copy_map`` as a tuple of target ids (None: no copying), if every id
    is one of the ``vocabulary_size`` and ``attention`` is set."""
    if copy_map is None:
        return None
    if attention is None:
        raise ValueError("Argument `copy_map` needs `attention`: copying reads its weights")
    if (
        not isinstance(copy_map, (list, tuple))
        or not copy_map
        or not all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < vocabulary_size
            for i in copy_map
        )
    ):
        raise ValueError(
            "Argument `copy_map` must be a non-empty list of target ids in "
            f"[0, {vocabulary_size}), one per source id, received: {str(copy_map)[:80]}"
        )
    return tuple(copy_map)


def inverse_sigmoid_decay(step: int, k: float) -> float:
    """Bengio et al. 2015's ε_i = k / (k + exp(i / k)): the probability of
    feeding the true token at training step i (k >= 1 sets the speed)."""
    return k / (k + math.exp(min(step / k, 700.0)))


class ScheduledSampling(keras.callbacks.Callback):
    """Sets ``sampling_probability = 1 - ε_i`` of every ``Decoder`` with
    ``scheduled_sampling=True`` in the model before each training batch, i the
    optimizer's step count (so a resumed run continues the schedule)."""

    def __init__(self, k: float = 1000.0) -> None:
        super().__init__()
        self.k = check_float("k", k, "[1, inf)")

    def decoders(self) -> list[Decoder]:
        layers = self.model._flatten_layers(include_self=False)
        return [
            layer for layer in layers if isinstance(layer, Decoder) and layer.scheduled_sampling
        ]

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        step = int(self.model.optimizer.iterations.numpy())
        probability = 1.0 - inverse_sigmoid_decay(step, self.k)
        for decoder in self.decoders():
            decoder.sampling_probability.assign(probability)
