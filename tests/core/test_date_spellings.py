"""The dates translator learned three spellings of dates from 1900 to 2099, and nothing else: every source of its
corpus is one of them, every other spelling is marked with the part that differs, and on those others the bundled
model answers wrongly as often as the docs say, with a confidence that tells nothing."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest

from core.date_corpus import (
    FIRST_DAY,
    LAST_DAY,
    LEARNED_SPELLINGS,
    date_pairs,
    reads_dates,
    spell,
    spelling_problem,
)

# Thirty spellings a student might type, outside the three learned ones, with the date each means (None: no date)
# and a word of the reason expected.
OUTSIDE = {
    "5 March 1850": ("1850-03-05", "outside 1900 to 2099"),
    "5 March 2150": ("2150-03-05", "outside 1900 to 2099"),
    "5 March 1899": ("1899-03-05", "outside 1900 to 2099"),
    "1 January 2100": ("2100-01-01", "outside 1900 to 2099"),
    "05 March 2021": ("2021-03-05", "zero-padded"),
    "March 05, 2021": ("2021-03-05", "zero-padded"),
    "Friday, 05 March 2021": ("2021-03-05", "zero-padded"),
    "5th March 2021": ("2021-03-05", "ordinal"),
    "March 5th, 2021": ("2021-03-05", "ordinal"),
    "1st January 2000": ("2000-01-01", "ordinal"),
    "22nd May 1999": ("1999-05-22", "ordinal"),
    "3rd June 2003": ("2003-06-03", "ordinal"),
    "5 march 2021": ("2021-03-05", "not written as it learned ('March')"),
    "5 MARCH 2021": ("2021-03-05", "not written as it learned ('March')"),
    "5 Mar 2021": ("2021-03-05", "abbreviated"),
    "Mar 5, 2021": ("2021-03-05", "abbreviated"),
    "March 5 2021": ("2021-03-05", "spaces or commas differ"),
    "5 March, 2021": ("2021-03-05", "spaces or commas differ"),
    "Friday 5 March 2021": ("2021-03-05", "spaces or commas differ"),
    "Monday, 5 March 2021": ("2021-03-05", "was a Friday"),
    "Friday, March 5, 2021": ("2021-03-05", "weekday only before a day-first date"),
    "5  March 2021": ("2021-03-05", "spaces or commas differ"),
    "2021-03-05": ("2021-03-05", "none of the spellings"),
    "05/03/2021": ("2021-03-05", "none of the spellings"),
    "31 February 2021": (None, "is no date"),
    "30 February 2000": (None, "is no date"),
    "5 March 21": ("2021-03-05", "four digits"),
    "the fifth of March 2021": ("2021-03-05", "none of the spellings"),
    "March 2021": (None, "none of the spellings"),
    "5 March 0021": ("0021-03-05", "outside 1900 to 2099"),
}


def test_every_source_of_the_corpus_is_a_learned_spelling():
    sources = [line.split("\t")[0] for line in date_pairs(seed=0).splitlines()]
    assert len(sources) == 40_000
    assert [source for source in sources if spelling_problem(source)] == []
    for date in (FIRST_DAY, LAST_DAY, datetime.date(2000, 2, 29), datetime.date(1999, 12, 31)):
        assert [spelling_problem(spell(date, style)) for style in range(3)] == ["", "", ""]
    assert LEARNED_SPELLINGS == ("5 March 2021", "March 5, 2021", "Friday, 5 March 2021")


@pytest.mark.parametrize("source", sorted(OUTSIDE))
def test_a_spelling_outside_the_learned_ones_is_marked_with_its_reason(source):
    problem = spelling_problem(source)
    assert OUTSIDE[source][1] in problem, problem
    assert "\n" not in problem and len(problem) < 200


def test_only_the_dates_vocabulary_reads_dates():
    from core.checkpoints import load_bundled

    assert reads_dates(load_bundled("tiny-encoder-decoder").tokenizer)
    assert not reads_dates(load_bundled("tiny-gpt").tokenizer) and not reads_dates(None)


def test_the_bundled_translator_is_right_on_its_spellings_and_wrong_outside_as_the_docs_say():
    from core.checkpoints import load_bundled
    from core.experiments.cross_attention import greedy_decode, special_ids
    from core.tokenizers import UnknownTokenError

    loaded = load_bundled("tiny-encoder-decoder")
    tokenizer = loaded.tokenizer
    start, end = special_ids(tokenizer)

    def answer(source: str) -> str:
        result = greedy_decode(loaded.model, tokenizer.encode(source), start, end, 16, 1, tokenizer)
        return tokenizer.decode(list(result.output)).rstrip("\n")

    learned = [spell(datetime.date(1900, 1, 1) + datetime.timedelta(days=d), d % 3) for d in range(0, 73_000, 365)]
    assert all(answer(source) == datetime.date.fromisoformat(_iso_of(source)).isoformat() for source in learned)
    unreadable, wrong = 0, 0
    for source, (meant, _reason) in OUTSIDE.items():
        try:
            wrong += answer(source) != meant  # a date that does not exist has no right answer
        except UnknownTokenError:
            unreadable += 1  # a character outside the vocabulary: the view and `translate` refuse it
    readable = len(OUTSIDE) - unreadable
    documented = re.search(r"of the (\d+) other spellings it can read, it\s+rewrote (\d+) wrongly",
                           (Path(__file__).resolve().parents[2] / "docs" / "families.md").read_text(encoding="utf-8"))
    assert documented is not None
    assert (readable, wrong) == (int(documented.group(1)), int(documented.group(2)))


def _iso_of(source: str) -> str:
    """The ISO form of a learned spelling, parsed here by hand."""
    words = source.replace(",", "").split()
    if words[0][0].isalpha() and words[0] not in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
                                                   "Saturday", "Sunday"):
        month, day, year = words
    else:
        day, month, year = words[-3:]
    number = datetime.datetime.strptime(month, "%B").month
    return f"{int(year):04d}-{number:02d}-{int(day):02d}"
