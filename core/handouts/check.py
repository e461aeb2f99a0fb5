"""check-lesson's checks of a lesson's predictions: each rule computed on the step's figures (the ones its page and
window show), and a written answer checked against it."""

from __future__ import annotations

from core.handouts.collect import lesson_figures
from core.handouts.predictions import PredictionError, expected_answer
from core.lessons import Lesson


def prediction_problems(lesson: Lesson) -> list[str]:
    """One line per step whose prediction's answer cannot be computed or disagrees with the computation."""
    if not any(step.prediction is not None and step.prediction.rule for step in lesson.steps):
        return []
    problems = []
    for number, step, figures in lesson_figures(lesson):
        if step.prediction is None or not step.prediction.rule:
            continue
        if figures.note and not figures.values:
            problems.append(f"step {number}: 'prediction': 'rule' {step.prediction.rule!r} needs the step's "
                            f"figures, which are not computed here ({figures.note})")
            continue
        try:
            expected_answer(step.prediction, figures.values)
        except PredictionError as error:
            problems.append(f"step {number}: {error}")
    return problems


__all__ = ["prediction_problems"]
