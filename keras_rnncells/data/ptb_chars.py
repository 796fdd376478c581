"""Character-level language modelling on the Penn Treebank.

The same text as the word-level task (`keras_rnncells.data.ptb`, Mikolov's
10k version, read from the same files), as a stream of characters: each line
is its words joined by single spaces, one character a symbol, followed by
the end-of-line symbol ``<eos>``; the words ``<unk>`` and ``N`` (the corpus'
unknown words and numbers) are spelled as their characters, as they are in
the text. The vocabulary is ``<pad>`` = 0, ``<unk>`` = 1 (for a character of
the validation or test text that training lacks: none in PTB), then the
training stream's symbols, most frequent first (50 symbols in all, with the
space and ``<eos>``).

Batches use the word-level task's stream layout (`keras_rnncells.data.ptb.
stream_task`): the stream cut into ``batch_size`` rows, windows of
``sequence_length`` characters (100 by default), never shuffled, so that a
stateful model carries its state from one window to the next. The test
metric of a run is bits per character, the mean cross-entropy in nats over
the test characters divided by ln 2.
"""

from __future__ import annotations

import os

from keras_rnncells.checks import check_optional_positive_int, check_positive_int, check_seed
from keras_rnncells.data.ptb import EOS, SPLIT_FILES, read_stream, stream_task
from keras_rnncells.data.tasks import Task, register_task
from keras_rnncells.data.vocabulary import PAD, UNK, build_vocabulary


def characters_of(words: list[str]) -> list[str]:
    """The character stream of a word stream with ``<eos>`` after every
    line: each line's words joined by spaces, as characters, then ``<eos>``."""
    stream: list[str] = []
    line: list[str] = []
    for word in words:
        if word == EOS:
            stream += [*" ".join(line), EOS]
            line = []
        else:
            line.append(word)
    return stream + list(" ".join(line))


@register_task("ptb_chars")
def ptb_chars(
    *,
    batch_size: int = 32,
    seed: int = 0,
    root: str | os.PathLike | None = None,
    sequence_length: int = 100,
    limit: int | None = None,
) -> Task:
    """PTB as characters (see the module); ``limit`` keeps the first
    ``limit`` characters of each split (the vocabulary is still the full
    training one). ``seed`` is unused: nothing is shuffled."""
    check_positive_int("batch_size", batch_size)
    check_positive_int("sequence_length", sequence_length)
    check_seed("seed", seed)
    limit = check_optional_positive_int("limit", limit)
    streams = [characters_of(read_stream(name, root)) for name in SPLIT_FILES]
    vocabulary = build_vocabulary([streams[0]], reserved=(PAD, UNK))
    description = (
        f"Penn Treebank character-level language modelling, {len(vocabulary) - 2} symbols "
        f"(characters, the space and <eos>), windows of {sequence_length} characters in the "
        "stateful stream layout; bits per character. Marcus et al. (1993); Mikolov et al. "
        "(2012) character-level setting."
    )
    return stream_task(
        "ptb_chars", streams, vocabulary, description, batch_size, sequence_length, limit
    )
