"""What a lesson may name in each panel, as data: the parts (focus, shows, cover, `{{name}}`) and the
panel settings with the values each accepts.

The panels are built from Qt widgets, but which of them a lesson may address is declared here, so a
lesson file is checked without a window (`check-lesson`, core.lessons) and the window resolves exactly
these names (a GUI test checks that each declared part is a widget of the live panel). A part is a
"result" (it can hold an answer: a verdict, a caption, a table, a plot) or a "control" (a step's set-up:
a combo box, a button). Until a step's Reveal, every result part of its panel that the step does not
list in "shows" is covered.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.choices import MASK_MODES, TRAIN_MASK_MODES
from core.experiments.pitfall_setups import EXPERIMENTS
from core.limits import MAX_SEED, MAX_TEXT_CHARS
from core.presets import PRESETS

RESULT = "result"  # holds a step's answer: covered until Reveal unless the step shows it
CONTROL = "control"  # a step's set-up: never covered

# Window-wide parts any step may name: the status bar's model figure ("tiny-gpt: 1.2M parameters")
# gives a parameter count away, so it is covered like a panel's results.
WINDOW_PARTS: dict[str, str] = {"status_model": RESULT}


def _number(value: float | None) -> str:
    """A bound as a reader writes it: 2,147,483,647 and 0.05, not 2.14748e+09."""
    if value is None:
        return "?"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


@dataclass(frozen=True)
class Setting:
    """The values one panel setting accepts: a kind ("int", "float", "bool", "choice", "int_list", "text")
    with bounds or choices; `none_ok` also accepts null (the panel's default, e.g. "the last token")."""

    kind: str
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()
    none_ok: bool = False

    def problem(self, value: Any) -> str:
        """Why `value` is not one this setting takes ("" when it is)."""
        if value is None and self.none_ok:
            return ""
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if self.kind == "bool":
            return "" if isinstance(value, bool) else "must be true or false"
        if self.kind == "choice":
            return "" if value in self.choices and type(value) is type(self.choices[0]) else \
                f"must be one of {', '.join(repr(c) for c in self.choices)}"
        if self.kind == "text":
            return "" if isinstance(value, str) and len(value) <= MAX_TEXT_CHARS else \
                f"must be a string of at most {MAX_TEXT_CHARS:,} characters"
        if self.kind == "int_list":
            ok = isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            ok = ok and self.high is not None and len(value) <= self.high
            return "" if ok else f"must be a list of at most {_number(self.high)} whole numbers"
        is_number = is_int or (isinstance(value, float) and math.isfinite(value))
        if self.kind == "int" and not is_int:
            return f"must be a whole number from {_number(self.low)} to {_number(self.high)}"
        if self.kind == "float" and not is_number:
            return f"must be a number from {_number(self.low)} to {_number(self.high)}"
        if not self.low <= value <= self.high:  # type: ignore[operator]
            return f"must be from {_number(self.low)} to {_number(self.high)}"
        return ""


def _int(low: float, high: float, none_ok: bool = False) -> Setting:
    return Setting("int", low, high, none_ok=none_ok)


def _float(low: float, high: float) -> Setting:
    return Setting("float", low, high)


def _choice(*choices: Any) -> Setting:
    return Setting("choice", choices=tuple(choices))


BOOL = Setting("bool")
SEED = _int(0, MAX_SEED)
MODEL_CHOICES = ("", *PRESETS)  # "" is the current config


@dataclass(frozen=True)
class PanelParts:
    """One panel's lesson-nameable parts by sub-tab ("" for the panel's own, outside any sub-tab) and the
    settings its restore_settings takes."""

    sub_tabs: Mapping[str, Mapping[str, str]]  # sub-tab title -> part name -> RESULT or CONTROL
    settings: Mapping[str, Setting]
    # A part that is no attribute of the panel nor a child's objectName: its attribute path from the panel.
    paths: Mapping[str, str] = field(default_factory=dict)

    def parts(self) -> dict[str, str]:
        """Every part of the panel with its kind, the window's included."""
        merged = dict(WINDOW_PARTS)
        for parts in self.sub_tabs.values():
            merged.update(parts)
        return merged

    def results(self) -> list[str]:
        return [name for name, kind in self.parts().items() if kind == RESULT]


def _results(*names: str) -> dict[str, str]:
    return dict.fromkeys(names, RESULT)


def _controls(*names: str) -> dict[str, str]:
    return dict.fromkeys(names, CONTROL)


TOKENS_SUB_TABS = ("Propagation", "Mask", "Attention", "Head split", "One head", "Predictions")
POSITIONS_SUB_TABS = ("RoPE scrubber", "Score grids", "Encodings", "Permutation")
PARAMETERS_SUB_TABS = ("Breakdown", "Compare two", "Width sweep", "Budgets")
GENERATE_SUB_TABS = ("Sampling", "KV cache")
CAUSAL_LAB_SUB_TABS = ("Attribution", "Patching", "Ablation", "Induction")
FAMILIES_SUB_TABS = ("Fill in the blank", "Cross-attention", "Router")
FEATURES_SUB_TABS = ("Feature", "Steer", "Train")
GOING_DEEPER_SUB_TABS = ("Stretching", "Ladder")

PANEL_PARTS: dict[str, PanelParts] = {
    "Architecture": PanelParts(
        {"": {**_results("config_label", "table", "norm_plot", "follow_caption", "hover_label"),
              **_controls("layers_spin", "token_combo", "tower_combo", "view", "tuned_box")}},
        {"follow_position": _int(0, MAX_TEXT_CHARS, none_ok=True), "follow_tower": _choice("decoder", "encoder"),
         "tuned_lens": BOOL},
    ),
    "Tokens & masks": PanelParts(
        {"": _controls("strip", "mode_combo", "depth_spin"),
         "Propagation": {**_results("verdict", "propagation_map", "bar_plot", "bar_legend", "tokens-propagation-note"),
                         **_controls("propagation_source_combo")},
         "Mask": _results("mask"),
         "Attention": {**_results("attention"), **_controls("layer_spin", "head_spin", "attention_kind_combo")},
         "Head split": _results("head_split"),
         "One head": _results("worked_verdict", "worked_head_caption", "worked_keys_caption", "worked_keys_table",
                              "worked_vectors_caption", "worked_vectors_table", "worked_tolerance_caption"),
         "Predictions": {**_results("predictions"), **_controls("temperature_spin", "top_k_spin")}},
        {"mask_mode": _choice(*MASK_MODES), "n_blocks": _int(1, 64), "sub_tab": _choice(*TOKENS_SUB_TABS),
         "temperature": _float(0.05, 10.0), "top_k": _int(1, 30), "bar_row": _int(0, MAX_TEXT_CHARS, none_ok=True),
         "attention": _choice("self", "cross", "encoder"), "edit_source": BOOL,
         "worked_query": _int(0, MAX_TEXT_CHARS, none_ok=True), "worked_omit": _choice("", "mask", "rope", "scale"),
         "worked_all_keys": BOOL, "reading_script": BOOL, "reading_seed": SEED},
    ),
    "Positions": PanelParts(
        {"": _controls("source_combo", "source_label"),
         "RoPE scrubber": {**_results("rope_score_label", "sinusoidal_score_label", "trace_plot", "row_plot",
                                      "arrow_plot", "norm_plot", "norm_label"),
                           **_controls("m_slider", "n_slider", "m_caption", "n_caption", "offset_label", "lock_check",
                                       "compare_sinusoidal_check")},
         "Score grids": _results("grids_note", "rope_grid", "sinusoidal_grid", "learned_grid", "offset_plot"),
         "Encodings": {**_results("sinusoid_map", "fingerprint_plot", "wavelength_plot", "learned_note", "learned_map",
                                  "alibi_map"), **_controls("fingerprint_spin", "encoding_width_spin")},
         "Permutation": {**_results("permutation_plot", "permutation_table", "permutation_summary"),
                         **_controls("permutation_edit", "shuffle_button")}},
        {"seed": SEED, "d": _int(2, 256), "layer": _int(0, 1023), "head": _int(0, 1023), "query_token": _int(0, 1_000_000),
         "key_token": _int(0, 1_000_000), "base": _float(2.0, 1e8), "scale": _float(0.25, 64.0), "positions": _int(8, 512),
         "encoding_d_model": _int(2, 1024), "fingerprint": _int(0, 127), "alibi_heads": _int(1, 64),
         "alibi_head": _int(0, 63), "alibi_length": _int(2, 256), "permutation_length": _int(2, 64), "permutation_d_model": _int(2, 512),
         "permutation_seed": SEED, "source": _choice("random", "model"), "m": _int(0, 511), "n": _int(0, 511),
         "lock_offset": BOOL, "compare_sinusoidal": BOOL, "permutation": Setting("int_list", high=64, none_ok=True),
         "tab": _choice(*POSITIONS_SUB_TABS), "reading_script": BOOL, "reading_seed": SEED},
    ),
    "Going deeper": PanelParts(
        {"Stretching": {**_results("stretching_plot", "stretching_table", "stretching_summary"),
                        **_controls("scale_slider", "stretching-scale-caption")},
         "Ladder": {**_results("ladder_plot", "ladder_table", "ladder_summary"),
                    **_controls("rung_combo", "open_button", "ladder-opened")}},
        {"tab": _choice(*GOING_DEEPER_SUB_TABS), "rope_scale": _float(0.25, 8.0)},
    ),
    "Norms": PanelParts(
        {"": {**_results("caption", "forward_plot", "gradient_plot", "parameter_caption", "parameter_plot"),
              **_controls("depth_spin", "norm_combo", "scaling_check", "log_check", "init_combo", "width_spin",
                          "heads_spin", "paper_button", "model_button")}},
        {"depth": _int(1, 96), "norm": _choice("layernorm", "rmsnorm"), "residual_scaling": BOOL, "log_scale": BOOL,
         "init": _choice("gpt2", "xavier"), "d_model": _int(8, 1024), "n_heads": _int(1, 64)},
    ),
    "Causal lab": PanelParts(
        {"": _controls("clean_strip", "corrupt_strip", "answer_edit", "foil_edit", "reset_button"),
         "Attribution": {**_results("attribution_summary", "heads_map", "attribution_bars", "attribution_lens"),
                         **_controls("attribution_position", "attribution_key")},
         "Patching": {**_results("patch_map", "patching_summary", "patching_checks"),
                      **_controls("patching_site", "patching_position")},
         "Ablation": {**_results("ablation_summary", "ablation_top", "ablation_plot"),
                      **_controls("ablation_heads", "ablation_ffns", "ablation_mode")},
         "Induction": {**_results("induction_summary", "induction_map", "previous_map", "pattern_map",
                                  "induction_loss_plot"),
                       **_controls("induction_period", "induction_seed")}},
        {"tab": _choice(*CAUSAL_LAB_SUB_TABS), "answer": Setting("text"), "foil": Setting("text"),
         "corrupt": Setting("int_list", high=100_000), "site": _choice("resid_pre", "attn_out", "mlp_out", "head"),
         "metric_position": _int(-1, MAX_TEXT_CHARS),
         "heads": Setting("text"), "ffns": Setting("text"), "ablation": _choice("zero", "mean"),
         "period": _int(2, 512), "seed": SEED},
        paths={"attribution_bars": "attribution_view.parts_plot", "attribution_lens": "attribution_view.lens_plot",
               "attribution_position": "attribution_view.position_spin", "ablation_top": "ablation_view.top_label",
               "attribution_key": "attribution_view.key_label", "ablation_plot": "ablation_view.loss_plot",
               "induction_loss_plot": "induction_view.loss_plot",
               "ablation_heads": "ablation_view.heads_picker", "ablation_ffns": "ablation_view.ffns_picker",
               "ablation_mode": "ablation_view.mode_combo", "previous_map": "induction_view.previous_map",
               "pattern_map": "induction_view.pattern_map", "induction_period": "induction_view.period_spin",
               "induction_seed": "induction_view.seed_spin"},
    ),
    "Families": PanelParts(
        {"": _controls("strip"),
         "Fill in the blank": {**_results("fill_texts", "fill_verdict", "fill_table", "fill_plot"),
                               **_controls("blank_spin", "fill_top_spin")},
         "Cross-attention": {**_results("cross_output", "cross_map", "cross_steps"),
                             **_controls("source_edit", "step_button", "run_button", "reset_button", "cross_layer_spin",
                                         "cross_head_combo")},
         "Router": {**_results("active_label", "load_summary", "router_map", "load_plot"),
                    **_controls("router_layer_spin")}},
        {"tab": _choice(*FAMILIES_SUB_TABS), "blank": _int(1, MAX_TEXT_CHARS), "top_k": _int(1, 20),
         "source": Setting("text"), "steps": _int(0, 64), "cross_layer": _int(0, 1023), "cross_head": _int(-1, 1023),
         "router_layer": _int(0, 1023)},
    ),
    "Features": PanelParts(
        {"": _controls("feature_spin", "sae_combo"),
         "Feature": {**_results("feature_summary", "feature_contexts", "feature_histogram", "feature_logits",
                                "feature_search", "feature_search_table", "feature_tokens"),
                     **_controls("search_from", "search_to")},
         "Steer": {**_results("steer_summary", "steer_plot", "steer_clean", "steer_steered"),
                   **_controls("alpha_spin", "ablate_box")}},
        {"tab": _choice(*FEATURES_SUB_TABS), "feature": _int(0, 1 << 17), "alpha": _float(-100.0, 100.0),
         "ablate": BOOL, "search": Setting("int_list", high=2), "sae": Setting("text")},
        paths={"sae_combo": "controls.sae_combo", "feature_summary": "dashboard.summary_label",
               "feature_contexts": "dashboard.contexts", "feature_histogram": "dashboard.histogram",
               "feature_logits": "dashboard.logits_label", "feature_search": "dashboard.search_label",
               "feature_search_table": "dashboard.search_table", "feature_tokens": "dashboard.token_table",
               "search_from": "dashboard.first_spin", "search_to": "dashboard.last_spin",
               "steer_summary": "steering.summary_label", "steer_plot": "steering.plot",
               "steer_clean": "steering.clean_text", "steer_steered": "steering.steered_text"},
    ),
    "Parameters": PanelParts(
        {"": _controls("model_combo", "tied_check"),
         "Breakdown": _results("pie_view", "total_label", "agree_label", "tied_label", "block_label", "moe_label",
                               "legend_table"),
         "Compare two": {**_results("compare_views", "compare_table", "compare_agree_label"),
                         **_controls("compare_a_combo", "compare_b_combo")},
         "Width sweep": {**_results("sweep_label", "sweep_plot"), **_controls("width_slider")},
         "Budgets": _results("budget_label", "budget_table")},
        {"model": _choice(*MODEL_CHOICES), "tied": BOOL, "compare_left": _choice(*MODEL_CHOICES),
         "compare_right": _choice(*MODEL_CHOICES), "width": _int(1, 1 << 20, none_ok=True),
         "tab": _int(0, len(PARAMETERS_SUB_TABS) - 1)},
    ),
    "Tensor shapes": PanelParts(
        {"": {**_results("summary", "table", "memory_plot", "growth_plot"),
              **_controls("batch_spin", "seq_spin", "source_seq_spin", "d_model_spin", "heads_spin")}},
        {"batch": _int(1, 4096), "seq": _int(1, 1 << 20), "d_model": _int(1, 1 << 20), "heads": _int(1, 1024),
         "source_seq": _int(1, 1 << 20)},
    ),
    "Train": PanelParts(
        {"": {**_results("status_label", "loss_plot", "induction_plot"),
              **_controls("mask_combo", "corpus_label", "track_check", "recipe_label", "use_recipe_button")},
         "compare": {**_results("compare_plot", "gradient_plot", "compare_summary", "compare_verdict", "compare_samples"),
                     **_controls("compare_setup")}},
        {"steps": _int(1, 1_000_000), "batch_size": _int(1, 4096), "seq_len": _int(2, 1_000_000), "lr": _float(1e-5, 1.0),
         "seed": SEED, "prompt": Setting("text"), "max_new": _int(0, 100_000), "temperature": _float(0.0, 5.0),
         "top_k": _int(0, 1_000_000), "mask_mode": _choice(*TRAIN_MASK_MODES), "track_induction": BOOL,
         "plot_tab": _choice("run", "compare"),
         "start": _choice("fresh", "fine-tune"), "compare_experiment": _choice(*EXPERIMENTS),
         "compare_steps": _int(1, 1_000_000), "compare_seed": SEED},
        paths={"compare_setup": "compare_page.setup_label"},
    ),
    "Generate": PanelParts(
        {"Sampling": {**_results("sampling_plot", "entropy_label", "draw_label"),
                      **_controls("sample_button", "step_back_button")},
         "KV cache": {**_results("proof_label", "bytes_label", "steps_table", "layers_table", "variants_table"),
                      **_controls("decode_steps_spin")}},
        {"sub_tab": _choice(*GENERATE_SUB_TABS), "temperature": _float(0.0, 10.0), "top_k": _int(0, 1_000_000),
         "top_p": _float(0.001, 1.0), "seed": SEED, "decode_steps": _int(1, 256)},
    ),
}


def panel_parts(panel: str) -> PanelParts | None:
    return PANEL_PARTS.get(panel)


def describe_setting(setting: Setting) -> str:
    """A setting's accepted values in a few words, for the authors' guide."""
    if setting.kind == "choice":
        text = " / ".join(f"`{choice!r}`" if choice != "" else '`""`' for choice in setting.choices[:8])
        text += " ..." if len(setting.choices) > 8 else ""
    elif setting.kind in ("int", "float"):
        text = f"{'whole number' if setting.kind == 'int' else 'number'} {_number(setting.low)} to {_number(setting.high)}"
    elif setting.kind == "int_list":
        text = f"list of at most {_number(setting.high)} whole numbers"
    else:
        text = {"bool": "true / false", "text": "string"}[setting.kind]
    return text + (", or null" if setting.none_ok else "")


def parts_markdown() -> str:
    """The parts and settings of every panel as Markdown: the table docs/lessons.md carries (a test compares)."""
    lines = []
    for title, panel in PANEL_PARTS.items():
        lines += [f"### {title}", "", "| sub-tab | results (covered until Reveal) | controls (set-up) |", "|---|---|---|"]
        for sub_tab, parts in panel.sub_tabs.items():
            results = ", ".join(f"`{n}`" for n, kind in parts.items() if kind == RESULT) or "-"
            controls = ", ".join(f"`{n}`" for n, kind in parts.items() if kind == CONTROL) or "-"
            lines.append(f"| {sub_tab or '(whole panel)'} | {results} | {controls} |")
        lines += ["", "panel_settings: " + "; ".join(f"`{key}` {describe_setting(setting)}"
                                                    for key, setting in panel.settings.items()), ""]
    return "\n".join(lines)


__all__ = [
    "parts_markdown",
    "describe_setting",
    "CONTROL",
    "FAMILIES_SUB_TABS",
    "GENERATE_SUB_TABS",
    "GOING_DEEPER_SUB_TABS",
    "PANEL_PARTS",
    "PARAMETERS_SUB_TABS",
    "POSITIONS_SUB_TABS",
    "RESULT",
    "TOKENS_SUB_TABS",
    "WINDOW_PARTS",
    "PanelParts",
    "Setting",
    "panel_parts",
]
