"""File > Export lesson as web page, and Export view as web page: the page is computed and written on the compute
worker (core.handouts), after the output path is checked on the GUI thread, so that a path that cannot be written is
refused before anything is computed and the window never waits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QFileDialog

from core.lessons import BUNDLED_LESSONS_DIR, LessonError, load_lesson

PAGE_FILTER = "Web page (*.html)"
LESSON_FILTER = "Lesson (*.json)"
CHANNEL = "handout-export"
MESSAGE_TITLE = "Export as web page"


class HandoutExport:
    """The two File menu commands of one window."""

    def __init__(self, window: Any) -> None:
        self.window = window

    def _page_path(self, suggested: str) -> str:
        store = self.window.settings_store
        start = str(Path(str(store.value("handouts/dir", str(Path.home())))) / suggested)
        path, _ = QFileDialog.getSaveFileName(self.window, MESSAGE_TITLE, start, PAGE_FILTER)
        if path and not path.lower().endswith((".html", ".htm")):
            path += ".html"
        if path:
            store.setValue("handouts/dir", str(Path(path).parent))
        return path

    def export_lesson(self) -> None:
        """The open lesson (or one chosen from a file) as a page."""
        lesson = self.window.lessons.lesson
        if lesson is None:
            source, _ = QFileDialog.getOpenFileName(self.window, "Export which lesson?", str(BUNDLED_LESSONS_DIR),
                                                    LESSON_FILTER)
            if not source:
                return
            try:
                lesson = load_lesson(source)
            except LessonError as error:
                self.window.show_message(MESSAGE_TITLE, f"This lesson cannot be exported: {error}")
                return
        stem = Path(lesson.source).stem if lesson.source else "lesson"
        self.export_lesson_to(lesson, self._page_path(f"{stem}.html"))

    def export_lesson_to(self, lesson: Any, path: str) -> int | None:
        """Compute the page of `lesson` and write it at `path`, on the worker; the request id, or None if refused."""
        if not path or not self._writable(path):
            return None

        def job():
            from core.handouts.collect import lesson_figures
            from core.handouts.page import lesson_page, write_page

            html = lesson_page(lesson, lesson_figures(lesson))
            return write_page(path, html), len(html.encode("utf-8"))

        return self._submit(job, f"the lesson page {Path(path).name}")

    def export_view(self) -> None:
        """The view on screen, at its current inputs, as a page."""
        panel = self.window.current_panel()
        self.export_view_to(panel, self._page_path(f"{panel.title.lower().replace(' & ', '-')}.html"))

    def export_view_to(self, panel: Any, path: str) -> int | None:
        if not path or not self._writable(path):
            return None
        from core.handouts.collect import ViewRequest

        state = self.window.state
        request = ViewRequest(panel.title, state.config, state.seed, state.text or " ", dict(panel.settings()),
                              state.model, state.tokenizer, state.selected_layer, state.selected_head)
        title = f"{panel.title}: {state.config.name}"

        def job():
            from core.handouts.collect import view_figures
            from core.handouts.page import view_page, write_page

            html = view_page(title, f"The {panel.title} view as the window showed it, seed {request.seed}.",
                             view_figures(request))
            return write_page(path, html), len(html.encode("utf-8"))

        return self._submit(job, f"the {panel.title} page {Path(path).name}")

    def _writable(self, path: str) -> bool:
        from core.handouts.page import write_problem

        problem = write_problem(path)
        if problem:
            self.window.show_message(MESSAGE_TITLE, f"The page cannot be written: {problem}.")
        return not problem

    def _submit(self, job, what: str) -> int:
        def written(outcome) -> None:
            path, size = outcome
            self.window.statusBar().showMessage(f"Wrote {path} ({size:,} bytes; it opens offline in any browser)",
                                                15_000)

        def failed(message: str) -> None:
            self.window.show_message(MESSAGE_TITLE, f"Could not export {what}: {message}")

        return self.window.compute.submit(CHANNEL, job, written, name=f"exporting {what}", on_error=failed)


__all__ = ["HandoutExport"]
