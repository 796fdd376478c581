"""A language model's output layer over a large vocabulary, by method:

- `layer`: `VocabularySoftmax`, the layer every method trains through (full,
  self-normalized, sampled, NCE, class-factored; it dispatches to the
  modules below for the others), `start_at_unigram` and `token_mean`;
- `huffman`: the Huffman code of the word counts, the hierarchical
  softmax's tree;
- `hierarchical`: the hierarchical softmax's path loss and every word's
  log-probability;
- `negatives`: BlackOut's and negative sampling's losses over noise words.
"""

from keras_rnncells.softmax.layer import (
    VocabularySoftmax,
    check_counts,
    start_at_unigram,
    token_mean,
)

__all__ = ["VocabularySoftmax", "check_counts", "start_at_unigram", "token_mean"]
