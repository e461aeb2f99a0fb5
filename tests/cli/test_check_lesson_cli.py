"""`check-lesson`: one line per problem naming the file and the step, exit 2; a summary and exit 0 when clean."""

from __future__ import annotations

import json

from core.cli import main
from core.lessons import bundled_lesson_paths


def test_typos_are_listed_one_line_each_and_exit_2(tmp_path, capsys):
    path = tmp_path / "typos.json"
    path.write_text(json.dumps({"title": "t", "steps": [
        {"title": "a", "text": "x", "panel": "Parameters", "focus": "block_lable"},
        {"title": "b", "text": "The {{block_lable}}", "panel": "Parameters",
         "panel_settings": {"modle": "gpt2-small"}},
        {"title": "c", "text": "y", "panel": "Norms", "panel_settings": {"depth": 500}},
        {"title": "d", "text": "z", "panel": "Parametres"}]}))
    assert main(["check-lesson", str(path)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(": ")[1] for line in lines] == ["step 1", "step 2", "step 2", "step 3", "step 4"]
    for line, name in zip(lines, ["'block_lable'", "{{block_lable}}", "'modle'", "'depth'", "'Parametres'"]):
        assert name in line and line.startswith(str(path))


def test_every_bundled_lesson_is_clean(capsys):
    paths = [str(path) for path in bundled_lesson_paths()]
    assert main(["check-lesson", *paths]) == 0
    assert f"{len(paths)} lesson file(s) checked" in capsys.readouterr().out


def test_an_unreadable_file_is_a_problem_not_a_traceback(tmp_path, capsys):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    assert main(["check-lesson", str(path), str(tmp_path / "missing.json")]) == 2
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_a_text_past_the_trained_length_passes_where_the_window_takes_it(tmp_path, capsys):
    """The Causal lab and Families views take a text past the trained length where positions compute it (RoPE);
    a learned table's context is its bound, as in the window."""
    text = "ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun."
    for preset, expected in (("ctx-rope", 0), ("ctx-learned", 2)):
        path = tmp_path / f"{preset}.json"
        path.write_text(json.dumps({"title": "t", "steps": [
            {"title": "a", "text": "x", "panel": "Causal lab", "state": {"preset": preset, "text": text},
             "panel_settings": {"tab": "Attribution"}}]}))
        assert main(["check-lesson", str(path)]) == expected, capsys.readouterr().out
    assert "96 tokens exceed the model's context length of 64" in capsys.readouterr().out
