"""Lesson mode in the real window: every bundled lesson walked end to end, keys, presentation view, bad files.

One window with every panel serves the whole module: building it (torch, the model, seven panels) is
the slow part, and a lesson must work from whatever state the previous one left.
"""

from __future__ import annotations

import json
import math

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QAbstractScrollArea, QWidget

from core.lessons import PLACEHOLDER, bundled_lesson_paths, load_lesson
from gui.answer_cover import find_panel_widget, find_panel_widgets
from tests.gui.file_opening import open_lesson
from tests.gui.lesson_window import loaded_window


@pytest.fixture(scope="module")
def window(qapp, request, tmp_path_factory):
    yield from loaded_window(request, tmp_path_factory, "lessons")


def same(actual, expected) -> bool:
    if isinstance(expected, float) or isinstance(actual, float):
        return isinstance(actual, (int, float)) and math.isclose(actual, expected, rel_tol=1e-9)
    return actual == expected


def activate(qtbot, window) -> None:
    """Shortcuts reach only the active window (a message box of an earlier test may have held it)."""
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)


def go(qtbot, window, action) -> None:
    with qtbot.waitSignal(window.lessons.step_shown, timeout=30_000):
        action()


@pytest.mark.parametrize("path", bundled_lesson_paths(), ids=lambda p: p.stem)
def test_every_step_of_every_bundled_lesson_reaches_its_state(qtbot, window, path):
    lessons = window.lessons
    lesson = load_lesson(path)
    go(qtbot, window, lambda: lessons.open_lesson(path))
    assert lessons.dock.isVisible()
    expected_state: dict = {}
    edited = False  # a token edit since the lesson last set the text
    for index, step in enumerate(lesson.steps):
        if index:
            go(qtbot, window, lessons.next_step)
        assert lessons.index == index
        assert lessons.dock.step_title.text() == step.title
        if "preset" in step.state and "config" not in step.state:
            expected_state.pop("config", None)
        expected_state.update(step.state)
        state = window.state
        if "preset" in expected_state:
            expected = expected_state["config"].name if "config" in expected_state else expected_state["preset"]
            assert state.config.name == expected, step.title
        if "edit" in step.state:
            edit = state.token_edit
            assert edit is not None and (edit.kind, edit.position) == ("replace", step.state["edit"]["position"])
            assert state.tokenizer.decode([state.tokens[edit.position]]) == step.state["edit"]["token"]
        if "text" in step.state:
            edited = False
        if "edit" in step.state:
            edited = True
        if "text" in expected_state:
            # One text: an edit of a token rewrites the text to the edited tokens' decoding.
            expected_text = state.tokenizer.decode(state.tokens) if edited else expected_state["text"]
            assert state.text == expected_text, step.title
            assert state.tokenizer.encode(state.text) == state.tokens, step.title
        if "seed" in expected_state:
            assert state.seed == expected_state["seed"], step.title
        assert window.tabs.tabText(window.tabs.currentIndex()).replace("&&", "&") == step.panel, step.title
        panel = window.panel(step.panel)
        settings = panel.settings()
        for key, value in step.panel_settings.items():
            where = f"{path.name} step {index + 1}: {key}"
            assert key in settings and same(settings[key], value), f"{where} = {settings.get(key)!r}, not {value!r}"
        for name in [step.focus, *step.placeholders()] if step.focus else step.placeholders():
            widget = find_panel_widget(panel, name)
            assert isinstance(widget, QWidget), f"{path.name} step {index + 1}: no widget {name!r}"
            try:  # a view shows its content with its first result
                qtbot.waitUntil(widget.isVisible, timeout=30_000)
            except qtbot.TimeoutError:
                raise AssertionError(f"{path.name} step {index + 1}: {name!r} is hidden") from None
        assert lessons.dock.predict_frame.isVisible() == bool(step.predict)
        if step.reveal:
            assert not lessons.dock.revealed and lessons.dock.reveal_button.isVisible()
            if step.prediction is not None:  # the reveal opens once the prediction is committed or skipped
                assert not lessons.dock.reveal_button.isEnabled()
                qtbot.mouseClick(lessons.dock.prediction.skip_button, Qt.MouseButton.LeftButton)
            qtbot.mouseClick(lessons.dock.reveal_button, Qt.MouseButton.LeftButton)
            assert lessons.dock.revealed and lessons.dock.reveal_text.text()
    assert not lessons.dock.next_button.isEnabled()


def test_the_focus_outline_frames_the_named_widget(qtbot, window):
    lessons = window.lessons
    path = next(p for p in bundled_lesson_paths() if "pre-post-norm" in p.name)
    go(qtbot, window, lambda: lessons.open_lesson(path))
    qtbot.waitUntil(lambda: lessons.outline.isVisible(), timeout=5000)
    assert lessons.outline.target is window.panel("Norms").forward_plot
    target = lessons.outline.target
    assert lessons.outline.geometry().contains(target.mapTo(window, target.rect().center()))


def press(qtbot, window, widget, key) -> str:
    """One clicker key on `widget`: "decided" when it committed or skipped the step's prediction, "revealed" when it
    revealed the step's answer, "stepped" when it changed step."""
    lessons = window.lessons
    if lessons.dock.prediction.pending and key in (Qt.Key.Key_PageDown, Qt.Key.Key_Right, Qt.Key.Key_Space):
        qtbot.keyClick(widget, key)
        return "decided" if not lessons.dock.prediction.pending and not lessons.dock.revealed else "nothing"
    if lessons.dock.reveal_button.isVisible() and not lessons.dock.revealed and key != Qt.Key.Key_PageUp \
            and key != Qt.Key.Key_Left:
        qtbot.keyClick(widget, key)
        return "revealed" if lessons.dock.revealed and not lessons.covers else "nothing"
    with qtbot.waitSignal(lessons.step_shown, timeout=30_000):
        qtbot.keyClick(widget, key)
    return "stepped"


def test_clicker_keys_reveal_then_advance_whatever_has_focus(qtbot, window):
    lessons = window.lessons
    path = next(p for p in bundled_lesson_paths() if "counting" in p.name)
    lesson = load_lesson(path)
    go(qtbot, window, lambda: lessons.open_lesson(path))
    activate(qtbot, window)
    combo = window.panel("Parameters").model_combo  # a control with focus: the lesson still has the keys
    combo.setFocus()
    for key in (Qt.Key.Key_PageDown, Qt.Key.Key_Right, Qt.Key.Key_Space, Qt.Key.Key_PageDown, Qt.Key.Key_Right,
                Qt.Key.Key_Space):
        index, had_question = lessons.index, bool(lesson.steps[lessons.index].reveal) and not lessons.dock.revealed
        asked = lessons.dock.prediction.pending  # a prediction first: the press skips it (nothing was chosen)
        outcome = press(qtbot, window, combo, key)
        expected = "decided" if asked else "revealed" if had_question else "stepped"
        assert outcome == expected and lessons.index == index + (expected == "stepped")
    index = lessons.index
    press(qtbot, window, combo, Qt.Key.Key_PageUp)
    assert lessons.index == index - 1 and not lessons.dock.revealed
    assert lessons.covers or not lesson.steps[index - 1].reveal  # going back covers the answer again
    press(qtbot, window, combo, Qt.Key.Key_Left)
    assert lessons.index == index - 2
    lessons.dock.hide()
    assert not lessons.next_action.isEnabled()  # the keys go back to the panels while the dock is closed
    lessons.dock.show()
    assert lessons.next_action.isEnabled()


def test_a_text_field_keeps_the_keys_typed_in_it(qtbot, window):
    lessons = window.lessons
    path = next(p for p in bundled_lesson_paths() if "order-blind" in p.name)
    go(qtbot, window, lambda: lessons.open_lesson(path))
    field = window.panel("Positions").permutation_edit
    window.panel("Positions").tabs.setCurrentIndex(3)
    activate(qtbot, window)
    field.setFocus()
    qtbot.waitUntil(field.hasFocus, timeout=5000)
    field.setText("2 0 1")
    field.setCursorPosition(0)
    before = field.text()
    for key in (Qt.Key.Key_Right, Qt.Key.Key_Space, Qt.Key.Key_Left):
        qtbot.keyClick(field, key)
    assert lessons.index == 0 and not lessons.dock.revealed
    assert field.text() == before[:1] + " " + before[1:] and field.cursorPosition() == 1


def test_every_declared_part_is_a_widget_of_its_live_panel(window):
    from core.lesson_parts import PANEL_PARTS
    from gui.panels.families import SUB_TABS as FAMILIES_TABS
    from gui.panels.generate.panel import SUB_TABS as GENERATE_TABS
    from gui.panels.parameters.panel import SUBTABS as PARAMETERS_TABS
    from gui.panels.positions.panel import SUB_TABS as POSITIONS_TABS
    from gui.panels.tokens.panel import SUB_TABS as TOKENS_TABS

    assert {panel.title for panel in window.panels} == set(PANEL_PARTS)
    missing = [f"{title}: {name}" for title, declared in PANEL_PARTS.items() for name in declared.parts()
               if not window.lessons._part_widgets(window.panel(title), name)]
    assert not missing
    for title, tabs in (("Tokens & masks", TOKENS_TABS), ("Positions", POSITIONS_TABS),
                        ("Parameters", PARAMETERS_TABS), ("Generate", GENERATE_TABS), ("Families", FAMILIES_TABS)):
        assert set(PANEL_PARTS[title].sub_tabs) - {""} == set(tabs), title
        for key, value in window.panel(title).settings().items():  # what the panel saves, the declaration takes
            setting = PANEL_PARTS[title].settings.get(key)
            assert setting is not None and not setting.problem(value), f"{title}: {key} = {value!r}"


def test_closing_a_lesson_puts_the_lab_back(qtbot, window):
    lessons = window.lessons
    if lessons.lesson is not None:  # an earlier test's lesson: its own "before" would come back
        lessons.close_lesson()
    qtbot.waitUntil(lambda: window.loaded.config == window.state.config and not window.compute.busy, timeout=60_000)
    window.state.set_text("A text typed before the lesson.")
    before = (window.state.config, window.state.text, window.panel("Tokens & masks").settings())
    path = next(p for p in bundled_lesson_paths() if "exercises" in p.name)
    go(qtbot, window, lambda: lessons.open_lesson(path))
    for _ in range(len(lessons.lesson.steps) - 1):
        go(qtbot, window, lessons.next_step)
    assert window.state.config != before[0]
    with qtbot.waitSignal(window.model_loaded, timeout=60_000):
        lessons.dock.close_requested.emit()
    assert lessons.lesson is None and not lessons.dock.isVisible()
    assert (window.state.config, window.state.text, window.panel("Tokens & masks").settings()) == before
    assert window.loaded.config == before[0] and window.loaded.source == "bundled (trained)"


def test_presentation_view_hides_the_chrome_and_widens_the_lesson(qtbot, window):
    lessons = window.lessons
    window.sidebar_dock.show()
    lessons.dock.show()
    before = lessons.dock.text.font().pointSizeF()
    lessons.presentation_action.trigger()
    assert lessons.presentation
    assert not window.sidebar_dock.isVisible() and not window.menuBar().isVisible() and not window.statusBar().isVisible()
    assert lessons.dock.isVisible()
    assert lessons.dock.text.font().pointSizeF() >= before
    qtbot.waitUntil(lambda: lessons.dock.width() >= min(380, window.width() // 3) - 10, timeout=3000)
    window.state.set_font_scale(1.6)
    assert lessons.dock.text.font().pointSizeF() > before * 1.5
    lessons.presentation_action.trigger()
    window.state.set_font_scale(1.0)
    assert not lessons.presentation
    assert window.sidebar_dock.isVisible() and window.menuBar().isVisible() and window.statusBar().isVisible()
    assert lessons.dock.text.font().pointSizeF() == pytest.approx(before)


def one_step_lesson(folder, name: str, title: str, seed: int):
    path = folder / name
    path.write_text(json.dumps({"title": title, "steps": [
        {"title": "one", "text": "Look.", "panel": "Norms", "state": {"seed": seed}}]}), encoding="utf-8")
    return path


def test_a_lesson_is_read_off_the_gui_thread_and_started_when_read(qtbot, window, tmp_path, monkeypatch):
    import threading

    from tests.gui.file_opening import HeldReads, Ticks

    held = HeldReads(monkeypatch)
    lessons = window.lessons
    path = one_step_lesson(tmp_path, "slow.json", "Slow", seed=6)
    held.hold(path.name)
    before, ticks = lessons.lesson, Ticks()
    lessons.open_lesson(path)
    assert window.statusBar().currentMessage() == "opening the lesson slow.json..."
    qtbot.waitUntil(lambda: len(ticks) >= 5, timeout=10_000)  # the event loop runs while the file is held
    assert lessons.lesson is before
    (reader,) = held.threads[path.name]
    assert reader is not threading.main_thread() and reader.name == "read-lesson"
    with qtbot.waitSignal(lessons.lesson_open_ended, timeout=30_000) as ended:
        held.release(path.name)
    assert ended.args == [""] and lessons.lesson.title == "Slow"
    qtbot.waitUntil(lambda: window.state.seed == 6, timeout=30_000)


def test_a_newer_lesson_supersedes_one_still_being_read(qtbot, window, tmp_path, monkeypatch):
    from tests.gui.file_opening import HeldReads

    held = HeldReads(monkeypatch)
    lessons = window.lessons
    older = one_step_lesson(tmp_path, "older.json", "Older", seed=1)
    newer = one_step_lesson(tmp_path, "newer.json", "Newer", seed=2)
    held.hold(older.name)
    started: list[str] = []
    lessons.lesson_started.connect(started.append)
    lessons.open_lesson(older)
    qtbot.waitUntil(lambda: older.name in held.threads, timeout=10_000)
    assert open_lesson(qtbot, window, newer) == ""
    held.release(older.name)
    held.finish(older.name)
    assert lessons.lesson.title == "Newer" and started == ["Newer"]
    lessons.lesson_started.disconnect(started.append)


def test_a_synchronous_lesson_open_returns_the_outcome(qtbot, window, tmp_path):
    lessons = window.lessons
    path = one_step_lesson(tmp_path, "now.json", "Now", seed=3)
    with qtbot.waitSignal(lessons.step_shown, timeout=30_000):
        assert lessons.open_lesson(path, wait=True) is None
        assert lessons.lesson.title == "Now"
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    assert "not valid JSON" in lessons.open_lesson(broken, wait=True)
    assert lessons.lesson.title == "Now"
    window.message_boxes[-1].done(0)


def test_the_lessons_menu_takes_the_titles_from_a_read_off_the_gui_thread(qtbot, tmp_path):
    from gui.main_window import MainWindow

    fresh = MainWindow(settings=QSettings(str(tmp_path / "prefs.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(fresh)
    fresh.remember_preferences = False
    actions = fresh.lessons.bundled_actions
    assert [action.text() for action in actions.values()] == [path.stem for path in actions]  # not read here
    with qtbot.waitSignal(fresh.lessons.titles_read, timeout=10_000):
        pass  # delivered through the event loop, so never before this wait
    assert [action.text().replace("&&", "&") for action in actions.values()] == [
        load_lesson(path).title for path in actions]
    assert [action.statusTip() for action in actions.values()] == [load_lesson(path).description for path in actions]


def test_a_broken_lesson_file_shows_a_message_and_changes_nothing(qtbot, window, tmp_path):
    lessons = window.lessons
    bad = tmp_path / "mine.json"
    bad.write_text(json.dumps({"title": "Mine", "steps": [
        {"title": "fine", "text": "ok", "panel": "Norms"},
        {"title": "fine", "text": "ok"},
        {"title": "bad", "text": "no", "state": {"preset": "gpt5"}},
    ]}), encoding="utf-8")
    config, text, title = window.state.config, window.state.text, lessons.dock.step_title.text()
    current = window.tabs.currentIndex()
    message = open_lesson(qtbot, window, bad)
    assert message == "step 3: 'preset': unknown preset 'gpt5'"
    box = window.message_boxes[-1]
    assert "mine.json" in box.text() and "step 3: 'preset'" in box.text()
    box.close()
    assert (window.state.config, window.state.text, window.tabs.currentIndex()) == (config, text, current)
    assert lessons.dock.step_title.text() == title


def test_an_instructors_own_file_runs_and_undo_reverts_a_step(qtbot, window, tmp_path):
    lessons = window.lessons
    own = tmp_path / "own.json"
    own.write_text(json.dumps({"title": "Own", "steps": [
        {"title": "shapes", "text": "Look.", "panel": "Tensor shapes", "state": {"seed": 5, "text": "abc abc"},
         "panel_settings": {"seq": 12}},
    ]}), encoding="utf-8")
    seed, text = window.state.seed, window.state.text
    go(qtbot, window, lambda: lessons.open_lesson(own))
    assert (window.state.seed, window.state.text) == (5, "abc abc")
    assert window.panel("Tensor shapes").settings()["seq"] == 12
    window.state.undo_stack.undo()  # one step is one undoable edit
    assert (window.state.seed, window.state.text) == (seed, text)


def test_the_lessons_menu_lists_every_bundled_lesson(qtbot, window):
    def menu_texts() -> set[str]:
        return {action.text().replace("&&", "&") for action in window.lessons.menu.actions()}

    titles = {load_lesson(path).title for path in bundled_lesson_paths()}
    qtbot.waitUntil(lambda: titles <= menu_texts(), timeout=10_000)  # read off the GUI thread at start-up
    assert "Open lesson file..." in menu_texts()
    assert window.lessons.presentation_action.shortcut().toString() == "Ctrl+Shift+P"


def test_a_step_can_set_the_theme_and_the_text_size(qtbot, window, tmp_path):
    lessons = window.lessons
    own = tmp_path / "projected.json"
    own.write_text(json.dumps({"title": "Projected", "steps": [
        {"title": "big", "text": "For the back row.", "panel": "Norms", "state": {"theme": "projector", "font_scale": 1.6}},
    ]}), encoding="utf-8")
    try:
        go(qtbot, window, lambda: lessons.open_lesson(own))
        assert (window.state.theme, window.state.font_scale) == ("projector", 1.6)
        assert lessons.dock.text.font().pointSizeF() > lessons.dock.counter.font().pointSizeF() * 1.1
    finally:
        window.state.set_theme("light")
        window.state.set_font_scale(1.0)


def test_placeholders_quote_the_panels_own_numbers(qtbot, window, tmp_path):
    lessons = window.lessons
    own = tmp_path / "quote.json"
    own.write_text(json.dumps({"title": "Quote", "steps": [
        {"title": "count", "text": "Counted: {{total_label}}", "panel": "Parameters",
         "panel_settings": {"model": "gpt2-small", "tab": 0}, "predict": "How many?", "reveal": "The block: {{block_label}}"},
    ]}), encoding="utf-8")
    go(qtbot, window, lambda: lessons.open_lesson(own))
    parameters = window.panel("Parameters")
    # The quote is refreshed when the panel shows the numbers of the step's model.
    qtbot.waitUntil(lambda: "gpt2-small" in lessons.dock.text.text(), timeout=30_000)
    lessons.dock.reveal()
    assert parameters.block_label.text().split(" = ")[0] in lessons.dock.reveal_text.text()


def test_the_command_line_names_a_bundled_lesson_or_a_file(tmp_path, capsys):
    from gui.app import main
    from gui.lesson_launch import LaunchError, lesson_to_launch

    launch = lesson_to_launch("causal-mask", 2, True)
    assert launch.path.name == "01-causal-mask.json" and launch.step == 1 and launch.presentation
    assert lesson_to_launch("01-causal-mask", None, False).step == 0
    own = tmp_path / "own.json"
    own.write_text(json.dumps({"title": "Own", "steps": [{"title": "one", "text": "Look."}]}), encoding="utf-8")
    assert lesson_to_launch(str(own), 1, False).lesson.title == "Own"
    for name, step, presentation, message in (
        ("no-such-lesson", None, False, "no bundled lesson or file called 'no-such-lesson'"),
        (str(own), 2, False, "'Own' has steps 1 to 1, not 2"),
        (None, 3, False, "--step needs --lesson"),
        (None, None, True, "--presentation needs --lesson"),
    ):
        with pytest.raises(LaunchError, match=message.replace("(", r"\(")):
            lesson_to_launch(name, step, presentation)
    # Refused before any window opens, with one line and exit code 2.
    assert main(["--lesson", "no-such-lesson"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "causal-mask" in error
    assert main(["--font-scale", "40"]) == 2
    assert "--font-scale expects a number from 0.5 to 3.0" in capsys.readouterr().err


def test_a_launch_opens_at_its_step_in_presentation_view(qtbot, window):
    from gui.lesson_launch import lesson_to_launch

    lessons = window.lessons
    launch = lesson_to_launch("rope", 3, True)
    try:
        with qtbot.waitSignal(lessons.lesson_open_ended, timeout=30_000):
            launch.start_in(window)
        qtbot.waitUntil(lambda: lessons.index == 2 and lessons.presentation, timeout=30_000)
        assert lessons.lesson.title == launch.lesson.title
        assert not window.menuBar().isVisible()
    finally:
        lessons.set_presentation(False)


REVEAL_STEPS = [(path, index) for path in bundled_lesson_paths()
                for index, step in enumerate(load_lesson(path).steps) if step.reveal]


def same_pixels(first, second) -> bool:
    return first.size() == second.size() and first.toImage() == second.toImage()


@pytest.mark.parametrize(("path", "index"), REVEAL_STEPS, ids=lambda v: v.stem if hasattr(v, "stem") else f"step{v + 1}")
def test_the_answer_is_covered_until_reveal(qtbot, window, path, index):
    from PySide6.QtCore import QPoint, QRect

    from gui.answer_cover import widget_text

    lessons = window.lessons
    step = load_lesson(path).steps[index]
    if lessons.lesson is None or lessons.lesson.source != str(path):
        go(qtbot, window, lambda: lessons.open_lesson(path))
    go(qtbot, window, lambda: lessons.go_to(index))
    panel = window.panel(step.panel)
    named = [(name, widget) for name in step.answer_widgets() for widget in find_panel_widgets(panel, name)]
    assert {name for name, _ in named} == set(step.answer_widgets()), step.answer_widgets()
    answers = [widget for _, widget in named]
    for widget in answers:
        qtbot.waitUntil(widget.isVisible, timeout=30_000)
    # Settled: each view on screen shows its result (an update it scheduled may still be on its way to the worker).
    qtbot.waitUntil(lambda: not window.compute.busy and all(
        view.result is not None and not view.is_stale for view in getattr(panel, "views", []) if view.isVisible()),
        timeout=60_000)
    if step.focus:  # the focus outline is drawn once the step settles: wait for it, then take it away
        qtbot.waitUntil(lessons.outline.isVisible, timeout=30_000)
    lessons.outline.clear()
    compared = 0
    for name, widget in named:
        cover = lessons.cover_of(widget)
        assert cover is not None, f"{path.name} step {index + 1}: {name!r} is not covered before Reveal"
        assert cover.geometry() == widget.rect()
        # What the window shows of the widget is the cover alone: none of its own text or drawing.
        visible = cover.visibleRegion().boundingRect()  # the part on screen (a wide panel scrolls)
        if visible.isEmpty():
            continue  # nothing of it on screen (a collapsed splitter pane): it shows nothing either
        compared += 1
        region = QRect(cover.mapTo(window, visible.topLeft()), visible.size())
        ancestor = widget  # its content, and the viewports it scrolls in: scroll bars carry no answer
        while ancestor is not None:
            if isinstance(ancestor, QAbstractScrollArea):
                port = ancestor.viewport()
                region = region.intersected(QRect(port.mapTo(window, QPoint(0, 0)), port.size()))
            ancestor = ancestor.parentWidget()
        visible = QRect(cover.mapFrom(window, region.topLeft()), region.size())
        try:  # a badge or a readout may still be fading out; the widget's own content never shows
            qtbot.waitUntil(lambda c=cover, r=region, v=visible: same_pixels(window.grab(r), c.grab(v)), timeout=3000)
        except qtbot.TimeoutError:
            raise AssertionError(f"{path.name} step {index + 1}: {name!r} shows through its cover") from None
    assert compared, f"{path.name} step {index + 1}: none of the answer is on screen"
    assert not lessons.dock.revealed

    if lessons.dock.prediction.pending:
        qtbot.mouseClick(lessons.dock.prediction.skip_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(lessons.dock.reveal_button, Qt.MouseButton.LeftButton)
    assert lessons.dock.revealed and not lessons.covers
    for name in PLACEHOLDER.findall(step.reveal):
        widget = find_panel_widget(panel, name)
        quoted = widget_text(widget)
        assert quoted and quoted in " ".join(lessons.dock.reveal_text.text().split()) or quoted in widget_text(lessons.dock.reveal_text)
        assert lessons.cover_of(widget) is None


def test_a_focus_left_a_sliver_by_an_earlier_scroll_is_brought_into_view(qtbot):
    from PySide6.QtWidgets import QHBoxLayout, QScrollArea, QWidget

    from gui.answer_cover import SLIVER, bring_into_view, shown_rect

    area = QScrollArea()
    qtbot.addWidget(area)
    content = QWidget()
    row = QHBoxLayout(content)
    target, other = QWidget(), QWidget()
    target.setFixedSize(300, 100)
    other.setFixedSize(900, 100)
    row.addWidget(target)
    row.addWidget(other)
    area.setWidget(content)
    area.resize(400, 200)
    area.show()
    qtbot.waitExposed(area)
    area.horizontalScrollBar().setValue(target.width() - 20)  # 20 px of the target left in view
    assert 0 < shown_rect(target).width() < SLIVER * target.width()
    bring_into_view(target)
    assert shown_rect(target).width() == target.width()
    area.horizontalScrollBar().setValue(150)  # half in view: left where it is
    bring_into_view(target)
    assert area.horizontalScrollBar().value() == 150


def test_the_focus_outline_follows_its_widget_when_the_layout_moves_it(qtbot):
    from PySide6.QtWidgets import QHBoxLayout, QWidget

    from gui.answer_cover import FocusOutline

    host = QWidget()
    qtbot.addWidget(host)
    row = QHBoxLayout(host)
    before, target = QWidget(), QWidget()
    before.setFixedWidth(50)
    target.setFixedSize(120, 80)
    row.addWidget(before)
    row.addWidget(target)
    host.resize(600, 200)
    host.show()
    qtbot.waitExposed(host)
    outline = FocusOutline(host)
    outline.point_at(target)
    assert outline.geometry().contains(target.geometry())
    before.setFixedWidth(300)  # a neighbour grows (its first result arrives): the target moves right
    qtbot.waitUntil(lambda: outline.geometry().contains(target.geometry()), timeout=5000)
    outline.clear()
    assert not outline.isVisible()


def test_the_window_refuses_a_typo_with_the_check_lessons_lines(qtbot, window, tmp_path):
    from core.lessons import lesson_problems

    path = tmp_path / "typo.json"
    path.write_text(json.dumps({"title": "Typo", "steps": [
        {"title": "a", "text": "b", "panel": "Parameters", "focus": "block_lable",
         "panel_settings": {"modle": "gpt2-small"}}]}), encoding="utf-8")
    title = lessons_title = window.lessons.dock.step_title.text()
    message = window.lessons.open_lesson(path, wait=True)
    assert message is not None and message.splitlines() == lesson_problems(path)
    assert "'block_lable'" in message and "'modle'" in message
    assert window.lessons.dock.step_title.text() == title == lessons_title
    for box in window.message_boxes:
        box.close()


def test_every_widget_that_can_show_a_figure_is_a_declared_part(qtbot, window):
    """What covers by default rest on: on every sub-tab, each visible label with a digit, table and plot lies in a
    part the panel declares (a result, covered until Reveal, or a control, the step's set-up)."""
    import re

    from PySide6.QtWidgets import QAbstractItemView, QGraphicsView, QLabel, QTabWidget

    from core.lesson_parts import PANEL_PARTS
    from gui.answer_cover import widget_text

    if window.lessons.lesson is not None:
        window.lessons.close_lesson()
    undeclared = set()
    for title, declared in PANEL_PARTS.items():
        panel = window.panel(title)
        window.tabs.setCurrentWidget(panel)
        parts = [w for name in declared.parts() if name != "status_model" for w in find_panel_widgets(panel, name)]
        tab_sets = [tabs for tabs in panel.findChildren(QTabWidget) if tabs.count() > 1]
        pages = [(tabs, index) for tabs in tab_sets for index in range(tabs.count())] or [(None, 0)]
        for tabs, index in pages:
            if tabs is not None:
                tabs.setCurrentIndex(index)
            qtbot.waitUntil(lambda: not window.compute.busy, timeout=60_000)
            for widget in panel.findChildren(QWidget):
                # A view's message stands in place of its result (a refusal, "computing"): it shows no figure of it.
                figure = widget.objectName() != "view-message" and (isinstance(widget, (QAbstractItemView, QGraphicsView)) or (
                    isinstance(widget, QLabel) and re.search(r"\d", widget_text(widget))))
                if figure and widget.isVisible() and not any(p is widget or p.isAncestorOf(widget) for p in parts):
                    undeclared.add(f"{title}: {type(widget).__name__} {widget.objectName()!r} "
                                   f"{widget_text(widget)[:60]!r}")
    assert not undeclared, "\n".join(sorted(undeclared))
