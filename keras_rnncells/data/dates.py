"""Date normalization: dates written the many ways people write them, to ISO 8601.

"Nov 21, 2026", "saturday 21 november 2026", "11/21/2026" and "21.11.2026" all
map to "2026-11-21". Slashes are read month first (US), dots day first
(European); every other form spells the month. Dates run from 1900-01-01 to
2099-12-31. A character-level encoder-decoder task generated in code.

The meetings variant carries text that must be copied: "Meeting with Okonkwo
on Nov 21, 2026" -> "Okonkwo 2026-11-21", the names invented from syllables
(`meeting_splits`: its test names never occur in training, and a second test
set has years after 2099).
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable

MONTHS = (
    "January February March April May June July August September October November December"
).split()
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
FIRST_DAY = datetime.date(1900, 1, 1)
LAST_DAY = datetime.date(2099, 12, 31)


def ordinal(day: int) -> str:
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def month(date: datetime.date, short: bool) -> str:
    name = MONTHS[date.month - 1]
    return name[:3] if short else name


def weekday(date: datetime.date) -> str:
    return WEEKDAYS[date.weekday()]


FORMATS: tuple[Callable[[datetime.date], str], ...] = (
    lambda d: f"{month(d, True)} {d.day}, {d.year}",
    lambda d: f"{month(d, False)} {d.day}, {d.year}",
    lambda d: f"{d.day} {month(d, False)} {d.year}",
    lambda d: f"{d.day} {month(d, True)} {d.year}",
    lambda d: f"{ordinal(d.day)} of {month(d, False)}, {d.year}",
    lambda d: f"{month(d, False)} {ordinal(d.day)}, {d.year}",
    lambda d: f"{weekday(d)}, {month(d, False)} {d.day}, {d.year}",
    lambda d: f"{weekday(d)[:3]} {d.day} {month(d, True)} {d.year}",
    lambda d: f"{d.month}/{d.day}/{d.year}",
    lambda d: f"{d.month:02d}/{d.day:02d}/{d.year}",
    lambda d: f"{d.day}.{d.month}.{d.year}",
    lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}",
    lambda d: f"{d.year}/{d.month:02d}/{d.day:02d}",
    lambda d: f"{month(d, True).upper()} {d.day} {d.year}",
)
CASES = (str, str.lower, str.upper)


def write_date(date: datetime.date, rng: random.Random) -> str:
    """``date`` in one of ``FORMATS`` and one of lower/upper/as-is case."""
    text = rng.choice(FORMATS)(date)
    return rng.choice(CASES)(text) if not text[0].isdigit() else text


def date_pairs(count: int, seed: int = 0) -> list[tuple[str, str]]:
    """``count`` (written date, ISO date) pairs of distinct random dates,
    reproducible from ``seed``."""
    span = (LAST_DAY - FIRST_DAY).days + 1
    if isinstance(count, bool) or not isinstance(count, int) or not 0 < count <= span:
        raise ValueError(f"Argument `count` must be an integer in [1, {span}], received: {count!r}")
    rng = random.Random(seed)
    days = rng.sample(range(span), count)
    dates = [FIRST_DAY + datetime.timedelta(days=day) for day in days]
    return [(write_date(date, rng), date.isoformat()) for date in dates]


def with_typos(text: str, rate: float, rng: random.Random) -> str:
    """``text`` with each letter, with probability ``rate``, dropped, doubled
    or replaced by a random lower-case letter (one of the three alike);
    digits and punctuation are kept, so the date stays readable."""
    typed = []
    for character in text:
        if not character.isalpha() or rng.random() >= rate:
            typed.append(character)
            continue
        typo = rng.randrange(3)
        if typo == 1:
            typed.append(character * 2)
        elif typo == 2:
            typed.append(rng.choice("abcdefghijklmnopqrstuvwxyz"))
    return "".join(typed)


def date_splits(
    train: int, test: int, validation: int = 0, seed: int = 0, typos: float = 0.0
) -> dict[str, list[tuple[str, str]]]:
    """Train, validation and test pairs over disjoint sets of dates, so the
    held-out dates were never seen in training, in any form; with ``typos``,
    every source (held-out ones too) gets `with_typos` at that rate."""
    pairs = date_pairs(train + validation + test, seed)
    if typos:
        rng = random.Random(seed + 1)
        pairs = [(with_typos(source, typos, rng), target) for source, target in pairs]
    return {
        "train": pairs[:train],
        "validation": pairs[train : train + validation],
        "test": pairs[train + validation :],
    }


# -- meetings: a name to copy -------------------------------------------------------
SYLLABLES = (
    "ka ko ku ki ta to tu ni na no mo ma mi ra ro ri la lo le se sa so zu ze "
    "ba bo bi da do de ga go fe fi ve vi wa wo ya yo ha he chi sho kwe mba ngo"
).split()
MEETINGS = (
    lambda name, date: f"Meeting with {name} on {date}",
    lambda name, date: f"{date}: call {name}",
    lambda name, date: f"lunch with {name}, {date}",
    lambda name, date: f"{name} visits {date}",
)
LATE_FIRST_DAY = datetime.date(2100, 1, 1)  # the years of no training example
LATE_LAST_DAY = datetime.date(2199, 12, 31)


def invented_names(count: int, seed: int = 0) -> list[str]:
    """``count`` distinct capitalized names of two to four syllables."""
    rng = random.Random(seed)
    names: dict[str, None] = {}
    while len(names) < count:
        parts = rng.choices(SYLLABLES, k=rng.randint(2, 4))
        names["".join(parts).capitalize()] = None
    return list(names)


def meeting_pairs(
    names: list[str],
    count: int,
    seed: int,
    first_day: datetime.date = FIRST_DAY,
    last_day: datetime.date = LAST_DAY,
) -> list[tuple[str, str]]:
    """``count`` (note, "Name YYYY-MM-DD") pairs: random ``names``, dates in
    [``first_day``, ``last_day``] written as `write_date` writes them."""
    rng = random.Random(seed)
    span = (last_day - first_day).days + 1
    pairs = []
    for _ in range(count):
        date = first_day + datetime.timedelta(days=rng.randrange(span))
        name = rng.choice(names)
        pairs.append((rng.choice(MEETINGS)(name, write_date(date, rng)), f"{name} {date}"))
    return pairs


def meeting_splits(
    train: int, test: int, validation: int = 0, seed: int = 0
) -> dict[str, list[tuple[str, str]]]:
    """Train, validation and test notes: 2,000 invented names, the test
    split's 500 never used in training or validation; ``"test_years"``,
    ``test`` notes with training names and dates of 2100-2199 (training
    dates end in 2099)."""
    names = invented_names(2000, seed)
    seen, unseen = names[:1500], names[1500:]
    return {
        "train": meeting_pairs(seen, train, seed + 1),
        "validation": meeting_pairs(seen, validation, seed + 2),
        "test": meeting_pairs(unseen, test, seed + 3),
        "test_years": meeting_pairs(seen, test, seed + 4, LATE_FIRST_DAY, LATE_LAST_DAY),
    }
