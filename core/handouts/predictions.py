"""A lesson step's checked prediction: what the student commits before the reveal, and how it is graded.

In a lesson file, beside "predict" (the question) and "reveal":

    "prediction": {
      "kind": "choice",                      # "choice", "number" or "token"
      "options": ["stays the same", "changes"],  # choice only: 2 to MAX_OPTIONS distinct strings
      "answer": "stays the same",            # the answer as written, or (and) ...
      "rule": "rope_offset_constant",        # ... a figure the step computes (core.handouts.collect), so that
                                             #   the answer is always what the screen shows
      "tolerance": 0.5                       # number only: how far from the answer still counts as right
    }

A prediction needs the step's "predict" and "reveal". `parse_prediction` refuses a malformed one with a message
naming the field ("'prediction': 'answer' 'moves' is not one of its 'options'"); check-lesson computes each rule and
checks a written answer against it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KINDS = ("choice", "number", "token")
PREDICTION_KEYS = frozenset({"kind", "options", "answer", "rule", "tolerance"})
MAX_OPTIONS = 8
MAX_OPTION_CHARS = 120
MAX_TOKEN_CHARS = 64
MAX_NUMBER = 1e15  # a count of parameters fits; anything beyond is a typing slip
MAX_RULE_CHARS = 64


class PredictionError(ValueError):
    """A malformed prediction; the message starts with the field at fault."""


@dataclass(frozen=True)
class Prediction:
    kind: str  # one of KINDS
    options: tuple[str, ...] = ()  # choice only
    answer: str | float | None = None  # as written in the lesson; None where a rule computes it
    rule: str = ""  # a named figure of the step's computation; "" for a written answer only
    tolerance: float = 0.0  # number only

    def to_json(self) -> dict[str, Any]:
        """The fields a page needs to ask and grade (the answer comes separately: it may be computed)."""
        return {"kind": self.kind, "options": list(self.options), "tolerance": self.tolerance}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_prediction(data: Any) -> Prediction:
    """A validated prediction; PredictionError naming the field otherwise."""
    where = "'prediction'"
    if not isinstance(data, dict):
        raise PredictionError(f"{where}: must be an object with 'kind' and an 'answer' or a 'rule'")
    unknown = sorted(set(data) - PREDICTION_KEYS)
    if unknown:
        raise PredictionError(f"{where}: unknown field {unknown[0]!r}; use {', '.join(sorted(PREDICTION_KEYS))}")
    kind = data.get("kind")
    if kind not in KINDS:
        raise PredictionError(f"{where}: 'kind' must be one of {', '.join(KINDS)}, not {str(kind)[:40]!r}")
    rule = data.get("rule", "")
    if not isinstance(rule, str) or len(rule) > MAX_RULE_CHARS or (rule and not rule.replace("_", "").isalnum()):
        raise PredictionError(f"{where}: 'rule' must be the name of a figure the step computes")
    if "answer" not in data and not rule:
        raise PredictionError(f"{where}: needs an 'answer' or a 'rule' that computes it")
    options = _options(data, kind, where)
    tolerance = data.get("tolerance", 0.0)
    if "tolerance" in data and kind != "number":
        raise PredictionError(f"{where}: 'tolerance' applies to a number prediction only")
    if not _is_number(tolerance) or tolerance < 0:
        raise PredictionError(f"{where}: 'tolerance' must be a number of at least 0, not {str(tolerance)[:40]}")
    answer = data.get("answer")
    if "answer" in data:
        problem = answer_problem(kind, options, answer)
        if problem:
            raise PredictionError(f"{where}: 'answer' {problem}")
    return Prediction(kind, options, answer, rule, float(tolerance))


def _options(data: Mapping[str, Any], kind: str, where: str) -> tuple[str, ...]:
    options = data.get("options")
    if kind != "choice":
        if options is not None:
            raise PredictionError(f"{where}: 'options' belong to a choice prediction only")
        return ()
    if not isinstance(options, list) or not 2 <= len(options) <= MAX_OPTIONS:
        raise PredictionError(f"{where}: 'options' must be a list of 2 to {MAX_OPTIONS} strings")
    if not all(isinstance(option, str) and option.strip() and len(option) <= MAX_OPTION_CHARS for option in options):
        raise PredictionError(f"{where}: 'options' must be non-empty strings of at most {MAX_OPTION_CHARS} characters")
    if len(set(options)) != len(options):
        raise PredictionError(f"{where}: 'options' must be distinct")
    return tuple(options)


def answer_problem(kind: str, options: tuple[str, ...], answer: Any) -> str:
    """Why `answer` cannot answer a prediction of this kind ("" when it can): the written one and a computed one."""
    if kind == "choice":
        if not isinstance(answer, str):
            return "must be one of the 'options'"
        return "" if answer in options else f"{answer[:60]!r} is not one of its 'options'"
    if kind == "number":
        if not _is_number(answer) or abs(answer) > MAX_NUMBER:
            return f"must be a finite number (at most {MAX_NUMBER:g} in size), not {str(answer)[:40]}"
        return ""
    if not isinstance(answer, str) or not answer or len(answer) > MAX_TOKEN_CHARS:
        return f"must be the text of one token, 1 to {MAX_TOKEN_CHARS} characters"
    return ""


def expected_answer(prediction: Prediction, values: Mapping[str, Any] | None) -> str | float:
    """The answer the step grades against: the rule's figure where the prediction has one (from `values`, the
    step's computed figures), else the written answer. PredictionError when the rule cannot be evaluated."""
    if not prediction.rule:
        return prediction.answer  # type: ignore[return-value]
    if values is None or prediction.rule not in values:
        known = ", ".join(sorted(values or {})) or "none"
        raise PredictionError(f"'prediction': 'rule' {prediction.rule!r} is not a figure this step computes "
                              f"(it computes: {known})")
    value = values[prediction.rule]
    problem = answer_problem(prediction.kind, prediction.options, value)
    if problem:
        raise PredictionError(f"'prediction': the rule's value {problem}")
    if prediction.answer is not None and not is_right(prediction, prediction.answer, value):
        raise PredictionError(f"'prediction': 'answer' {prediction.answer!r} disagrees with the step's computed "
                              f"{prediction.rule} = {value!r}")
    return value


def parse_given(prediction: Prediction, text: str) -> str | float | None:
    """What a student typed or picked, as the prediction's kind reads it; None for an unreadable number."""
    if prediction.kind != "number":
        return text
    try:
        value = float(text.strip().replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def is_right(prediction: Prediction, given: Any, answer: Any) -> bool:
    """Whether a committed prediction matches the answer: a choice or token exactly, a number within tolerance
    (and float32 rounding of the answer, so that a number the screen printed counts)."""
    if prediction.kind == "number":
        if not _is_number(given) or not _is_number(answer):
            return False
        rounding = 1e-6 * abs(answer)
        return abs(given - answer) <= prediction.tolerance + rounding
    return given == answer


def answer_text(value: Any) -> str:
    """An answer as the page and the window print it."""
    if isinstance(value, float) and value.is_integer() and abs(value) < MAX_NUMBER:
        return f"{int(value):,}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


__all__ = ["KINDS", "Prediction", "PredictionError", "answer_problem", "answer_text", "expected_answer", "is_right",
           "parse_given", "parse_prediction"]
