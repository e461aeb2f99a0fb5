"""The window's session files: the lab's state and every panel's settings saved, opened and applied."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from gui.session import Session, SessionError, read_session, write_session

log = logging.getLogger("transformer_explorer.window")

SESSION_FILTER = "Transformer Explorer session (*.json)"


class SessionFiles:
    """File > Open / Save session for the main window (a mixin: it uses the window's state, panels, file
    reader, settings and message boxes)."""

    def current_session(self) -> Session:
        state = self.state
        return Session(
            config=state.config,
            seed=state.seed,
            text=state.text,
            tokens=tuple(state.tokens),
            device=state.device,
            selected_layer=state.selected_layer,
            selected_head=state.selected_head,
            panels={panel.title: panel.settings() for panel in self.panels},
        )

    def save_session(self, path: str | Path) -> bool:
        try:
            write_session(path, self.current_session())
        except SessionError as error:
            self._show_message("Could not save the session", str(error))
            return False
        self.session_path = Path(path)
        self.settings_store.setValue("session/dir", str(Path(path).parent))
        self.statusBar().showMessage(f"saved {path}", 5000)
        return True

    def open_session(self, path: str | Path, wait: bool = False) -> str | None:
        """Open a session file: read and checked on a thread of its own while the window stays live, applied here.

        Returns at once; session_open_ended says how it ended. A newer open supersedes one still being read
        (that one is never applied). With wait=True the file is read on this thread and the result returned:
        None when applied, else the message shown (nothing changed), for code that must have it at once.
        """
        path = Path(path)
        if wait:
            self.file_reader.cancel("session")
            try:
                session = read_session(path)
            except SessionError as error:
                return self._session_refused(path, error)
            self.apply_opened_session(path, session)
            return None
        self.statusBar().showMessage(f"opening {path}...")
        self.file_reader.read("session", lambda: read_session(path),
                              lambda session: self.apply_opened_session(path, session),
                              lambda error: self._session_refused(path, error))
        return None

    def apply_opened_session(self, path: str | Path, session: Session) -> None:
        """Apply a session read from `path` and make it the one File > Save session writes to."""
        self.apply_session(session)
        self.session_path = Path(path)
        self.settings_store.setValue("session/dir", str(Path(path).parent))
        self.statusBar().showMessage(f"opened {path}", 5000)
        self.session_open_ended.emit("")

    def _session_refused(self, path: Path, error: Exception) -> str:
        """One message box for a session that cannot be opened; the lab is left as it was."""
        message = str(error)
        if not isinstance(error, SessionError):  # a defect behind the reader, not a bad file: logged whole
            log.error("reading the session %s failed", path, exc_info=error)
            message = f"{path.name} could not be read: {type(error).__name__}: {error}"
        if self.statusBar().currentMessage() == f"opening {path}...":
            self.statusBar().clearMessage()
        self._show_message("Could not open the session", message)
        self.session_open_ended.emit(message)
        return message

    def apply_session(self, session: Session) -> None:
        state = self.state
        state.undo_stack.beginMacro("open session")
        try:
            state.set_config(session.config)
            state.set_seed(session.seed)
            state.set_text(session.text)
            state.set_selected_layer(session.selected_layer)
            state.set_selected_head(session.selected_head)
            if session.device and (self.runtime is None or session.device in self.runtime.devices):
                state.set_device(session.device)
            elif session.device:
                self.statusBar().showMessage(f"the session used {session.device}, which this machine lacks; staying on {state.device}", 10000)
        finally:
            state.undo_stack.endMacro()
        if session.tokens is not None and list(session.tokens) != state.tokens and self._reads_as(session):
            state.set_tokens(list(session.tokens))
        for panel in self.panels:
            settings = session.panels.get(panel.title)
            if isinstance(settings, dict):
                try:
                    with panel.views_held():
                        panel.restore_settings(settings)
                except Exception:  # one panel's stale settings must not block the session
                    log.warning("panel %r could not restore its settings", panel.title, exc_info=True)

    def _reads_as(self, session: Session) -> bool:
        """Whether the lab's tokenizer reads the session's ids as its text. The ids belong to the session's model; one
        of another vocabulary may still be on its way, and its tokenizer will read the text again when it comes:
        set now, the text would follow ids decoded by the wrong tokenizer."""
        tokenizer = self.state.tokenizer
        try:
            return tokenizer is not None and tokenizer.decode(list(session.tokens)) == session.text
        except Exception:  # noqa: BLE001 (an id this tokenizer lacks: each tokenizer has its own error)
            return False

    def open_session_dialog(self) -> None:
        start = str(self.settings_store.value("session/dir", str(Path.home())))
        path, _ = QFileDialog.getOpenFileName(self, "Open session", start, SESSION_FILTER)
        if path:
            self.open_session(path)

    def save_session_dialog(self, ask: bool = False) -> None:
        path: str | Path | None = self.session_path
        if ask or path is None:
            start = str(Path(self.settings_store.value("session/dir", str(Path.home()))) / "session.json")
            path, _ = QFileDialog.getSaveFileName(self, "Save session", start, SESSION_FILTER)
        if path:
            self.save_session(path)


__all__ = ["SESSION_FILTER", "SessionFiles"]
