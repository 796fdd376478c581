"""Sequence-level training: fine-tuning an encoder-decoder on a reward of
whole outputs, after teacher forcing.

Each training step draws K outputs per source from the model (ancestral
sampling, `keras_rnncells.seq2seq.search.greedy_search` with ``sample``),
scores each against the target by its similarity r = max(0, 1 − d / |y*|)
(d the token edit distance; r = 1 for an exact match), and rescores the
samples under teacher forcing, log p(y|x) = Σ_t log p(y_t | y_<t, x), the
only differentiable part. Then, with the objective:

* ``"reinforce"``: REINFORCE with a baseline (Williams 1992), the sequence
  reward of Ranzato et al. 2016 ("Sequence level training with recurrent
  neural networks", MIXER): L = −mean_k (r_k − b_k) log p(y_k|x), with
  b_k the mean reward of the source's other K − 1 samples (where MIXER
  learns a linear baseline and anneals from teacher forcing token by token,
  this switches whole steps);
* ``"mrt"``: minimum risk training (Shen et al. 2016, "Minimum risk training
  for neural machine translation"): L = Σ_k Q(y_k|x) (1 − r_k), with
  Q(y_k|x) = p(y_k|x)^α / Σ_j p(y_j|x)^α over the K samples (``sharpness``
  α; duplicates kept).

`SequenceLevelTraining` is the ``train_step`` of `Seq2Seq` and
`TextSeq2Seq`; its `fine_tune` gives the callback that switches from teacher
forcing (the compiled loss) to the objective at an epoch, so a resumed run
continues in the right phase.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from keras_rnncells.checks import check_choice, check_float, check_integer
from keras_rnncells.text.vocabulary import END_ID, PAD_ID, START_ID

OBJECTIVES = ("reinforce", "mrt")


def similarity(tokens: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
    """max(0, 1 − d / |y*|) per row: d the edit distance between the tokens
    of ``tokens`` and of ``targets`` (int ``(N, L)``, each read up to its
    first ``END_ID``, padding left out), |y*| the target's token count."""

    def sparse(rows):
        rows = tf.cast(rows, tf.int64)
        kept = tf.cumsum(tf.cast(rows == END_ID, tf.int64), axis=1) == 0
        return tf.sparse.from_dense(tf.where(kept, rows, PAD_ID))  # PAD_ID is 0: dropped

    truth = sparse(targets)
    distance = tf.edit_distance(sparse(tokens), truth, normalize=False)
    length = tf.math.bincount(
        tf.cast(truth.indices[:, 0], tf.int32), minlength=tf.shape(targets)[0], dtype=tf.float32
    )
    return tf.maximum(0.0, 1.0 - distance / tf.maximum(length, 1.0))


def sequence_log_probs(
    seq2seq: Any, source: tf.Tensor, tokens: tf.Tensor, encoded: tuple | None = None
) -> tf.Tensor:
    """log p(tokens | source) ``(N,)`` under teacher forcing (in training
    mode), each row up to and including its first ``END_ID``; ``encoded``:
    the encoder's outputs for ``source``, if already computed."""
    tokens = tf.cast(tokens, tf.int32)
    start = tf.fill((tf.shape(tokens)[0], 1), START_ID)
    target_in = tf.concat([start, tokens[:, :-1]], axis=1)
    ended = tf.cumsum(tf.cast(target_in == END_ID, tf.int32), axis=1) > 0
    target_in = tf.where(ended, PAD_ID, target_in)
    if encoded is None:
        encoded = seq2seq.encoder(source, training=True)
    logits = seq2seq.teacher_forced(encoded, source, target_in, training=True)
    logits = tf.cast(logits, tf.float32)
    token_log_probs = tf.gather(tf.nn.log_softmax(logits), tokens, batch_dims=2)
    return tf.reduce_sum(tf.where(ended, 0.0, token_log_probs), axis=1)


def sequence_loss(
    seq2seq: Any,
    source: tf.Tensor,
    targets: tf.Tensor,
    objective: str,
    samples: int,
    sharpness: float = 1.0,
) -> tf.Tensor:
    """The objective's loss on a batch (see the module docstring): ``samples``
    outputs per row of ``source``, rewarded against ``targets``. Each source
    is encoded once, in training mode: its samples are drawn from, and scored
    against, the same memory repeated."""
    batch = tf.shape(source)[0]
    repeated = tf.repeat(source, samples, axis=0)
    encoded = tuple(
        tf.repeat(part, samples, axis=0) for part in seq2seq.encoder(source, training=True)
    )
    length = seq2seq.max_output_length
    drawn = seq2seq.search(encoded, repeated, 1, length, 0.0, sample=True).tokens
    reward = similarity(drawn, tf.repeat(targets, samples, axis=0))
    reward = tf.stop_gradient(tf.reshape(reward, (batch, samples)))
    log_probs = sequence_log_probs(seq2seq, repeated, drawn, encoded)
    log_probs = tf.reshape(log_probs, (batch, samples))
    return objective_loss(objective, reward, log_probs, sharpness)


def objective_loss(
    objective: str, reward: tf.Tensor, log_probs: tf.Tensor, sharpness: float = 1.0
) -> tf.Tensor:
    """The loss of ``objective`` from the rewards and log-probabilities of K
    samples per source, both ``(B, K)`` (see the module docstring)."""
    if objective == "reinforce":
        samples = tf.cast(tf.shape(reward)[1], reward.dtype)
        baseline = (tf.reduce_sum(reward, 1, keepdims=True) - reward) / (samples - 1)
        return -tf.reduce_mean(tf.stop_gradient(reward - baseline) * log_probs)
    weights = tf.nn.softmax(sharpness * log_probs, axis=1)
    return tf.reduce_mean(tf.reduce_sum(weights * tf.stop_gradient(1.0 - reward), axis=1))


class SequenceLevelTraining:
    """Mixin of the encoder-decoder models (``(source, target_in)`` inputs,
    ``target_out`` labels): `fine_tune` gives the callback that switches
    their training to a sequence-level objective from an epoch on."""

    sequence_objective: str | None = None
    sequence_level_active = False

    def sequence_model(self) -> Any:
        """The `Seq2Seq` that samples and scores (the model itself, or the one
        it holds). A method: as a property, Keras' saving would walk it round
        in a cycle."""
        return self

    def fine_tune(
        self, objective: str, from_epoch: int = 0, samples: int = 8, sharpness: float = 1.0
    ) -> keras.callbacks.Callback:
        """The ``fit`` callback that trains on ``objective`` (one of
        `OBJECTIVES`) from epoch ``from_epoch`` (0-based) on, with
        ``samples`` outputs per source (``sharpness``: MRT's α); teacher
        forcing before. A run resumed at a later epoch starts in the right
        phase. Not saved with the model: a training setting."""
        self.sequence_objective = check_choice("objective", objective, OBJECTIVES)
        self.sequence_samples = check_integer("samples", samples, 2)
        self.sequence_sharpness = check_float("sharpness", sharpness, "(0, inf)")
        return SequenceLevelPhase(check_integer("from_epoch", from_epoch, 0))

    def train_step(self, data):
        if not self.sequence_level_active:
            return super().train_step(data)
        (source, _), target_out, weights = keras.utils.unpack_x_y_sample_weight(data)
        if weights is not None:
            raise ValueError(
                "Argument `sample_weight`: sequence-level fine-tuning weighs samples by their "
                "reward and takes no sample weights; pass none"
            )
        with tf.GradientTape() as tape:
            loss = sequence_loss(
                self.sequence_model(),
                source,
                target_out,
                self.sequence_objective,
                self.sequence_samples,
                self.sequence_sharpness,
            )
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(gradients, self.trainable_variables)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
        return {metric.name: metric.result() for metric in self.metrics if metric.name == "loss"}


class SequenceLevelPhase(keras.callbacks.Callback):
    """Turns the model's sequence-level training on at ``from_epoch``: the
    training step is traced anew when the phase changes (a ``tf.cond``
    between the two would not differentiate through the fused recurrences)."""

    def __init__(self, from_epoch: int) -> None:
        super().__init__()
        self.from_epoch = from_epoch

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        active = epoch >= self.from_epoch
        if active != self.model.sequence_level_active:
            self.model.sequence_level_active = active
            self.model.make_train_function(force=True)
