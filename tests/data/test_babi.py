"""The bAbI-like story generator: every answer checked by a world simulation
of its own that reads the sentences as text, the supporting facts, the
determinism by seed, the encoding and the argument errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

from keras_rnncells.data import babi

MOVE = re.compile(r"^(\w+) (?:moved|went|journeyed|travelled|went back) to the (\w+)\.$")
PICK = re.compile(r"^(\w+) (?:picked up|got|grabbed|took) the (\w+)\.$")
DROP = re.compile(r"^(\w+) (?:dropped|discarded|put down|left) the (\w+)\.$")
QUESTION = re.compile(r"^Where is (?:the )?(\w+)\?$")


def simulate(sentences: tuple[str, ...], question: str) -> tuple[str | None, set[int]]:
    """The place the story gives for the question's person or object (None if
    it gives none) and the sentences that place rests on, from the text alone."""
    person_at: dict[str, tuple[str, int]] = {}
    holder: dict[str, tuple[str, int]] = {}
    object_at: dict[str, tuple[str, set[int]]] = {}
    for i, sentence in enumerate(sentences):
        if match := MOVE.match(sentence):
            person_at[match[1]] = (match[2], i)
        elif match := PICK.match(sentence):
            person, thing = match.groups()
            assert person in person_at, f"{person} picks up while nowhere: {sentence}"
            if thing in object_at:  # picked up where it lies
                assert object_at[thing][0] == person_at[person][0], sentences
            assert thing not in holder, f"{thing} held twice: {sentences}"
            holder[thing] = (person, i)
            object_at.pop(thing, None)
        elif match := DROP.match(sentence):
            person, thing = match.groups()
            assert holder.pop(thing)[0] == person, f"{person} drops what they do not hold"
            place, moved = person_at[person]
            object_at[thing] = (place, {moved, i})
        else:
            raise AssertionError(f"a sentence of no known form: {sentence!r}")
    (asked,) = QUESTION.match(question).groups()
    if asked in person_at:
        place, i = person_at[asked]
        return place, {i}
    if asked in holder:
        person, picked = holder[asked]
        if person not in person_at:
            return None, set()
        place, moved = person_at[person]
        return place, {picked, moved}
    if asked in object_at:
        return object_at[asked]
    return None, set()


@pytest.mark.parametrize("kind", babi.KINDS)
def test_answers_follow_from_the_story(kind):
    stories = babi.generate_stories(kind, 500, seed=3)
    assert len(stories) == 500
    for story in stories:
        answer, facts = simulate(story.sentences, story.question)
        assert answer == story.answer, story
        assert set(story.supporting) == facts, story
    low, high = babi.DEFAULT_STATEMENTS[kind]
    assert {len(s.sentences) for s in stories} <= set(range(low, high + 1))
    answers = {s.answer for s in stories}
    assert answers == set(babi.PLACES)  # every place is asked about
    if kind == "two":  # both an object held and an object dropped are asked about
        kinds = {len({*s.supporting}) for s in stories}
        assert kinds == {2}
        assert any(DROP.match(s.sentences[max(s.supporting)]) for s in stories)
        assert any(MOVE.match(s.sentences[max(s.supporting)]) for s in stories)


def test_same_seed_same_stories():
    for kind in babi.KINDS:
        first = babi.generate_stories(kind, 50, seed=11)
        assert first == babi.generate_stories(kind, 50, seed=11)
        assert first != babi.generate_stories(kind, 50, seed=12)


def test_encoding_reads_back_to_the_story():
    stories = babi.generate_stories("two", 20, seed=0, statements=(3, 6))
    words = babi.vocabulary("two")
    story_ids, question_ids, answers = babi.encode(stories, words)
    assert story_ids.shape[:2] == (20, 6) and question_ids.shape == (20, story_ids.shape[2])
    for row, story in enumerate(stories):
        lines = [" ".join(words[i] for i in ids if i) for ids in story_ids[row]]
        expected = [s.lower().rstrip(".") for s in story.sentences]
        assert lines == expected + [""] * (6 - len(expected))
        question = " ".join(words[i] for i in question_ids[row] if i)
        assert question == story.question.lower().rstrip("?")
        assert babi.PLACES[answers[row]] == story.answer
    # only the last sentences kept
    last, _, _ = babi.encode(stories, words, sentences=2)
    np.testing.assert_array_equal(last[0], story_ids[0, len(stories[0].sentences) - 2 :][:2])
    assert words[0] == "<pad>" and len(set(words)) == len(words)
    assert set(babi.vocabulary("single")) < set(words)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: babi.generate_stories("three", 5), "Argument `kind` must be one of"),
        (lambda: babi.generate_stories("single", 0), "Argument `count` must be a positive"),
        (lambda: babi.generate_stories("two", 5, statements=(1, 1)), "Argument `statements`"),
        (lambda: babi.generate_stories("two", 5, statements=(3, 2)), "Argument `statements`"),
        (
            lambda: babi.encode(babi.generate_stories("two", 5), babi.vocabulary("single")),
            "Argument `words` must hold every word of the stories, missing",
        ),
        (
            lambda: babi.encode(
                babi.generate_stories("single", 5), babi.vocabulary("single"), length=2
            ),
            "Argument `length` must be at least the longest sentence",
        ),
    ],
)
def test_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()
