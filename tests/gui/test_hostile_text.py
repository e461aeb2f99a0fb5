"""Text a hostile user types or pastes: one message, plain text, and the chips keep matching the text."""

from __future__ import annotations

from core.limits import MAX_TEXT_CHARS
from core.tokenizers import HuggingFaceTokenizer
from gui.widgets.token_strip import TokenStrip
from tests.core.test_tokenizer_panics import HOSTILE_TEXT, crafted_spec
from tests.gui.file_opening import open_session


def _strip(qtbot, tokenizer) -> TokenStrip:
    strip = TokenStrip()
    qtbot.addWidget(strip)
    strip.set_tokenizer(tokenizer)
    strip.show()
    return strip


def test_a_text_that_makes_the_tokenizer_panic_is_refused_and_the_chips_stay(qtbot):
    tokenizer = HuggingFaceTokenizer(crafted_spec())
    strip = _strip(qtbot, tokenizer)
    strip.set_text("a")
    strip.set_tokens(tokenizer.encode("a"))
    submitted = []
    strip.text_submitted.connect(submitted.append)

    strip.text_edit.setText(HOSTILE_TEXT)
    strip.submit_text()

    assert submitted == [] and strip.tokens == [0]
    assert strip.message.startswith("Not applied: the tokenizer cannot split this text (")
    strip.text_edit.setText("a")
    strip.submit_text()
    assert submitted == ["a"] and strip.message == ""


def test_a_text_over_the_bound_is_refused_before_tokenizing(qtbot):
    class Counting(HuggingFaceTokenizer):
        calls = 0

        def encode(self, text):
            Counting.calls += 1
            return super().encode(text)

    strip = _strip(qtbot, Counting(crafted_spec()))
    strip.text_edit.setText("a" * (10 * MAX_TEXT_CHARS))  # a paste: the field holds one character over the bound
    assert len(strip.text_edit.text()) == MAX_TEXT_CHARS + 1
    calls = Counting.calls
    strip.submit_text()
    assert Counting.calls == calls
    assert f"longer than the {MAX_TEXT_CHARS:,} characters" in strip.message


def test_a_message_quoting_markup_is_shown_as_text(qtbot):
    from PySide6.QtCore import Qt

    strip = _strip(qtbot, HuggingFaceTokenizer(crafted_spec()))
    strip.show_message("<img src='file:///etc/hostname'>")
    assert strip.message_label.textFormat() == Qt.TextFormat.PlainText


MARKUP = "<img src='file:///etc/hostname'><table><tr><td>x</td></tr></table>"


def test_a_config_name_with_markup_is_shown_as_text(qtbot, window):
    from PySide6.QtCore import Qt

    window.state.set_config(window.state.config.replace(name=MARKUP))
    qtbot.waitUntil(lambda: MARKUP in window.model_label.text(), timeout=10_000)
    for label in (window.model_label, window.device_label, window.busy_label):
        assert label.textFormat() == Qt.TextFormat.PlainText


def test_the_shapes_summary_escapes_the_config_name(qtbot, window):
    import html

    panel = window.panels[0]
    window.state.set_config(window.state.config.replace(name=MARKUP))
    qtbot.waitUntil(lambda: html.escape(MARKUP) in panel.summary.text(), timeout=30_000)
    assert "<img" not in panel.summary.text()


def test_lesson_and_step_titles_are_plain_text(qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QMainWindow

    from core.lessons import parse_lesson
    from gui.lesson_dock import LessonDock

    host = QMainWindow()
    qtbot.addWidget(host)
    dock = LessonDock(host)
    lesson = parse_lesson({"title": MARKUP, "steps": [{"title": MARKUP, "text": "Read."}]})
    dock.show_step(lesson, 0, lambda text: text)
    for label in (dock.lesson_title, dock.step_title):
        assert label.textFormat() == Qt.TextFormat.PlainText and label.text() == MARKUP


def test_the_error_dialog_escapes_its_summary(qtbot):
    from gui.errors import ErrorDialog

    dialog = ErrorDialog(MARKUP, "details")
    qtbot.addWidget(dialog)
    from PySide6.QtWidgets import QLabel

    texts = [label.text() for label in dialog.findChildren(QLabel)]
    assert any("&lt;img src=" in text for text in texts) and not any("<img" in text for text in texts)


def test_a_session_with_a_megabyte_of_text_is_refused_at_once(qtbot, window, tmp_path, monkeypatch):
    import json

    from gui.session import Session

    path = tmp_path / "huge.json"
    path.write_text(json.dumps(Session(window.state.config, text="a" * 2**20).to_json()), encoding="utf-8")
    text_before = window.state.text
    given_texts: list[int] = []
    monkeypatch.setattr(window.state, "set_text", lambda text, *args, **kwargs: given_texts.append(len(text)))
    message = open_session(qtbot, window, path)
    assert message == f"'text' has 1,048,576 characters, more than the {MAX_TEXT_CHARS:,} the lab takes"
    assert window.state.text == text_before
    # Refused while the file was read: the text never reached the state, which tokenizes it (that froze
    # the window for 15 s).
    assert given_texts == []


def test_a_problem_quoting_markup_is_an_escaped_tooltip(qtbot, window):
    # What the status bar shows when a session opens on a model that cannot be built, before any other.
    window._update_model_label(problem=f"{MARKUP} has 10,000,000,000 parameters")
    tip = window.model_label.toolTip()
    assert "&lt;img src=" in tip and "<img" not in tip and "<table" not in tip


def test_a_message_box_quoting_a_whole_file_is_cut_short(qtbot, window):
    from gui.main_window import MAX_MESSAGE_CHARS

    box = window._show_message("Could not open the session", "x" * 1_000_000)
    assert len(box.text()) == MAX_MESSAGE_CHARS and box.text().endswith("...")
    box.done(0)


def test_a_session_of_a_million_empty_lists_is_refused_at_once(qtbot, window, tmp_path, monkeypatch):
    from core import json_files
    from core.json_files import MAX_CONTAINERS
    from gui.session import MAX_SESSION_BYTES

    path = tmp_path / "lists.json"
    path.write_text("[" + ",".join(["[]"] * ((MAX_SESSION_BYTES - 2) // 3)) + "]", encoding="utf-8")
    parsed: list[int] = []
    real_loads = json_files.json.loads
    monkeypatch.setattr(json_files.json, "loads", lambda text, **kwargs: parsed.append(len(text)) or real_loads(text, **kwargs))
    message = open_session(qtbot, window, path)
    assert message.startswith("lists.json cannot be a session file: it has 1,398,101 '[' and '{'")
    assert f"more than the {MAX_CONTAINERS:,} lists and objects" in message
    # Counted before the parse (parsing and walking them froze the window for 5 s): the window's process parses
    # at most the short reply of the child that read the file, never the 4 MiB of lists.
    assert all(length < 1_000 for length in parsed), parsed


def test_a_panel_setting_beyond_32_bits_is_refused_with_the_session(qtbot, window, tmp_path):
    import json

    from gui.session import Session

    session = Session(window.state.config, panels={"Tensor shapes": {"batch": -(10**29)}})
    path = tmp_path / "huge-int.json"
    path.write_text(json.dumps(session.to_json()), encoding="utf-8")
    message = open_session(qtbot, window, path)
    assert message == ("panels.Tensor shapes.batch: -100000000000000000000000000000 is beyond the whole numbers a setting "
                       "holds (at most 2,147,483,647)")
