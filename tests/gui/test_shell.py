"""pytest-qt drives the real main window: presets, invalid fields, the shapes panel, export, sessions."""

from __future__ import annotations

import json
import logging

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QKeySequence
from PySide6.QtWidgets import QApplication, QLabel, QLineEdit

from core.presets import get_preset
from gui import theme
from gui.panels import PANEL_CLASSES
from gui.panels.shapes import ShapesPanel
from tests.gui.file_opening import open_session


def field_editor(window, name: str):
    return window.sidebar.form.editors[name]


def edit_line(qtbot, editor: QLineEdit, text: str) -> None:
    editor.setText(text)
    editor.editingFinished.emit()


def shapes_panel(window) -> ShapesPanel:
    return window.panel(ShapesPanel.title)


def wait_for_trace(qtbot, panel: ShapesPanel) -> None:
    """Until the trace of the panel's current inputs is on screen."""
    qtbot.waitUntil(lambda: panel.shapes.result is not None and not panel.shapes.is_stale, timeout=30_000)


def test_window_shows_panels_menus_and_status(qtbot, window):
    assert window.windowTitle().startswith("Transformer Explorer")
    assert [type(p) for p in window.panels] == [ShapesPanel]
    assert ShapesPanel in PANEL_CLASSES
    assert window.device_label.text() == "device: cpu"
    assert "tiny-gpt" in window.model_label.text() and "parameters" in window.model_label.text()
    menus = [action.text().replace("&", "") for action in window.menuBar().actions()]
    assert menus == ["File", "Edit", "View", "Model", "Lessons", "Help"]
    shortcuts = {action.shortcut().toString() for action in window.actions()}
    assert {"Ctrl+1", "F11", "Ctrl+=", "Ctrl+-", "Ctrl+0", "Ctrl+E", "Ctrl+O", "Ctrl+S"} <= shortcuts
    assert window.state.model is not None and window.state.tokens
    # Each field's doc comment becomes its tooltip, shortly after the window is on screen.
    qtbot.waitUntil(lambda: "residual stream" in field_editor(window, "d_model").toolTip(), timeout=5000)


def test_loading_a_preset_rebuilds_the_model(qtbot, window):
    old_model = window.state.model
    combo = window.sidebar.preset_combo
    with qtbot.waitSignal(window.model_loaded, timeout=30_000):
        combo.setCurrentText("tiny-llama")
        combo.activated.emit(combo.currentIndex())
    assert window.state.config == get_preset("tiny-llama")
    assert window.state.model is not old_model
    assert window.state.model.config.name == "tiny-llama"
    assert "tiny-llama" in window.model_label.text()
    assert field_editor(window, "n_kv_heads").text() == "2"


def test_an_invalid_field_shows_the_message_beside_it_and_keeps_the_model(qtbot, window):
    config, model = window.state.config, window.state.model
    heads = field_editor(window, "n_heads")
    edit_line(qtbot, heads, "5")
    error = window.sidebar.form.error_labels["n_heads"]
    assert not error.isHidden()
    assert "not divisible by n_heads 5" in error.text()
    assert window.state.config is config and window.state.model is model

    edit_line(qtbot, heads, "four")
    assert "expected a whole number" in error.text()

    edit_line(qtbot, heads, "4")
    assert error.isHidden()
    assert window.state.config is config


def test_a_valid_edit_renames_the_preset_and_can_be_undone(qtbot, window):
    with qtbot.waitSignal(window.model_loaded, timeout=30_000):
        edit_line(qtbot, field_editor(window, "n_layers"), "2")
    assert window.state.config.n_layers == 2
    assert window.state.config.name == "tiny-gpt (edited)"
    assert window.sidebar.preset_combo.currentText() == "(edited)"
    window.state.undo_stack.undo()
    assert window.state.config == get_preset("tiny-gpt")
    assert field_editor(window, "n_layers").text() == "4"


def test_the_shapes_panel_traces_the_walk_through(qtbot, window):
    panel = shapes_panel(window)
    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        panel.batch_spin.setValue(2)
        panel.seq_spin.setValue(64)
    rows = {panel.table.item(r, 0).text(): panel.table.item(r, 1).text() for r in range(panel.table.rowCount())}
    assert rows["token ids"] == "(2, 64)"
    assert rows["Q per head"] == "(2, 4, 64, 32)"
    assert rows["attention weights"] == "(2, 4, 64, 64)"
    assert rows["FFN hidden"] == "(2, 64, 512)"
    assert rows["logits"] == "(2, 64, 65)"
    assert "attention matrix" in panel.summary.text()
    assert panel.trace.attention_matrix_bytes == 2 * 4 * 64 * 64 * 4

    with qtbot.waitSignal(panel.error_shown, timeout=5000) as refused:
        panel.heads_spin.setValue(5)
    assert "divisible" in refused.args[0] and panel.shapes.showing_message
    assert "divisible" in panel.shapes.message.text()
    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        panel.heads_spin.setValue(8)
    assert panel.trace.row("Q per head").shape == (2, 8, 64, 16)
    assert window.state.config.n_heads == 4  # a what-if in the panel leaves the model alone


@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_export_the_panel_and_a_plot(qtbot, window, tmp_path, suffix):
    panel = shapes_panel(window)
    wait_for_trace(qtbot, panel)
    targets = dict(panel.export_targets())
    for label in (panel.title, "Growth with T (plot)"):
        path = tmp_path / f"{label.split()[0]}.{suffix}"
        assert window.export_target(targets[label], path, 800, 500) == path
        data = path.read_bytes()
        if suffix == "png":
            assert data.startswith(b"\x89PNG")
            image = QImage(str(path))
            assert (image.width(), image.height()) == (800, 500)
        else:
            assert b"<svg" in data[:2000]
    exported = [p for p in tmp_path.iterdir() if p.name != "prefs.ini"]  # the window's own settings file
    assert sorted(p.suffix for p in exported) == [f".{suffix}"] * 2  # no temporary files left


def test_export_to_an_unknown_format_says_so(window, tmp_path):
    assert window.export_target(window.current_panel(), tmp_path / "slide.jpg") is None
    assert "png or .svg" in window.message_boxes[-1].text()


def test_save_and_reopen_a_session(qtbot, window, tmp_path):
    panel = shapes_panel(window)
    window.state.set_seed(11)
    window.state.set_text("Hello there")
    panel.seq_spin.setValue(32)
    path = tmp_path / "lab.json"
    assert window.save_session(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == "transformer-explorer-session" and data["seed"] == 11
    assert data["panels"][panel.title]["seq"] == 32
    assert [p.name for p in tmp_path.iterdir()] == ["lab.json"]

    with qtbot.waitSignal(window.model_loaded, timeout=30_000):
        window.state.set_config(get_preset("tiny-moe"))
    window.state.set_seed(0)
    window.state.set_text("other")
    panel.seq_spin.setValue(16)

    with qtbot.waitSignal(window.model_loaded, timeout=30_000):
        assert open_session(qtbot, window, path) == ""
    assert window.state.config == get_preset("tiny-gpt")
    assert window.state.seed == 11
    assert window.state.text == "Hello there"
    assert window.state.tokens == data["tokens"]
    assert panel.seq_spin.value() == 32
    window.state.undo_stack.undo()  # opening a session is one undoable step
    assert window.state.config.name == "tiny-moe"


@pytest.mark.parametrize(
    "content, expected",
    [
        ("{ not json", "not valid JSON"),
        ('{"hello": "world"}', "not a Transformer Explorer session"),
        ('{"format": "transformer-explorer-session", "version": 1, "config": {"d_model": 65, "n_heads": 4}}', "n_heads"),
        ('{"format": "transformer-explorer-session", "version": 1, "config": {}, "tokens": [1, 999]}', "token id 999"),
        ('{"format": "transformer-explorer-session", "version": 9, "config": {}}', "newer version"),
    ],
)
def test_a_corrupt_session_gets_a_message_and_changes_nothing(qtbot, window, tmp_path, content, expected):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    before = (window.state.config, window.state.seed, window.state.text, window.state.model)
    message = open_session(qtbot, window, path)
    assert message and expected in message
    assert (window.state.config, window.state.seed, window.state.text, window.state.model) == before
    assert window.message_boxes[-1].isVisible()
    assert expected in window.message_boxes[-1].text()


def test_binary_and_missing_session_files(qtbot, window, tmp_path):
    binary = tmp_path / "weights.json"
    binary.write_bytes(b"\x89PNG\xff\xfe\x00")
    assert "not a text file" in open_session(qtbot, window, binary)
    assert "does not exist" in open_session(qtbot, window, tmp_path / "nope.json")


def test_theme_and_font_scale_change_at_run_time(qtbot, window):
    panel = shapes_panel(window)
    wait_for_trace(qtbot, panel)
    app = QApplication.instance()
    base = app.font().pointSizeF()
    zoom_in = next(a for a in window.actions() if a.shortcut() == QKeySequence("Ctrl+="))
    zoom_in.trigger()
    assert window.state.font_scale == pytest.approx(1.1)
    assert app.font().pointSizeF() == pytest.approx(base * 1.1, rel=0.02)
    tick_font = panel.growth_plot.getAxis("bottom").style["tickFont"]
    assert tick_font.pointSizeF() == pytest.approx(theme.font(0.9).pointSizeF())
    next(a for a in window.actions() if a.shortcut() == QKeySequence("Ctrl+0")).trigger()
    assert window.state.font_scale == 1.0

    window.theme_actions["dark"].trigger()
    assert theme.current().name == "dark"
    assert app.palette().window().color().name() == theme.THEMES["dark"].window
    assert panel.growth_plot.backgroundBrush().color().name() == theme.THEMES["dark"].base
    window.theme_actions["projector"].trigger()
    assert panel.attention_curve.opts["pen"].widthF() == theme.THEMES["projector"].line_width
    assert theme.colormap().name == "cividis"
    window.theme_actions["light"].trigger()
    assert theme.colormap().name == "viridis"


def test_preferences_persist_in_qsettings(qtbot, window, settings):
    window.state.set_theme("dark")
    window.state.set_font_scale(1.25)
    window.close()
    assert settings.value("view/theme") == "dark"
    assert float(settings.value("view/font_scale")) == 1.25
    from gui.main_window import MainWindow

    again = MainWindow(settings=settings)
    qtbot.addWidget(again)
    assert again.state.theme == "dark" and again.state.font_scale == 1.25
    again.state.set_theme("light")
    again.close()


def test_full_screen_toggles(qtbot, window):
    window.toggle_full_screen()
    qtbot.waitUntil(window.isFullScreen, timeout=2000)
    window.toggle_full_screen()
    qtbot.waitUntil(lambda: not window.isFullScreen(), timeout=2000)


def test_about_lists_versions(window):
    box = window.show_about()
    text = box.text()
    for name in ("Transformer Explorer", "torch", "Qt", "device", "cpu"):
        assert name in text
    box.close()


def test_device_menu_switches_device(qtbot, window):
    assert "cpu" in window.device_actions
    window.device_actions["cpu"].trigger()
    assert window.state.device == "cpu"


def test_an_uncaught_error_is_logged_and_shown_with_copyable_details(qtbot, window, tmp_path):
    from gui.errors import ErrorReporter, setup_logging

    log_path = setup_logging(tmp_path)
    reporter = ErrorReporter(window)
    try:
        raise RuntimeError("the heatmap had no data")
    except RuntimeError as error:
        reporter.handle(type(error), error, error.__traceback__)
    qtbot.waitUntil(lambda: bool(reporter.dialogs), timeout=2000)
    dialog = reporter.dialogs[-1]
    assert dialog.isVisible()
    texts = " ".join(label.text() for label in dialog.findChildren(QLabel))
    assert "RuntimeError: the heatmap had no data" in texts
    assert "Traceback" not in texts
    dialog.copy_button.click()
    assert "Traceback" in QApplication.clipboard().text()
    for handler in logging.getLogger("transformer_explorer").handlers:
        handler.flush()
    assert "the heatmap had no data" in log_path.read_text(encoding="utf-8")
    dialog.close()
    logger = logging.getLogger("transformer_explorer")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()


def test_sidebar_text_and_seed_edit_the_state(qtbot, window):
    window.sidebar.text_edit.setText("abc")
    window.sidebar.text_edit.editingFinished.emit()
    assert window.state.text == "abc" and len(window.state.tokens) == 3
    with qtbot.waitSignal(window.model_loaded, timeout=30_000):
        window.sidebar.seed_spin.setValue(5)
    assert window.state.seed == 5


def test_shortcut_selects_a_panel(qtbot, window):
    action = next(a for a in window.actions() if a.shortcut() == QKeySequence("Ctrl+1"))
    action.trigger()
    assert window.current_panel() is window.panels[0]
    assert window.tabs.tabText(0) == window.panels[0].title
    assert Qt.Key.Key_F11  # the full-screen key is bound (see the menu test)


def test_a_missing_accelerator_falls_back_to_the_cpu_with_a_message(qtbot, window):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with qtbot.waitSignal(window.model_loaded, timeout=30_000):
        window.state.set_device("cuda")
    assert window.state.device == "cpu"
    assert window.loaded.device == "cpu"
    assert "CUDA is not available" in window.statusBar().currentMessage()
    assert window.device_label.text() == "device: cpu"


def test_the_attention_only_box_builds_a_model_without_ffns(qtbot, window):
    check = field_editor(window, "attention_only")
    labels = window.sidebar.form.labels
    names = list(labels)
    assert names.index("attention_only") == names.index("architecture") + 1  # beside the other architecture choices
    panel = shapes_panel(window)
    with qtbot.waitSignal(window.model_loaded, timeout=30_000):
        check.setChecked(True)
    config, model = window.state.config, window.state.model
    assert config.attention_only and config.name == "tiny-gpt (edited)"
    assert not any(".ffn." in name for name, _ in model.named_parameters())
    wait_for_trace(qtbot, panel)
    rows = [panel.table.item(r, 0).text() for r in range(panel.table.rowCount())]
    assert "FFN hidden" not in rows and rows[rows.index("residual after attention") + 1] == "block output"
    with qtbot.waitSignal(window.model_loaded, timeout=30_000):
        check.setChecked(False)
    assert window.state.config == get_preset("tiny-gpt").replace(name="tiny-gpt (edited)")

    combo = window.sidebar.preset_combo
    with qtbot.waitSignal(window.model_loaded, timeout=30_000):
        combo.setCurrentText("tiny-moe")
        combo.activated.emit(combo.currentIndex())
    check.setChecked(True)
    error = window.sidebar.form.error_labels["attention_only"]
    assert not error.isHidden() and "no experts either" in error.text()
    assert window.state.config == get_preset("tiny-moe")


def test_a_model_built_for_a_config_undone_meanwhile_is_not_installed(qtbot, window, monkeypatch):
    import threading

    import gui.main_window

    state, kept = window.state, window.loaded
    gate = threading.Event()
    built = gui.main_window.load_model

    def slow_load(*args):
        gate.wait(30)
        return built(*args)

    monkeypatch.setattr(gui.main_window, "load_model", slow_load)
    state.set_config(get_preset("tiny-llama"))
    qtbot.waitUntil(lambda: window.compute.busy_with("model"), timeout=5000)
    state.undo_stack.undo()  # back to the loaded tiny-gpt while tiny-llama builds
    assert state.config == kept.config
    gate.set()
    qtbot.waitUntil(lambda: not window.compute.busy, timeout=30_000)
    QApplication.processEvents()  # the build's result, queued to the window, is handled now
    assert window.loaded is kept and state.model is kept.model and state.config == kept.config
