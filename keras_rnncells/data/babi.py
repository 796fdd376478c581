"""Generated question-answering stories of two bAbI kinds (Weston et al. 2015,
"Towards AI-Complete Question Answering: A Set of Prerequisite Toy Tasks"),
written here: nothing is downloaded.

* ``"single"`` (bAbI task 1, a single supporting fact): people move between
  places; the question asks where one of them is::

      Mary moved to the bathroom. John went to the hallway.
      Where is Mary? -> bathroom   (supporting: sentence 0)

* ``"two"`` (bAbI task 2, two supporting facts): people also pick up and drop
  objects; the question asks where an object is, which takes the fact of who
  holds it (or dropped it) and the fact of where that person is (or was)::

      John went to the office. John picked up the football.
      John travelled to the garden. Where is the football? -> garden

Every answer is a place (`PLACES`), true by construction: the generator keeps
the world's state (where each person is, who holds each object, where each
dropped object lies) and asks only about what the story determines. The
stories are bAbI-like, not bAbI's: a story has ``statements`` sentences
(drawn uniformly in the given range), one question at its end; bAbI's own
files ask several questions per story and its task 2 stories are longer.
The same ``seed`` gives the same stories.

`encode` turns stories into the arrays a `keras_rnncells.MemoryNetwork` reads:
word ids ``[stories, sentences, words]`` and ``[stories, words]`` (0 the
padding) and answer indices into `PLACES`, with the kind's fixed `vocabulary`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from keras_rnncells.checks import check_choice, check_positive_int, check_range, check_seed

__all__ = [
    "KINDS",
    "OBJECTS",
    "PEOPLE",
    "PLACES",
    "Story",
    "encode",
    "generate_stories",
    "vocabulary",
]

KINDS = ("single", "two")
PEOPLE = ("Mary", "John", "Sandra", "Daniel")
PLACES = ("bathroom", "hallway", "kitchen", "office", "garden", "bedroom")
OBJECTS = ("football", "apple", "milk")
MOVES = ("moved to", "went to", "journeyed to", "travelled to", "went back to")
PICKS = ("picked up", "got", "grabbed", "took")
DROPS = ("dropped", "discarded", "put down", "left")
# The statements of task 2 other than moves, when one is possible.
PICK_RATE = 0.3
DROP_RATE = 0.2
DEFAULT_STATEMENTS = {"single": (2, 10), "two": (4, 20)}


@dataclass(frozen=True)
class Story:
    """One example: the story's sentences, the question, its answer (a place)
    and the indices of the sentences that determine it."""

    sentences: tuple[str, ...]
    question: str
    answer: str
    supporting: tuple[int, ...]


def words_of(text: str) -> list[str]:
    """The lowercase words of a sentence or question, punctuation dropped."""
    return text.lower().replace(".", " ").replace("?", " ").split()


def vocabulary(kind: str) -> tuple[str, ...]:
    """Every word the stories of ``kind`` use, sorted, after ``"<pad>"`` (id 0)."""
    check_choice("kind", kind, KINDS)
    phrases = [*PEOPLE, *PLACES, *MOVES, "the", "where is"]
    if kind == "two":
        phrases += [*OBJECTS, *PICKS, *DROPS]
    return ("<pad>", *sorted({word for phrase in phrases for word in words_of(phrase)}))


def single_fact_story(rng: np.random.Generator, statements: int) -> Story:
    """Task 1: moves only; the question asks for a person who moved."""
    where: dict[str, tuple[str, int]] = {}  # person -> (place, sentence)
    sentences = []
    for index in range(statements):
        person = PEOPLE[rng.integers(len(PEOPLE))]
        place = PLACES[rng.integers(len(PLACES))]
        sentences.append(f"{person} {MOVES[rng.integers(len(MOVES))]} the {place}.")
        where[person] = (place, index)
    asked = sorted(where)[rng.integers(len(where))]
    place, index = where[asked]
    return Story(tuple(sentences), f"Where is {asked}?", place, (index,))


def two_facts_story(rng: np.random.Generator, statements: int) -> Story | None:
    """Task 2: moves, pick-ups and drops; the question asks for an object
    whose place the story determines (None when there is none)."""
    where: dict[str, tuple[str, int]] = {}  # person -> (place, sentence of the move)
    held: dict[str, tuple[str, int]] = {}  # object -> (holder, sentence of the pick-up)
    lying: dict[str, tuple[str, tuple[int, ...]]] = {}  # object -> (place, its facts)
    sentences = []
    for index in range(statements):
        located = sorted(where)
        person = located[rng.integers(len(located))] if located else None
        # what that person can pick up: an object never seen, or one lying here
        free = [
            o
            for o in OBJECTS
            if o not in held and (o not in lying or lying[o][0] == where[person][0])
        ]
        holding = sorted(held)
        draw = rng.random()
        if holding and draw < DROP_RATE:
            thing = holding[rng.integers(len(holding))]
            person, _ = held.pop(thing)
            sentences.append(f"{person} {DROPS[rng.integers(len(DROPS))]} the {thing}.")
            place, moved = where[person]
            lying[thing] = (place, (moved, index))
        elif person is not None and free and draw < DROP_RATE + PICK_RATE:
            thing = free[rng.integers(len(free))]
            sentences.append(f"{person} {PICKS[rng.integers(len(PICKS))]} the {thing}.")
            held[thing] = (person, index)
            lying.pop(thing, None)
        else:
            person = PEOPLE[rng.integers(len(PEOPLE))]
            place = PLACES[rng.integers(len(PLACES))]
            sentences.append(f"{person} {MOVES[rng.integers(len(MOVES))]} the {place}.")
            where[person] = (place, index)
    answers = {thing: lying[thing] for thing in lying}
    for thing, (person, picked) in held.items():
        place, moved = where[person]
        answers[thing] = (place, tuple(sorted((picked, moved))))
    if not answers:
        return None
    asked = sorted(answers)[rng.integers(len(answers))]
    place, facts = answers[asked]
    return Story(tuple(sentences), f"Where is the {asked}?", place, facts)


def generate_stories(
    kind: str, count: int, seed: int = 0, statements: tuple[int, int] | None = None
) -> list[Story]:
    """``count`` stories of ``kind`` (``"single"`` or ``"two"``), each of
    ``statements = (low, high)`` sentences (default: (2, 10) for single,
    (4, 20) for two), drawn with ``seed``."""
    check_choice("kind", kind, KINDS)
    count = check_positive_int("count", count)
    seed = check_seed("seed", seed)
    low, high = check_range("statements", statements or DEFAULT_STATEMENTS[kind], minimum=1)
    if kind == "two" and high < 2:
        raise ValueError(
            "Argument `statements` must allow 2 sentences or more for kind 'two' (a move and "
            f"a pick-up), received: {statements!r}"
        )
    rng = np.random.default_rng(seed)
    stories: list[Story] = []
    while len(stories) < count:
        length = int(rng.integers(low, high + 1))
        if kind == "single":
            stories.append(single_fact_story(rng, length))
        else:
            story = two_facts_story(rng, max(length, 2))
            if story is not None:
                stories.append(story)
    return stories


def encode(
    stories: list[Story],
    words: tuple[str, ...],
    sentences: int | None = None,
    length: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(story ids [n, sentences, length], question ids [n, length], answer
    indices [n] into PLACES)`` with the vocabulary ``words`` (id 0 the
    padding; see `vocabulary`). ``sentences``: keep each story's last ones
    (default: the longest story's count); ``length``: words per sentence
    (default: the longest). Shorter ones are right-padded with 0."""
    index = {word: i for i, word in enumerate(words)}
    tokenized = []
    for story in stories:
        try:
            read = [[index[w] for w in words_of(s)] for s in story.sentences]
            tokenized.append((read, [index[w] for w in words_of(story.question)]))
        except KeyError as error:
            raise ValueError(
                f"Argument `words` must hold every word of the stories, missing: {error.args[0]!r}"
            ) from None
    most = max((len(s) for s, _ in tokenized), default=1)
    sentences = most if sentences is None else check_positive_int("sentences", sentences)
    longest = max(
        (len(w) for s, q in tokenized for w in [*s, q]),
        default=1,
    )
    length = longest if length is None else check_positive_int("length", length)
    if length < longest:
        raise ValueError(
            f"Argument `length` must be at least the longest sentence ({longest} words), "
            f"received: {length}"
        )
    story_ids = np.zeros((len(stories), sentences, length), np.int32)
    question_ids = np.zeros((len(stories), length), np.int32)
    for row, (read, question) in enumerate(tokenized):
        for line, ids in enumerate(read[-sentences:]):
            story_ids[row, line, : len(ids)] = ids
        question_ids[row, : len(question)] = question
    answers = np.array([PLACES.index(story.answer) for story in stories], np.int32)
    return story_ids, question_ids, answers
