"""Lessons: guided walk-throughs of the reading, one JSON file each, loaded and validated here.

A lesson file is one JSON object:

    {
      "title": "The causal mask",                  # required, non-empty string
      "description": "Why the past cannot see...", # optional string (shown in the Lessons menu tip)
      "steps": [                                   # required, at least one step
        {
          "title": "Edit a token, watch the past", # required, non-empty string
          "text": "Paragraphs for the student.",   # required, non-empty string; blank lines split paragraphs
          "predict": "What will positions 0-4 do?",# optional: a question asked before the result is revealed
          "reveal": "Look at the {{verdict}} box.",# optional: shown by the Reveal button (needs "predict");
                                                   #   until then the widgets it quotes and the focus
                                                   #   widget are covered (they hold the answer)
          "panel": "Tokens & masks",               # optional: the title of the panel to show
          "state": {                               # optional: the lab's state for this step
            "preset": "textbook-block",            #   a preset name (core.presets)
            "config": {"n_layers": 1},             #   ModelConfig fields changed on top of that preset
            "seed": 0,                             #   an integer >= 0
            "text": "To be, or not to be",         #   the input text (non-empty)
            "edit": {"position": 3, "token": "X"}, #   then one token replaced, as in the token strip
            "theme": "projector",                  #   a theme name (checked by the app)
            "font_scale": 1.6,                     #   a number from 0.5 to 3
            "selected_layer": 0,                   #   integers >= 0 (clamped to the model)
            "selected_head": 0
          },
          "panel_settings": {"mask_mode": "causal"}, # optional: passed to that panel's restore_settings
          "focus": "verdict",                      # optional: a widget of that panel (attribute or
                                                   #   objectName) outlined for a few seconds
          "shows": ["strip"],                      # optional: the panel's result parts that are the step's
                                                   #   set-up, on screen before Reveal (needs "reveal")
          "cover": ["propagation_map"],            # optional: parts covered until Reveal besides the
                                                   #   defaults (needs "reveal")
          "prediction": {"kind": "number", "rule": "first_changed_position"}
                                                   # optional: the answer the student commits before Reveal
        }                                          #   (needs "reveal"; core.handouts.predictions)
      ]
    }

Text fields are plain text, shown as such (never as markup). Titles hold at most MAX_TITLE_CHARS
characters, "text", "predict" and "reveal" MAX_PROSE_CHARS, the state's "text" MAX_TEXT_CHARS, a
seed at most MAX_SEED (core.limits); the file is a regular file of at most MAX_FILE_BYTES. In "text", "predict" and "reveal", `{{name}}` stands for the text the
panel's widget `name` shows when the step is displayed or revealed, so a lesson quotes the app's own
computed numbers instead of typing them in. "panel_settings" and "focus" need "panel".

Covers by default: until Reveal, a step with a "reveal" covers every result part of its panel
(core.lesson_parts) except those it lists in "shows" or quotes in its text or question. Names in
"focus", "shows", "cover" and `{{name}}` must be parts core.lesson_parts declares for the step's panel,
and "panel_settings" keys and values must be ones it declares; `lesson_problems` lists every problem.

Any problem raises LessonError with a message naming the step (counted from 1) and the field, for
example "step 3: 'preset': unknown preset 'gpt5'". Which panels and themes exist is the app's
business: `parse_lesson` checks them only when it is given the names.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.config import ConfigError, ModelConfig
from core.handouts.predictions import Prediction, PredictionError, parse_prediction
from core.json_files import JsonFileError, read_json_document
from core.lesson_parts import PANEL_PARTS
from core.limits import MAX_LESSON_STEPS, MAX_PROSE_CHARS, MAX_SEED, MAX_TEXT_CHARS, MAX_TITLE_CHARS, settings_problem
from core.presets import PRESETS
from resources import resource_path

BUNDLED_LESSONS_DIR = resource_path("lessons")
LESSON_KEYS = frozenset({"title", "description", "steps"})
STEP_KEYS = frozenset({"title", "text", "predict", "reveal", "panel", "state", "panel_settings", "focus", "shows", "cover",
                       "prediction"})
MAX_COVERED = 20  # widgets a step may cover until Reveal
STATE_KEYS = ("preset", "config", "seed", "text", "edit", "theme", "font_scale", "selected_layer", "selected_head")
MAX_EDIT_TOKEN_CHARS = 64  # one token's text: a character, a word, a BPE piece
FONT_SCALE_RANGE = (0.5, 3.0)
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}")
MAX_FILE_BYTES = 1_000_000  # a lesson is prose; anything larger is the wrong file
MAX_SELECTION = 10_000  # a layer or head index; the app clamps it to the model


class LessonError(ValueError):
    """A lesson file that cannot be used; the message names the step and field at fault."""


@dataclass(frozen=True)
class LessonStep:
    title: str
    text: str
    predict: str = ""  # the question asked before the reveal; "" for a step without one
    reveal: str = ""  # what the Reveal button shows
    panel: str = ""  # title of the panel to show; "" leaves the current one
    state: Mapping[str, Any] = field(default_factory=dict)  # LabState values: preset, seed, text, ...
    panel_settings: Mapping[str, Any] = field(default_factory=dict)  # for the panel's restore_settings
    focus: str = ""  # the panel widget (attribute or objectName) to outline
    cover: tuple[str, ...] = ()  # more widgets that show the answer, covered until Reveal
    shows: tuple[str, ...] = ()  # result parts of the panel that are the step's set-up: not covered
    prediction: Prediction | None = None  # what the student commits before Reveal; None asks nothing to commit

    def placeholders(self) -> list[str]:
        """The widget names that `{{name}}` refers to in this step's text, question and reveal."""
        return [name for part in (self.text, self.predict, self.reveal) for name in PLACEHOLDER.findall(part)]

    def answer_widgets(self) -> list[str]:
        """The widgets that hold this step's answer, covered until Reveal: those its reveal quotes, and its focus."""
        if not self.reveal:
            return []
        return list(dict.fromkeys([*PLACEHOLDER.findall(self.reveal), *([self.focus] if self.focus else []), *self.cover]))

    def asked_parts(self) -> list[str]:
        """The parts the step's text and question quote: on screen before Reveal, by definition."""
        return [name for part in (self.text, self.predict) for name in PLACEHOLDER.findall(part)]

    def covered_parts(self) -> list[str]:
        """What stays covered until Reveal: the answer widgets and every other result part of the panel
        that the step neither shows nor quotes in its question (nothing when the step asks nothing)."""
        if not self.reveal:
            return []
        declared = PANEL_PARTS.get(self.panel)
        defaults = declared.results() if declared is not None else []
        kept = {*self.shows, *self.asked_parts()}
        return list(dict.fromkeys([*self.answer_widgets(), *(name for name in defaults if name not in kept)]))


@dataclass(frozen=True)
class Lesson:
    title: str
    description: str
    steps: tuple[LessonStep, ...]
    source: str = ""  # the file it came from, for messages


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(data: Mapping[str, Any], key: str, where: str, required: bool, limit: int = MAX_PROSE_CHARS) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        problem = "is missing" if value is None else "must be a non-empty string" if required else "must be a string"
        raise LessonError(f"{where}'{key}': {problem}")
    if len(value) > limit:
        raise LessonError(f"{where}'{key}': {len(value):,} characters, more than the {limit:,} allowed")
    return value


def _state(value: Any, where: str, themes: Collection[str] | None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise LessonError(f"{where}'state': must be an object")
    for key in value:
        if key not in STATE_KEYS:
            raise LessonError(f"{where}'state': unknown field {key!r}; use {', '.join(STATE_KEYS)}")
    preset = value.get("preset")
    if "preset" in value and (not isinstance(preset, str) or preset not in PRESETS):
        raise LessonError(f"{where}'preset': unknown preset {preset!r}")
    for key, high in (("seed", MAX_SEED), ("selected_layer", MAX_SELECTION), ("selected_head", MAX_SELECTION)):
        if key in value and (not _is_int(value[key]) or not 0 <= value[key] <= high):
            raise LessonError(f"{where}'{key}': must be an integer from 0 to {high:,}, not {_short(value[key])}")
    if "text" in value and (not isinstance(value["text"], str) or not value["text"]):
        raise LessonError(f"{where}'text': must be a non-empty string")
    if "text" in value and len(value["text"]) > MAX_TEXT_CHARS:
        raise LessonError(f"{where}'text': {len(value['text']):,} characters, more than the {MAX_TEXT_CHARS:,} allowed")
    if "config" in value:
        value = {**value, "config": _config(value, where)}
    if "edit" in value:
        _edit(value["edit"], where)
    theme = value.get("theme")
    if "theme" in value and (not isinstance(theme, str) or (themes is not None and theme not in themes)):
        raise LessonError(f"{where}'theme': unknown theme {theme!r}")
    scale = value.get("font_scale")
    low, high = FONT_SCALE_RANGE
    is_number = isinstance(scale, (int, float)) and not isinstance(scale, bool)
    if "font_scale" in value and (not is_number or not low <= scale <= high):
        raise LessonError(f"{where}'font_scale': must be a number from {low} to {high}, not {_short(scale)}")
    return dict(value)


def _config(state: Mapping[str, Any], where: str) -> ModelConfig:
    """The state's "config": fields of ModelConfig changed on top of the state's preset, checked as the sidebar would."""
    changes = state["config"]
    if not isinstance(changes, dict) or not changes:
        raise LessonError(f"{where}'config': must be a non-empty object of model config fields")
    if "preset" not in state:
        raise LessonError(f"{where}'config': needs a 'preset' to change")
    try:
        return ModelConfig.from_dict({**PRESETS[state["preset"]].to_dict(), **changes})
    except ConfigError as error:
        raise LessonError(f"{where}'config': {error}") from None


def _edit(value: Any, where: str) -> None:
    """The state's "edit": one token replaced, {"position": 4, "token": "c"}, measured like an edit in the token strip."""
    if not isinstance(value, dict) or set(value) != {"position", "token"}:
        raise LessonError(f"{where}'edit': must be an object with 'position' and 'token'")
    position, token = value["position"], value["token"]
    if not _is_int(position) or not 0 <= position < MAX_TEXT_CHARS:
        raise LessonError(f"{where}'edit': 'position' must be an integer from 0 to {MAX_TEXT_CHARS - 1:,}, not {_short(position)}")
    if not isinstance(token, str) or not token or len(token) > MAX_EDIT_TOKEN_CHARS:
        raise LessonError(f"{where}'edit': 'token' must be the text of one token, 1 to {MAX_EDIT_TOKEN_CHARS} characters")


def _short(value: Any, limit: int = 40) -> str:
    """A value for a message, cut short: a refused value may be a 100,000-character string."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _step(data: Any, number: int, panels: Collection[str] | None, themes: Collection[str] | None) -> LessonStep:
    where = f"step {number}: "
    if not isinstance(data, dict):
        raise LessonError(f"step {number}: must be an object")
    for key in data:
        if key not in STEP_KEYS:
            raise LessonError(f"{where}unknown field {key!r}")
    title = _text(data, "title", where, required=True, limit=MAX_TITLE_CHARS)
    text = _text(data, "text", where, required=True)
    predict = _text(data, "predict", where, required=False)
    reveal = _text(data, "reveal", where, required=False)
    if reveal and not predict:
        raise LessonError(f"{where}'reveal': needs a 'predict' question to answer")
    panel = _text(data, "panel", where, required=False, limit=MAX_TITLE_CHARS)
    if panel and panels is not None and panel not in panels:
        raise LessonError(f"{where}'panel': unknown panel {_short(panel)}; use one of: {', '.join(panels)}")
    state = _state(data["state"], where, themes) if "state" in data else {}
    settings = data.get("panel_settings", {})
    if not isinstance(settings, dict):
        raise LessonError(f"{where}'panel_settings': must be an object")
    problem = settings_problem(settings, "'panel_settings'")
    if problem:
        raise LessonError(f"{where}{problem}")
    focus = _text(data, "focus", where, required=False, limit=MAX_TITLE_CHARS)
    for key, value in (("panel_settings", settings), ("focus", focus)):
        if value and not panel:
            raise LessonError(f"{where}'{key}': needs a 'panel'")
    cover = data.get("cover", [])
    if not isinstance(cover, list) or len(cover) > MAX_COVERED or not all(
            isinstance(name, str) and PLACEHOLDER.fullmatch(f"{{{{{name}}}}}") for name in cover):
        raise LessonError(f"{where}'cover': must be a list of at most {MAX_COVERED} widget names")
    if cover and not reveal:
        raise LessonError(f"{where}'cover': needs a 'reveal' that uncovers them")
    if cover and not panel:
        raise LessonError(f"{where}'cover': needs a 'panel'")
    shows = data.get("shows", [])
    if not isinstance(shows, list) or len(shows) > MAX_COVERED * 2 or not all(
            isinstance(name, str) and PLACEHOLDER.fullmatch(f"{{{{{name}}}}}") for name in shows):
        raise LessonError(f"{where}'shows': must be a list of at most {MAX_COVERED * 2} part names")
    if shows and not reveal:
        raise LessonError(f"{where}'shows': needs a 'reveal' (a step without one covers nothing)")
    if shows and not panel:
        raise LessonError(f"{where}'shows': needs a 'panel'")
    prediction = None
    if "prediction" in data:
        if not reveal:
            raise LessonError(f"{where}'prediction': needs a 'predict' question and a 'reveal' to check it against")
        try:
            prediction = parse_prediction(data["prediction"])
        except PredictionError as error:
            raise LessonError(f"{where}{error}") from None
    step = LessonStep(title, text, predict, reveal, panel, state, dict(settings), focus, tuple(cover), tuple(shows),
                      prediction)
    if step.placeholders() and not panel:
        raise LessonError(f"{where}'text': a {{{{name}}}} placeholder needs a 'panel'")
    answers = set(step.answer_widgets())
    for key in ("text", "predict"):
        given = [name for name in PLACEHOLDER.findall(getattr(step, key)) if name in answers]
        if given:
            raise LessonError(f"{where}'{key}': {{{{{given[0]}}}}} would give away the answer the reveal withholds")
    shown_answers = [name for name in shows if name in answers]
    if shown_answers:
        raise LessonError(f"{where}'shows': {shown_answers[0]!r} holds the answer the reveal withholds")
    return step


def _near(name: str, names: Collection[str]) -> str:
    close = difflib.get_close_matches(name, list(names), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def step_part_problems(step: LessonStep, number: int) -> list[str]:
    """Every name of `step` its panel does not declare (core.lesson_parts): parts and panel settings."""
    where = f"step {number}: "
    declared = PANEL_PARTS.get(step.panel)
    if declared is None:
        return []
    parts, problems = declared.parts(), []
    named = [("focus", [step.focus] if step.focus else []), ("shows", step.shows), ("cover", step.cover),
             *((key, PLACEHOLDER.findall(getattr(step, key))) for key in ("text", "predict", "reveal"))]
    for key, names in named:
        for name in names:
            if name not in parts:
                shown = f"{{{{{name}}}}}" if key in ("text", "predict", "reveal") else repr(name)
                problems.append(f"{where}'{key}': {shown} is not a part of the {step.panel} panel{_near(name, parts)}")
    problems += _hidden_quote_problems(step, declared, where)
    for key, value in step.panel_settings.items():
        setting = declared.settings.get(key)
        if setting is None:
            problems.append(f"{where}'panel_settings': unknown setting {key!r} of the {step.panel} panel"
                            f"{_near(key, declared.settings) or '; it takes ' + ', '.join(declared.settings)}")
            continue
        problem = setting.problem(value)
        if problem:
            problems.append(f"{where}'panel_settings': {key!r} {problem}, not {_short(value)}")
    return problems


def _hidden_quote_problems(step: LessonStep, declared: Any, where: str) -> list[str]:
    """A {{name}} or focus on a sub-tab the step does not show: only a view on screen computes, so the quote
    would never be filled nor the outline drawn."""
    settings = step.panel_settings
    tab = next((settings[key] for key in ("tab", "sub_tab")
                if isinstance(settings.get(key), str) and settings[key] in declared.sub_tabs), None)
    if tab is None:
        return []
    elsewhere = {name: sub_tab for sub_tab, parts in declared.sub_tabs.items() if sub_tab not in ("", tab)
                 for name in parts if name not in declared.sub_tabs.get("", {}) and name not in declared.sub_tabs[tab]}
    problems = []
    named = [("focus", [step.focus] if step.focus else []),
             *((key, PLACEHOLDER.findall(getattr(step, key))) for key in ("text", "predict", "reveal"))]
    for key, names in named:
        for name in dict.fromkeys(names):
            if name in elsewhere:
                shown = f"{{{{{name}}}}}" if key != "focus" else repr(name)
                problems.append(f"{where}'{key}': {shown} is on the {elsewhere[name]} sub-tab, but the step shows "
                                f"the {tab} sub-tab")
    return problems


def parse_lesson(data: Any, source: str = "", panels: Collection[str] | None = None,
                 themes: Collection[str] | None = None) -> Lesson:
    """Validate a decoded lesson; `panels` and `themes`, when given, are the names that exist."""
    if not isinstance(data, dict):
        raise LessonError("a lesson must be a JSON object with 'title' and 'steps'")
    for key in data:
        if key not in LESSON_KEYS:
            raise LessonError(f"unknown field {key!r}; a lesson has {', '.join(sorted(LESSON_KEYS))}")
    title = _text(data, "title", "", required=True, limit=MAX_TITLE_CHARS)
    description = _text(data, "description", "", required=False)
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise LessonError("'steps': must be a non-empty list")
    if len(steps) > MAX_LESSON_STEPS:
        raise LessonError(f"'steps': {len(steps):,} steps, more than the {MAX_LESSON_STEPS} allowed")
    parsed, problems = [], []
    for number, data_step in enumerate(steps, 1):
        try:
            step = _step(data_step, number, panels if panels is not None else list(PANEL_PARTS), themes)
        except LessonError as error:
            problems.append(str(error))
            continue
        parsed.append(step)
        problems += step_part_problems(step, number)
    if problems:
        raise LessonError("\n".join(problems))
    return Lesson(title, description, tuple(parsed), source)


def lesson_problems(path: str | Path, panels: Collection[str] | None = None,
                    themes: Collection[str] | None = None) -> list[str]:
    """Every problem of the lesson file at `path`, one line each naming the step; [] for a usable lesson."""
    try:
        load_lesson(path, panels, themes)
    except LessonError as error:
        return str(error).splitlines()
    return []


def load_lesson(path: str | Path, panels: Collection[str] | None = None,
                themes: Collection[str] | None = None) -> Lesson:
    """Read and validate a lesson file; every failure is a LessonError."""
    path = Path(path)
    try:
        data = read_json_document(path, MAX_FILE_BYTES, "a lesson")
    except JsonFileError as error:
        raise LessonError(str(error)) from None
    return parse_lesson(data, str(path), panels, themes)


def bundled_lesson_paths() -> list[Path]:
    """The lessons shipped in resources/lessons, in file-name order (the files are numbered)."""
    return sorted(BUNDLED_LESSONS_DIR.glob("*.json"))


__all__ = [
    "BUNDLED_LESSONS_DIR",
    "STATE_KEYS",
    "Lesson",
    "LessonError",
    "LessonStep",
    "bundled_lesson_paths",
    "lesson_problems",
    "load_lesson",
    "parse_lesson",
    "step_part_problems",
]
