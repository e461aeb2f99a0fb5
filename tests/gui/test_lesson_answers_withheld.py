"""Lessons ask before they tell: before Reveal, nothing on the step's panel outside the covers says what the reveal says.

test_lessons.py checks that the widgets a step names are covered. This module reads everything else the
panel shows at that moment (labels, buttons, table cells, the texts drawn in its plots: titles, axis
labels, legends) and compares it, sentence by sentence, with the reveal's own prose. A sentence on screen
makes the reveal's claim when it holds two or more of the content words that a reveal sentence adds to the
step (words not already in the step's title, text or question) and more than half of them: "RoPE is
constant along each diagonal (one offset m - n)" against "each diagonal is one offset m - n". The widgets
a reveal quotes with {{name}} are covered, so their text is left out of the reveal.

The same screen is read for numbers: no number of the revealed answer (100 or more, not typed in the
step's own prose) may be readable before Reveal, nor follow from one sum or difference of two numbers on
screen, to the precision they are shown at ("22.1M" pins 22,100,000 to within 50,000). The screen here is
the panel outside the covers, the lesson's own text and question, and the status bar.

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
from gui.answer_cover import find_panel_widgets, widget_text
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


NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s?([kMB](?![a-z]))?")
SCALE = {"": 1, "k": 1e3, "M": 1e6, "B": 1e9}
SMALLEST_ANSWER = 100  # smaller numbers (a layer, a head, a width of 64) are set-up, and any two sum to many
PINNED = 0.01  # a number shown to 1% of the answer or better can give it ("22.1M" pins 22,096,384)
NEAR = 0.005  # a sum or difference within 0.5% of the answer gives it


def numbers(text: str) -> list[tuple[float, float]]:
    """Each number in `text` with the half-unit of its last shown digit: "22.1M" -> (22.1e6, 0.05e6)."""
    found = []
    for whole, fraction, suffix in NUMBER.findall(text):
        scale = SCALE[suffix or ""]
        digits = len(fraction) - 1 if fraction else 0
        found.append((float(whole.replace(",", "") + fraction) * scale, 0.5 * 10 ** -digits * scale))
    return found


def number_leaks(answers: list[tuple[float, float]], shown: list[tuple[float, float]]) -> list[str]:
    """Each answer a shown number gives, alone or by one sum or difference of two: to within the precision both
    are shown at, or within NEAR of the answer (54.3k - 4,160 gives a total of 49,984 well enough)."""
    leaks = []
    for answer, answer_slack in answers:
        def gives(value: float, slack: float) -> bool:
            return slack <= PINNED * answer and abs(value - answer) <= max(slack + answer_slack, NEAR * answer)
        single = next((a for a, da in shown if gives(a, da)), None)
        if single is not None:
            leaks.append(f"{answer:,.0f} is shown as {single:,.6g}")
            continue
        pair = next(((a, kind, b) for i, (a, da) in enumerate(shown) for b, db in shown[i + 1:]
                     for value, kind in ((a + b, "+"), (abs(a - b), "-")) if gives(value, da + db)), None)
        if pair is not None:
            leaks.append(f"{answer:,.0f} = {pair[0]:,.6g} {pair[1]} {pair[2]:,.6g}")
    return leaks


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

    covers = [cover.target for cover in lessons.covers]
    status = [widget_text(label) for label in window.statusBar().findChildren(QLabel)
              if label.isVisible() and not covered(label, covers)]
    dock = lessons.dock
    on_screen = sorted({n for text in [*screen, *status, widget_text(dock.text), widget_text(dock.question)]
                        for n in numbers(text)})
    typed = {value for value, _ in numbers(f"{step.title} {step.text} {step.predict}")}
    dock.prediction.skip()  # a step's prediction is committed or skipped before its reveal
    dock.reveal()
    answers = sorted({(value, slack) for value, slack in numbers(widget_text(dock.reveal_text))
                      if value >= SMALLEST_ANSWER and value not in typed})
    leaks = number_leaks(answers, on_screen)
    assert not leaks, f"{path.name} step {index + 1}, before Reveal the screen gives the answer: " + "; ".join(leaks)


def test_the_number_check_finds_a_total_by_subtraction_and_passes_set_up():
    shown = numbers("Instantiated on the meta device: 54,272 agrees. V x d = 4,160; 22.1M parameters; d_model 64")
    assert (54272.0, 0.5) in shown and (22.1e6, 0.05e6) in shown
    assert number_leaks([(50112.0, 0.5)], shown) == ["50,112 = 54,272 - 4,160"]
    assert number_leaks([(49984.0, 0.5)], numbers("54.3k agrees; V x d = 4,160")) == ["49,984 = 54,300 - 4,160"]
    assert number_leaks([(22_100_384.0, 0.5)], shown) == ["22,100,384 is shown as 2.21e+07"]
    assert number_leaks([(3_152_384.0, 0.5), (384.0, 0.5)], shown) == []


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
