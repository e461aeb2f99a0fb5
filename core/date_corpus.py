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
import re

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


# ---- the spellings a model of the task learned ----------------------------------------------------------
# A model trained on these pairs has seen nothing else: a year outside FIRST_DAY..LAST_DAY, a zero-padded day, an
# ordinal ("5th"), an abbreviated or lower-case month, other punctuation. On such a source it still answers, often
# wrongly and with a confidence near 1: what it learned is these spellings, not dates.
LEARNED_SPELLINGS = tuple(spell(datetime.date(2021, 3, 5), style) for style in range(3))
_WEEKDAY = r"\s*(?:(?P<weekday>[^\s,]+),?\s+)?"  # loose: each part is parsed wide, then checked one by one
_DAY_FIRST = re.compile(_WEEKDAY + r"(?P<day>[^\s,]+)\s+(?P<month>[A-Za-z.]+),?\s+(?P<year>\S+)\s*")
_MONTH_FIRST = re.compile(_WEEKDAY + r"(?P<month>[A-Za-z.]+)\s+(?P<day>[^\s,]+),?\s+(?P<year>\S+)\s*")


def learned_spellings_text() -> str:
    """The spellings in words, for messages and the view."""
    return (f"{', '.join(repr(s) for s in LEARNED_SPELLINGS)}, with days 1 to 31 unpadded, months spelled out "
            f"and capitalised, years {FIRST_DAY.year} to {LAST_DAY.year}")


def reads_dates(tokenizer) -> bool:
    """Whether a tokenizer holds this task's characters and no other (the digits, '-', START and END among them):
    a model over such a vocabulary can have learned nothing but these pairs."""
    size = getattr(tokenizer, "vocab_size", None)
    if not isinstance(size, int) or not 0 < size <= len(CHARACTERS):
        return False
    try:
        tokens = {tokenizer.token_text(i) for i in range(size)}
    except Exception:  # noqa: BLE001 (a tokenizer without token_text is of another kind)
        return False
    return tokens <= set(CHARACTERS) and set("0123456789-" + START + END) <= tokens


def spelling_problem(source: str) -> str:
    """Why `source` is not one of the spellings the task's pairs hold (spell() of a date from FIRST_DAY to LAST_DAY),
    naming each part that differs; "" when it is one."""
    if len(source) > 100:
        return f"a source of {len(source)} characters is no date as the model learned them"
    parsed = next((match for match in (_DAY_FIRST.fullmatch(source), _MONTH_FIRST.fullmatch(source)) if match), None)
    if parsed is None:
        return f"{source!r} is none of the spellings it learned"
    weekday, day, month, year = parsed.group("weekday", "day", "month", "year")
    day_first = parsed.re is _DAY_FIRST
    problems = [problem for problem in (_month_problem(month), _day_problem(day), _year_problem(year)) if problem]
    if weekday is not None and not day_first:
        problems.append("it learned a weekday only before a day-first date ('Friday, 5 March 2021')")
    if problems:
        return "; ".join(problems)
    try:
        date = datetime.date(int(year), MONTHS.index(month) + 1, int(day))
    except ValueError:
        return f"{day} {month} {year} is no date"
    if weekday is not None and weekday != WEEKDAYS[date.weekday()]:
        actual = WEEKDAYS[date.weekday()]
        return f"{spell(date, 0)} was a {actual}, not {weekday!r}; it learned each date with its own weekday"
    style = 2 if weekday is not None else 0 if day_first else 1
    if source != spell(date, style):
        return f"{source!r} is not spelled as it learned ({spell(date, style)!r}): spaces or commas differ"
    return ""


def _month_problem(month: str) -> str:
    if month in MONTHS:
        return ""
    name = month.rstrip(".").capitalize()
    if name in MONTHS:
        return f"the month {month!r} is not written as it learned ({name!r})"
    whole = [m for m in MONTHS if len(name) >= 3 and m.startswith(name)]
    if whole:
        return f"the month {month!r} is abbreviated; it learned whole names ({whole[0]!r})"
    return f"{month!r} is no month name it learned (January to December)"


def _day_problem(day: str) -> str:
    if re.fullmatch(r"\d{1,2}(st|nd|rd|th)", day):
        return f"the day {day!r} is an ordinal; it learned plain numbers ({day[:-2].lstrip('0') or '0'!r})"
    if not (day.isascii() and day.isdigit()):
        return f"the day {day!r} is not a number"
    if day.startswith("0"):
        return f"the day {day!r} is zero-padded; it learned days written 1 to 31"
    if not 1 <= int(day) <= 31:
        return f"the day {day} is outside 1 to 31"
    return ""


def _year_problem(year: str) -> str:
    if not (year.isascii() and year.isdigit() and len(year) == 4):
        return f"the year {year!r} is not written with four digits"
    if not FIRST_DAY.year <= int(year) <= LAST_DAY.year:
        return f"the year {year} is outside {FIRST_DAY.year} to {LAST_DAY.year}, the years it learned"
    return ""


__all__ = ["CHARACTERS", "DEFAULT_PAIRS", "LEARNED_SPELLINGS", "MONTHS", "NAME", "WEEKDAYS", "date_pairs",
           "learned_spellings_text", "reads_dates", "spell", "spelling_problem"]
