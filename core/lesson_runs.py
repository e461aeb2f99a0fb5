"""A lesson run without a window: each step's lab state and its view's experiment, computed as the window does.

`check-lesson` runs this after the static checks of core.lessons, so that what it passes opens and draws:

- the lab state of every step, as the window builds it when the lesson is walked (or opened at that step): the
  preset (and config), seed and text of the latest step that set them, and the step's token edit, read by the
  tokenizer the window would use (the bundled model's own, else the corpus characters);
- for a step on a panel whose views compute from the lab's model (the Causal lab and Families), the sub-tab the
  step shows with the step's panel settings over the panel's defaults (a setting the step does not name is the
  default, as in the window), refused where the view would refuse it and otherwise computed by the same core
  experiment the view runs;
- a figure that experiment computes may not be typed into the step's prose: it is quoted with `{{name}}`, which
  the window fills from the result on screen, so prose and screen cannot disagree.

Every problem is one line naming the step (counted from 1) and the field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

from core.config import ModelConfig
from core.lessons import PLACEHOLDER, Lesson, LessonStep
from core.presets import PRESETS

# check-lesson builds the model of each computed step: bounded, so that a lesson naming a large preset is refused
# in a line instead of allocating gigabytes (the lessons' experiments run on the tiny bundled models).
MAX_CHECKED_PARAMETERS = 10_000_000
# The panels' defaults, as a panel built with a model shows them (a GUI test compares): the window puts them back
# for the settings a step does not name, and check-lesson computes with them. "corrupt" has no fixed default:
# unnamed, the corrupted input is the clean one.
PANEL_DEFAULTS: dict[str, dict[str, Any]] = {
    "Causal lab": {"tab": "Attribution", "answer": "", "foil": "", "site": "resid_pre", "metric_position": -1,
                   "heads": "L0H0", "ffns": "", "ablation": "zero", "period": 20, "seed": 0},
    "Families": {"tab": "Fill in the blank", "blank": 1, "top_k": 5, "source": "5 March 2021", "steps": 0,
                 "cross_layer": 0, "cross_head": -1, "router_layer": 0},
}
# Settings whose default follows the lab's state: unnamed by a step, they are set from that LabState field. A
# step's corrupted input is written on the step's own text: its clean ids are the lab's tokens then.
STATE_FOLLOWING: dict[str, dict[str, str]] = {"Causal lab": {"corrupt": "tokens", "clean": "tokens"}}
HEAD = re.compile(r"L(\d{1,6})H(\d{1,6})", re.IGNORECASE)
MAX_PARTS_CHARS = 2000  # the Ablation view's heads and FFN fields
MAX_TOKEN_CHARS = 200  # an answer or foil
TYPED_DECIMAL = re.compile(r"(?<![\w.])(\d+)\.(\d+)(%?)(?![\w]|\.\d)")
MIN_SIGNIFICANT_DIGITS = 2  # "0.5" and "1.0" are prose; "0.635" and "4.47" are measurements
# An array larger than this (a full attention pattern) is a picture, not figures the prose could quote; with
# thousands of entries it would hold almost any two-digit number.
MAX_ARRAY_FIGURES = 512
DEFAULT_TEXT = "To be, or not to be, that is the question:"  # the lab's text before any is typed (gui.state)


class StepProblem(ValueError):
    """Why a step cannot be shown as written: the message starts with the field at fault."""


@dataclass
class LabState:
    """The lab's state at one step, as the window holds it."""

    config: ModelConfig
    seed: int = 0
    text: str = ""
    tokens: list[int] | None = None
    tokenizer: Any = None
    model: Any = None  # the built model, once a step needs it


# ---- the lab's state --------------------------------------------------------------------------------

def _corpus_tokenizer():
    from core.tokenizers import CharTokenizer
    from resources import resource_path

    return CharTokenizer.from_text(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8"))


class _Models:
    """The models and tokenizers of a run, each built once (a lesson names a preset on many steps)."""

    def __init__(self) -> None:
        self._bundled: dict[str, Any] = {}
        self._random: dict[tuple[ModelConfig, int], Any] = {}
        self._corpus = None

    def bundled(self, config: ModelConfig) -> Any:
        """The bundled model of an unedited preset that has one (the window loads it), else None."""
        from core.checkpoints import bundled_model_names, load_bundled

        if PRESETS.get(config.name) != config or config.name not in bundled_model_names():
            return None
        if config.name not in self._bundled:
            loaded = load_bundled(config.name)
            self._bundled[config.name] = loaded if loaded.config == config else None
        return self._bundled[config.name]

    def tokenizer(self, config: ModelConfig) -> Any:
        bundled = self.bundled(config)
        if bundled is not None and bundled.tokenizer is not None and bundled.tokenizer.vocab_size == config.vocab_size:
            return bundled.tokenizer
        if self._corpus is None:
            self._corpus = _corpus_tokenizer()
        return self._corpus

    def model(self, config: ModelConfig, seed: int) -> Any:
        from core.params import parameter_breakdown

        bundled = self.bundled(config)
        if bundled is not None:
            return bundled.model.eval()
        total = parameter_breakdown(config).total
        if total > MAX_CHECKED_PARAMETERS:
            raise StepProblem(f"'preset': {config.name} has {total:,} parameters; check-lesson computes a step's "
                              f"experiment on models of at most {MAX_CHECKED_PARAMETERS:,}")
        key = (config, seed)
        if key not in self._random:
            from core.model import Transformer

            self._random = {key: Transformer.from_seed(config, seed=seed).eval()}  # one at a time: memory is bounded
        return self._random[key]


def step_states(lesson: Lesson) -> Iterator[tuple[int, LessonStep, dict[str, Any]]]:
    """Each step with the lab state it shows, walked to or opened at: the latest preset, config, seed, text and
    selection any step up to it set, and the edit of the step that last set the text (the text keeps it).

    A lesson that names a model names its input too: where no step up to this one set the seed, the text or the
    selected layer and head, they are the lab's defaults (0, DEFAULT_TEXT, L0H0), not what the lab held before.
    """
    merged: dict[str, Any] = {}
    for number, step in enumerate(lesson.steps, 1):
        values = step.state
        if "preset" in values and "config" not in values:
            merged.pop("config", None)
        if "text" in values or "preset" in values:
            merged.pop("edit", None)  # a new text (or tokenizer) is no single edit
        merged.update({key: value for key, value in values.items() if key not in ("theme", "font_scale")})
        implied = {"seed": 0, "text": DEFAULT_TEXT, "selected_layer": 0, "selected_head": 0}
        yield number, step, {**implied, **merged} if "preset" in merged else dict(merged)


def _lab_state(values: Mapping[str, Any], models: _Models, default: ModelConfig, default_text: str) -> LabState:
    config = values.get("config") or (PRESETS[values["preset"]] if "preset" in values else default)
    tokenizer = models.tokenizer(config)
    text = values.get("text", default_text)
    from core.tokenizers import UnknownTokenError

    try:
        tokens = tokenizer.encode(text)
    except UnknownTokenError as error:
        field = "'text'" if "text" in values else "'preset'"
        raise StepProblem(f"{field}: the text cannot be read by {config.name}'s tokenizer: {error}") from None
    edit = values.get("edit")
    if edit is not None:
        tokens = _edited(tokens, edit, tokenizer, config)
    return LabState(config, values.get("seed", 0), text, tokens, tokenizer)


def _edited(tokens: list[int], edit: Mapping[str, Any], tokenizer: Any, config: ModelConfig) -> list[int]:
    """The tokens with the step's one-token edit made, as the window's token strip makes it."""
    position, token = edit["position"], edit["token"]
    if position >= len(tokens):
        raise StepProblem(f"'edit': the text has no position {position}: it is {len(tokens)} tokens long")
    try:
        ids = tokenizer.encode(token)
    except Exception as error:  # noqa: BLE001 (each tokenizer raises its own unknown-token error)
        raise StepProblem(f"'edit': {token!r} is not in {config.name}'s vocabulary ({error})") from None
    if len(ids) != 1:
        raise StepProblem(f"'edit': {token!r} is {len(ids)} tokens of {config.name}'s tokenizer, not one")
    edited = list(tokens)
    edited[position] = ids[0]
    return edited


# ---- the views' inputs, refused where the view refuses them ------------------------------------------

def _sentence(problem: str) -> str:
    return problem[:1].lower() + problem[1:].rstrip(".")


def _sequence(lab: LabState, field: str = "'text'") -> None:
    config = lab.config
    if not lab.tokens:
        raise StepProblem(f"{field}: the text has no tokens")
    too_long = config.length_refusal(len(lab.tokens))  # the window's bound: past the trained length where positions allow
    if too_long:
        raise StepProblem(f"{field}: {config.name}: {too_long}")
    if max(lab.tokens) >= config.vocab_size:
        raise StepProblem(f"'preset': token id {max(lab.tokens)} is outside {config.name}'s vocabulary")


def _token(text: str, lab: LabState, role: str) -> int | None:
    """The answer or foil token's id, as the Causal lab reads its field; None for an empty one."""
    vocab = lab.config.vocab_size
    if not text:
        return None
    where = f"'panel_settings': {role!r}"
    stripped = text.strip()
    if len(text) > MAX_TOKEN_CHARS:
        raise StepProblem(f"{where}: {len(text)} characters; give one token")
    if stripped.startswith("#") and stripped[1:].isdigit() and len(stripped) < 12:
        if int(stripped[1:]) >= vocab:
            raise StepProblem(f"{where}: id {stripped[1:]} is outside the vocabulary (0..{vocab - 1})")
        return int(stripped[1:])
    try:
        ids = lab.tokenizer.encode(text)
    except Exception as error:  # noqa: BLE001
        raise StepProblem(f"{where}: {text!r} cannot be encoded: {error}") from None
    if len(ids) != 1 or ids[0] >= vocab:
        raise StepProblem(f"{where}: {text!r} is {len(ids)} tokens of {lab.config.name}'s tokenizer; give one token")
    return ids[0]


def _heads(text: str, ffns_text: str, config: ModelConfig) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
    where = "'panel_settings': 'heads'"
    if len(text) > MAX_PARTS_CHARS or len(ffns_text) > MAX_PARTS_CHARS:
        raise StepProblem(f"{where}: at most {MAX_PARTS_CHARS} characters of heads or FFNs")
    heads = []
    for item in filter(None, (part.strip() for part in text.replace(";", ",").split(","))):
        match = HEAD.fullmatch(item.replace(" ", ""))
        if not match:
            raise StepProblem(f"{where}: {item!r} is not a head; write heads as L0H1, L2H3")
        if int(match[1]) >= config.n_layers or int(match[2]) >= config.n_heads:
            raise StepProblem(f"{where}: there is no {item}: {config.name} has {config.n_layers} layers of "
                              f"{config.n_heads} heads")
        heads.append((int(match[1]), int(match[2])))
    ffns = []
    for item in filter(None, (part.strip() for part in ffns_text.replace(";", ",").split(","))):
        if not item.isdigit() or len(item) > 6 or int(item) >= config.n_layers:
            raise StepProblem(f"'panel_settings': 'ffns': {item!r} is not an FFN layer of {config.name} "
                              f"(layers 0 to {config.n_layers - 1})")
        ffns.append(int(item))
    if not heads and not ffns:
        raise StepProblem(f"{where}: name the heads (L0H1, ...) or FFN layers to ablate")
    return tuple(dict.fromkeys(heads)), tuple(dict.fromkeys(ffns))


def _check(problem: str | None, field: str) -> None:
    if problem:
        raise StepProblem(f"{field}: {_sentence(problem)}")


def _causal_lab(tab: str, settings: Mapping[str, Any], lab: LabState, model: Any) -> Any:
    from core.experiments import ablation, attribution, induction, patching

    config, tokens = lab.config, lab.tokens
    if tab == "Induction":
        period = settings["period"]
        _check(induction.period_problem(model, period), "'panel_settings': 'period'")
        return induction.induction(model, period, settings["seed"])
    _sequence(lab)
    if tab == "Ablation":
        _check(ablation.refusal(model), "'preset'")
        if len(tokens) < 2:
            raise StepProblem("'text': the loss needs at least two tokens")
        heads, ffns = _heads(settings["heads"], settings["ffns"], config)
        if ffns:
            _check(ablation.ffn_problem(config), "'panel_settings': 'ffns'")
        return ablation.ablate(model, tokens, heads, ffns, settings["ablation"])
    answer, foil = _token(settings["answer"], lab, "answer"), _token(settings["foil"], lab, "foil")
    position = settings["metric_position"]
    if position >= len(tokens):
        raise StepProblem(f"'panel_settings': 'metric_position': the text has {len(tokens)} tokens, no position "
                          f"{position}")
    position = len(tokens) - 1 if position < 0 else position
    if tab == "Attribution":
        _check(attribution.refusal(model), "'preset'")
        return attribution.direct_logit_attribution(model, tokens, answer, foil, position)
    if config.architecture == "encoder-decoder":
        raise StepProblem("'preset': patching runs one stack; an encoder-decoder model reads a second sequence")
    corrupt = list(settings.get("corrupt") or tokens)
    if len(corrupt) != len(tokens):
        raise StepProblem(f"'panel_settings': 'corrupt': {len(corrupt)} tokens, but the clean text has "
                          f"{len(tokens)}; patching compares the runs position by position")
    if max(corrupt) >= config.vocab_size:
        raise StepProblem(f"'panel_settings': 'corrupt': id {max(corrupt)} is outside {config.name}'s vocabulary")
    site = settings["site"]
    _check(patching.site_problem(config, site) or patching.cost_problem(config, len(tokens), site),
           "'panel_settings': 'site'")
    return patching.activation_patch(model, tokens, corrupt, answer, foil, site, position=position)


def _layer(settings: Mapping[str, Any], key: str, config: ModelConfig) -> None:
    if settings[key] >= config.n_layers:
        raise StepProblem(f"'panel_settings': {key!r}: {config.name} has layers 0 to {config.n_layers - 1}, "
                          f"not {settings[key]}")


def _families(tab: str, settings: Mapping[str, Any], lab: LabState, model: Any) -> Any:
    from core.experiments import cross_attention, fill_mask, routing

    config = lab.config
    if tab == "Router":
        _check(routing.moe_problem(config), "'preset'")
        _sequence(lab)
        _layer(settings, "router_layer", config)
        return routing.routing(model, lab.tokens, lab.tokenizer)
    if tab == "Cross-attention":
        _check(cross_attention.seq2seq_problem(config), "'preset'")
        try:
            start, end = cross_attention.special_ids(lab.tokenizer)
            source = lab.tokenizer.encode(settings["source"])
        except Exception as error:  # noqa: BLE001 (a DecodeError or the tokenizer's own unknown-token error)
            raise StepProblem(f"'panel_settings': 'source': {error}") from None
        if not source or len(source) > config.context_length:
            raise StepProblem(f"'panel_settings': 'source': {len(source)} tokens; give 1 to {config.context_length}")
        _layer(settings, "cross_layer", config)
        if settings["cross_head"] >= config.n_heads:
            raise StepProblem(f"'panel_settings': 'cross_head': {config.name} has heads 0 to {config.n_heads - 1}")
        steps = min(settings["steps"], config.context_length - 1)
        return cross_attention.greedy_decode(model, source, start, end, steps, 5, lab.tokenizer)
    _check(fill_mask.encoder_problem(config), "'preset'")
    _sequence(lab)
    mask_id = fill_mask.mask_id_of(lab.tokenizer)
    if mask_id is None:
        raise StepProblem(f"'preset': {config.name}'s tokenizer has no mask token to fill")
    blanks = fill_mask.blank_positions(lab.tokens, mask_id)
    if not blanks:
        raise StepProblem(f"'text': the text has no blank ({lab.tokenizer.token_text(mask_id)!r}) to fill")
    if settings["blank"] > len(blanks):
        raise StepProblem(f"'panel_settings': 'blank': the text has {len(blanks)} blank(s), not {settings['blank']}")
    return fill_mask.fill_mask(model, lab.tokens, mask_id, settings["top_k"], lab.tokenizer)


COMPUTED_PANELS = {"Causal lab": _causal_lab, "Families": _families}


def step_settings(step: LessonStep) -> dict[str, Any]:
    """The settings the step's view runs with: the step's own over the panel's defaults."""
    return {**PANEL_DEFAULTS.get(step.panel, {}), **step.panel_settings}


# ---- figures typed into prose -------------------------------------------------------------------------

def result_figures(result: Any) -> list[float]:
    """Every number a result holds: its scalars and the entries of its arrays and tables."""
    import numpy as np

    found: list[float] = []

    def walk(value: Any, depth: int) -> None:
        if depth > 4 or len(found) > 50_000:
            return
        if isinstance(value, bool) or value is None or isinstance(value, str):
            return
        if isinstance(value, (int, float, np.integer, np.floating)):
            if math.isfinite(float(value)):
                found.append(float(value))
        elif isinstance(value, np.ndarray):
            if value.dtype.kind in "iuf" and value.size <= MAX_ARRAY_FIGURES:
                flat = value.reshape(-1).astype(float)
                found.extend(float(v) for v in flat if math.isfinite(v))
        elif hasattr(value, "detach") and hasattr(value, "numpy"):  # a tensor
            walk(value.detach().cpu().float().numpy(), depth)
        elif is_dataclass(value) and not isinstance(value, type):
            for item in fields(value):
                walk(getattr(value, item.name), depth + 1)
        elif isinstance(value, (list, tuple)):
            for item in value[:MAX_ARRAY_FIGURES]:
                walk(item, depth + 1)
        elif isinstance(value, dict):
            for item in list(value.values())[:MAX_ARRAY_FIGURES]:
                walk(item, depth + 1)

    walk(result, 0)
    return found


def typed_figure_problems(step: LessonStep, figures: list[float]) -> list[str]:
    """The step's prose typing a figure its result holds (at the precision typed): it must be a {{name}} quote."""
    problems = []
    for key in ("text", "predict", "reveal"):
        prose = PLACEHOLDER.sub(" ", getattr(step, key))
        for match in TYPED_DECIMAL.finditer(prose):
            whole, decimals, percent = match.groups()
            if len((whole + decimals).lstrip("0")) < MIN_SIGNIFICANT_DIGITS:
                continue
            typed = float(f"{whole}.{decimals}")
            scale = 100.0 if percent else 1.0
            half_step = 0.5 * 10 ** -len(decimals)
            if any(abs(abs(figure) * scale - typed) <= half_step + 1e-9 * typed for figure in figures):
                problems.append(f"'{key}': {match.group(0)} is a figure the step computes; quote it with a "
                                f"{{{{name}}}} placeholder so that it is the one on screen")
    return problems


# ---- the run --------------------------------------------------------------------------------------

def lesson_run_problems(lesson: Lesson) -> list[str]:
    """Every problem of walking the lesson as the window does, one line per problem naming the step and field."""
    from core.presets import DEFAULT_PRESET

    models = _Models()
    problems = []
    figures: dict[Any, list[float]] = {}  # a lesson's steps often repeat a computation (its prose changes)
    for number, step, values in step_states(lesson):
        try:
            lab = _lab_state(values, models, PRESETS[DEFAULT_PRESET], DEFAULT_TEXT)
            compute = COMPUTED_PANELS.get(step.panel)
            if compute is None:
                continue
            if "preset" not in values:
                raise StepProblem(f"'state': the {step.panel} computes from the lab's model: name a 'preset' in this "
                                  "step or an earlier one, so that the step shows the same whatever model was loaded")
            settings = step_settings(step)
            key = (lab.config, lab.seed, tuple(lab.tokens or ()), step.panel, repr(sorted(settings.items())))
            if key not in figures:
                lab.model = models.model(lab.config, lab.seed)
                figures = {key: result_figures(compute(settings["tab"], settings, lab, lab.model))}
        except StepProblem as problem:
            problems.append(f"step {number}: {problem}")
            continue
        problems += [f"step {number}: {line}" for line in typed_figure_problems(step, figures[key])]
    return problems


__all__ = ["MAX_CHECKED_PARAMETERS", "PANEL_DEFAULTS", "STATE_FOLLOWING", "StepProblem", "lesson_run_problems",
           "result_figures",
           "step_settings", "step_states", "typed_figure_problems"]
