"""core.lesson_runs without torch work: the state each step shows, and figures typed into prose."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.lesson_runs import DEFAULT_TEXT, result_figures, step_states, typed_figure_problems
from core.lessons import LessonStep, parse_lesson


def states(*steps: dict) -> list[dict]:
    lesson = parse_lesson({"title": "t", "steps": [{"title": f"s{n}", "text": "x", **s} for n, s in enumerate(steps)]})
    return [values for _number, _step, values in step_states(lesson)]


def test_a_step_shows_what_the_steps_up_to_it_set_and_the_defaults_a_named_model_implies():
    shown = states({"state": {"preset": "tiny-gpt", "text": "To be", "edit": {"position": 1, "token": "a"}}},
                   {"state": {"seed": 3}},
                   {"state": {"text": "Again"}},
                   {"state": {"preset": "tiny-induction"}})
    assert shown[0] == {"preset": "tiny-gpt", "text": "To be", "edit": {"position": 1, "token": "a"}, "seed": 0,
                        "selected_layer": 0, "selected_head": 0}
    assert shown[1]["seed"] == 3 and shown[1]["edit"] == {"position": 1, "token": "a"}  # the text keeps its edit
    assert shown[2]["text"] == "Again" and "edit" not in shown[2]  # a new text is no edit
    assert shown[3]["preset"] == "tiny-induction" and shown[3]["seed"] == 3 and shown[3]["text"] == "Again"
    # Without a model named, the lab's own model and text stay: nothing is implied.
    assert states({"state": {"seed": 5}}) == [{"seed": 5}]
    assert states({"state": {"preset": "tiny-gpt"}})[0]["text"] == DEFAULT_TEXT


def step(reveal: str) -> LessonStep:
    return LessonStep("t", "Look.", "What?", reveal, "Causal lab")


def test_a_figure_of_the_result_typed_at_its_precision_is_refused_and_others_are_prose():
    figures = [6.628804, 0.63512, 2.16061]
    for typed in ("6.6288", "6.63", "6.6", "63.5%", "2.161"):
        assert typed_figure_problems(step(f"It reads {typed}."), figures), typed
    for typed in ("6.62", "0.5", "1.0", "{{ablation_summary}}", "L1H0", "3.9", "6.6289"):
        assert not typed_figure_problems(step(f"It reads {typed}."), figures), typed
    assert "'reveal': 6.63 is a figure the step computes" in typed_figure_problems(step("6.63"), figures)[0]


def test_the_figures_of_a_result_are_its_scalars_arrays_and_tables():
    @dataclass(frozen=True)
    class Inner:
        top: tuple

    @dataclass(frozen=True)
    class Result:
        loss: float
        scores: np.ndarray
        inner: Inner
        name: str
        flag: bool

    result = Result(2.5, np.array([[0.25, np.nan], [1.5, 3.0]]), Inner(((7, 0.125),)), "L1H0", True)
    assert sorted(result_figures(result)) == [0.125, 0.25, 1.5, 2.5, 3.0, 7.0]
