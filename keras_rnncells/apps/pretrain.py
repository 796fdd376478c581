"""Pre-training an encoder on unlabelled text before a classifier is fine-tuned.

Dai & Le (2015), "Semi-supervised Sequence Learning", NeurIPS: train the
embedding and recurrent encoder of a classifier on the task's own texts, with
no labels, then fine-tune the whole classifier starting from those weights.
Two objectives, over a text's word pieces x_1..x_L (the ids of the
classifier's own tokenizer, ``token_ids``; padding is no target):

* ``"lm"``, a language model. The encoder's forward layer, having read
  x_1..x_t, predicts the next piece, x_{L+1} being ``[END]``::

      L_lm = -1/L sum_{t=1..L} log softmax(W_f h_t + b_f)[x_{t+1}]

  A bidirectional encoder's backward layer, having read x_L..x_t, predicts
  x_{t-1} (x_0 = ``[START]``) through its own softmax; the loss is the mean
  over both directions' targets.

* ``"autoencoder"``, a sequence autoencoder. The encoder reads x_1..x_L; a
  decoder RNN of the same cell (its own weights) starts from the encoder's
  final state s and, fed the true previous piece (teacher forcing, through the
  encoder's embedding E), reconstructs the text, x_{L+1} being ``[END]``::

      d_0 = s,  d_t = cell(E x_{t-1}, d_{t-1})  (x_0 = [START])
      L_ae = -1/(L+1) sum_{t=1..L+1} log softmax(W d_t + b)[x_t]

  A bidirectional encoder has one decoder per direction, each starting from
  its direction's final state, their outputs joined before the softmax.

`EncoderPretraining` holds the encoder itself (its embedding and its
recurrent cells: the same variables, not copies), so pre-training changes the
classifier's weights in place; its softmax layers and decoders are dropped
afterwards. The encoder must have one recurrent layer (a bidirectional
stack's upper layers read both directions, so could see the pieces the
language model predicts). The perplexity reported is ``exp`` of an epoch's
mean loss.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf
from keras import ops

from keras_rnncells.cells.registry import make_cell
from keras_rnncells.checks import check_choice, check_positive_int
from keras_rnncells.data.pipeline import shuffled_slices
from keras_rnncells.layers.rnn import RNN
from keras_rnncells.seq2seq.encoder import Encoder
from keras_rnncells.text.vocabulary import END_ID, PAD_ID, START_ID
from keras_rnncells.training import EpochTimes, write_csv

OBJECTIVES = ("lm", "autoencoder")


def token_loss(targets, logits):
    """The mean cross-entropy of ``logits`` ``(..., V)`` over the targets
    ``(...)`` that are not padding."""
    targets = ops.cast(targets, "int32")
    losses = keras.losses.sparse_categorical_crossentropy(targets, logits, from_logits=True)
    weights = ops.cast(ops.not_equal(targets, PAD_ID), losses.dtype)
    return ops.sum(losses * weights) / ops.maximum(ops.sum(weights), 1.0)


class EncoderPretraining(keras.Model):
    """Token ids ``(B, T)`` to the logits of ``objective``'s targets
    (`targets`), on ``encoder``'s own layers (see the module)."""

    def __init__(self, encoder: Encoder, objective: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.objective = check_choice("objective", objective, OBJECTIVES)
        if encoder.num_layers != 1:
            raise ValueError(
                "Argument `encoder` must have one recurrent layer to be pre-trained, "
                f"received num_layers={encoder.num_layers}"
            )
        self.encoder = encoder
        self.directions = [encoder.forward_layers[0], *encoder.backward_layers]
        vocabulary = encoder.vocabulary_size
        if objective == "lm":
            names = ("forward_softmax", "backward_softmax")
            self.heads = [keras.layers.Dense(vocabulary, name=n) for n in names[: len(self)]]
        else:
            # The encoder's own cells, read for their final states.
            self.readers = [
                RNN(layer.cell, return_state=True, go_backwards=layer.go_backwards)
                for layer in self.directions
            ]
            self.decoders = [
                RNN(
                    make_cell(encoder.cell_name, encoder.units, encoder.cell_options),
                    return_sequences=True,
                    name=f"decoder_{i}",
                )
                for i in range(len(self))
            ]
            self.head = keras.layers.Dense(vocabulary, name="softmax")

    def __len__(self) -> int:
        """The encoder's directions: 1, or 2 when bidirectional."""
        return len(self.directions)

    def targets(self, token_ids):
        """The pieces to predict: ``(B, T, directions)`` for ``"lm"`` (the
        next piece, then the previous one), ``(B, T + 1)`` for
        ``"autoencoder"`` (the text, then ``[END]``); 0 (padding) where none."""
        token_ids = ops.cast(token_ids, "int32")
        valid = ops.not_equal(token_ids, PAD_ID)
        lengths = ops.sum(ops.cast(valid, "int32"), axis=1, keepdims=True)
        pad = ops.zeros_like(token_ids[:, :1])
        if self.objective == "autoencoder":
            padded = ops.concatenate([token_ids, pad], axis=1)
            positions = ops.arange(ops.shape(padded)[1])[None, :]
            return ops.where(ops.equal(positions, lengths), END_ID, padded)
        positions = ops.arange(ops.shape(token_ids)[1])[None, :]
        following = ops.concatenate([token_ids[:, 1:], pad], axis=1)
        following = ops.where(ops.equal(positions, lengths - 1), END_ID, following)
        targets = [ops.where(valid, following, PAD_ID)]
        if len(self) == 2:
            preceding = ops.concatenate([pad, token_ids[:, :-1]], axis=1)
            preceding = ops.where(ops.equal(positions, 0), START_ID, preceding)
            targets.append(ops.where(valid, preceding, PAD_ID))
        return ops.stack(targets, axis=-1)

    def call(self, token_ids, training=None):
        if self.objective == "lm":
            outputs, _, _ = self.encoder(token_ids, training=training)
            units = self.encoder.units
            parts = [outputs[..., i * units : (i + 1) * units] for i in range(len(self))]
            return ops.stack([head(part) for head, part in zip(self.heads, parts)], axis=2)
        token_ids = ops.cast(token_ids, "int32")
        mask = ops.not_equal(token_ids, PAD_ID)
        start = ops.full_like(token_ids[:, :1], START_ID)
        decoder_inputs = self.encoder.embedding(ops.concatenate([start, token_ids], axis=1))
        decoder_mask = ops.concatenate([ops.ones_like(mask[:, :1]), mask], axis=1)
        inputs = self.encoder.embedding(token_ids)
        outputs = []
        for reader, decoder in zip(self.readers, self.decoders):
            _, *state = reader(inputs, mask=mask, training=training)
            outputs.append(
                decoder(decoder_inputs, initial_state=state, mask=decoder_mask, training=training)
            )
        return self.head(ops.concatenate(outputs, axis=-1))


class PretrainHistory(keras.callbacks.Callback):
    """Writes ``path`` (CSV, atomically) at every epoch's end: the epoch, its
    loss, perplexity and seconds (from an `EpochTimes` before it)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.rows: list[dict[str, float]] = []

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        loss = float(logs["loss"])
        row = {"epoch": epoch, "loss": loss, "perplexity": math.exp(min(loss, 700.0))}
        self.rows.append({**row, "seconds": float(logs.get("seconds", 0.0))})
        write_csv(self.path, self.rows)


def pretrain(
    encoder: Encoder,
    token_ids: Callable[[tf.Tensor], tf.Tensor],
    texts: Sequence[str],
    objective: str,
    history_path: str | Path,
    epochs: int = 1,
    batch_size: int = 64,
    learning_rate: float = 2e-3,
    seed: int = 0,
    verbose: int | str = "auto",
) -> list[dict[str, float]]:
    """Pre-trains ``encoder`` in place with ``objective`` on ``texts``
    (strings, made ids by ``token_ids``: the classifier's own), shuffled per
    ``(seed, epoch)``, with Adam; writes one row per epoch into
    ``history_path`` (`PretrainHistory`) and returns the rows."""
    epochs = check_positive_int("epochs", epochs)
    model = EncoderPretraining(encoder, objective)

    def example(texts):
        ids = token_ids(texts)
        return ids, model.targets(ids)

    batches = shuffled_slices(tf.constant(list(texts)), seed).batch(batch_size)
    batches = batches.map(example, num_parallel_calls=tf.data.AUTOTUNE)  # order kept
    model.compile(keras.optimizers.Adam(learning_rate, clipnorm=1.0), token_loss)
    history = PretrainHistory(Path(history_path))
    model.fit(
        batches.prefetch(tf.data.AUTOTUNE),
        epochs=epochs,
        callbacks=[EpochTimes(), history],
        shuffle=False,  # the dataset shuffles itself
        verbose=verbose,
    )
    return history.rows
