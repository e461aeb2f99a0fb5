"""A lesson step's prediction: malformed ones refused naming the step and field, answers graded, rules computed."""

from __future__ import annotations

import copy

import pytest

from core.handouts.check import prediction_problems
from core.handouts.predictions import Prediction, PredictionError, expected_answer, is_right, parse_given
from core.lessons import LessonError, parse_lesson

ROPE_STEP = {
    "title": "Rotate", "text": "Drag m and n together.", "predict": "Will the score change?",
    "reveal": "It is {{rope_score_label}}.", "panel": "Positions",
    "panel_settings": {"tab": "RoPE scrubber", "source": "random", "m": 3, "n": 1},
}


def lesson_with(prediction, **step_changes):
    step = {**copy.deepcopy(ROPE_STEP), **step_changes}
    if prediction is not None:
        step["prediction"] = prediction
    return {"title": "A lesson", "steps": [{"title": "Intro", "text": "First."}, step]}


@pytest.mark.parametrize(("prediction", "message"), [
    ({"kind": "choice", "options": ["yes", "no"]}, "step 2: 'prediction': needs an 'answer' or a 'rule'"),
    ({"kind": "choice", "options": ["yes", "no"], "answer": "maybe"},
     "step 2: 'prediction': 'answer' 'maybe' is not one of its 'options'"),
    ({"kind": "number", "answer": 3, "tolerance": -0.5},
     "step 2: 'prediction': 'tolerance' must be a number of at least 0"),
    ({"kind": "number", "answer": "three"}, "step 2: 'prediction': 'answer' must be a finite number"),
    ({"kind": "choice", "options": ["yes"], "answer": "yes"}, "step 2: 'prediction': 'options' must be a list of 2"),
    ({"kind": "choice", "options": ["yes", "yes"], "answer": "yes"},
     "step 2: 'prediction': 'options' must be distinct"),
    ({"kind": "number", "options": ["1", "2"], "answer": 1}, "step 2: 'prediction': 'options' belong to a choice"),
    ({"kind": "token", "answer": ""}, "step 2: 'prediction': 'answer' must be the text of one token"),
    ({"kind": "guess", "answer": "x"}, "step 2: 'prediction': 'kind' must be one of choice, number, token"),
    ({"kind": "token", "answer": "x", "shout": 1}, "step 2: 'prediction': unknown field 'shout'"),
    ("yes", "step 2: 'prediction': must be an object"),
])
def test_a_malformed_prediction_is_refused_naming_the_step_and_field(prediction, message):
    with pytest.raises(LessonError) as caught:
        parse_lesson(lesson_with(prediction))
    assert str(caught.value).startswith(message)


def test_a_prediction_needs_a_reveal_to_check_it_against():
    data = lesson_with({"kind": "token", "answer": "x"})
    del data["steps"][1]["reveal"]
    with pytest.raises(LessonError, match=r"^step 2: 'prediction': needs a 'predict' question and a 'reveal'"):
        parse_lesson(data)


def test_grading_a_number_within_its_tolerance_and_a_choice_or_token_exactly():
    number = Prediction("number", tolerance=0.5)
    assert is_right(number, 10.4, 10.0) and is_right(number, 9.5, 10.0)
    assert not is_right(number, 10.6, 10.0) and not is_right(number, None, 10.0)
    assert parse_given(number, " 38,597,376 ") == 38_597_376 and parse_given(number, "lots") is None
    choice = Prediction("choice", ("yes", "no"), "yes")
    assert is_right(choice, "yes", "yes") and not is_right(choice, "no", "yes")
    token = Prediction("token", answer="u")
    assert is_right(token, "u", "u") and not is_right(token, "U", "u") and not is_right(token, "u ", "u")


def test_a_rule_answer_comes_from_the_step_figures_and_a_written_answer_must_agree():
    prediction = Prediction("choice", ("stays the same", "changes"), rule="rope_offset_constant")
    assert expected_answer(prediction, {"rope_offset_constant": "changes"}) == "changes"
    with pytest.raises(PredictionError, match="'rule' 'rope_offset_constant' is not a figure this step computes"):
        expected_answer(prediction, {"other": 1})
    with pytest.raises(PredictionError, match="the rule's value 'sideways' is not one of its 'options'"):
        expected_answer(prediction, {"rope_offset_constant": "sideways"})
    disagreeing = Prediction("number", answer=7.0, rule="rope_score", tolerance=0.01)
    with pytest.raises(PredictionError, match="'answer' 7.0 disagrees with the step's computed rope_score"):
        expected_answer(disagreeing, {"rope_score": 5.9478})


def _rope_score_in_test(m: int, n: int) -> float:
    """The reading's RoPE script: np.random.seed(0), q and k of width 8, pairs (2i, 2i+1) rotated by m*10000^(-2i/d)."""
    import numpy as np

    np.random.seed(0)
    q, k = np.random.randn(8), np.random.randn(8)

    def rotate(x, position):
        pairs = x.reshape(4, 2)
        theta = position * 10000.0 ** (-np.arange(4) * 2 / 8)
        cos, sin = np.cos(theta), np.sin(theta)
        return np.stack([pairs[:, 0] * cos - pairs[:, 1] * sin, pairs[:, 0] * sin + pairs[:, 1] * cos], 1).ravel()

    return float(rotate(q, m) @ rotate(k, n))


def test_check_lesson_computes_each_rule_and_checks_a_written_answer():
    score = _rope_score_in_test(3, 1)
    good = parse_lesson(lesson_with({"kind": "number", "rule": "rope_score", "answer": round(score, 3),
                                     "tolerance": 0.01}))
    assert prediction_problems(good) == []
    wrong = parse_lesson(lesson_with({"kind": "number", "rule": "rope_score", "answer": 12.03, "tolerance": 0.01}))
    (problem,) = prediction_problems(wrong)
    assert problem.startswith("step 2: 'prediction': 'answer' 12.03 disagrees with the step's computed rope_score = ")
    assert float(problem.rsplit("= ", 1)[1]) == pytest.approx(score, rel=1e-12)
    unknown = parse_lesson(lesson_with({"kind": "number", "rule": "rope_scor"}))
    assert prediction_problems(unknown)[0].startswith("step 2: 'prediction': 'rule' 'rope_scor' is not a figure")
    elsewhere = parse_lesson(lesson_with({"kind": "number", "rule": "rope_score"},
                                         panel="Train", panel_settings={}, reveal="Look."))
    assert prediction_problems(elsewhere)[0].startswith("step 2: 'prediction': 'rule' 'rope_score' needs the step's")
