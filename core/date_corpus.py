"""A sequence-to-sequence task for the encoder-decoder: dates written in words, rewritten as ISO 8601.

"Friday, 5 March 2021" -> "2021-03-05". The output reorders its input: the year, written last, comes
first, and the month's name becomes two digits, so cross-attention has to jump back and forth over the
source instead of running down its diagonal, and it has to skip what the output does not need (the
weekday). That is the alignment Bahdanau-style translation attention learned, on a task whose right
answer a student can check by eye. Three spellings share one target form.

The pairs are made from a seed: the same seed makes the same corpus, so the bundled model can be
retrained exactly (`main.py train --preset tiny-encoder-decoder`). Held-out pairs are the last tenth,
and no date appears twice, so every held-out source is a date the model never saw in any spelling.
"""

from __future__ import annotations

import datetime
import random

from core.objectives.pairs import END, START

NAME = "dates in words to ISO"
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
FIRST_DAY = datetime.date(1900, 1, 1)
LAST_DAY = datetime.date(2099, 12, 31)
DEFAULT_PAIRS = 40_000
# Every character a pair can hold: a model of the task has one token for each.
CHARACTERS = "".join(sorted(set("".join(MONTHS) + "".join(WEEKDAYS) + "0123456789 ,-" + START + END)))


def spell(date: datetime.date, style: int) -> str:
    """One of the three spellings: 0 "5 March 2021", 1 "March 5, 2021", 2 "Friday, 5 March 2021"."""
    month = MONTHS[date.month - 1]
    if style == 0:
        return f"{date.day} {month} {date.year}"
    if style == 1:
        return f"{month} {date.day}, {date.year}"
    return f"{WEEKDAYS[date.weekday()]}, {date.day} {month} {date.year}"


def date_pairs(seed: int = 0, count: int = DEFAULT_PAIRS) -> str:
    """`count` lines `source<TAB>target`, each a different date in a randomly chosen spelling."""
    span = (LAST_DAY - FIRST_DAY).days + 1
    if not 1 <= count <= span:
        raise ValueError(f"a dates corpus holds 1 to {span:,} pairs, got {count}")
    rng = random.Random(seed)
    days = rng.sample(range(span), count)  # distinct dates: a held-out date is unseen in every spelling
    lines = []
    for offset in days:
        date = FIRST_DAY + datetime.timedelta(days=offset)
        lines.append(f"{spell(date, rng.randrange(3))}{START}{date.isoformat()}{END}")
    return "".join(lines)


__all__ = ["CHARACTERS", "DEFAULT_PAIRS", "MONTHS", "NAME", "WEEKDAYS", "date_pairs", "spell"]
