"""The main window: panels as tabs, the model sidebar as a dock, menus, and a status bar that shows
the device, the model and what the compute worker is doing."""

from __future__ import annotations

import html
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray, QSettings, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QScrollArea,
    QToolButton,
    QWidget,
)

from core.allocator import map_large_blocks
from core.choices import MASK_MODE_LABELS
from core.params import parameter_breakdown
from gui import APP_NAME, theme
from gui.compute import ComputeController
from gui.file_reader import FileReader
from gui.gui_thread_gc import freeze_long_lived
from gui.main_window_menus import ExportDialog, build_menus
from gui.model_loader import LoadedModel, TorchRuntime, load_model, load_torch, versions
from gui.state import LabState
from gui.widgets.config_form import ModelSidebar
from gui.widgets.page_tabs import PageTabs, ShorteningTabBar
from gui.window_models import ModelFiles
from gui.window_sessions import SESSION_FILTER, SessionFiles

if TYPE_CHECKING:
    from gui.panels import Panel

log = logging.getLogger("transformer_explorer.window")

QWIDGETSIZE_MAX = (1 << 24) - 1  # Qt's "no maximum" for a widget's size
FIRST_LAUNCH_SHARE = 0.92  # of the screen's free area: the window fits with its frame and shows the desktop around it
MAX_MESSAGE_CHARS = 2000  # a message box's text: a few sentences and paths


def _count(n: int) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def _load_torch_and_kernels(device: str | None, threads: int, kernels_asked: str | None,
                            precision_asked: str | None) -> TorchRuntime:
    """On the worker, before any panel computes: torch, then the linear layers' kernel path and precision.

    The path is measured at the worker's own thread count (once per machine, then read from the cache);
    a precision the device cannot run falls back to fp32 with a message, as a missing device does.
    """
    runtime = load_torch(device, threads)
    from core import kernels

    kernels.configure(kernels_asked, precision_asked, runtime.device.split(":", 1)[0], strict=False)
    return runtime


class MainWindow(SessionFiles, ModelFiles, QMainWindow):
    """Builds one panel per entry of PANEL_CLASSES around one LabState and one ComputeController."""

    torch_loaded = Signal()
    torch_failed = Signal(str)
    model_loaded = Signal()
    session_open_ended = Signal(str)  # an open_session ended: "" when the session was applied, else the message shown

    def __init__(
        self,
        state: LabState | None = None,
        compute: ComputeController | None = None,
        requested_device: str | None = None,
        settings: QSettings | None = None,
        panel_classes: list[type[Panel]] | None = None,
        requested_kernels: str | None = None,
        requested_precision: str | None = None,
    ) -> None:
        super().__init__()
        self.panel_classes = panel_classes  # None: gui.panels.PANEL_CLASSES
        self.setObjectName("main-window")
        self.setWindowTitle(APP_NAME)
        self.state = state or LabState(self)
        map_large_blocks()  # a freed activation's memory goes back to the system, not into a heap hole
        self.compute = compute or ComputeController(self, torch_threads=max(1, (os.cpu_count() or 2) - 1))
        self.settings_store = settings or QSettings()
        self.requested_device = requested_device
        self.requested_kernels = requested_kernels  # None: TRANSFORMER_EXPLORER_KERNELS, else measured (auto)
        self.requested_precision = requested_precision  # None: fp32
        self.runtime: TorchRuntime | None = None
        self.loaded: LoadedModel | None = None
        self.session_path: Path | None = None
        self.file_reader = FileReader(self)  # sessions and lessons are read and checked off the GUI thread
        self.message_boxes: list[QMessageBox] = []
        self.remember_preferences = True  # save layout, theme and text size to QSettings on close
        # Before any panel connects, so the application theme is set before panels re-style.
        self.state.theme_changed.connect(self._apply_theme)
        self.state.font_scale_changed.connect(self._apply_theme)
        for field in ("config", "seed", "device"):
            self.state.signal(field).connect(self._on_model_inputs_changed)

        self.tabs = PageTabs()  # sized by the panel on show: one wide panel must not make the others scroll
        # Ten tabs beside a lesson, or in projector text, are wider than the room: the names of the tabs not shown
        # are shortened with "..." (each tab's tooltip has it whole) so every tab stays in view, not behind arrows.
        self.tabs.setTabBar(ShorteningTabBar())
        self.tabs.setObjectName("panel-tabs")
        self.tabs.setDocumentMode(True)
        self.panels: list[Panel] = []
        # Panels (and pyqtgraph behind them) are built once the window is on screen; see build_panels.
        self._placeholder = QLabel("Loading the panels...")
        self._placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.tabs.addTab(self._placeholder, "Transformer Explorer")
        # A panel wider or taller than the room the docks leave scrolls here instead of growing the window.
        self.central_scroll = QScrollArea()
        self.central_scroll.setObjectName("panel-scroll")
        self.central_scroll.setWidgetResizable(True)
        self.central_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.central_scroll.setWidget(self.tabs)
        self.setCentralWidget(self.central_scroll)
        # Looks given for one run (the command line, a lesson step): shown, never saved as preferences.
        self._run_only: dict[str, Any] = {}

        self.sidebar = ModelSidebar(self.state)
        self.sidebar_dock = QDockWidget("Model", self)
        self.sidebar_dock.setObjectName("model-dock")
        self.sidebar_dock.setWidget(self.sidebar)
        self.sidebar_dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        # A plain label as the title bar: the style's own title font ignores the run-time text scale.
        self.sidebar_title = QLabel("Model")
        self.sidebar_title.setObjectName("model-dock-title")
        self.sidebar_title.setContentsMargins(8, 4, 8, 2)
        self.sidebar_dock.setTitleBarWidget(self.sidebar_title)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.sidebar_dock)

        self._model_timer = QTimer(self)
        self._model_timer.setSingleShot(True)
        self._model_timer.setInterval(0)
        self._model_timer.timeout.connect(self.request_model)

        self._build_status_bar()
        build_menus(self)
        self.compute.busy_changed.connect(self._on_busy_changed)
        self.compute.progress.connect(self._on_progress)
        # A model that cannot be built says so whole in a message box (_on_model_failed), not cut off down here.
        self.compute.error.connect(lambda message: None if message.startswith("building ")
                                   else self.statusBar().showMessage(message, 10000))
        self._restore_preferences()
        self._update_model_label()

    # ---- construction --------------------------------------------------------------------------
    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        self.device_label = QLabel("device: (loading torch)")
        self.device_label.setObjectName("status-device")
        self.model_label = QLabel("")
        self.model_label.setObjectName("status-model")
        self.model_label.setTextFormat(Qt.TextFormat.PlainText)  # it quotes a config's name and a folder's
        self.busy_label = QLabel("")
        self.busy_label.setObjectName("status-busy")
        self.kernels_label = QLabel("")
        self.kernels_label.setObjectName("status-kernels")
        for label in (self.device_label, self.model_label, self.busy_label, self.kernels_label):  # they quote config and file names
            label.setTextFormat(Qt.TextFormat.PlainText)
        self.progress_bar = QProgressBar()
        self.progress_bar.setMaximumWidth(140)
        self.progress_bar.setTextVisible(False)
        self.progress_bar.hide()
        self.cancel_button = QToolButton()
        self.cancel_button.setText("Cancel")
        self.cancel_button.setToolTip("Cancel the running computation (Esc)")
        self.cancel_button.clicked.connect(lambda: self.compute.cancel())
        self.cancel_button.hide()
        for widget in (self.busy_label, self.progress_bar, self.cancel_button, self.model_label, self.kernels_label,
                       self.device_label):
            bar.addPermanentWidget(widget)

    def _action(self, menu, text: str, slot, shortcut: QKeySequence | str | list | None = None, tip: str = "") -> QAction:
        action = QAction(text, self)
        if isinstance(shortcut, list):
            action.setShortcuts(shortcut)
        elif shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setStatusTip(tip)
        action.triggered.connect(slot)
        menu.addAction(action)
        self.addAction(action)  # shortcuts also work in full screen without a menu bar
        return action
    # ---- start-up ------------------------------------------------------------------------------
    def start_loading(self) -> None:
        """Import torch on the worker, then build the panels here while it loads; the window already shows."""
        threads = max(1, (os.cpu_count() or 2) - 1)
        requested, kernels, precision = self.requested_device, self.requested_kernels, self.requested_precision
        self.compute.submit("startup", lambda: _load_torch_and_kernels(requested, threads, kernels, precision),
                            self._on_torch_loaded, "loading torch", on_error=self._on_torch_failed, cancellable=False)
        self.build_panels()

    def build_panels(self) -> None:
        """Create one panel per entry of PANEL_CLASSES (once); they compute when torch is ready."""
        if self.panels:
            return
        from gui.panels import PANEL_CLASSES

        theme.configure_pyqtgraph()
        self.tabs.removeTab(self.tabs.indexOf(self._placeholder))
        self._placeholder.deleteLater()
        for index, panel_class in enumerate(self.panel_classes or PANEL_CLASSES):
            try:
                panel = panel_class(self.state, self.compute)
            except Exception as error:
                # One broken panel must not take the window down: it gets a tab that says so.
                title = getattr(panel_class, "title", panel_class.__name__)
                notice = QLabel(f"The {title} panel could not be built: {type(error).__name__}: {error}")
                notice.setTextFormat(Qt.TextFormat.PlainText)
                notice.setWordWrap(True)
                notice.setAlignment(Qt.AlignmentFlag.AlignCenter)
                self.tabs.addTab(notice, title.replace("&", "&&"))
                sys.excepthook(type(error), error, error.__traceback__)
                continue
            self.panels.append(panel)
            model_ready = getattr(panel, "model_ready", None)  # a panel that makes models (Train)
            if model_ready is not None:
                model_ready.connect(self.adopt_model)
            navigate = getattr(panel, "navigate_requested", None)  # a panel that points at another (Architecture)
            if navigate is not None:
                navigate.connect(self.show_panel)
            self.tabs.addTab(panel, panel.title.replace("&", "&&"))  # "&" would be read as a mnemonic
            shortcut = panel.shortcut or (f"Ctrl+{index + 1}" if index < 9 else None)
            action = self._action(self.panels_menu, panel.title.replace("&", "&&"), lambda _=False, p=panel: self.tabs.setCurrentWidget(p), shortcut)
            keys = f" ({action.shortcut().toString()})" if shortcut else ""
            self.tabs.setTabToolTip(self.tabs.indexOf(panel), panel.title + keys)
        try:
            self.tabs.setCurrentIndex(int(self.settings_store.value("view/panel", 0)))
        except (TypeError, ValueError):
            pass
        if self.state.torch_ready:
            for panel in self.panels:
                panel.schedule_refresh()

    def _on_torch_loaded(self, runtime: TorchRuntime) -> None:
        freeze_long_lived()  # torch's modules and the window's widgets: before the first model exists
        self.runtime = runtime
        for name in runtime.devices:
            action = QAction(name, self, checkable=True)
            action.triggered.connect(lambda _=False, n=name: self.state.set_device(n))
            self.device_group.addAction(action)
            self.device_menu.addAction(action)
            self.device_actions[name] = action
        self.state.set_tokenizer(runtime.tokenizer)
        self.state.set("device", runtime.device, undoable=False)
        if runtime.device_message:
            self.statusBar().showMessage(runtime.device_message, 10000)
        from core import kernels

        if kernels.current_precision().message:
            self.statusBar().showMessage(kernels.current_precision().message, 10000)
        self._update_device_label()
        self.state.set_torch_ready(True)
        self.torch_loaded.emit()
        self._model_timer.start()

    def _on_torch_failed(self, message: str) -> None:
        self.device_label.setText("torch failed to load")
        self._show_message("torch could not be loaded", f"{message}\n\nThe panels need torch; check the installation.")
        self.torch_failed.emit(message)

    def request_model(self, force: bool = False) -> None:
        """Build the model for the current config, seed and device on the worker (unless it is already loaded)."""
        if not self.state.torch_ready:
            return
        config, seed, device = self.state.config, self.state.seed, self.state.device
        loaded = self.loaded
        if not force and loaded is not None and (loaded.config, loaded.seed, loaded.device) == (config, seed, device):
            return
        self.compute.submit("model", lambda: load_model(config, seed, device),
                            lambda built: self._on_model_built(built, (config, seed, device)),
                            f"building {config.name}", cancellable=False,
                            on_error=lambda message: self._on_model_failed(message, (config, seed, device)))

    def _on_model_built(self, built: LoadedModel, requested: tuple) -> None:
        """A requested model arrives: adopted only if the sidebar still asks for it.

        The sidebar may have gone back to the loaded model's config while this one built (an undo): then no
        newer request was made, and adopting this one would put a model beside a config it is not.
        """
        if requested != (self.state.config, self.state.seed, self.state.device):
            self.compute.dispose(built)
            return
        self._on_model_loaded(built)

    def _on_model_loaded(self, loaded: LoadedModel) -> None:
        previous = (self.loaded, self.state.model)
        self.loaded = loaded
        if loaded.message:
            self.statusBar().showMessage(loaded.message, 10000)
        if loaded.tokenizer is not None and loaded.tokenizer.vocab_size == loaded.config.vocab_size:
            self.state.set_tokenizer(loaded.tokenizer)
        elif self.runtime is not None and self.state.tokenizer is not self.runtime.tokenizer:
            # A model without a tokenizer of its own (a random preset, a Marian folder) reads the text through the
            # lab's characters, never through the previous model's vocabulary (BERT's pieces are not its ids).
            self.state.set_tokenizer(self.runtime.tokenizer)
        # A device that is not present falls back to the CPU; the state says where the model really is.
        self.state.set("device", loaded.device, undoable=False)
        self.state.set_model(loaded.model)
        self.compute.dispose(*previous)
        del previous
        self._update_model_label()
        self.model_loaded.emit()

    def adopt_model(self, loaded: LoadedModel) -> None:
        """A model made outside request_model (opened from a folder, trained in a panel) becomes the lab's."""
        self._on_model_loaded(loaded)
        # After self.loaded is set, so the request_model these changes trigger finds the model built. The seed
        # too: one changed while a run trained must not make the window rebuild random weights over the run's.
        self.state.set("config", loaded.config, undoable=False)
        self.state.set("seed", loaded.seed, undoable=False)
    def _on_model_failed(self, message: str, requested: tuple | None = None) -> None:
        """A config, seed and device the lab cannot build a model for: refused whole; a loaded model stays.

        The loaded model may be one just trained and not saved, so it is never thrown away for a
        config that cannot replace it; the sidebar goes back to that model's config.
        """
        state = self.state
        if requested is not None and requested != (state.config, state.seed, state.device):
            return  # the sidebar moved on while it built (back to the loaded model, or a newer request follows)
        config = requested[0] if requested is not None else state.config
        text = message if message.endswith((".", ")")) else f"{message}."
        loaded = self.loaded
        keep = loaded is not None
        title = "Could not build the model"
        if keep:
            text = (f"{config.name} cannot be built: {text}\n\nThe lab keeps the current model, {loaded.config.name}, "
                    f"{loaded.source}, and the sidebar shows its config again.")
        else:
            text = f"{config.name} cannot be built: {text}"
        # One box, updated in place: several large presets in a row do not stack boxes.
        box = next((b for b in self.message_boxes if b.isVisible() and b.windowTitle() == title), None)
        if box is not None:
            box.setText(text)
        else:
            self._show_message(title, text)
        if not keep:
            # Nothing built yet (a session that opens on a model too large): the panels that need none still work.
            state.set_model(None)
            self._update_model_label(problem=message)
            return
        state.set("config", loaded.config, undoable=False)
        state.set("seed", loaded.seed, undoable=False)
        state.set("device", loaded.device, undoable=False)
        self._update_model_label()

    # ---- state ---------------------------------------------------------------------------------
    def _on_model_inputs_changed(self) -> None:
        self._update_model_label()
        self._update_device_label()
        self._model_timer.start()

    def _apply_theme(self) -> None:
        app = QApplication.instance()
        theme.apply_theme(app, self.state.theme, self.state.font_scale)
        self.sidebar_title.setFont(theme.font(1.05, bold=True))
        action = self.theme_actions.get(self.state.theme)
        if action is not None:
            action.setChecked(True)
        self.statusBar().showMessage(f"{theme.current().label} theme, text at {self.state.font_scale:.0%}", 3000)

    def _update_model_label(self, problem: str = "") -> None:
        config = self.state.config
        total = parameter_breakdown(config).total
        source = ""
        if self.loaded is not None and self.loaded.config == config:
            source = f", {self.loaded.source}"
            trained_mask = getattr(self.loaded.model, "trained_mask_mode", "causal")
            if trained_mask != "causal":
                source += f", trained with a leaky mask: {MASK_MODE_LABELS.get(trained_mask, trained_mask)}"
        elif self.state.torch_ready and not problem:
            source = ", building..."
        text = f"{config.name}: {_count(total)} parameters{source}"
        self.model_label.setText(f"{text} ({problem})" if problem else text)
        # A tooltip is rich text when it looks like markup: a problem quoting a config's name is escaped into a paragraph.
        self.model_label.setToolTip(f"<p>{html.escape(problem)}</p>" if problem
                                    else f"{total:,} parameters; {config.n_layers} layers, d_model {config.d_model}")
        self.setWindowTitle(f"{APP_NAME} - {config.name}")

    def _update_kernels_label(self, device: str) -> None:
        """The linear layers' path on the CPU (measured or asked for) and the precision, when it is not fp32."""
        from core import kernels

        choice, precision = kernels.current_choice(), kernels.current_precision()
        path = ("oneDNN" if choice.path == "onednn" else "default") if device.startswith("cpu") else "default"
        text = f"kernels: {path}"
        if precision.active and (device.startswith("cuda") or (device.startswith("cpu") and precision.requested == "bf16")):
            text += f" | precision: {precision.requested} (values differ from fp32)"
        self.kernels_label.setText(text)
        self.kernels_label.setToolTip(kernels.describe())

    def _update_device_label(self) -> None:
        if not self.state.torch_ready and self.runtime is None:
            return
        device = self.state.device
        self.device_label.setText(f"device: {device}")
        self._update_kernels_label(device)
        action = self.device_actions.get(device)
        if action is not None:
            action.setChecked(True)

    def _on_busy_changed(self, busy: bool, name: str) -> None:
        self.busy_label.setText(f"{name}..." if busy else "")
        self.progress_bar.setVisible(busy)
        self.cancel_button.setVisible(busy)
        if busy:
            self.progress_bar.setRange(0, 0)  # indeterminate until the job reports progress

    def _on_progress(self, fraction: float, text: str) -> None:
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setValue(round(fraction * 1000))
        if text:
            self.busy_label.setText(text)

    # ---- view ----------------------------------------------------------------------------------
    def scale_fonts(self, factor: float) -> None:
        self.state.set_font_scale(self.state.font_scale * factor)

    def set_full_screen(self, on: bool) -> None:
        if on != self.isFullScreen():
            self.toggle_full_screen()

    def status_figures(self) -> list[QWidget]:
        """The status bar's figures that can give a lesson's answer away (the model's parameter count)."""
        return [self.model_label]

    def toggle_full_screen(self) -> None:
        if self.isFullScreen():
            self.showNormal()
            QTimer.singleShot(0, self, self.fit_to_screen)
        else:
            self.setMaximumSize(QWIDGETSIZE_MAX, QWIDGETSIZE_MAX)  # full screen covers the taskbar too
            self.showFullScreen()

    def current_panel(self) -> Panel:
        return self.tabs.currentWidget()  # type: ignore[return-value]

    def panel(self, title: str) -> Panel:
        for panel in self.panels:
            if panel.title == title:
                return panel
        raise KeyError(title)

    def show_panel(self, title: str) -> bool:
        """Bring the panel with this title to the front; False when there is none."""
        try:
            self.tabs.setCurrentWidget(self.panel(title))
        except KeyError:
            return False
        return True

    # ---- export --------------------------------------------------------------------------------
    def export_dialog(self) -> None:
        panel = self.current_panel()
        targets = panel.export_targets()
        dialog = ExportDialog(targets, self)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return
        label, target = targets[dialog.target_combo.currentIndex()]
        from gui.widgets.export import remembered_export_path

        start = remembered_export_path(self.settings_store, label)  # the last export's folder and format
        formats = "PNG image (*.png);;SVG drawing (*.svg)"
        chosen = "SVG drawing (*.svg)" if start.endswith(".svg") else "PNG image (*.png)"
        path, _ = QFileDialog.getSaveFileName(self, "Export", start, formats, chosen)
        if not path:
            return
        self.export_target(target, path, dialog.width_spin.value(), dialog.height_spin.value())

    def export_target(self, target: Any, path: str | Path, width: int = 1920, height: int = 1080) -> Path | None:
        from gui.widgets.export import ExportError, export, remember_export

        try:
            written = export(target, path, width, height)
        except ExportError as error:
            self._show_message("Export failed", str(error))
            return None
        remember_export(self.settings_store, written)
        self.statusBar().showMessage(f"exported {written}", 5000)
        return written
    # ---- dialogs -------------------------------------------------------------------------------
    def show_message(self, title: str, text: str) -> QMessageBox:
        """A warning box that does not block (the worker's results keep arriving behind it)."""
        return self._show_message(title, text)

    def _show_message(self, title: str, text: str) -> QMessageBox:
        if len(text) > MAX_MESSAGE_CHARS:  # a message quoting a whole file would take Qt seconds to lay out
            text = text[: MAX_MESSAGE_CHARS - 3] + "..."
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, self)
        box.setTextFormat(Qt.TextFormat.PlainText)  # messages quote paths and file contents
        self.message_boxes = [b for b in self.message_boxes if b.isVisible()] + [box]
        box.open()  # non-blocking: the worker's results keep arriving behind it
        return box

    def about_text(self) -> str:
        info = versions()
        device = self.state.device if self.state.torch_ready else "(torch still loading)"
        lines = "".join(f"<tr><td>{name}</td><td>{value}</td></tr>" for name, value in info.items())
        return (
            f"<h3>{APP_NAME}</h3><p>Take a Transformer apart and watch each claim about it hold.</p>"
            f"<table>{lines}<tr><td>device</td><td>{device}</td></tr></table>"
        )

    def show_about(self) -> QMessageBox:
        box = QMessageBox(QMessageBox.Icon.Information, f"About {APP_NAME}", self.about_text(), QMessageBox.StandardButton.Ok, self)
        box.setTextFormat(Qt.TextFormat.RichText)
        self.message_boxes = [b for b in self.message_boxes if b.isVisible()] + [box]
        box.open()
        return box

    # ---- preferences ---------------------------------------------------------------------------
    def _restore_preferences(self) -> None:
        store = self.settings_store
        geometry = store.value("window/geometry")
        if not isinstance(geometry, QByteArray) or not self.restoreGeometry(geometry):
            self.size_to_screen()
        layout = store.value("window/state")
        if isinstance(layout, QByteArray):
            self.restoreState(layout)
        name = store.value("view/theme", theme.DEFAULT_THEME)
        try:
            scale = float(store.value("view/font_scale", 1.0))
        except (TypeError, ValueError):
            scale = 1.0
        self.state.set_theme(name if name in theme.THEMES else theme.DEFAULT_THEME)
        self.state.set_font_scale(scale)
        self._apply_theme()

    def size_to_screen(self) -> None:
        """First launch: most of the free area of the screen the window is on, centred in it."""
        screen = self.screen() or QApplication.primaryScreen()
        if screen is None:
            return
        area = screen.availableGeometry()
        width, height = round(area.width() * FIRST_LAUNCH_SHARE), round(area.height() * FIRST_LAUNCH_SHARE)
        self.resize(width, height)
        self.move(area.left() + (area.width() - width) // 2, area.top() + (area.height() - height) // 2)

    def fit_to_screen(self) -> None:
        """Keep the window on its screen: never larger than the screen's free area, frame included."""
        screen = self.screen() or QApplication.primaryScreen()
        if screen is None or self.isFullScreen():
            return
        area = screen.availableGeometry()
        frame = self.frameGeometry().size() - self.geometry().size()  # title bar and borders, once mapped
        room = area.size() - frame
        if "size" in self._run_only:  # a size asked for on the command line (a screenshot for slides) is kept
            room = room.expandedTo(QSize(*self._run_only["size"]))
        self.setMaximumSize(room)
        if self.width() > room.width() or self.height() > room.height():
            self.resize(min(self.width(), room.width()), min(self.height(), room.height()))

    def resize_for_this_run(self, width: int, height: int) -> None:
        """A size from the command line: applied now, over a saved maximized or full-screen state, the saved
        window geometry kept."""
        self._run_only["size"] = (width, height)
        self.setWindowState(Qt.WindowState.WindowNoState)
        self.setMaximumSize(QWIDGETSIZE_MAX, QWIDGETSIZE_MAX)
        self.resize(width, height)
        screen = self.screen() or QApplication.primaryScreen()
        if screen is not None:  # on the screen as far as it fits: a first launch centred a smaller window
            area = screen.availableGeometry()
            left = max(area.left(), min(self.x(), area.right() + 1 - width))
            top = max(area.top(), min(self.y(), area.bottom() + 1 - height))
            self.move(left, top)

    def set_look_for_this_run(self, theme_name: str | None = None, font_scale: float | None = None) -> None:
        """A theme or text size from the command line or a lesson: shown now, not saved as the user's preference.

        Preferences keep what the user chose; a choice made afterwards (in the View menu) is saved as usual.
        """
        if theme_name is not None:
            self._run_only.setdefault("theme", self.state.theme)  # what to save while the run's theme shows
            self.state.set_theme(theme_name)
            self._run_only["theme_shown"] = self.state.theme
        if font_scale is not None:
            self._run_only.setdefault("font_scale", self.state.font_scale)
            self.state.set_font_scale(font_scale)
            self._run_only["font_scale_shown"] = self.state.font_scale

    def _preference(self, key: str) -> Any:
        """The value to save for a look: the user's own, unless it still shows what one run set."""
        current = getattr(self.state, key)
        if key in self._run_only and self._run_only.get(f"{key}_shown") == current:
            return self._run_only[key]
        return current

    def save_preferences(self) -> None:
        store = self.settings_store
        lessons = getattr(self, "lessons", None)
        if lessons is not None and lessons.presentation:
            lessons.set_presentation(False)  # the saved layout is the everyday one, with menus and sidebar
        if "size" not in self._run_only:
            store.setValue("window/geometry", self.saveGeometry())
        store.setValue("window/state", self.saveState())
        store.setValue("view/theme", self._preference("theme"))
        store.setValue("view/font_scale", self._preference("font_scale"))
        if self.panels:
            store.setValue("view/panel", self.tabs.currentIndex())
        store.sync()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        handle = self.windowHandle()
        if handle is not None and not getattr(self, "_watching_screen", False):
            self._watching_screen = True
            handle.screenChanged.connect(lambda _screen: self.fit_to_screen())
        QTimer.singleShot(0, self, self.fit_to_screen)  # after the frame is known

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.remember_preferences:
            self.save_preferences()
        self.compute.shutdown()
        self.file_reader.shutdown()  # a read still running is dropped; one blocked in the OS is left behind
        # The undo stack is destroyed with the window; its last signals must not reach panels half torn down.
        self.state.undo_stack.blockSignals(True)
        super().closeEvent(event)


__all__ = ["SESSION_FILTER", "ExportDialog", "MainWindow"]
