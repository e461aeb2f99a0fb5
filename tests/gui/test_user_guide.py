"""Help > User guide opens the Markdown guide in a window; links between pages and to headings work there,
and a web link goes to the desktop's browser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QMainWindow

from gui import user_guide
from gui.user_guide import UserGuideWindow, add_user_guide_action, guide_folder, heading_anchor


def first_heading(page: str) -> str:
    text = (guide_folder() / page).read_text(encoding="utf-8")
    return next(line[2:].strip() for line in text.splitlines() if line.startswith("# "))


@pytest.fixture
def parent(qtbot):
    window = QMainWindow()
    qtbot.addWidget(window)
    return window


@pytest.fixture
def guide(qtbot, parent):
    action = add_user_guide_action(parent.menuBar().addMenu("&Help"), parent)
    action.trigger()
    window = parent.findChild(UserGuideWindow)
    assert window is not None and window.isVisible()
    return window


def test_the_action_opens_the_guide_on_its_contents_page(parent, guide):
    assert "User guide" in next(a.text() for a in parent.menuBar().actions()[0].menu().actions())
    assert first_heading("index.md") in guide.browser.toPlainText()
    assert guide.browser.source().toLocalFile().endswith("index.md")


def test_a_link_to_another_page_loads_that_page_and_back_returns(guide):
    guide.browser.anchorClicked.emit(QUrl("panels.md"))
    assert guide.browser.source().toLocalFile().endswith("panels.md")
    assert first_heading("panels.md") in guide.browser.toPlainText()
    assert "Tokens & masks" in guide.browser.toPlainText()  # the page's own text, rendered from Markdown
    guide.browser.backward()
    assert first_heading("index.md") in guide.browser.toPlainText()


def test_a_link_to_a_heading_of_another_page_scrolls_to_it(guide):
    guide.resize(700, 500)
    guide.browser.anchorClicked.emit(QUrl("panels.md#pitfalls-you-can-train"))
    assert guide.browser.source().toLocalFile().endswith("panels.md")
    assert guide.browser.verticalScrollBar().value() > 0


def test_a_web_link_goes_to_the_desktop_and_the_page_stays(guide, monkeypatch):
    opened = []
    monkeypatch.setattr(user_guide.QDesktopServices, "openUrl", lambda url: opened.append(url.toString()))
    guide.browser.anchorClicked.emit(QUrl("https://pytorch.org/get-started/locally/"))
    assert opened == ["https://pytorch.org/get-started/locally/"]
    assert guide.browser.source().toLocalFile().endswith("index.md")


@pytest.mark.qt_log_ignore("propagateSizeHints", "does not support raise")  # the offscreen platform has no stacking
def test_a_second_open_reuses_the_window(parent, guide):
    assert user_guide.open_user_guide(parent) is guide
    assert len(parent.findChildren(UserGuideWindow)) == 1


def test_a_missing_guide_says_so_in_plain_text(qtbot, tmp_path):
    window = UserGuideWindow(folder=tmp_path)
    qtbot.addWidget(window)
    assert "user guide was not found" in window.browser.toPlainText()
    window.browser.anchorClicked.emit(QUrl.fromLocalFile(str(tmp_path / "<b>gone</b>.md")))
    assert "<b>gone</b>.md" in window.browser.toPlainText()


def test_heading_anchors_are_githubs():
    assert heading_anchor("The reading's script") == "the-readings-script"
    assert heading_anchor("Real models: GPT-2, SmolLM2, Qwen2.5") == "real-models-gpt-2-smollm2-qwen25"


LINK = re.compile(r"\]\(([^)\s]+)\)")


def headings(page: Path) -> set[str]:
    return {heading_anchor(line.lstrip("#")) for line in page.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")}


def test_every_link_of_the_readme_and_the_guide_reaches_a_page_and_heading():
    root = guide_folder().parent
    pages = [root / "README.md", *sorted(guide_folder().glob("*.md"))]
    checked = 0
    for page in pages:
        for line in page.read_text(encoding="utf-8").splitlines():
            for target in LINK.findall(line):
                if target.startswith(("http://", "https://", "mailto:")) or "(coming)" in line:
                    continue  # a "(coming)" entry names a page still to be written
                path, _, fragment = target.partition("#")
                destination = (page.parent / path).resolve() if path else page
                assert destination.exists(), f"{page.name}: {target}"
                if fragment:
                    assert fragment in headings(destination), f"{page.name}: {target}"
                checked += 1
    assert checked >= 30


def test_no_page_holds_an_html_tag_outside_code():
    """Qt reads raw HTML in Markdown: a stray `<TAB>` in prose swallowed the rest of a page in the guide window."""
    for page in sorted(guide_folder().glob("*.md")):
        prose = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        prose = re.sub(r"`[^`\n]*`", "", prose)
        assert not re.findall(r"<[A-Za-z/!][^>\n]*>", prose), page.name
