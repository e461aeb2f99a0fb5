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


def one_step(**step):
    return {"title": "x", "steps": [{"title": "a", "text": "b", **step}]}


def test_a_step_may_change_a_presets_fields_and_replace_one_token():
    state = parse_lesson(one_step(state={
        "preset": "transformer-base", "config": {"name": "base-layer", "architecture": "encoder",
                                                 "attention": "bidirectional", "n_layers": 1},
        "text": "the dog", "edit": {"position": 4, "token": "c"}})).steps[0].state
    config = state["config"]
    assert (config.name, config.architecture, config.n_layers, config.d_model) == ("base-layer", "encoder", 1, 512)
    assert state["edit"] == {"position": 4, "token": "c"}
    for bad, expected in (
        ({"config": {"n_layers": 1}}, "step 1: 'config': needs a 'preset' to change"),
        ({"preset": "gpt2-small", "config": {}}, "step 1: 'config': must be a non-empty object"),
        ({"preset": "gpt2-small", "config": {"colour": 1}}, "step 1: 'config': colour: unknown config field"),
        ({"preset": "gpt2-small", "config": {"d_model": 7}}, "step 1: 'config': n_heads: d_model 7 is not divisible"),
        ({"edit": {"position": -1, "token": "a"}}, "step 1: 'edit': 'position' must be an integer"),
        ({"edit": {"position": 0, "token": ""}}, "step 1: 'edit': 'token' must be the text of one token"),
        ({"edit": [0, "a"]}, "step 1: 'edit': must be an object with 'position' and 'token'"),
    ):
        with pytest.raises(LessonError) as caught:
            parse_lesson(one_step(state=bad))
        assert str(caught.value).startswith(expected), str(caught.value)


def test_a_step_may_not_quote_its_own_answer_before_the_reveal():
    with pytest.raises(LessonError, match=r"step 1: 'text': \{\{verdict\}\} would give away the answer"):
        parse_lesson(one_step(text="Look: {{verdict}}", predict="?", reveal="It is {{verdict}}", panel="Tokens & masks"))
    with pytest.raises(LessonError, match=r"'predict': \{\{forward_plot\}\} would give away"):
        parse_lesson(one_step(predict="{{forward_plot}}?", reveal="See.", panel="Norms", focus="forward_plot"))
    step = parse_lesson(one_step(predict="?", reveal="{{caption}} and {{parameter_caption}}", panel="Norms",
                                 focus="gradient_plot")).steps[0]
    assert step.answer_widgets() == ["caption", "parameter_caption", "gradient_plot"]


def test_covers_default_to_every_result_the_step_does_not_show():
    step = parse_lesson(one_step(text="The depth is set.", predict="?", reveal="{{caption}}", panel="Norms",
                                 shows=["forward_plot"])).steps[0]
    covered = step.covered_parts()
    assert "caption" in covered and "gradient_plot" in covered and "status_model" in covered
    assert "forward_plot" not in covered and "norm_combo" not in covered  # shown set-up and a control
    assert parse_lesson(one_step(text="No question.", panel="Norms")).steps[0].covered_parts() == []


@pytest.mark.parametrize(("fields", "wanted"), [
    ({"focus": "block_lable"}, r"step 1: 'focus': 'block_lable' is not a part of the Parameters panel; did you mean 'block_label'"),
    ({"text": "The {{block_lable}}"}, r"step 1: 'text': \{\{block_lable\}\} is not a part of the Parameters panel"),
    ({"panel_settings": {"modle": "gpt2-small"}}, r"step 1: 'panel_settings': unknown setting 'modle' .*did you mean 'model'"),
    ({"panel_settings": {"tab": 9}}, r"step 1: 'panel_settings': 'tab' must be from 0 to 3, not 9"),
    ({"panel_settings": {"model": "gpt5"}}, r"step 1: 'panel_settings': 'model' must be one of"),
    ({"panel": "Parametres", "focus": ""}, r"step 1: 'panel': unknown panel 'Parametres'"),
])
def test_a_typo_is_refused_naming_the_step_and_the_name(fields, wanted):
    with pytest.raises(LessonError, match=wanted):
        parse_lesson(one_step(**{"panel": "Parameters", **fields}))


def test_every_problem_is_listed_one_line_each(tmp_path):
    from core.lessons import lesson_problems

    path = tmp_path / "typos.json"
    path.write_text(json.dumps({"title": "t", "steps": [
        {"title": "a", "text": "x", "panel": "Parameters", "focus": "block_lable"},
        {"title": "b", "text": "{{total_lable}}", "panel": "Parameters", "panel_settings": {"modle": ""}}]}))
    problems = lesson_problems(path)
    assert [line.split(":")[0] for line in problems] == ["step 1", "step 2", "step 2"]


def test_every_bundled_lesson_is_clean():
    from core.lessons import lesson_problems

    assert {path.name: lesson_problems(path) for path in bundled_lesson_paths()} == \
        {path.name: [] for path in bundled_lesson_paths()}


def test_the_authors_guide_lists_the_declared_parts():
    from pathlib import Path

    from core.lesson_parts import parts_markdown

    guide = Path(__file__).resolve().parents[2] / "docs" / "lessons.md"
    assert parts_markdown() in guide.read_text(encoding="utf-8"), "docs/lessons.md: regenerate the parts tables"
