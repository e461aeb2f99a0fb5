"""Help > User guide: the Markdown pages of docs/ in a window of their own, readable offline.

The pages sit beside core/ and gui/ in every layout the app runs from: the repository root in a source
checkout, the transformer_explorer package folder when installed (setup.py ships docs/ as package data),
and the bundle's data folder when frozen (bundle/spec_support.py). Links between pages open in the same
window, a link to a heading scrolls to it, and a web link opens in the desktop's browser.
"""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QImage, QTextDocument
from PySide6.QtWidgets import QDialog, QHBoxLayout, QPushButton, QTextBrowser, QVBoxLayout, QWidget

INDEX = "index.md"
MAX_IMAGE_WIDTH = 720  # a full-window screenshot shown at its own 1366 px would make the page scroll sideways
WEB_SCHEMES = ("http", "https", "mailto")


def guide_folder() -> Path:
    """docs/ beside the app's own gui/ package, wherever that is installed."""
    return Path(__file__).resolve().parent.parent / "docs"


def heading_anchor(text: str) -> str:
    """A heading's link name as GitHub writes it: 'The reading's script' -> 'the-readings-script'."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


class GuideBrowser(QTextBrowser):
    """Shows one Markdown page at a time; follows its links itself, so none leaves the guide by accident."""

    def __init__(self, folder: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.folder = folder
        self.setOpenLinks(False)  # every click goes through follow(): pages here, the web to the desktop
        self.setSearchPaths([str(folder)])
        self.anchorClicked.connect(self.follow)

    def loadResource(self, kind: int, url: QUrl):  # Qt calls it for every image a page shows
        if kind == QTextDocument.ResourceType.ImageResource.value:
            image = QImage(self.source().resolved(url).toLocalFile())
            if not image.isNull() and image.width() > MAX_IMAGE_WIDTH:
                image = image.scaledToWidth(MAX_IMAGE_WIDTH, Qt.TransformationMode.SmoothTransformation)
            return image
        return super().loadResource(kind, url)

    def open_page(self, path: Path, fragment: str = "") -> None:
        if not path.is_file() or path.suffix.lower() != ".md":
            self.setPlainText(f"This page is not in the user guide: {path}")
            return
        self.setSource(QUrl.fromLocalFile(str(path)), QTextDocument.ResourceType.MarkdownResource)
        if fragment:
            self.scroll_to_heading(fragment)

    def follow(self, url: QUrl) -> None:
        if url.scheme() in WEB_SCHEMES:
            QDesktopServices.openUrl(url)
            return
        target = self.source().resolved(url) if url.isRelative() else url
        if not url.path():  # '#heading' on this page
            self.scroll_to_heading(url.fragment())
            return
        path = Path(target.toLocalFile())
        if path.suffix.lower() == ".md":
            self.open_page(path, target.fragment())
        else:
            QDesktopServices.openUrl(target)  # a picture or a folder of the app's: the desktop shows it

    def scroll_to_heading(self, fragment: str) -> bool:
        block = self.document().begin()
        while block.isValid():
            if block.blockFormat().headingLevel() and heading_anchor(block.text()) == fragment:
                top = self.document().documentLayout().blockBoundingRect(block).top()
                self.verticalScrollBar().setValue(int(top))
                return True
            block = block.next()
        return False


class UserGuideWindow(QDialog):
    def __init__(self, parent: QWidget | None = None, folder: Path | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Transformer Explorer user guide")
        self.setModal(False)
        self.folder = folder or guide_folder()
        self.browser = GuideBrowser(self.folder, self)
        buttons = QHBoxLayout()
        for text, slot in (("Back", self.browser.backward), ("Forward", self.browser.forward), ("Contents", self.home)):
            button = QPushButton(text, self)
            button.setAutoDefault(False)  # Enter in the page must not go Back
            button.clicked.connect(slot)
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(buttons)
        layout.addWidget(self.browser)
        self._fit_to_screen()
        self.home()

    def home(self) -> None:
        index = self.folder / INDEX
        if index.is_file():
            self.browser.open_page(index)
        else:
            self.browser.setPlainText(f"The user guide was not found: {index} is missing from this installation.")

    def _fit_to_screen(self) -> None:
        screen = self.screen().availableGeometry()
        self.resize(min(960, int(screen.width() * 0.9)), min(760, int(screen.height() * 0.9)))


def open_user_guide(parent: QWidget) -> UserGuideWindow:
    """Show the guide, reusing the window already open for this parent."""
    window = parent.findChild(UserGuideWindow)
    if window is None:
        window = UserGuideWindow(parent)
    if window.isVisible():  # open behind the main window: bring it forward
        window.raise_()
        window.activateWindow()
    else:
        window.show()
    return window


def add_user_guide_action(help_menu, parent: QWidget) -> QAction:
    """Help > User guide, opening the guide beside `parent`."""
    action = QAction("&User guide", parent)
    action.setStatusTip("Read the user guide: the panels, lessons, models and the command line")
    action.triggered.connect(lambda: open_user_guide(parent))
    help_menu.addAction(action)
    return action
