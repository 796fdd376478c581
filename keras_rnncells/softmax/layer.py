"""Output layers over a large vocabulary, and the training losses that avoid
computing the full softmax at every step.

`VocabularySoftmax` holds the output weights ``W`` (V×d) and ``b`` of a
language model over V words. Called on the hidden states ``h`` (…, d) it
gives what inference uses, the logits ``z = h Wᵀ + b`` (with ``method=
"class"``, the log-probabilities of the class-factored model). Called on
``[h, targets]`` it gives the loss of every target token (0 at padding
targets, id 0): in training the ``method``'s loss, otherwise the exact
negative log-likelihood, ``log Z − z_y`` with ``Z = Σ_w exp z_w`` (for
"class", of its own normalized model), so a validation or test loss is the
full softmax's.

The methods (V words, k samples per batch, Q(w) the sampler's probability):

- ``full``: the cross-entropy ``log Z − z_y``; with ``self_normalization``
  α > 0 the loss is ``log Z − z_y + α (log Z)²`` (Devlin et al. 2014), which
  pushes ``log Z`` toward 0, so that at inference ``z_y`` alone approximates
  ``log p(y)``: `log_partition` measures it.
- ``sampled``: sampled softmax (Jean et al. 2015): the cross-entropy over
  ``{y} ∪ S`` (S: k words drawn from Q, without replacement, accidental hits
  of y removed) of the corrected logits ``z_w − log(k Q(w))``.
- ``nce``: noise-contrastive estimation (Mnih & Teh 2012): the logistic loss
  of telling y (label 1) from the k noise words (label 0), with logits
  ``z_w − log(k Q(w))``; the scores it learns are about self-normalized.
  Its biases start at ``−log V``, every word's ``exp(z)`` at 1/V and so
  ``Z = 1``: NCE moves only the words it sees or samples, and from zero
  biases the rest would keep ``exp(z) = 1`` each (measured on PTB: ``Z``
  near 6,500 and a full-softmax perplexity of 1.4 million after 3 epochs).
- ``class``: the class-factored softmax (Goodman 2001; Mikolov et al.
  2011): words sorted by frequency (the id order of our vocabularies) fall
  into ``classes`` bins of equal size, and ``p(w | h) = p(c(w) | h) p(w |
  c(w), h)``, two softmaxes of C and V/C entries in place of one of V.
- ``hierarchical``: the hierarchical softmax (Morin & Bengio 2005; Mikolov
  et al. 2013) over the Huffman tree of ``unigram_counts``
  (`keras_rnncells.softmax.hierarchical`): ``log p(w|h) = Σ_j log σ((2b_j −
  1)(h·u_{n_j} + c_{n_j}))`` along the word's code; training reads the
  target's ≈ log₂ V nodes, and the layer's output is every word's exact
  log-probability. Its weights are the V − 1 node vectors, not ``W``.
- ``blackout`` (Ji et al. 2016) and ``negative`` (negative sampling,
  Mikolov et al. 2013): losses over the target and ``num_sampled`` words
  drawn with replacement from ``Q ∝ unigram_counts^distortion``
  (`keras_rnncells.softmax.negatives`); outside training, the full softmax.

The samplers (``sampler``, for "sampled" and "nce"; "blackout" and
"negative" draw from the distorted counts above): ``log_uniform``, the
Zipfian ``Q(w) = log((w + 2)/(w + 1)) / log(V + 1)`` of TensorFlow's
``log_uniform_candidate_sampler``, which assumes ids sorted by decreasing
frequency; ``unigram``, ``Q(w) ∝ counts[w]``, the training-set counts
(``unigram_counts``). Samples are drawn once per batch and shared by its
tokens, as TensorFlow's candidate samplers do.

`start_at_unigram` sets an output layer's bias to the log-probabilities of
the add-one smoothed unigram distribution, ``b_w = log((n_w + 1) / (N +
V))``, so that the model starts out predicting the training words'
frequencies. From zero biases Adam at a learning rate of 1e-3 moves each
bias by about 1e-3 a step, while the log-frequencies of PTB's words span
about 12, and a deep model can spend epochs above the unigram perplexity
(`benchmarks/ptb_start.py --unigram-bias` measures it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_rnncells.checks import check_choice, check_float, check_positive_int
from keras_rnncells.defaults import (
    COUNTED_SOFTMAXES,
    SAMPLED_SOFTMAXES,
    SAMPLERS,
    SOFTMAXES,
)
from keras_rnncells.softmax import hierarchical, negatives
from keras_rnncells.softmax.huffman import huffman_tree

# Q ∝ counts^α of BlackOut and negative sampling, by default (Mikolov et al.'s α).
DEFAULT_DISTORTION = 0.75

__all__ = ["VocabularySoftmax", "start_at_unigram", "token_mean"]


@keras.saving.register_keras_serializable(package="keras_rnncells")
class VocabularySoftmax(keras.layers.Layer):
    """The output layer of a language model over ``vocabulary_size`` words,
    trained by ``method`` (see the module): ``"full"`` (optionally
    ``self_normalization`` α), ``"sampled"`` or ``"nce"`` (``num_sampled``
    words from ``sampler``; ``unigram_counts`` for the unigram sampler),
    ``"class"`` (``classes`` frequency bins; default ⌈√V⌉), ``"hierarchical"``
    (the Huffman tree of ``unigram_counts``), or ``"blackout"`` and
    ``"negative"`` (``num_sampled`` words from ``unigram_counts`` to the power
    ``distortion``, default 0.75).

    ``layer(h)``: logits (…, V) (for "class" and "hierarchical", the
    normalized log-probabilities); ``layer([h, targets])``: the loss of each
    target token (…), 0 where the target is 0 (padding)."""

    def __init__(
        self,
        vocabulary_size: int,
        method: str = "full",
        num_sampled: int = 64,
        sampler: str = "log_uniform",
        unigram_counts: Sequence[float] | None = None,
        self_normalization: float = 0.0,
        classes: int | None = None,
        distortion: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.vocabulary_size = check_positive_int("vocabulary_size", vocabulary_size)
        self.method = check_choice("method", method, SOFTMAXES)
        self.num_sampled = check_positive_int("num_sampled", num_sampled)
        self.sampler = check_choice("sampler", sampler, SAMPLERS)
        self.self_normalization = check_float("self_normalization", self_normalization, "[0, inf)")
        # (drawn without replacement; blackout and negative draw with it)
        if method in ("sampled", "nce") and num_sampled >= vocabulary_size:
            raise ValueError(
                f"Argument `num_sampled` must be below `vocabulary_size` ({vocabulary_size}), "
                f"received: {num_sampled}"
            )
        if self.self_normalization and method != "full":
            raise ValueError(
                "Argument `self_normalization` applies to method 'full', received "
                f"{self_normalization} with method {method!r}"
            )
        # A padded sequence's mask ends here: the targets (0: padding) weigh the losses.
        self.supports_masking = True
        self.unigram_counts = None
        if sampler == "unigram" and method in SAMPLED_SOFTMAXES:
            self.unigram_counts = check_counts(unigram_counts, vocabulary_size, "sampler 'unigram'")
        if method in COUNTED_SOFTMAXES:
            self.unigram_counts = check_counts(
                unigram_counts, vocabulary_size, f"method {method!r}"
            )
        self.distortion = None
        if method in ("blackout", "negative"):
            alpha = DEFAULT_DISTORTION if distortion is None else distortion
            self.distortion = check_float("distortion", alpha, "[0, 1]")
        elif distortion is not None:
            raise ValueError(
                "Argument `distortion` applies to methods 'blackout' and 'negative', received "
                f"{distortion} with method {method!r}"
            )
        self.tree = None
        if method == "hierarchical":
            if vocabulary_size < 2:
                raise ValueError(
                    "Argument `vocabulary_size` must be at least 2 for method 'hierarchical' "
                    f"(a tree of words), received: {vocabulary_size}"
                )
            self.tree = huffman_tree(self.unigram_counts)
        self.classes = None
        if method == "class":
            default = math.ceil(math.sqrt(vocabulary_size))
            self.classes = check_positive_int("classes", default if classes is None else classes)
            if self.classes > vocabulary_size:
                raise ValueError(
                    f"Argument `classes` must be at most `vocabulary_size` "
                    f"({vocabulary_size}), received: {classes}"
                )
            self.class_size = math.ceil(vocabulary_size / self.classes)
            # no empty bin: 23 words in 22 classes are 12 classes of 2
            self.classes = math.ceil(vocabulary_size / self.class_size)

    def build(self, input_shape: Any) -> None:
        hidden_shape = input_shape[0] if isinstance(input_shape[0], (list, tuple)) else input_shape
        units = hidden_shape[-1]
        if self.method == "hierarchical":  # the tree's nodes in place of the words
            self.node_kernel = self.add_weight(
                name="node_kernel",
                shape=(self.vocabulary_size - 1, units),
                initializer="glorot_uniform",
            )
            self.node_bias = self.add_weight(
                name="node_bias", shape=(self.vocabulary_size - 1,), initializer="zeros"
            )
            return
        self.kernel = self.add_weight(
            name="kernel", shape=(self.vocabulary_size, units), initializer="glorot_uniform"
        )
        start = -math.log(self.vocabulary_size) if self.method == "nce" else 0.0
        self.bias = self.add_weight(
            name="bias",
            shape=(self.vocabulary_size,),
            initializer=keras.initializers.Constant(start),
        )
        if self.method == "class":
            self.class_kernel = self.add_weight(
                name="class_kernel", shape=(self.classes, units), initializer="glorot_uniform"
            )
            self.class_bias = self.add_weight(
                name="class_bias", shape=(self.classes,), initializer="zeros"
            )

    # -- inference ------------------------------------------------------------------
    def logits(self, hidden: tf.Tensor) -> tf.Tensor:
        """``h Wᵀ + b`` over the last axis; for "class" and "hierarchical",
        the log-probabilities."""
        flat = tf.reshape(hidden, [-1, tf.shape(hidden)[-1]])
        if self.method == "hierarchical":
            logits = hierarchical.every_log_probability(
                flat, self.tree, self.node_kernel, self.node_bias
            )
        else:
            logits = tf.matmul(flat, self.kernel, transpose_b=True) + self.bias  # W (V, d)
        # (the vocabulary's size, not -1: onnxruntime cannot infer it for an empty batch)
        logits = tf.reshape(logits, tf.concat([tf.shape(hidden)[:-1], [self.vocabulary_size]], 0))
        if self.method != "class":
            return logits
        return self.class_log_probabilities(hidden, logits)

    def class_log_probabilities(self, hidden: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
        """log p(c(w)|h) + log p(w|c(w),h) for every word w: the within-class
        log-softmax of ``logits`` per bin, plus the bin's log-probability."""
        padded = self.classes * self.class_size - self.vocabulary_size
        outer = tf.shape(logits)[:-1]
        filler = tf.fill(tf.concat([outer, [padded]], 0), tf.constant(-np.inf, logits.dtype))
        binned = tf.reshape(
            tf.concat([logits, filler], -1), tf.concat([outer, [self.classes, self.class_size]], 0)
        )
        class_logits = tf.einsum("...d,cd->...c", hidden, self.class_kernel) + self.class_bias
        log_p = tf.nn.log_softmax(binned) + tf.nn.log_softmax(class_logits)[..., None]
        flat = tf.reshape(log_p, tf.concat([outer, [self.classes * self.class_size]], 0))
        return flat[..., : self.vocabulary_size]

    def log_partition(self, hidden: tf.Tensor) -> tf.Tensor:
        """``log Z`` of the full softmax at every position (0 for a
        self-normalized model: `self_normalization`)."""
        return tf.reduce_logsumexp(self.logits(hidden), -1)

    # -- losses ---------------------------------------------------------------------
    def call(self, inputs: Any, training: bool | None = None) -> tf.Tensor:
        if not isinstance(inputs, (list, tuple)):
            return self.logits(inputs)
        hidden, targets = inputs
        targets = tf.cast(targets, "int64")
        shape = tf.shape(targets)
        flat_hidden = tf.reshape(hidden, [-1, tf.shape(hidden)[-1]])
        flat_targets = tf.reshape(targets, [-1])
        if training and self.method in SAMPLED_SOFTMAXES:
            losses = self.sampled_losses(flat_hidden, flat_targets)
        elif self.method == "class":
            losses = self.class_losses(flat_hidden, flat_targets)
        elif self.method == "hierarchical":  # its exact loss, from the target's path
            losses = -hierarchical.path_log_probabilities(
                flat_hidden, flat_targets, self.tree, self.node_kernel, self.node_bias
            )
        else:
            logits = self.logits(flat_hidden)
            losses = tf.nn.sparse_softmax_cross_entropy_with_logits(flat_targets, logits)
            if training and self.self_normalization:
                log_z = tf.reduce_logsumexp(logits, -1)
                losses += self.self_normalization * tf.square(log_z)
        losses = tf.where(tf.equal(flat_targets, 0), tf.zeros_like(losses), losses)
        return tf.reshape(losses, shape)

    def sampled_values(self, targets: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """The candidate sampler's draw for a batch's ``targets`` (N,):
        sampled ids, and the expected counts k·Q of the targets and samples."""
        true_classes = targets[:, None]
        options = {
            "true_classes": true_classes,
            "num_true": 1,
            "num_sampled": self.num_sampled,
            "unique": True,
            "range_max": self.vocabulary_size,
        }
        if self.method in ("blackout", "negative"):  # k draws with replacement
            options["unique"] = False
            return tf.random.fixed_unigram_candidate_sampler(
                unigrams=self.unigram_counts, distortion=self.distortion, **options
            )
        if self.sampler == "unigram":
            return tf.random.fixed_unigram_candidate_sampler(
                unigrams=self.unigram_counts, **options
            )
        return tf.random.log_uniform_candidate_sampler(**options)

    def sampled_losses(
        self, hidden: tf.Tensor, targets: tf.Tensor, sampled: tuple | None = None
    ) -> tf.Tensor:
        """The "sampled", "nce", "blackout" or "negative" loss of each row of
        ``hidden`` (N, d), over the ``sampled`` candidates (by default a draw
        of `sampled_values`)."""
        if self.method in ("blackout", "negative"):
            losses = {
                "blackout": negatives.blackout_losses,
                "negative": negatives.negative_sampling_losses,
            }[self.method]
            drawn = self.sampled_values(targets) if sampled is None else sampled
            return losses(hidden, targets, self.kernel, self.bias, drawn)
        loss = tf.nn.sampled_softmax_loss if self.method == "sampled" else tf.nn.nce_loss
        return loss(
            weights=self.kernel,
            biases=self.bias,
            labels=targets[:, None],
            inputs=hidden,
            num_sampled=self.num_sampled,
            num_classes=self.vocabulary_size,
            sampled_values=self.sampled_values(targets) if sampled is None else sampled,
            remove_accidental_hits=self.method == "sampled",
        )

    def class_losses(self, hidden: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
        """−log p(c(y)|h) − log p(y|c(y),h) of each row, from the C class
        logits and the class_size logits of the target's class alone."""
        target_class = targets // self.class_size
        class_logits = tf.matmul(hidden, self.class_kernel, transpose_b=True) + self.class_bias
        class_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(target_class, class_logits)
        members = target_class[:, None] * self.class_size + tf.range(self.class_size, dtype="int64")
        valid = members < self.vocabulary_size
        members = tf.minimum(members, self.vocabulary_size - 1)
        word_logits = tf.einsum("nd,nsd->ns", hidden, tf.gather(self.kernel, members))
        word_logits += tf.gather(self.bias, members)
        word_logits = tf.where(valid, word_logits, tf.constant(-np.inf, word_logits.dtype))
        word_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
            targets - target_class * self.class_size, word_logits
        )
        return class_loss + word_loss

    def compute_mask(self, inputs: Any, mask: Any = None) -> None:
        return None

    def compute_output_shape(self, input_shape: Any) -> tuple:
        if isinstance(input_shape[0], (list, tuple)):
            return tuple(input_shape[1])
        return (*input_shape[:-1], self.vocabulary_size)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "vocabulary_size": self.vocabulary_size,
            "method": self.method,
            "num_sampled": self.num_sampled,
            "sampler": self.sampler,
            "unigram_counts": self.unigram_counts,
            "self_normalization": self.self_normalization,
            "classes": self.classes,
            "distortion": self.distortion,
        }


def check_counts(
    counts: Sequence[float] | None, vocabulary_size: int, needed_by: str
) -> list[float]:
    """Unigram counts, as ``needed_by`` takes them: one finite count >= 0 per
    word, some > 0."""
    if counts is None:
        raise ValueError(f"Argument `unigram_counts` is needed by {needed_by}: one count per word")
    values = np.asarray(counts, dtype="float64")
    if values.shape != (vocabulary_size,) or not np.all(np.isfinite(values)):
        raise ValueError(
            f"Argument `unigram_counts` must hold {vocabulary_size} finite counts, received "
            f"shape {values.shape}"
        )
    if np.any(values < 0) or not np.any(values > 0):
        raise ValueError("Argument `unigram_counts` must be >= 0 with at least one count > 0")
    return [float(v) for v in values]


def start_at_unigram(layer: keras.layers.Layer, counts: Sequence[float]) -> None:
    """Sets the bias of ``layer``, a built language model's output layer (a
    ``Dense`` over the vocabulary or a `VocabularySoftmax`), to the
    log-probabilities of the add-one smoothed unigram distribution of
    ``counts`` (one per word; see the module). For the class-factored
    softmax the class biases are the log-probabilities of the classes, so
    that both factors start at the same distribution; for the hierarchical
    softmax the node biases give each node's share of it to its children
    (`keras_rnncells.softmax.hierarchical.unigram_node_biases`)."""
    if getattr(layer, "method", None) == "hierarchical" and layer.built:
        size = layer.vocabulary_size
        values = np.asarray(check_counts(counts, size, "the unigram bias"))
        probabilities = (values + 1.0) / (values.sum() + size)
        biases = hierarchical.unigram_node_biases(layer.tree, probabilities)
        layer.node_bias.assign(biases.astype(layer.node_bias.dtype))
        return
    bias = getattr(layer, "bias", None)
    if bias is None or len(bias.shape) != 1:
        raise ValueError(
            "Argument `layer` must be a built output layer with a bias over the vocabulary (a "
            f"Dense or a VocabularySoftmax), received {type(layer).__name__} {layer.name!r} "
            f"{'without a bias' if bias is None else f'with a bias of shape {bias.shape}'}"
        )
    vocabulary_size = int(bias.shape[0])
    values = np.asarray(check_counts(counts, vocabulary_size, "the unigram bias"))
    log_p = np.log((values + 1.0) / (values.sum() + vocabulary_size))
    layer.bias.assign(log_p.astype(layer.bias.dtype))
    if getattr(layer, "method", None) == "class":
        binned = np.full(layer.classes * layer.class_size, -np.inf)
        binned[:vocabulary_size] = log_p
        class_log_p = np.logaddexp.reduce(binned.reshape(layer.classes, layer.class_size), axis=1)
        layer.class_bias.assign(class_log_p.astype(layer.class_bias.dtype))


def token_mean(y_true: Any, token_losses: Any) -> Any:
    """The mean of a `VocabularySoftmax`'s token losses over the non-padding
    targets (``y_true`` != 0): the Keras loss of a model whose output they are."""
    weights = keras.ops.cast(keras.ops.not_equal(y_true, 0), token_losses.dtype)
    return keras.ops.sum(token_losses * weights) / keras.ops.maximum(keras.ops.sum(weights), 1.0)
