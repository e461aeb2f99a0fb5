"""The token strip at the lab's largest text: work follows what is on screen, and every behaviour of the chips stays."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtGui import QStaticText
from PySide6.QtWidgets import QApplication, QTabWidget

from core.limits import MAX_TEXT_CHARS
from core.tokenizers import CharTokenizer
from gui import theme
from gui.widgets import chip_layout
from gui.widgets.chip_row import ChipRow
from gui.widgets.token_strip import TokenStrip

TEXT = ("To be, or not to be, that is the question: " * 300)[:MAX_TEXT_CHARS]


class Counting(QStaticText):
    prepared = 0

    def prepare(self, *args) -> None:
        Counting.prepared += 1
        super().prepare(*args)


@pytest.fixture
def counted(monkeypatch):
    """Counts the chip texts laid out (QStaticText.prepare) and the chip layouts made."""
    Counting.prepared = 0
    monkeypatch.setattr(chip_layout, "QStaticText", Counting)
    layouts = []
    compute = ChipRow._compute_geometry
    monkeypatch.setattr(ChipRow, "_compute_geometry", lambda row, width: layouts.append(width) or compute(row, width))
    return layouts


@pytest.fixture
def tabs(qtbot):
    """A strip on the second tab of a shown window: hidden, as the strips of the panels not on screen are."""
    tokenizer = CharTokenizer.from_text(TEXT + "0123456789")
    widget = QTabWidget()
    strip = TokenStrip()
    strip.set_tokenizer(tokenizer)
    widget.addTab(QTabWidget(), "first")
    widget.addTab(strip, "strip")
    qtbot.addWidget(widget)
    widget.resize(900, 400)
    widget.show()
    qtbot.waitExposed(widget)
    return widget, strip, tokenizer


def paint(widget) -> None:
    widget.grab()  # paints what is on screen in it (a child clipped to it), as the next frame would
    QApplication.processEvents()


def test_a_hidden_strip_lays_out_nothing_and_a_shown_one_only_the_chips_it_paints(qtbot, tabs, counted):
    widget, strip, tokenizer = tabs
    heights = []
    strip.chips.height_changed.connect(lambda: heights.append(strip.chips.height()))
    strip.set_tokens(tokenizer.encode(TEXT))
    paint(widget)
    assert counted == [] and Counting.prepared == 0  # 10,000 chips handed to a hidden strip cost no layout

    widget.setCurrentIndex(1)
    qtbot.waitUntil(strip.chips.isVisible)
    paint(strip.scroll.viewport())
    chips = strip.chips
    assert len(chips._geometry.rects) == MAX_TEXT_CHARS and heights and heights[-1] == chips.height()
    assert chips.height() > 100 * chips.row_height()  # every chip has its place, in rows
    painted = sum(1 for index in range(MAX_TEXT_CHARS)
                  if chips.chip_rect(index).intersects(chips.visibleRegion().boundingRect()))
    assert 0 < painted < 500
    assert 0 < Counting.prepared <= 2 * painted + 4  # a chip's text and index, for the chips on screen
    assert len(counted) <= 3  # laid out when shown (and again if the scroll bar narrows it), not per chip


def test_chips_are_found_by_position_at_any_row(qtbot, tabs):
    widget, strip, tokenizer = tabs
    widget.setCurrentIndex(1)
    strip.set_tokens(tokenizer.encode(TEXT))
    chips = strip.chips
    for index in (0, 1, 37, 5_000, MAX_TEXT_CHARS - 1):
        rect = chips.chip_rect(index)
        assert chips.index_at(rect.center()) == index
        assert chips.index_at(QPoint(rect.center().x(), rect.top() - 2)) == index  # its position line above
    last = chips.chip_rect(MAX_TEXT_CHARS - 1)
    assert chips.index_at(QPoint(last.right() + ChipRow.GAP + 40, last.center().y())) == -1


def test_a_replacement_of_the_same_width_repaints_that_chip_alone_with_its_new_text(qtbot, tabs, counted, monkeypatch):
    widget, strip, tokenizer = tabs
    widget.setCurrentIndex(1)
    ids = tokenizer.encode("1234")
    strip.set_tokens(ids)
    chips = strip.chips
    paint(strip.scroll.viewport())
    assert chips._chip_text(1).text() == "2"
    updated: list[QRect] = []
    monkeypatch.setattr(chips, "update", lambda *args: updated.append(args[0] if args else chips.rect()))
    before = len(counted)
    assert chips._chip_widths(["2"]) == chips._chip_widths(["5"])  # digits share one width
    strip.set_tokens([ids[0], tokenizer.encode("5")[0], *ids[2:]])
    assert len(counted) == before  # nothing moved: no layout
    assert updated and all(rect.intersects(chips.chip_rect(1)) and not rect.intersects(chips.chip_rect(0))
                           and not rect.intersects(chips.chip_rect(2)) for rect in updated)
    assert chips._chip_text(1).text() == "5" and chips._chip_text(0).text() == "1"


def test_selection_and_the_edit_mark_survive_a_hidden_strip_and_a_text_size_change(qtbot, tabs):
    widget, strip, tokenizer = tabs
    strip.set_tokens(tokenizer.encode(TEXT))
    strip.select(9_000)  # hidden: kept, and the chip is scrolled to when the strip is shown
    strip.set_marked(9_001)
    widget.setCurrentIndex(1)
    qtbot.waitUntil(lambda: strip.scroll.verticalScrollBar().value() > 0)
    chips = strip.chips
    assert chips.selected == 9_000 and chips._marked == 9_001
    seen = strip.scroll.viewport().rect().translated(0, strip.scroll.verticalScrollBar().value())
    assert seen.intersects(chips.chip_rect(9_000))
    paint(strip.scroll.viewport())
    width = chips.chip_rect(0).width()
    size = chips._chip_text(0).size().height()
    app = QApplication.instance()
    scale = theme.font_scale() / theme.current().font_boost
    try:
        theme.apply_theme(app, theme.current().name, scale * 1.6)
        strip.apply_theme()
        paint(strip.scroll.viewport())
        assert chips.chip_rect(0).width() > width and chips._chip_text(0).size().height() > size
    finally:
        theme.apply_theme(app, theme.current().name, scale)


def test_a_whole_text_of_new_same_width_chips_is_one_repaint_not_one_a_chip(qtbot, tabs, counted, monkeypatch):
    """A model whose tokenizer reads the same 10,000 characters as other ids: every label changes in place. Asking
    for a region a chip cost 0.5 s of the GUI thread; the strip repaints once and lays out only the chips painted."""
    widget, strip, tokenizer = tabs
    widget.setCurrentIndex(1)
    digits = "0123456789" * (MAX_TEXT_CHARS // 10)
    ids = tokenizer.encode(digits)
    strip.set_tokens(ids)
    chips = strip.chips
    paint(strip.scroll.viewport())
    updated: list[object] = []
    monkeypatch.setattr(chips, "update", lambda *args: updated.append(args))
    shifted = tokenizer.encode(digits[1:] + digits[0])  # every chip a digit of the same width, every one changed
    strip.set_tokens(shifted)
    assert updated == [()]  # the whole strip, once
    paint(strip.scroll.viewport())
    assert chips._chip_text(0).text() == digits[1] and chips._chip_text(len(ids) - 1).text() == digits[0]


@pytest.mark.parametrize("hidden_first", [False, True])
def test_the_first_position_past_the_trained_length_is_scrolled_into_view(qtbot, hidden_first):
    """A text that outgrows the trained length: its first dashed chip is brought into the strip's rows, shown now or
    when the strip is next shown."""
    strip = TokenStrip()
    qtbot.addWidget(strip)
    strip.resize(500, 300)
    strip.set_tokenizer(CharTokenizer.from_text(TEXT))
    strip.set_max_tokens(4096, 256)  # positions the model computes past the 256 it trained at
    if not hidden_first:
        strip.show()
        qtbot.waitExposed(strip)
    strip.set_tokens(strip._tokenizer.encode(TEXT[:1000]))
    strip.show()
    qtbot.waitExposed(strip)
    bar, chips = strip.scroll.verticalScrollBar(), strip.chips
    qtbot.waitUntil(lambda: bar.value() > 0)
    viewport = strip.scroll.viewport()
    first_past = chips.chip_rect(256)
    top_left = chips.mapTo(viewport, first_past.topLeft())
    assert viewport.rect().contains(top_left) and viewport.rect().contains(chips.mapTo(viewport, first_past.bottomRight()))
    bar.setValue(0)  # the student scrolls back: a longer text past the same length does not pull the strip again
    strip.set_tokens(strip._tokenizer.encode(TEXT[:1100]))
    QApplication.processEvents()
    assert bar.value() == 0


def test_a_hidden_strip_makes_no_labels_and_reads_no_text_until_shown(qtbot, tabs, monkeypatch):
    """Every panel has a strip: those on tabs not on screen hold a new tokenizer and text until they are shown."""
    widget, strip, tokenizer = tabs
    new_tokenizer = CharTokenizer.from_text(TEXT + "XYZ")
    labelled, decoded = [], []
    monkeypatch.setattr(type(new_tokenizer), "token_text", lambda self, i: labelled.append(i) or self.chars[i])
    monkeypatch.setattr(type(new_tokenizer), "decode", lambda self, ids: decoded.append(1) or "".join(self.chars[i] for i in ids))
    strip.set_tokenizer(new_tokenizer)
    strip.set_tokens(new_tokenizer.encode("XYZ to be"))
    assert labelled == [] and decoded == []
    widget.setCurrentIndex(1)
    qtbot.waitUntil(strip.isVisible)
    assert sorted(labelled) == list(range(new_tokenizer.vocab_size))  # each label made once, when shown
    from core.display import display_token

    assert strip.chips._labels == [display_token(c) for c in "XYZ to be"] and strip.text_edit.text() == "XYZ to be"
    assert strip._vocab_model.stringList()[new_tokenizer.id_of("X")] == "X"
