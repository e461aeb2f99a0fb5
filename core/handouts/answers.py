"""The answers CSV a handout page downloads (one row per step a student committed or skipped), read back and
summarised per step for the instructor: how many answered, how many right, the most common wrong answers.

A file that is not such a CSV (no header, other columns, a row that is not a step's, too large) is refused with
one line naming the file and what is wrong.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.json_files import JsonFileError, read_regular_file
from core.text_files import decode_text

COLUMNS = ("lesson", "step", "title", "prediction", "answer", "result", "time")
RESULTS = ("right", "wrong", "skipped")
MAX_ANSWERS_BYTES = 2_000_000  # one student's answers to one lesson: a few kilobytes
MAX_ROWS = 10_000
MAX_FIELD_CHARS = 2_000
MAX_STEP = 1_000
COMMON_WRONG = 3  # wrong answers listed per step


class AnswersError(ValueError):
    """A file that is not an answers CSV, in one line."""


@dataclass(frozen=True)
class AnswerRow:
    lesson: str
    step: int
    title: str
    prediction: str
    answer: str
    result: str  # one of RESULTS
    time: str


def answers_csv(rows: Iterable[AnswerRow]) -> str:
    """The CSV text a page downloads, for these rows (the same columns, quoting every field)."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([row.lesson, row.step, row.title, row.prediction, row.answer, row.result, row.time])
    return out.getvalue()


def parse_answers(text: str, name: str = "the file") -> list[AnswerRow]:
    """The rows of an answers CSV; AnswersError naming the file and the first problem otherwise."""
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if header is None or tuple(cell.strip().lower() for cell in header) != COLUMNS:
            raise AnswersError(f"{name}: not a handout answers CSV (its first line must be {','.join(COLUMNS)})")
        rows = []
        for number, cells in enumerate(reader, 2):
            if not cells:
                continue
            if len(rows) >= MAX_ROWS:
                raise AnswersError(f"{name}: more than {MAX_ROWS:,} rows; one student's answers are far fewer")
            rows.append(_row(cells, number, name))
    except csv.Error as error:
        raise AnswersError(f"{name}: not a readable CSV ({error})") from None
    return rows


def _row(cells: Sequence[str], number: int, name: str) -> AnswerRow:
    where = f"{name}: line {number}"
    if len(cells) != len(COLUMNS):
        raise AnswersError(f"{where}: {len(cells)} fields, not the {len(COLUMNS)} of {','.join(COLUMNS)}")
    if any(len(cell) > MAX_FIELD_CHARS for cell in cells):
        raise AnswersError(f"{where}: a field longer than {MAX_FIELD_CHARS:,} characters")
    lesson, step, title, prediction, answer, result, time = cells
    if not step.strip().isdigit() or not 1 <= int(step) <= MAX_STEP:
        raise AnswersError(f"{where}: 'step' must be a step number from 1 to {MAX_STEP}, not {step[:20]!r}")
    if result not in RESULTS:
        raise AnswersError(f"{where}: 'result' must be one of {', '.join(RESULTS)}, not {result[:20]!r}")
    return AnswerRow(lesson, int(step), title, prediction, answer, result, time)


def read_answers(path: str | Path) -> list[AnswerRow]:
    """Read one answers CSV (a regular text file, bounded in size)."""
    try:
        text = decode_text(read_regular_file(path, MAX_ANSWERS_BYTES, "an answers CSV"))
    except JsonFileError as error:
        raise AnswersError(str(error)) from None
    except UnicodeDecodeError:
        raise AnswersError(f"{path}: not a handout answers CSV (not UTF-8 text)") from None
    if "\0" in text:
        raise AnswersError(f"{path}: not a handout answers CSV (binary data)")
    return parse_answers(text, str(path))


@dataclass(frozen=True)
class StepSummary:
    lesson: str
    step: int
    title: str
    answer: str
    answered: int  # committed a prediction (right or wrong)
    right: int
    skipped: int
    common_wrong: tuple[tuple[str, int], ...]  # (prediction, how many), most common first

    def to_json(self) -> dict:
        return {"lesson": self.lesson, "step": self.step, "title": self.title, "answer": self.answer,
                "answered": self.answered, "right": self.right, "wrong": self.answered - self.right,
                "skipped": self.skipped, "common_wrong": [{"prediction": p, "count": n} for p, n in self.common_wrong]}


def summarise(rows: Iterable[AnswerRow]) -> list[StepSummary]:
    """Per (lesson, step): answered, right, skipped, and the most common wrong predictions."""
    groups: dict[tuple[str, int], list[AnswerRow]] = {}
    for row in rows:
        groups.setdefault((row.lesson, row.step), []).append(row)
    summaries = []
    for (lesson, step), group in sorted(groups.items()):
        wrong = Counter(row.prediction.strip() for row in group if row.result == "wrong")
        summaries.append(StepSummary(
            lesson, step, group[-1].title, group[-1].answer,
            answered=sum(row.result != "skipped" for row in group), right=sum(row.result == "right" for row in group),
            skipped=sum(row.result == "skipped" for row in group),
            common_wrong=tuple(wrong.most_common(COMMON_WRONG))))
    return summaries


def summary_lines(summaries: Sequence[StepSummary], files: int) -> list[str]:
    """The summary as text, one block per step."""
    lines = [f"{files} answers file(s)"]
    for item in summaries:
        share = f" ({item.right / item.answered:.0%})" if item.answered else ""
        lines.append(f"{item.lesson}, step {item.step} ({item.title}): {item.right} of {item.answered} right{share}, "
                     f"{item.skipped} skipped; answer {item.answer}")
        for prediction, count in item.common_wrong:
            lines.append(f"    wrong: {prediction!r} x{count}")
    return lines


__all__ = ["COLUMNS", "AnswerRow", "AnswersError", "StepSummary", "answers_csv", "parse_answers", "read_answers",
           "summarise", "summary_lines"]
