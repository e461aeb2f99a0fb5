"""Lesson files: the bundled ones validate, and every problem names its step and field."""

from __future__ import annotations

import copy
import json

import pytest

from core.lessons import LessonError, bundled_lesson_paths, load_lesson, parse_lesson

GOOD = {
    "title": "A lesson",
    "description": "for the tests",
    "steps": [
        {"title": "one", "text": "Read this."},
        {"title": "two", "text": "And this.", "panel": "Norms", "state": {"preset": "tiny-gpt", "seed": 1},
         "panel_settings": {"depth": 3}, "predict": "Which?", "reveal": "That: {{caption}}", "focus": "caption"},
        {"title": "three", "text": "Last.", "state": {"theme": "projector", "font_scale": 1.6}},
    ],
}


def broken(step: int, **fields) -> dict:
    data = copy.deepcopy(GOOD)
    data["steps"][step - 1].update(fields)
    return data


def message(data, **kwargs) -> str:
    with pytest.raises(LessonError) as caught:
        parse_lesson(data, **kwargs)
    return str(caught.value)


def test_a_good_lesson_parses():
    lesson = parse_lesson(GOOD, panels=["Norms"], themes=["light", "projector"])
    assert lesson.title == "A lesson" and len(lesson.steps) == 3
    second = lesson.steps[1]
    assert second.state == {"preset": "tiny-gpt", "seed": 1}
    assert second.panel_settings == {"depth": 3}
    assert second.placeholders() == ["caption"]


@pytest.mark.parametrize(
    ("step", "fields", "expected"),
    [
        (3, {"state": {"preset": "gpt5"}}, "step 3: 'preset': unknown preset 'gpt5'"),
        (2, {"title": ""}, "step 2: 'title': must be a non-empty string"),
        (1, {"text": 7}, "step 1: 'text': must be a non-empty string"),
        (2, {"state": {"seed": -1}}, "step 2: 'seed': must be an integer from 0 to 2,147,483,647"),
        (2, {"state": {"seed": True}}, "step 2: 'seed': must be an integer from 0 to 2,147,483,647"),
        (3, {"state": {"font_scale": 9}}, "step 3: 'font_scale': must be a number from 0.5 to 3.0"),
        (3, {"state": {"colour": "red"}}, "step 3: 'state': unknown field 'colour'"),
        (1, {"state": []}, "step 1: 'state': must be an object"),
        (1, {"panel_settings": {"depth": 3}}, "step 1: 'panel_settings': needs a 'panel'"),
        (1, {"focus": "caption"}, "step 1: 'focus': needs a 'panel'"),
        (2, {"panel_settings": [1]}, "step 2: 'panel_settings': must be an object"),
        (1, {"reveal": "it"}, "step 1: 'reveal': needs a 'predict' question"),
        (1, {"text": "see {{caption}}"}, "step 1: 'text': a {{name}} placeholder needs a 'panel'"),
        (1, {"pannel": "Norms"}, "step 1: unknown field 'pannel'"),
    ],
)
def test_errors_name_the_step_and_the_field(step, fields, expected):
    assert message(broken(step, **fields)).startswith(expected)


def test_unknown_panel_and_theme_are_refused_when_the_names_are_known():
    assert message(broken(2, panel="Attention"), panels=["Norms"]).startswith("step 2: 'panel': unknown panel 'Attention'")
    assert message(GOOD, themes=["light"]).startswith("step 3: 'theme': unknown theme 'projector'")


def test_lesson_level_errors():
    assert message([]).startswith("a lesson must be a JSON object")
    assert message({"title": "x", "steps": []}) == "'steps': must be a non-empty list"
    assert message({"steps": [{"title": "a", "text": "b"}]}) == "'title': is missing"
    assert message({"title": "x", "steps": ["text"]}) == "step 1: must be an object"
    assert message({**GOOD, "author": "me"}).startswith("unknown field 'author'")


def test_file_errors_are_lesson_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json", encoding="utf-8")
    with pytest.raises(LessonError, match="bad.json is not valid JSON"):
        load_lesson(bad)
    with pytest.raises(LessonError, match="missing.json does not exist"):
        load_lesson(tmp_path / "missing.json")
    good = tmp_path / "good.json"
    good.write_text(json.dumps(GOOD), encoding="utf-8")
    assert load_lesson(good).source == str(good)


def test_every_bundled_lesson_validates():
    paths = bundled_lesson_paths()
    assert len(paths) >= 5
    titles = set()
    for path in paths:
        lesson = load_lesson(path, themes=["light", "dark", "projector"])
        titles.add(lesson.title)
        assert lesson.description, path.name
        for step in lesson.steps:
            assert step.panel, f"{path.name}: '{step.title}' shows no panel"
    assert len(titles) == len(paths)
