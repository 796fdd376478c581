"""The Huffman code of a vocabulary's word counts, as the binary tree that a
hierarchical softmax (`keras_rnncells.softmax.hierarchical`) walks.

Huffman (1952): repeatedly join the two subtrees of least total count into a
new node until one tree is left; the code of a word is its path from the
root, a bit per internal node (0 to the subtree joined first, of the lesser
count, 1 to the other). It is prefix-free and its expected length
``Σ n_w |code(w)| / Σ n_w`` is the least of any prefix-free binary code, so
frequent words get short paths (Mikolov et al. 2013 use it for the
hierarchical softmax of word2vec). Ties are broken by the order of creation
(words by id, then internal nodes), so the same counts give the same tree.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Sequence

import numpy as np

__all__ = ["HuffmanTree", "huffman_tree"]


@dataclasses.dataclass(frozen=True)
class HuffmanTree:
    """The tree of V leaves (the words) and V − 1 internal nodes (ids 0 …
    V − 2, the root last), each word's path padded to ``depth`` steps:

    - ``nodes`` (V, depth): the internal nodes from the root to the word;
    - ``bits`` (V, depth): the code, 1 where the path turns to the second child;
    - ``lengths`` (V,): the code lengths (the path's steps; past them
      ``nodes`` repeats the root and ``bits`` is 0);
    - ``first_child_counts`` (V − 1,), ``node_counts`` (V − 1,): the counts
      under each node's first child and under the node (what a unigram start
      of the node biases reads)."""

    nodes: np.ndarray
    bits: np.ndarray
    lengths: np.ndarray
    first_child_counts: np.ndarray
    node_counts: np.ndarray

    @property
    def depth(self) -> int:
        return int(self.nodes.shape[1])

    def codes(self) -> list[str]:
        """Each word's code as a string of 0s and 1s."""
        return [
            "".join(str(int(b)) for b in row[:length])
            for row, length in zip(self.bits, self.lengths)
        ]


def huffman_tree(counts: Sequence[float]) -> HuffmanTree:
    """The Huffman tree of ``counts`` (one finite count >= 0 per word, at
    least two words)."""
    weights = np.asarray(counts, dtype="float64")
    size = len(weights)
    if size < 2:
        raise ValueError(f"Argument `counts` must hold at least 2 words, received {size}")
    # heap of (count, creation order, node); node >= 0 a word, < 0 the internal node ~node
    heap = [(float(w), index, index) for index, w in enumerate(weights)]
    heapq.heapify(heap)
    children = np.zeros((size - 1, 2), dtype="int64")
    node_counts = np.zeros(size - 1)
    first_child_counts = np.zeros(size - 1)
    for internal in range(size - 1):
        first_count, _, first = heapq.heappop(heap)
        second_count, _, second = heapq.heappop(heap)
        children[internal] = first, second
        node_counts[internal] = first_count + second_count
        first_child_counts[internal] = first_count
        heapq.heappush(heap, (first_count + second_count, size + internal, ~internal))
    paths: list[list[tuple[int, int]]] = [[] for _ in range(size)]
    stack = [(size - 2, [])]  # the root, reached by no step
    while stack:
        internal, path = stack.pop()
        for bit, child in enumerate(children[internal]):
            steps = [*path, (internal, bit)]
            if child >= 0:
                paths[child] = steps
            else:
                stack.append((~child, steps))
    depth = max(len(path) for path in paths)
    nodes = np.full((size, depth), size - 2, dtype="int64")
    bits = np.zeros((size, depth), dtype="int64")
    for word, path in enumerate(paths):
        for step, (internal, bit) in enumerate(path):
            nodes[word, step], bits[word, step] = internal, bit
    lengths = np.array([len(path) for path in paths], dtype="int64")
    return HuffmanTree(nodes, bits, lengths, first_child_counts, node_counts)
