"""Lessons ask before they tell: before Reveal, nothing on the step's panel outside the covers says what the reveal says.

test_lessons.py checks that the widgets a step names are covered. This module reads everything else the
panel shows at that moment (labels, buttons, table cells, the texts drawn in its plots: titles, axis
labels, legends) and compares it, sentence by sentence, with the reveal's own prose. A sentence on screen
makes the reveal's claim when it holds two or more of the content words that a reveal sentence adds to the
step (words not already in the step's title, text or question) and more than half of them: "RoPE is
constant along each diagonal (one offset m - n)" against "each diagonal is one offset m - n". The widgets
a reveal quotes with {{name}} are covered, so their text is left out of the reveal.

One window serves the module; each step is reached with go_to, as a launch at a step does.
"""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QComboBox,
    QGraphicsSimpleTextItem,
    QGraphicsTextItem,
    QGraphicsView,
    QLabel,
    QWidget,
)

from core.lessons import PLACEHOLDER, bundled_lesson_paths, load_lesson
from gui.lessons import find_panel_widgets, widget_text
from tests.gui.lesson_window import loaded_window

# Words that carry no claim of their own: grammar, and the lab's words for its own furniture.
STOPWORD_TEXT = """
a about above after again against all also an and any are as at be because been before being below between both
but by can could did do does each either every few for from further had has have here how if in into is it its
itself just least less more most much no nor not now of off on once one only or other our out over own per same
she should so some such than that the their them then there these they this those through to too two under until
up very was we were what when where which while who whom why will with within would you your yet
see shows show shown read reads look click hover press panel plot plots tab table row rows column columns box
"""
STOPWORDS = frozenset(STOPWORD_TEXT.split())
SHARED_WORDS = 2  # the fewest of a reveal sentence's new words that make a claim (one word is a topic)
# A word of three letters or more ("m", "n", "x" are symbols, not claims); "cut-offs" and "torch.equal" are one.
WORD = re.compile(r"[^\W\d_]{3,}(?:[-.][^\W\d_]+)*")
SENTENCE_END = re.compile(r"(?<=[.;!?:])\s+|\n+")


def stem(word: str) -> str:
    """A crude English stem, enough to meet 'diagonals' with 'diagonal' and 'grows' with 'grow'."""
    word = word.lower()
    for ending in ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "ly", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 4:
            return word[: -len(ending)]
    return word


def content_words(text: str) -> set[str]:
    return {stem(word) for word in WORD.findall(text) if word.lower() not in STOPWORDS}


def sentences(text: str) -> list[str]:
    return [part.strip() for part in SENTENCE_END.split(text) if part.strip()]


def covered(widget: QWidget, targets: list[QWidget]) -> bool:
    return any(target is widget or target.isAncestorOf(widget) for target in targets)


def shown_texts(panel: QWidget, targets: list[QWidget]) -> list[str]:
    """What the panel shows outside the covers: each visible widget's own text, and the texts drawn in its plots."""
    texts: list[str] = []
    for widget in panel.findChildren(QWidget):
        if not widget.isVisible() or covered(widget, targets):
            continue
        if isinstance(widget, (QLabel, QAbstractButton, QComboBox)):
            texts.append(widget_text(widget))
        elif isinstance(widget, QAbstractItemView) and widget.model() is not None:
            model = widget.model()
            for row in range(min(model.rowCount(), 200)):
                texts.append(" ".join(str(model.index(row, column).data(Qt.ItemDataRole.DisplayRole) or "")
                                      for column in range(min(model.columnCount(), 30))))
            texts.append(" ".join(str(model.headerData(column, Qt.Orientation.Horizontal) or "")
                                  for column in range(min(model.columnCount(), 30))))
        elif isinstance(widget, QGraphicsView) and widget.scene() is not None:  # pyqtgraph: titles, axes, legends
            for item in widget.scene().items():
                if item.isVisible() and isinstance(item, QGraphicsTextItem):
                    texts.append(item.toPlainText())
                elif item.isVisible() and isinstance(item, QGraphicsSimpleTextItem):
                    texts.append(item.text())
    return [text for text in texts if text.strip()]


def reveal_prose(step) -> str:
    """The reveal as the lesson wrote it, without the widgets it quotes (those are covered)."""
    return PLACEHOLDER.sub(" ", step.reveal)


def shared_claims(step, screen: list[str]) -> list[tuple[str, str, set[str]]]:
    """(screen sentence, reveal sentence, words) where the screen holds most of what the reveal sentence adds."""
    asked = content_words(f"{step.title} {step.text} {step.predict}")
    found = []
    for said in sentences(reveal_prose(step)):
        answer = content_words(said) - asked
        if len(answer) < SHARED_WORDS:
            continue
        for text in screen:
            for shown in sentences(text):
                common = answer & content_words(shown)
                if len(common) >= SHARED_WORDS and 2 * len(common) > len(answer):
                    found.append((shown, said, common))
    return found


@pytest.fixture(scope="module")
def window(request, tmp_path_factory):
    yield from loaded_window(request, tmp_path_factory, "withheld")


def settle(qtbot, window, panel, step) -> None:
    """Wait for the step's result: its answer widgets shown (a view shows its content with its first result), the worker idle."""
    for name in step.answer_widgets():
        widgets = find_panel_widgets(panel, name)
        assert widgets, f"{step.title}: no widget {name!r}"
        for widget in widgets:
            qtbot.waitUntil(widget.isVisible, timeout=30_000)
    qtbot.waitUntil(lambda: not window.compute.busy and not any(
        view.is_stale for view in getattr(panel, "views", []) if view.isVisible()), timeout=60_000)


REVEAL_STEPS = [(path, index) for path in bundled_lesson_paths()
                for index, step in enumerate(load_lesson(path).steps) if step.reveal]


@pytest.mark.parametrize(("path", "index"), REVEAL_STEPS, ids=lambda v: v.stem if hasattr(v, "stem") else f"step{v + 1}")
def test_no_reveal_is_on_screen_before_it(qtbot, window, path, index):
    lessons = window.lessons
    steps = load_lesson(path).steps
    step = steps[index]
    if lessons.lesson is None or lessons.lesson.source != str(path):
        with qtbot.waitSignal(lessons.step_shown, timeout=30_000):
            lessons.open_lesson(path)
    with qtbot.waitSignal(lessons.step_shown, timeout=30_000):
        lessons.go_to(index)
    panel = window.panel(step.panel)
    settle(qtbot, window, panel, step)
    assert lessons.covers and not lessons.dock.revealed
    screen = shown_texts(panel, [cover.target for cover in lessons.covers])
    assert screen, f"{path.name} step {index + 1}: nothing of the panel is read"
    # This step's reveal, and those of the steps after it: a later question is asked on this screen's memory.
    found = [f"the screen says {shown!r}, step {later + 1}'s reveal {said!r} ({', '.join(sorted(common))})"
             for later in range(index, len(steps)) if steps[later].reveal
             for shown, said, common in shared_claims(steps[later], screen)]
    assert not found, f"{path.name} step {index + 1}, before Reveal:\n" + "\n".join(found)


def test_the_check_finds_a_claim_and_passes_a_topic():
    """The comparison itself, on the sentences it was made for and on a word in common that is no claim."""
    from core.lessons import LessonStep

    step = LessonStep(title="The whole grid at once", text="Each grid shows the score for every query position m "
                      "(rows) against every key position n (columns).", predict="Along which lines of the RoPE grid "
                      "should the colour be constant?", reveal="Along the diagonals: each diagonal is one offset m - n. "
                      "The sinusoidal and learned grids have no such pattern.")
    note = "RoPE is constant along each diagonal (one offset m - n); the additive encodings are not."
    assert [said for _, said, _ in shared_claims(step, [note])] == ["each diagonal is one offset m - n."]
    assert shared_claims(step, ["Score against offset m - n (query at m, every key n)", "sinusoidal (added)",
                                "learned (random, untrained)"]) == []
