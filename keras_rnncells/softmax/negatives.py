"""Two training losses that contrast the target with noise words drawn from
a distorted unigram distribution ``Q(w) ∝ n_w^α`` (n_w: the training counts),
k draws with replacement per batch, shared by its tokens. A sample equal to a
token's target (an accidental hit) does not count for that token.

- BlackOut (Ji et al. 2016): with importance weights ``1/Q``, the softmax
  over the target and the samples S of the weighted scores,
  ``p̃(w) = exp(z_w − log Q(w)) / Σ_{v ∈ {y} ∪ S} exp(z_v − log Q(v))``,
  and the discriminative loss

      −log p̃(y) − Σ_{s ∈ S} log(1 − p̃(s))

  (the first term alone is the sampled softmax of Jean et al. 2015).
- Negative sampling (Mikolov et al. 2013, α = 0.75): the logistic loss of
  the plain scores, target 1 and samples 0,

      −log σ(z_y) − Σ_{s ∈ S} log σ(−z_s)

  It is not a consistent estimator of the softmax: at its optimum
  ``z_w = log p(w|h) − log(k Q(w))``, so the softmax of its scores is
  ``p/Q`` normalized, not p (NCE, with the ``log(k Q)`` correction, is
  consistent). Its full-softmax perplexity is reported as it comes out.
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["blackout_losses", "negative_sampling_losses"]

# log p̃ is capped below 0 by this much, so that log(1 − p̃) stays finite.
LOG_ONE_MARGIN = 1e-7
# Expected counts are floored here: a target the counts never saw has Q = 0.
LEAST_EXPECTED_COUNT = 1e-20


def candidate_scores(
    hidden: tf.Tensor, targets: tf.Tensor, sampled: tf.Tensor, kernel: tf.Tensor, bias: tf.Tensor
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """``z_y`` (N,), ``z_s`` (N, k) of each row of ``hidden`` (N, d), and
    where a sample is the row's target (N, k)."""
    true_scores = tf.einsum("nd,nd->n", hidden, tf.gather(kernel, targets))
    true_scores += tf.gather(bias, targets)
    sampled_scores = tf.matmul(hidden, tf.gather(kernel, sampled), transpose_b=True)
    sampled_scores += tf.gather(bias, sampled)
    hits = tf.equal(sampled[None, :], targets[:, None])
    return true_scores, sampled_scores, hits


def blackout_losses(
    hidden: tf.Tensor,
    targets: tf.Tensor,
    kernel: tf.Tensor,
    bias: tf.Tensor,
    sampled: tuple[tf.Tensor, tf.Tensor, tf.Tensor],
) -> tf.Tensor:
    """BlackOut's loss of each row (N,), for a draw ``sampled`` = (ids (k,),
    expected counts k·Q of the targets (N, 1) and of the samples (k,))."""
    ids, true_expected, sampled_expected = sampled
    true_scores, sampled_scores, hits = candidate_scores(hidden, targets, ids, kernel, bias)
    floor = LEAST_EXPECTED_COUNT
    true_expected = tf.maximum(tf.cast(true_expected[:, 0], hidden.dtype), floor)
    sampled_expected = tf.maximum(tf.cast(sampled_expected, hidden.dtype), floor)
    # k·Q in place of Q: the factor k cancels in p̃
    weighted = tf.concat(
        [
            (true_scores - tf.math.log(true_expected))[:, None],
            tf.where(
                hits,
                tf.constant(float("-inf"), hidden.dtype),
                sampled_scores - tf.math.log(sampled_expected),
            ),
        ],
        1,
    )
    log_p = tf.nn.log_softmax(weighted)
    log_not = tf.math.log(-tf.math.expm1(tf.minimum(log_p[:, 1:], -LOG_ONE_MARGIN)))
    return -log_p[:, 0] - tf.reduce_sum(log_not, 1)


def negative_sampling_losses(
    hidden: tf.Tensor,
    targets: tf.Tensor,
    kernel: tf.Tensor,
    bias: tf.Tensor,
    sampled: tuple[tf.Tensor, tf.Tensor, tf.Tensor],
) -> tf.Tensor:
    """Negative sampling's loss of each row (N,) for the draw ``sampled``
    (its ids alone count: no correction by Q)."""
    true_scores, sampled_scores, hits = candidate_scores(hidden, targets, sampled[0], kernel, bias)
    noise = tf.where(hits, tf.zeros_like(sampled_scores), tf.nn.softplus(sampled_scores))
    return tf.nn.softplus(-true_scores) + tf.reduce_sum(noise, 1)
