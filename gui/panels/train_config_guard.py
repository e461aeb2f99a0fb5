"""A config change while a training run is on: held back at once, then asked about.

The sidebar, a session or a lesson may ask for another config in the middle of a run. Applied at once,
the main window would replace the loaded model with a random one of the new config and the run's model
could not be installed when it ends. So the change is undone in the same event and a question offers the
two honest outcomes: discard the run for the new config, or keep training and apply the config when the
run ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QMessageBox, QWidget


class RunConfigGuard(QObject):
    """Holds a config asked for during a run (`pending`) and whether the user chose to discard the run."""

    def __init__(self, state, panel: QWidget, run_config: Callable[[], Any], stop_run: Callable[[], None],
                 answered: Callable[[bool], None]) -> None:
        super().__init__(panel)
        self.state = state
        self._panel = panel
        self._run_config = run_config  # the config the current run trains, None when no run is on
        self._stop_run = stop_run
        self._answered = answered  # answered(discarded)
        self.pending = None  # a config asked for during the run, applied when it ends
        self.discard = False  # the run's model is not to be installed (the user chose the new config)
        self.question: QMessageBox | None = None  # open while a change waits for an answer
        self.discard_button = self.keep_button = None
        state.config_changed.connect(self._config_changed)

    def _config_changed(self) -> None:
        running = self._run_config()
        if running is None or self.discard:
            return
        asked = self.state.config
        if asked == running:
            return
        self.pending = asked
        self.state.set("config", running, undoable=False)  # in the same event: nothing is rebuilt for `asked`
        if self.question is not None:
            return  # the open question now applies to the newest config asked for
        question = self.question = QMessageBox(self._panel)
        question.setIcon(QMessageBox.Icon.Question)
        question.setWindowTitle("A run is in progress")
        question.setTextFormat(Qt.TextFormat.PlainText)
        question.setText(f"The run trains {running.name}. Change the config now and discard the run, or keep "
                         "training and apply the change when the run ends?")
        self.discard_button = question.addButton("Discard the run", QMessageBox.ButtonRole.DestructiveRole)
        self.keep_button = question.addButton("Keep training, apply after", QMessageBox.ButtonRole.AcceptRole)
        question.setDefaultButton(self.keep_button)
        question.buttonClicked.connect(self._answer)
        question.open()

    def _answer(self, button) -> None:
        self.question = None
        if self._run_config() is None:
            return
        if button is self.discard_button:
            self.discard = True
            pending, self.pending = self.pending, None
            self._stop_run()
            if pending is not None:
                self.state.set("config", pending, undoable=False)
            self._answered(True)
        else:
            self._answered(False)

    def run_over(self) -> None:
        """The run ended (or was cancelled): no question stays open about it."""
        if self.question is not None:
            self.question.close()
            self.question = None

    def settle(self):
        """After the run's outcome is handled: clear the choice and apply the config asked for; returns it (or None)."""
        pending, self.pending, self.discard = self.pending, None, False
        if pending is not None:
            self.state.set("config", pending, undoable=False)
        return pending


__all__ = ["RunConfigGuard"]
