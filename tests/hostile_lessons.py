"""Hostile lessons for every view of the Causal lab and Families and every kind of step: what check-lesson must
refuse (naming the step and the field) and what it passes (which the window must then open and draw).

Each case is (name, lesson, refused): `refused` is None for a lesson check-lesson passes, else (step, field) that
its first problem line must name, e.g. (2, "'heads'").
"""

from __future__ import annotations

import json
from pathlib import Path

INDUCTION_TEXT = "JmXqzRbTwKcLpVnYhDgAJmXqzRbTwKcLpVnYhDg"


def _lesson(*steps: dict) -> dict:
    return {"title": "Hostile",
            "steps": [{"title": f"step {n}", "text": "Look.", **step} for n, step in enumerate(steps, 1)]}


def _causal(tab: str, preset: str = "tiny-induction", text: str = INDUCTION_TEXT, **settings) -> dict:
    return {"panel": "Causal lab", "state": {"preset": preset, "seed": 0, "text": text},
            "panel_settings": {"tab": tab, **settings}}


def _families(tab: str, preset: str, text: str = "To be, or not to be", **settings) -> dict:
    return {"panel": "Families", "state": {"preset": preset, "seed": 0, "text": text},
            "panel_settings": {"tab": tab, **settings}}


CASES: list[tuple[str, dict, tuple[int, str] | None]] = [
    # Passed: every view on a model it takes, and steps that only set state or show another panel.
    ("every-view-valid", _lesson(
        _causal("Induction", period=20, seed=0),
        {"panel": "Causal lab", "panel_settings": {"tab": "Ablation", "heads": "L1H0", "ffns": "", "ablation": "zero"},
         "predict": "How much?", "reveal": "{{ablation_summary}}"},
        _causal("Attribution", preset="tiny-gpt", text="To be, or not to be", answer="e"),
        {**_causal("Patching", preset="tiny-gpt", text="I say, Rome", answer="o"), "state": {
            "preset": "tiny-gpt", "text": "I say, Rome", "edit": {"position": 7, "token": "X"}}},
        _families("Fill in the blank", "tiny-encoder", "To be, or not to _e: that is the q_estion", blank=2),
        _families("Cross-attention", "tiny-encoder-decoder", source="5 March 2021", steps=3),
        _families("Router", "tiny-moe", router_layer=1),
        {"title": "state only", "state": {"preset": "tiny-gpt", "text": "Hello"}},
        {"panel": "Tokens & masks", "state": {"edit": {"position": 0, "token": "J"}}},
    ), None),
    ("many-blanks", _lesson(_families("Fill in the blank", "tiny-encoder", "_" * 120, blank=120)), None),
    # Refused by check-lesson, each naming the step and the field.
    ("blank-out-of-range", _lesson(_families("Fill in the blank", "tiny-encoder", "the q_estion", blank=5)),
     (1, "'blank'")),
    ("no-blank", _lesson(_families("Fill in the blank", "tiny-encoder", "the question", blank=1)), (1, "'text'")),
    ("router-without-experts", _lesson(_families("Router", "tiny-gpt")), (1, "'preset'")),
    ("router-layer-past-the-model", _lesson(_families("Router", "tiny-moe", router_layer=7)), (1, "'router_layer'")),
    ("cross-attention-on-a-decoder", _lesson(_families("Cross-attention", "tiny-gpt")), (1, "'preset'")),
    ("cross-attention-source-outside-vocabulary",
     _lesson(_families("Cross-attention", "tiny-encoder-decoder", source="Überall")), (1, "'source'")),
    ("induction-period-past-context", _lesson(_causal("Induction", period=40)), (1, "'period'")),
    ("unknown-characters-10000", _lesson(_causal("Attribution", preset="tiny-gpt", text="é" * 10_000)), (1, "'text'")),
    # A view that does not read the lab's text (Induction makes its own repeats) refuses nothing: the step says why.
    ("unreadable-text-beside-a-view-that-ignores-it",
     _lesson(_causal("Induction", preset="tiny-gpt", text="5 March 2021")), (1, "'text'")),
    ("text-past-context", _lesson(_causal("Ablation", text="ab" * 200, heads="L1H0")), (1, "'text'")),
    ("head-that-does-not-exist", _lesson(_causal("Induction"), {"panel": "Causal lab", "panel_settings": {
        "tab": "Ablation", "heads": "L5H0"}}), (2, "'heads'")),
    ("head-spec-malformed", _lesson(_causal("Ablation", heads="L")), (1, "'heads'")),
    ("patching-mlp-on-attention-only",
     _lesson(_causal("Patching", preset="tiny-induction-attn", text="a big hall", site="mlp_out")),
     (1, "'site'")),
    ("answer-of-two-tokens", _lesson(_causal("Attribution", preset="tiny-gpt", text="To be", answer="xy")),
     (1, "'answer'")),
    ("edit-token-outside-vocabulary", _lesson(
        {"panel": "Causal lab",
         "state": {"preset": "tiny-gpt", "text": "To be", "edit": {"position": 1, "token": "é"}},
         "panel_settings": {"tab": "Attribution"}}), (1, "'edit'")),
    ("edit-position-past-the-text", _lesson(
        {"panel": "Tokens & masks",
         "state": {"preset": "tiny-gpt", "text": "To be", "edit": {"position": 9, "token": "a"}}}),
     (1, "'edit'")),
    ("edit-on-a-later-step", _lesson(
        {"state": {"preset": "tiny-gpt", "text": "To be"}},
        {"panel": "Tokens & masks", "state": {"edit": {"position": 2, "token": "ü"}}}), (2, "'edit'")),
    ("quote-on-a-hidden-sub-tab", _lesson(
        {**_causal("Induction"), "predict": "?", "reveal": "{{ablation_summary}}"}), (1, "{{ablation_summary}}")),
    ("typed-figure", _lesson(
        _causal("Induction"), {"panel": "Causal lab", "predict": "How much?",
                               "panel_settings": {"tab": "Ablation", "heads": "L1H0"},
                               "reveal": "The loss rises to 6.6288."}), (2, "'reveal'")),
    ("unknown-panel", _lesson({"panel": "Causal labs"}), (1, "'panel'")),
    ("a-view-on-whatever-model-is-loaded", _lesson({"panel": "Families", "panel_settings": {"tab": "Router"}}),
     (1, "'state'")),
]


def write_cases(folder: Path) -> dict[str, Path]:
    """Each case as a lesson file in `folder`, by name."""
    paths = {}
    for name, lesson, _refused in CASES:
        paths[name] = folder / f"{name}.json"
        paths[name].write_text(json.dumps(lesson), encoding="utf-8")
    return paths


REFUSED = {name: refused for name, _lesson_data, refused in CASES}
