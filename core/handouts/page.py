"""A lesson or a view as one self-contained web page, put together by the Jinja2 templates in resources/handouts.

Everything the page needs is inside it: the plotting library (resources/handouts/vega-bundle.js), the style, the
script and each figure's data. Nothing refers to the network, so the page opens offline from a USB stick.
Writing checks the folder first (`write_problem`, before any computing) and writes the file whole or not at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from core.handouts.figures import Figure, StepFigures
from core.handouts.predictions import PredictionError, answer_text, expected_answer
from core.lessons import PLACEHOLDER, Lesson, LessonStep
from core.whole_file import write_text_whole
from resources import resource_path

TEMPLATES_DIR = resource_path("handouts")
MAX_PAGE_BYTES = 5_000_000  # a page goes by e-mail and onto a USB stick: under 5 MB, library included
NOT_ON_PAGE = "(shown in the app)"  # a quote of a part the page does not compute
_SCRIPT_END = re.compile(r"</(script)", re.IGNORECASE)


class PageError(ValueError):
    """Why a page cannot be made or written, in one line."""


def _environment():
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
                              autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def _inline(name: str) -> str:
    """A file of resources/handouts as text that cannot end the <script> or <style> element it sits in."""
    return _SCRIPT_END.sub(r"<\\/\1", (TEMPLATES_DIR / name).read_text(encoding="utf-8"))


def _prose(text: str, quotes: Mapping[str, str]) -> list[list[dict[str, Any]]]:
    """Paragraphs (split at blank lines) of pieces: plain text, or a `{{name}}` quote filled from the step's
    figures. The template escapes every piece: lesson text is shown as plain text."""
    paragraphs = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        pieces, at = [], 0
        for match in PLACEHOLDER.finditer(paragraph):
            pieces.append({"text": paragraph[at:match.start()], "quote": False})
            pieces.append({"text": quotes.get(match.group(1), NOT_ON_PAGE), "quote": True})
            at = match.end()
        pieces.append({"text": paragraph[at:], "quote": False})
        paragraphs.append([piece for piece in pieces if piece["text"]])
    return [paragraph for paragraph in paragraphs if paragraph] if text.strip() else []


def _split_figures(step: LessonStep, figures: Iterable[Figure]) -> tuple[list[Figure], list[Figure]]:
    """(shown, covered): a step with a reveal keeps every figure behind it but those it shows as its set-up."""
    if not step.reveal:
        return list(figures), []
    kept = {*step.shows, *step.asked_parts()}
    shown = [figure for figure in figures if figure.part in kept]
    return shown, [figure for figure in figures if figure.part not in kept]


def _step_context(number: int, step: LessonStep, result: StepFigures, specs: dict[str, Any],
                  answers: dict[str, Any]) -> dict[str, Any]:
    shown, covered = _split_figures(step, result.figures)
    ids = []
    for index, figure in enumerate([*shown, *covered]):
        figure_id = f"figure-{number}-{index}"
        if figure.table:
            ids.append({"id": figure_id, "part": figure.part, "title": figure.title, "header": figure.table[0],
                        "rows": figure.table[1:]})
            continue
        if figure.note:
            ids.append({"id": figure_id, "part": figure.part, "note": figure.note})
            continue
        specs[figure_id] = figure.spec
        ids.append({"id": figure_id, "part": figure.part})
    prediction = step.prediction
    entry: dict[str, Any] = {"title": step.title}
    if prediction is not None:
        try:
            answer = expected_answer(prediction, result.values)
        except PredictionError as error:
            raise PageError(f"step {number}: {error}") from None
        entry.update(prediction=prediction.to_json(), answer=answer, answer_text=answer_text(answer))
    answers[str(number)] = entry
    return {"number": number, "title": step.title, "text": _prose(step.text, result.quotes),
            "predict": _prose(step.predict, result.quotes), "reveal": _prose(step.reveal, result.quotes),
            "note": result.note, "shown": ids[:len(shown)], "covered": ids[len(shown):],
            "prediction": prediction.to_json() if prediction is not None else None}


def _render(title: str, description: str, steps: list[dict[str, Any]], specs: dict[str, Any],
            entries: dict[str, Any], stem: str) -> str:
    data = {"lesson": title, "file_stem": stem, "specs": specs, "steps": entries}
    # "<" inside a JSON string is legal JSON: escaped, no text in the data can close its <script> element.
    data_json = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")).replace("<", "\\u003c")
    page_id = hashlib.sha256(f"{title}\n{stem}".encode()).hexdigest()[:16]
    html = _environment().get_template("page.html.j2").render(
        title=title, description=description, steps=steps, data_json=data_json, page_id=page_id,
        has_predictions=any("prediction" in entry for entry in entries.values()),
        css=_inline("handouts.css"), vega_js=_inline("vega-bundle.js"), page_js=_inline("handouts.js"))
    size = len(html.encode("utf-8"))
    if size > MAX_PAGE_BYTES:
        raise PageError(f"the page would be {size:,} bytes, more than the {MAX_PAGE_BYTES:,} a handout may be")
    return html


def _stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()[:60] or "page"


def lesson_page(lesson: Lesson, computed: Iterable[tuple[int, LessonStep, StepFigures]]) -> str:
    """The page of a lesson from its steps as core.handouts.collect.lesson_figures computes them."""
    specs: dict[str, Any] = {}
    entries: dict[str, Any] = {}
    steps = [_step_context(number, step, result, specs, entries) for number, step, result in computed]
    stem = _stem(Path(lesson.source).stem if lesson.source else lesson.title)
    return _render(lesson.title, lesson.description, steps, specs, entries, stem)


def view_page(title: str, description: str, result: StepFigures) -> str:
    """The page of one view: its figures and quotes as the view shows them, no question to answer."""
    specs: dict[str, Any] = {}
    entries: dict[str, Any] = {}
    quotes = "\n\n".join(f"{name.removesuffix('_label').replace('_', ' ')}: {text}"
                         for name, text in result.quotes.items())
    step = LessonStep(title=title, text=quotes or " ")
    context = _step_context(1, step, StepFigures(result.figures, {}, {}, result.note), specs, entries)
    return _render(title, description, [context], specs, entries, _stem(title))


def write_problem(path: str | Path) -> str:
    """Why a page cannot be written at `path` ("" when it can): checked before anything is computed."""
    path = Path(path)
    if path.is_dir():
        return f"{path} is a folder; give a file name ending in .html"
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        return f"the folder {folder} does not exist"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{path} exists and is not writable"
    return ""


def write_page(path: str | Path, html: str) -> Path:
    """Write the page whole or not at all (core.whole_file)."""
    path = Path(path)
    problem = write_problem(path)
    if problem:
        raise PageError(problem)
    try:
        return write_text_whole(path, html)
    except OSError as error:
        raise PageError(f"cannot write {path}: {error.strerror or error}") from None


__all__ = ["MAX_PAGE_BYTES", "NOT_ON_PAGE", "PageError", "lesson_page", "view_page", "write_page", "write_problem"]
