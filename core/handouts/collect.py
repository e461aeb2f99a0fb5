"""A lesson's steps, or one view, computed for a page: the lab state each step shows (core.lesson_runs, as the
window builds it) and the step's view computed by the core experiment the window's view runs.

A step whose panel a page cannot draw says so in its note; a step the window would refuse shows the refusal.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from core.config import ModelConfig
from core.handouts import (collect_architecture, collect_deeper, collect_features, collect_lab, collect_norms,
                           collect_views)
from core.handouts.figures import StepFigures
from core.lesson_runs import (
    COMPUTED_PANELS,
    DEFAULT_TEXT,
    PANEL_DEFAULTS,
    StepProblem,
    _lab_state,
    _Models,
    step_settings,
    step_states,
)
from core.lessons import Lesson, LessonStep
from core.presets import DEFAULT_PRESET, PRESETS

# The panels a page draws, and the sub-tabs of each it draws (the others are named in the step's note).
EXPORTABLE_PANELS = ("Architecture", "Tokens & masks", "Positions", "Going deeper", "Norms", "Parameters",
                     "Tensor shapes", "Train", "Generate", "Causal lab", "Families", "Features")
BEFORE = "_before"  # a step's values: the lab state before the text's last change (what the Families view compares)
COMPUTE_ERRORS = (StepProblem, ValueError, RuntimeError)  # the experiments' own errors subclass ValueError


@dataclass(frozen=True)
class ViewRequest:
    """One view to export: the panel, the lab's model config, seed, text (or token ids) and the panel's settings."""

    panel: str
    config: ModelConfig
    seed: int = 0
    text: str = DEFAULT_TEXT
    settings: Mapping[str, Any] | None = None
    model: Any = field(default=None, compare=False)  # the window's own model and tokenizer (a trained checkpoint's
    tokenizer: Any = field(default=None, compare=False)  # weights are not the preset's); None builds them
    selected_layer: int = 0  # the lab's selected layer and head (Attention and One head read them)
    selected_head: int = 0


class _GivenModel(_Models):
    """The window's model and tokenizer, used as they are."""

    def __init__(self, model: Any, tokenizer: Any) -> None:
        super().__init__()
        self._model, self._tokenizer = model, tokenizer

    def tokenizer(self, config: ModelConfig) -> Any:
        return self._tokenizer if self._tokenizer is not None else super().tokenizer(config)

    def model(self, config: ModelConfig, seed: int) -> Any:
        return self._model


def _figures(step: LessonStep, settings: Mapping[str, Any], values: Mapping[str, Any], models: _Models) -> StepFigures:
    panel = step.panel
    if panel == "Positions":
        return collect_views.positions_figures(settings, _encodings_model(settings, values, models))
    if panel == "Norms":
        return collect_norms.norms_figures(settings, int(values.get("seed", 0)))
    if panel == "Going deeper":  # its own models, not the lab's
        return collect_deeper.going_deeper_figures(settings)
    default = PRESETS[DEFAULT_PRESET]
    lab = _lab_state(values, models, default, DEFAULT_TEXT)
    if panel == "Parameters":
        return collect_views.parameters_figures(settings, lab.config)
    if panel == "Tensor shapes":
        return collect_lab.shapes_figures(settings, lab.config)
    if panel == "Train":
        return collect_lab.train_figures()
    if panel not in EXPORTABLE_PANELS:
        where = f"the {panel} panel" if panel else "the app"
        return StepFigures(note=f"This step's figures are drawn by {where}: open the lesson in Transformer Explorer "
                                "to see them.")
    if panel == "Architecture":
        try:
            lab.model = models.model(lab.config, lab.seed)
        except StepProblem as problem:  # the diagram needs no weights; following a token does
            diagram = collect_architecture.diagram_figure(lab.config, len(lab.tokens))
            return StepFigures((diagram,), {"config_label": collect_architecture.describe_config(lab.config)}, {},
                               f"Following a token needs the model's weights: {problem}")
        return collect_architecture.architecture_figures(settings, lab, lab.model)
    lab.model = models.model(lab.config, lab.seed)
    if panel == "Generate":
        return collect_views.generate_figures(settings, lab, lab.model)
    if panel == "Features":
        return collect_features.features_figures(settings, lab, lab.model)
    if panel == "Tokens & masks":
        edit = values.get("edit")
        if edit is not None:
            lab.base_tokens = _lab_state({key: v for key, v in values.items() if key != "edit"}, models, default,
                                         DEFAULT_TEXT).tokens
        selection = {key: values.get(key, 0) for key in ("selected_layer", "selected_head")}  # the lab's layer, head
        return collect_views.tokens_figures({**settings, **selection}, lab, lab.model, edit)
    result = COMPUTED_PANELS[panel](settings["tab"], settings, lab, lab.model)
    if panel == "Causal lab":
        return collect_views.causal_lab_figures(settings["tab"], result, lab)
    lab.base_tokens = _tokens_before(values, lab, models)
    return collect_views.families_figures(settings["tab"], result, lab, settings)


def _encodings_model(settings: Mapping[str, Any], values: Mapping[str, Any], models: _Models) -> Any:
    """The lab's model, which the Encodings view reads for its learned position table (None for other views)."""
    if settings.get("tab") != "Encodings":
        return None
    lab = _lab_state(values, models, PRESETS[DEFAULT_PRESET], DEFAULT_TEXT)
    return models.model(lab.config, lab.seed)


def _tokens_before(values: Mapping[str, Any], lab: Any, models: _Models) -> list[int] | None:
    """The lab's tokens before their last change when that change kept their number and tokenizer (the step's edit of
    one token, or a retyped character between steps), as gui.panels.families.common.EditHistory keeps them; None
    when there is no such change."""
    default = PRESETS[DEFAULT_PRESET]
    if values.get("edit") is not None:
        return _lab_state({key: v for key, v in values.items() if key not in ("edit", BEFORE)}, models, default,
                          DEFAULT_TEXT).tokens
    before = values.get(BEFORE)
    if before is None:
        return None
    earlier = _lab_state(before, models, default, DEFAULT_TEXT)
    same_reading = earlier.config == lab.config and len(earlier.tokens) == len(lab.tokens)
    return earlier.tokens if same_reading and earlier.tokens != lab.tokens else None


def _walk(lesson: Lesson) -> Iterator[tuple[int, LessonStep, dict[str, Any], dict[str, Any]]]:
    """Each step with the settings its view runs with and its lab state. Settings a step does not name carry over
    from the previous step on the same panel, as the window's panel keeps them (the Causal lab and Families go
    back to their defaults, core.lesson_runs.PANEL_DEFAULTS)."""
    carried: dict[str, dict[str, Any]] = {}
    reading, previous, before = None, None, None
    for number, step, values in step_states(lesson):
        now = repr([values.get(key) for key in ("preset", "config", "text", "edit")])
        if previous is not None and now != reading:
            before = previous  # the lab state before the text's last change
        reading, previous = now, dict(values)
        if before is not None:
            values = {**values, BEFORE: before}
        if step.panel in PANEL_DEFAULTS:
            settings = step_settings(step)
        else:
            settings = {**carried.get(step.panel, {}), **step.panel_settings}
            carried[step.panel] = settings
        yield number, step, settings, values


@contextmanager
def _one_thread() -> Iterator[None]:
    """torch on one thread while a page computes, then as it was. A page's experiments run tiny tensors (a 64-wide
    stack, a few dozen tokens): a second intra-op thread gains nothing on them and, on a busy machine, waits for a
    core at every operation (exporting the Norms lesson took 46 s on two threads at load 8, 18 s on one)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _computed(step: LessonStep, settings: Mapping[str, Any], values: Mapping[str, Any],
              models: _Models) -> StepFigures:
    try:
        with _one_thread():
            return _figures(step, settings, values, models)
    except COMPUTE_ERRORS as problem:
        return StepFigures(note=f"The window refuses this step: {problem}")


def lesson_figures(lesson: Lesson) -> Iterator[tuple[int, LessonStep, StepFigures]]:
    """Each step (numbered from 1) with what its page shows."""
    models = _Models()
    done: dict[str, StepFigures] = {}  # a lesson often repeats a computation while its prose changes
    for number, step, settings, values in _walk(lesson):
        key = repr((step.panel, sorted(settings.items(), key=str), sorted(values.items(), key=str)))
        if key not in done:
            done = {key: _computed(step, settings, values, models)}
        yield number, step, done[key]


def step_figures(lesson: Lesson, number: int) -> StepFigures:
    """What step `number` (from 1) shows, computing that step alone."""
    for at, step, settings, values in _walk(lesson):
        if at == number:
            return _computed(step, settings, values, _Models())
    raise IndexError(f"the lesson has no step {number}")


def view_figures(request: ViewRequest) -> StepFigures:
    """One view at the given lab state and settings (a panel's defaults where none are given)."""
    if request.panel not in EXPORTABLE_PANELS:
        raise StepProblem(f"'panel': {request.panel!r} cannot be exported; use one of {', '.join(EXPORTABLE_PANELS)}")
    values: dict[str, Any] = {"preset": request.config.name, "seed": request.seed, "text": request.text,
                              "selected_layer": request.selected_layer, "selected_head": request.selected_head}
    if PRESETS.get(request.config.name) != request.config:
        values["config"] = request.config
    step = LessonStep(title=request.panel, text=" ", panel=request.panel,
                      panel_settings=dict(request.settings or {}))
    settings = step_settings(step)
    try:
        models = _Models() if request.model is None else _GivenModel(request.model, request.tokenizer)
        with _one_thread():
            return _figures(step, settings, values, models)
    except COMPUTE_ERRORS as problem:
        raise StepProblem(str(problem)) from None


def default_view(panel: str) -> ViewRequest:
    return ViewRequest(panel, PRESETS[DEFAULT_PRESET])


__all__ = ["EXPORTABLE_PANELS", "ViewRequest", "default_view", "lesson_figures", "step_figures", "view_figures"]
