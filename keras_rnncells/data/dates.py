"""Date normalization: dates written the many ways people write them, to ISO 8601.

"Nov 21, 2026", "saturday 21 november 2026", "11/21/2026" and "21.11.2026" all
map to "2026-11-21". Slashes are read month first (US), dots day first
(European); every other form spells the month. Dates run from 1900-01-01 to
2099-12-31. A character-level encoder-decoder task generated in code.
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


def date_splits(
    train: int, test: int, validation: int = 0, seed: int = 0
) -> dict[str, list[tuple[str, str]]]:
    """Train, validation and test pairs over disjoint sets of dates, so the
    held-out dates were never seen in training, in any form."""
    pairs = date_pairs(train + validation + test, seed)
    return {
        "train": pairs[:train],
        "validation": pairs[train : train + validation],
        "test": pairs[train + validation :],
    }
