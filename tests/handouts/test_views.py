"""Every panel and each of its views exports to a page: `export-html --panel` of every panel offline and under 5 MB,
each sub-tab's figures drawn (Train says training happens in the app), and the new figures checked against numbers
worked out here: a causal mask's grid, the KV cache's and the attention matrix's bytes, post-norm's pinned stream."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import markupsafe
import numpy as np
import pytest

from core.cli import main
from core.handouts.collect import EXPORTABLE_PANELS, ViewRequest, default_view, view_figures
from core.handouts.collect_lab import TRAIN_NOTE
from core.handouts.page import MAX_PAGE_BYTES
from core.presets import PRESETS
from tests.handouts.test_pages import NETWORK_REFERENCE, page_data

FILL_TEXT = "To be, or not to be: that is the q_estion"  # the bundled encoder's blank is '_'
# Each panel's sub-tabs as its settings name them (core.lesson_parts), with the model a view needs.
SUB_TABS = [("Tokens & masks", {"sub_tab": tab}) for tab in
            ("Propagation", "Mask", "Attention", "Head split", "One head", "Predictions")] + \
    [("Positions", {"tab": tab}) for tab in ("RoPE scrubber", "Score grids", "Encodings", "Permutation")] + \
    [("Parameters", {"tab": tab}) for tab in range(4)] + \
    [("Generate", {"sub_tab": tab}) for tab in ("Sampling", "KV cache")] + \
    [("Causal lab", {"tab": tab}) for tab in ("Attribution", "Patching", "Ablation", "Induction")] + \
    [("Going deeper", {"tab": tab}) for tab in ("Stretching", "Ladder")] + \
    [("Features", {"tab": tab, "feature": 100, "alpha": 4.0}) for tab in ("Feature", "Steer")] + \
    [("Norms", {"depth": 3}), ("Tensor shapes", {}), ("Architecture", {}), ("Architecture", {"tuned_lens": True})]
FAMILIES = [("Fill in the blank", "tiny-encoder", FILL_TEXT), ("Cross-attention", "tiny-encoder-decoder", "To be"),
            ("Router", "tiny-moe", "To be, or not to be")]


def test_every_panel_of_the_window_is_exportable():
    from gui.panels import PANEL_CLASSES

    assert list(EXPORTABLE_PANELS) == [panel.title for panel in PANEL_CLASSES]


def test_every_panel_exports_with_panel_offline_under_5_mb(tmp_path, capsys):
    session = {"format": "transformer-explorer-session", "version": 1, "config": PRESETS["tiny-encoder"].to_dict(),
               "seed": 0, "text": FILL_TEXT, "panels": {}}
    families = tmp_path / "families.json"
    families.write_text(json.dumps(session), encoding="utf-8")
    for number, panel in enumerate(EXPORTABLE_PANELS):
        out = tmp_path / f"{number}.html"
        extra = ["--session", str(families)] if panel == "Families" else []  # the default model is no encoder
        assert main(["export-html", "--panel", panel, *extra, "--out", str(out)]) == 0, capsys.readouterr().err
        text = out.read_text(encoding="utf-8")
        assert out.stat().st_size < MAX_PAGE_BYTES and not NETWORK_REFERENCE.search(text), panel
        data = page_data(text)
        if panel == "Train":
            assert str(markupsafe.escape(TRAIN_NOTE)) in text and not data["specs"]
        else:
            assert data["specs"], panel  # at least one figure drawn
            assert "drawn in the app only" not in text and "(shown in the app)" not in text, panel
    assert main(["export-html", "--panel", "Families", "--out", str(tmp_path / "f.html")]) == 2
    assert "load an encoder (tiny-encoder)" in capsys.readouterr().err  # the view's own refusal at the lab's default


@pytest.mark.parametrize(("panel", "settings"), SUB_TABS, ids=lambda value: str(value))
def test_each_view_draws_its_figures(panel, settings):
    result = view_figures(replace(default_view(panel), settings=settings))
    assert result.figures and not result.note
    for figure in result.figures:
        assert figure.table[1:] or figure.spec["data" if "data" in figure.spec else "layer"], figure.part


@pytest.mark.parametrize(("tab", "preset", "text"), FAMILIES)
def test_each_families_view_draws_its_figures(tab, preset, text):
    result = view_figures(ViewRequest("Families", PRESETS[preset], text=text, settings={"tab": tab}))
    assert result.figures and not result.note


def test_the_mask_grid_is_the_causal_triangle():
    request = ViewRequest("Tokens & masks", PRESETS["tiny-gpt"], text="To be, or", settings={"sub_tab": "Mask"})
    figure = view_figures(request).figures[0]
    cells = {(cell["r"], cell["c"]): cell["v"] for cell in figure.spec["data"]["values"]}
    size = len("To be, or")  # the character tokenizer: one token a character
    grid = np.array([[cells[r, c] for c in range(size)] for r in range(size)])
    assert np.array_equal(grid, np.tril(np.ones((size, size))))  # query r sees keys 0..r


def test_kv_cache_and_attention_bytes_are_the_formulas():
    config = PRESETS["tiny-gpt"]
    kv = view_figures(replace(default_view("Generate"), settings={"sub_tab": "KV cache", "decode_steps": 3}))
    kv_heads = config.n_kv_heads or config.n_heads
    assert kv.values["bytes_per_token"] == 2 * config.n_layers * kv_heads * config.d_head * 4  # float32
    assert kv.values["cache_exact"] in ("yes", "no") and math.isfinite(kv.values["max_difference"])
    shapes = view_figures(replace(default_view("Tensor shapes"), settings={"batch": 2, "seq": 16}))
    assert shapes.values["attention_matrix_bytes"] == 2 * config.n_heads * 16 * 16 * 4  # (B, h, T, T) float32
    assert "B=2, T=16" in shapes.quotes["summary"]


def test_post_norm_pins_every_token_at_root_d_in_the_norms_page():
    result = view_figures(replace(default_view("Norms"), settings={"depth": 4, "d_model": 16, "n_heads": 2}))
    forward = result.figures[0].spec["data"]["values"]
    post = [row["y"] for row in forward if row["series"] == "post-norm" and row["x"] >= 1]
    # LayerNorm at its initial gain 1 and bias 0 gives each token length sqrt(d) (its epsilon shifts the 7th digit)
    assert post and all(value == pytest.approx(4.0, rel=1e-4) for value in post)
    assert "post-norm stays at √d = 4.00" in result.quotes["caption"]


def test_the_pages_start_each_view_where_the_window_starts_it():
    from core.handouts import collect_lab, collect_norms, collect_parameters, collect_tokens
    from gui.panels import norms
    from gui.panels.generate import kv_cache
    from gui.panels.parameters import panel as parameters_panel
    from gui.panels.tokens import head_split, predictions

    assert (collect_norms.SEQ, collect_norms.BATCH) == (norms.SEQ, norms.BATCH)
    assert collect_norms.NORMS_DEFAULTS["depth"] == norms.DEFAULT_DEPTH
    assert collect_norms.NORMS_DEFAULTS["d_model"] == norms.D_MODEL
    assert collect_norms.NORMS_DEFAULTS["n_heads"] == norms.DEFAULT_HEADS
    assert (collect_norms.MAX_DEPTH, collect_norms.MAX_WIDTH, collect_norms.MAX_STACK_WEIGHTS) == (
        norms.MAX_DEPTH, norms.MAX_WIDTH, norms.MAX_STACK_WEIGHTS)
    assert collect_tokens.HEAD_SPLIT_MAX_TOKENS == head_split.HEAD_SPLIT_MAX_TOKENS
    assert collect_tokens.PREDICTIONS_TOP_K == predictions.DEFAULT_TOP_K
    assert collect_parameters.DEFAULT_COMPARE == parameters_panel.DEFAULT_COMPARE
    assert collect_lab.DEFAULT_DECODE_STEPS == kv_cache.DEFAULT_DECODE_STEPS


def test_the_encodings_page_starts_where_the_window_starts_it(qtbot):
    """The sinusoid table as wide as the model and the fingerprint of the window's position, head 0 of ALiBi."""
    from gui.compute import ComputeController
    from gui.panels.positions import PositionsPanel
    from gui.state import LabState

    from tests.gui.panel_labs import close_panel_lab

    state, compute = LabState(), ComputeController(torch_threads=1)
    panel = PositionsPanel(state, compute)
    window = panel.settings()
    close_panel_lab(qtbot, compute, panel)
    result = view_figures(replace(default_view("Positions"), settings={"tab": "Encodings"}))
    table, fingerprint = (figure.spec for figure in result.figures[:2])
    columns = {cell["c"] for cell in table["data"]["values"]}
    assert len(columns) == window["encoding_d_model"] == state.config.d_model
    assert fingerprint["title"] == f"Position {window['fingerprint']}'s fingerprint"
    from core.experiments.positions import alibi_matrix

    first_head = alibi_matrix(window["alibi_heads"], window["alibi_length"]).head_labels[window["alibi_head"]]
    assert result.figures[-1].spec["title"].startswith(f"ALiBi penalty added to scores, {first_head} ")
