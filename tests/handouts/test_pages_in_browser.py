"""Exported pages as a student sees them, in headless Chromium: every step's title, the figures drawn, the reveal
closed until a prediction is committed or skipped, right or wrong shown, answers kept in the browser and downloaded
as a CSV that lesson-answers reads, no console error and nothing fetched from the network."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.lessons import load_lesson
from tests.float32 import assert_printed_close
from tests.handouts.test_pages import shown_score


def open_page(browser, path) -> None:
    browser.get(path.as_uri())
    browser.execute_script("window.localStorage.clear()")
    browser.refresh()
    browser.get_log("browser")  # what an earlier page logged is not this page's


def drawn(browser, figure_id: str) -> int:
    """The marks the figure drew (an SVG path or rect per cell, bar or line), 0 while it is not drawn."""
    return browser.execute_script(
        "const e = document.getElementById(arguments[0]);"
        "return e.dataset.drawn === 'yes' ? e.querySelectorAll('svg path, svg rect').length : 0;", figure_id)


def wait_drawn(browser, figure_id: str) -> int:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, 20).until(lambda _: drawn(browser, figure_id))


def assert_no_console_errors_nor_network(browser) -> None:
    severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []
    fetched = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert [name for name in fetched if not name.startswith(("blob:", "data:"))] == []


def test_an_induction_lesson_page_asks_before_it_reveals(browser, exported_lessons, downloads, capsys):
    from selenium.webdriver.common.by import By

    path = exported_lessons["13-induction-heads"]
    lesson = load_lesson("resources/lessons/13-induction-heads.json")
    open_page(browser, path)
    titles = [element.text for element in browser.find_elements(By.CSS_SELECTOR, ".step-title")]
    assert titles == [f"Step {n}: {step.title}" for n, step in enumerate(lesson.steps, 1)]
    first = browser.find_element(By.ID, "step-1")
    reveal_button = first.find_element(By.CSS_SELECTOR, ".reveal-button")
    reveal = first.find_element(By.CSS_SELECTOR, ".reveal")
    assert not reveal.is_displayed() and not reveal_button.is_enabled()
    assert drawn(browser, "figure-1-0") == 0  # the answer's figures wait behind the reveal
    first.find_element(By.CSS_SELECTOR, "input[value='layer 0']").click()
    first.find_element(By.CSS_SELECTOR, ".commit").click()
    assert reveal_button.is_enabled() and not reveal.is_displayed()
    reveal_button.click()
    assert reveal.is_displayed()
    grade = first.find_element(By.CSS_SELECTOR, ".grade")
    assert grade.text == "Wrong: you predicted layer 0; the app measured layer 1."
    assert wait_drawn(browser, "figure-1-0") >= 8  # the induction map: one cell per head of 2 x 4
    assert "Strongest induction head L1H0" in reveal.text

    second = browser.find_element(By.ID, "step-2")
    second.find_element(By.CSS_SELECTOR, "input[value='rises']").click()
    second.find_element(By.CSS_SELECTOR, ".commit").click()
    second.find_element(By.CSS_SELECTOR, ".reveal-button").click()
    assert second.find_element(By.CSS_SELECTOR, ".grade").text.startswith("Right: you predicted rises")
    assert wait_drawn(browser, "figure-2-0") > 0

    third = browser.find_element(By.ID, "step-3")  # no prediction: the reveal opens at once
    third.find_element(By.CSS_SELECTOR, ".reveal-button").click()
    assert wait_drawn(browser, "figure-3-0") > 0

    browser.refresh()  # the answers stay in the browser
    assert not browser.find_element(By.CSS_SELECTOR, "#step-1 .commit").is_enabled()
    assert browser.find_element(By.CSS_SELECTOR, "#step-1 .reveal-button").is_enabled()
    assert_no_console_errors_nor_network(browser)

    browser.find_element(By.ID, "download-answers").click()
    from selenium.webdriver.support.ui import WebDriverWait

    csv_path = downloads / "13-induction-heads-answers.csv"
    WebDriverWait(browser, 20).until(lambda _: csv_path.exists() and csv_path.stat().st_size > 0)
    assert main(["lesson-answers", str(csv_path), "--json"]) == 0
    steps = {item["step"]: item for item in json.loads(capsys.readouterr().out)["steps"]}
    assert set(steps) == {1, 2}
    assert (steps[1]["right"], steps[1]["wrong"], steps[1]["answer"]) == (0, 1, "layer 1")
    assert steps[1]["common_wrong"] == [{"prediction": "layer 0", "count": 1}]
    assert (steps[2]["right"], steps[2]["answer"]) == (1, "rises")


def test_a_number_prediction_and_a_skip_in_the_rope_and_parameter_pages(browser, exported_lessons):
    from selenium.webdriver.common.by import By

    open_page(browser, exported_lessons["03-counting-parameters"])
    step = browser.find_element(By.ID, "step-3")
    step.find_element(By.CSS_SELECTOR, ".prediction-input").send_keys("38,000,000")
    step.find_element(By.CSS_SELECTOR, ".commit").click()
    step.find_element(By.CSS_SELECTOR, ".reveal-button").click()
    assert step.find_element(By.CSS_SELECTOR, ".grade").text == (
        "Right: you predicted 38000000; the app measured 38,597,376.")
    skipped = browser.find_element(By.ID, "step-1")
    skipped.find_element(By.CSS_SELECTOR, ".skip").click()
    skipped.find_element(By.CSS_SELECTOR, ".reveal-button").click()
    assert skipped.find_element(By.CSS_SELECTOR, ".grade").text == "Skipped. The app measured: FFN."
    assert wait_drawn(browser, "figure-1-0") > 0
    assert_no_console_errors_nor_network(browser)

    open_page(browser, exported_lessons["02-rope"])
    last = browser.find_element(By.ID, "step-5")  # no reveal: its figures are drawn at once
    assert wait_drawn(browser, "figure-5-0") > 0 and wait_drawn(browser, "figure-5-1") > 0
    slider = last.find_element(By.CSS_SELECTOR, "input[type=range]")
    assert slider.get_attribute("value") == "13"  # m as step 3 left it: step 5 names no m, as in the window
    assert_no_console_errors_nor_network(browser)


def test_the_positions_view_page_shows_its_score_and_a_slider(browser, tmp_path, capsys):
    from selenium.webdriver.common.by import By

    out = tmp_path / "rope.html"
    assert main(["export-html", "--panel", "Positions", "--out", str(out)]) == 0
    capsys.readouterr()
    open_page(browser, out)
    assert_printed_close(str(shown_score(browser.find_element(By.TAG_NAME, "body").text, "rope")), "5.9478093347",
                         5.9478)
    assert wait_drawn(browser, "figure-1-0") > 0 and wait_drawn(browser, "figure-1-1") > 0
    sliders = browser.find_elements(By.CSS_SELECTOR, "input[type=range]")
    assert len(sliders) == 4  # m of the trace, n of the row, m and n of the rotating pairs

    def marked_points(figure: str) -> list[str]:
        return browser.execute_script(f"return [...document.querySelectorAll('#{figure} .mark-symbol path')]"
                                      ".map(e => e.getAttribute('transform'))")

    from selenium.webdriver.support.ui import WebDriverWait

    for slider, figure in ((sliders[0], "figure-1-0"), (sliders[2], "figure-1-2")):
        before = marked_points(figure)
        assert before
        browser.execute_script("arguments[0].value = 40; arguments[0].dispatchEvent(new Event('input'));", slider)
        WebDriverWait(browser, 10).until(lambda _: marked_points(figure) != before)  # the marks follow the slider
    assert_no_console_errors_nor_network(browser)


def test_the_architecture_page_draws_its_diagram_and_tables(browser, tmp_path, capsys):
    from selenium.webdriver.common.by import By

    out = tmp_path / "architecture.html"
    assert main(["export-html", "--panel", "Architecture", "--out", str(out)]) == 0
    capsys.readouterr()
    open_page(browser, out)
    assert wait_drawn(browser, "figure-1-0") >= 10  # the diagram: a box per part, a line per arrow
    rows = browser.find_elements(By.CSS_SELECTOR, "#figure-1-1 tbody tr")  # Follow one token: a row per stage
    assert len(rows) >= 4 and all(row.is_displayed() for row in rows)
    assert "‖x‖" in browser.find_element(By.CSS_SELECTOR, "#figure-1-1 thead").text
    assert_no_console_errors_nor_network(browser)


@pytest.mark.parametrize(("panel", "figures"), [("Going deeper", 1), ("Features", 3)])
def test_the_going_deeper_and_features_pages_draw_their_figures(browser, tmp_path, capsys, panel, figures):
    out = tmp_path / "page.html"
    assert main(["export-html", "--panel", panel, "--out", str(out)]) == 0
    capsys.readouterr()
    open_page(browser, out)
    for index in range(figures):  # Stretching's plot; the Feature dashboard's contexts, histogram and logit bars
        assert wait_drawn(browser, f"figure-1-{index}") > 0, index
    assert_no_console_errors_nor_network(browser)
