"""Exported pages shared by the handout tests (each lesson computed once), and one headless Chromium for them all."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core.handouts.collect import lesson_figures
from core.handouts.page import lesson_page, write_page
from core.lessons import bundled_lesson_paths, load_lesson

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


@pytest.fixture(scope="session")
def exported_lessons(tmp_path_factory) -> dict[str, Path]:
    """Every bundled lesson exported once: file stem -> page path."""
    folder = tmp_path_factory.mktemp("pages")
    pages = {}
    for path in bundled_lesson_paths():
        lesson = load_lesson(path)
        pages[path.stem] = write_page(folder / f"{path.stem}.html", lesson_page(lesson, lesson_figures(lesson)))
    return pages


@pytest.fixture(scope="session")
def downloads(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="session")
def browser(downloads):
    """One headless Chromium driven through its system chromedriver (.ci/run installs both when missing)."""
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    binary = next((shutil.which(name) for name in CHROMIUM_NAMES if shutil.which(name)), None)
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        pytest.skip("Chromium and chromedriver are not installed (apt-get install chromium chromium-driver)")
    options = Options()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900", "--lang=en-US"):
        options.add_argument(argument)
    options.binary_location = binary
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                              "download.prompt_for_download": False})
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    # Headless Chromium drops a page's downloads unless told where they go.
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    yield driver
    driver.quit()
