"""Exported pages without a browser: every bundled lesson offline and under 5 MB, the view page's computed RoPE
score, hostile lesson text escaped, and an unwritable output refused before anything is computed."""

from __future__ import annotations

import json
import re

import markupsafe
import pytest

from core.cli import main
from core.handouts.page import MAX_PAGE_BYTES
from core.lessons import load_lesson
from resources import resource_path
from tests.float32 import assert_printed_close, float32_tolerance
from tests.handouts.test_predictions import _rope_score_in_test

NETWORK_REFERENCE = re.compile(r"""(?:\b(?:src|href|action|poster|data)\s*=\s*["']?\s*(?:https?:)?//)"""
                               r"""|(?:url\(\s*["']?\s*(?:https?:)?//)|(?:@import)""", re.IGNORECASE)


def page_data(text: str) -> dict:
    match = re.search(r'<script type="application/json" id="handout-data">(.*?)</script>', text, re.DOTALL)
    return json.loads(match.group(1))


def test_every_bundled_lesson_exports_offline_under_5_mb_with_every_step(exported_lessons):
    from core.lessons import bundled_lesson_paths

    library = resource_path("handouts", "vega-bundle.js").read_text(encoding="utf-8")
    assert len(exported_lessons) == len(bundled_lesson_paths()) >= 16
    for stem, path in exported_lessons.items():
        text = path.read_text(encoding="utf-8")
        assert text.count(library) == 1, stem  # the plotting library inlined whole, once
        ours = text.replace(library, "")
        assert "http://" not in ours and "https://" not in ours, stem  # no address outside the library's own code
        assert path.stat().st_size < MAX_PAGE_BYTES, stem
        assert not NETWORK_REFERENCE.search(text), (stem, NETWORK_REFERENCE.search(text))
        assert "<link" not in text and not re.search(r"<script[^>]*\bsrc=", text), stem
        lesson = load_lesson(next(p for p in bundled_lesson_paths() if p.stem == stem))
        for step in lesson.steps:
            assert str(markupsafe.escape(step.title)) in text, (stem, step.title)
        data = page_data(text)
        for number, step in enumerate(lesson.steps, 1):
            if step.prediction is not None:
                assert data["steps"][str(number)]["answer"] is not None


def shown_score(text: str, encoding: str) -> float:
    """The page's "<encoding> score: x" figure, read back as a number (its last digit is float32's)."""
    return float(re.search(rf"{encoding} score: (-?\d+\.\d+)", text).group(1))


def test_the_exported_positions_page_shows_the_computed_rope_score(tmp_path, capsys):
    out = tmp_path / "rope.html"
    assert main(["export-html", "--panel", "Positions", "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {out}: the Positions view")
    text = out.read_text(encoding="utf-8")
    score = _rope_score_in_test(3, 1)
    assert_printed_close(f"{score:.10f}", "5.9478093347", score)  # the reading prints it so
    assert shown_score(text, "rope") == pytest.approx(score, abs=float32_tolerance(score))
    trace = next(spec for spec in page_data(text)["specs"].values() if "layer" in spec)
    points = {(row["series"], row["x"]): row["y"] for row in trace["data"]["values"]}
    assert points[("RoPE R(m)q · R(n)k", 3)] == pytest.approx(score, rel=1e-6)  # float32's digits on the page
    assert points[("RoPE R(m)q · R(n)k", 103)] == pytest.approx(score, rel=1e-6)  # the offset alone counts
    assert trace["params"][0]["bind"]["input"] == "range"


def test_lesson_text_is_shown_as_text_never_as_markup(tmp_path):
    lesson = {"title": "<script>alert('title')</script>", "steps": [
        {"title": "<img src=x onerror=alert(1)>", "text": "</script><script>alert(2)</script> & {{rope_score_label}}",
         "panel": "Positions", "panel_settings": {"tab": "RoPE scrubber"}}]}
    source = tmp_path / "hostile.json"
    source.write_text(json.dumps(lesson), encoding="utf-8")
    out = tmp_path / "hostile.html"
    assert main(["export-html", "--lesson", str(source), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "<script>alert" not in text and "<img src=x" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    assert_printed_close(re.search(r"5\.94780\d*", text).group(), "5.9478093347", 5.9478)


def test_an_unwritable_output_is_refused_before_anything_is_computed(tmp_path, capsys, monkeypatch):
    import core.handouts.collect as collect

    def must_not_run(*args, **kwargs):
        raise AssertionError("computed before the output path was checked")

    monkeypatch.setattr(collect, "lesson_figures", must_not_run)
    monkeypatch.setattr(collect, "view_figures", must_not_run)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine", encoding="utf-8")
    for out in (tmp_path / "missing" / "page.html", a_file / "page.html", tmp_path):
        for what in (["--lesson", "resources/lessons/13-induction-heads.json"], ["--panel", "Positions"]):
            assert main(["export-html", *what, "--out", str(out)]) == 2
            err = capsys.readouterr().err
            assert err.startswith("transformer-explorer export-html: error: --out: ") and err.count("\n") == 1
    assert a_file.read_text(encoding="utf-8") == "mine"


@pytest.mark.parametrize(("arguments", "message"), [
    (["--panel", "Nonesuch"], "--panel: 'Nonesuch' cannot be exported; use one of Architecture, Tokens"),
    (["--lesson", "missing.json"], "--lesson: missing.json does not exist"),
    (["--lesson", "resources/lessons/02-rope.json", "--session", "s.json"], "--session goes with --panel"),
])
def test_bad_export_requests_are_refused_in_one_line(tmp_path, capsys, arguments, message):
    assert main(["export-html", *arguments, "--out", str(tmp_path / "page.html")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "page.html").exists()


def test_a_view_exports_as_a_saved_session_left_it(tmp_path, capsys):
    from core.presets import PRESETS

    session = {"format": "transformer-explorer-session", "version": 1, "config": PRESETS["tiny-gpt"].to_dict(),
               "seed": 0, "text": "To be", "panels": {"Positions": {"m": 13, "n": 11, "tab": "RoPE scrubber"}}}
    path = tmp_path / "class.json"
    path.write_text(json.dumps(session), encoding="utf-8")
    out = tmp_path / "rope.html"
    assert main(["export-html", "--panel", "Positions", "--session", str(path), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    score = _rope_score_in_test(13, 11)  # the offset alone counts: 5.9478093347 again
    assert shown_score(text, "rope") == pytest.approx(score, abs=float32_tolerance(score))
    assert_printed_close(str(shown_score(text, "sinusoidal")), "8.2543303859", 8.2543)  # the reading's additive score
    path.write_text(json.dumps({**session, "format": "something else"}), encoding="utf-8")
    assert main(["export-html", "--panel", "Positions", "--session", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "is not a Transformer Explorer session file" in err and err.count("\n") == 1


def test_check_lesson_refuses_a_malformed_prediction_naming_the_step_and_field(tmp_path, capsys):
    lesson = {"title": "t", "steps": [
        {"title": "s", "text": "x", "predict": "q?", "reveal": "r", "panel": "Positions",
         "prediction": {"kind": "choice", "options": ["a", "b"], "answer": "c"}},
        {"title": "s2", "text": "x", "predict": "q?", "reveal": "r",
         "prediction": {"kind": "number", "answer": 3, "tolerance": -1}}]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(lesson), encoding="utf-8")
    assert main(["check-lesson", str(path)]) == 2
    assert capsys.readouterr().out.splitlines() == [
        f"{path}: step 1: 'prediction': 'answer' 'c' is not one of its 'options'",
        f"{path}: step 2: 'prediction': 'tolerance' must be a number of at least 0, not -1"]
    assert main(["export-html", "--lesson", str(path), "--out", str(tmp_path / "page.html")]) == 2
    assert "--lesson: step 1: 'prediction': 'answer' 'c' is not one of its 'options' (and 1 more" in \
        capsys.readouterr().err
