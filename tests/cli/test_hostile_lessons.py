"""`check-lesson` on hostile lessons for every Causal lab and Families view and every kind of step: a lesson the
window cannot show as written is refused in one line naming the step and the field; the others pass (and
tests/gui/test_hostile_lessons_window.py opens and draws them)."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from tests.hostile_lessons import CASES, INDUCTION_TEXT, write_cases


@pytest.fixture(scope="module")
def lesson_files(tmp_path_factory):
    return write_cases(tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize("name, refused", [(name, refused) for name, _lesson, refused in CASES], ids=lambda v: str(v))
def test_check_lesson_refuses_what_the_window_cannot_show(lesson_files, capsys, name, refused):
    code = main(["check-lesson", str(lesson_files[name])])
    out, err = capsys.readouterr()
    if refused is None:
        assert code == 0, out
        return
    step, field = refused
    assert code == 2 and "have problems" in err
    first = out.splitlines()[0]
    assert first.startswith(f"{lesson_files[name]}: step {step}: ") and field in first, first
    assert "Traceback" not in out + err


def test_a_figure_typed_at_any_precision_must_be_a_quote(tmp_path, capsys):
    """The ablation's loss typed with fewer decimals than the view prints is still the step's figure; a number
    the computation does not produce, and a placeholder quoting it, are fine."""
    steps = [{"title": "a", "text": "Look.", "panel": "Causal lab",
              "state": {"preset": "tiny-induction", "seed": 0, "text": INDUCTION_TEXT},
              "panel_settings": {"tab": "Ablation", "heads": "L1H0"}, "predict": "How much?"}]
    cases = {"6.63": 2, "a loss of 12.34 or {{ablation_summary}}": 0, "66.29%": 0}
    for typed, expected in cases.items():
        path = tmp_path / "typed.json"
        path.write_text(json.dumps({"title": "t", "steps": [{**steps[0], "reveal": f"It reads {typed}."}]}))
        assert main(["check-lesson", str(path)]) == expected, typed
        out = capsys.readouterr().out
        assert (f"'reveal': {typed} is a figure the step computes" in out) == bool(expected), out
