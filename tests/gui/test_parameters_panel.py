"""The Parameters panel: the pie is parameter_breakdown, the meta-device count agrees, tying moves V*d."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QApplication

from core.experiments.budgets import compare_configs, compute_budget
from core.params import parameter_breakdown
from core.presets import get_preset
from gui.panels.parameters import AGREES, ParametersPanel, block_norm_params, format_bytes, format_flops
from gui.state import LabState
from gui.widgets.export import export
from gui.widgets.pie import format_count, format_share


RESULT_TIMEOUT_MS = 30_000


@pytest.fixture
def panel(qtbot, compute):
    state = LabState()
    state.set_torch_ready(True)
    widget = ParametersPanel(state, compute)
    qtbot.addWidget(widget)
    widget.resize(1300, 800)
    widget.show()
    qtbot.waitUntil(lambda: widget.breakdown is not None, timeout=RESULT_TIMEOUT_MS)
    return widget


def pick(qtbot, panel: ParametersPanel, name: str) -> None:
    panel.model_combo.setCurrentIndex(panel.model_combo.findData(name))
    qtbot.waitUntil(lambda: panel.breakdown is not None and panel.breakdown.config.name == name, timeout=RESULT_TIMEOUT_MS)


def assert_pie_is_breakdown(panel: ParametersPanel, breakdown) -> None:
    groups, values = breakdown.groups, panel.pie_values()
    assert panel.pie.total == breakdown.total == sum(values[k] for k in values if not panel.pie._wedge(k).ring)
    for key in ("token_embeddings", "position_embeddings", "head", "attention", "ffn", "router"):
        assert values.get(key, 0) == groups[key]
    assert values.get("block_norms", 0) + values.get("final_norm", 0) == groups["norms"]
    assert values["block_norms"] == block_norm_params(breakdown)
    assert f"{breakdown.total:,} parameters by formula" in panel.total_label.text()


@pytest.mark.parametrize("name", ["gpt2-small", "mixtral-8x7b", "textbook-block"])
def test_each_preset_pie_is_its_breakdown_and_the_meta_count_agrees(qtbot, panel, name):
    pick(qtbot, panel, name)
    breakdown = parameter_breakdown(get_preset(name))
    assert_pie_is_breakdown(panel, breakdown)
    qtbot.waitUntil(lambda: AGREES in panel.agree_label.text(), timeout=30_000)
    assert f"{breakdown.total:,}" in panel.agree_label.text()
    if name == "mixtral-8x7b":
        assert panel.moe_label.isVisibleTo(panel)
        assert "46.7B" in panel.moe_label.text() and f"{breakdown.active / 1e9:.1f}B" in panel.moe_label.text()
        assert panel.pie._wedge("ffn").slice.label.startswith("experts")
    else:
        assert not panel.moe_label.isVisibleTo(panel)


def test_untying_the_head_adds_v_times_d(qtbot, panel):
    pick(qtbot, panel, "gpt2-small")
    config = get_preset("gpt2-small")
    tied_total = panel.pie.total
    v_times_d = config.vocab_size * config.d_model
    assert "head" not in panel.pie_values()
    assert f"V × d = {v_times_d:,}" in panel.tied_label.text()
    panel.tied_check.setChecked(False)
    qtbot.waitUntil(lambda: panel.pie.total != tied_total, timeout=5000)
    assert panel.pie.total - tied_total == v_times_d
    assert panel.pie_values()["head"] == v_times_d
    assert panel.tied_label.text().startswith("Untied")
    assert_pie_is_breakdown(panel, parameter_breakdown(config.replace(tie_embeddings=False)))
    qtbot.waitUntil(lambda: AGREES in panel.agree_label.text(), timeout=30_000)


def test_hovering_a_wedge_pulls_it_out_and_reads_it(qtbot, panel):
    pick(qtbot, panel, "gpt2-small")
    pie, view = panel.pie, panel.pie_view
    centre = pie.wedge_center("ffn")
    assert pie.key_at(centre) == "ffn"
    # A real mouse move over the wedge: pyqtgraph's scene sends the item its hover event.
    viewport_point = view.mapFromScene(pie.mapToScene(centre))
    qtbot.mouseMove(view.viewport(), QPoint(viewport_point.x(), viewport_point.y()))
    qtbot.waitUntil(lambda: pie.hovered == "ffn", timeout=5000)
    assert pie._paths["ffn"].boundingRect() != pie.wedge_path_at_rest("ffn").boundingRect()  # pulled out
    groups = parameter_breakdown(get_preset("gpt2-small")).groups
    readout = pie.readout_text()
    assert "feed-forward (FFN)" in readout
    assert f"{groups['ffn']:,} parameters" in readout
    assert format_share(groups["ffn"] / pie.total) in readout
    assert pie.readout.isVisible()
    assert pie.boundingRect().contains(pie.shape().boundingRect())
    pie.hover_key("")
    assert pie.readout_text() == "" and not pie.readout.isVisible()


def test_the_pie_exports_its_wedges_as_svg_paths(qtbot, panel, tmp_path):
    pick(qtbot, panel, "gpt2-small")
    svg = export(panel.pie_view.getPlotItem(), tmp_path / "pie.svg", 900, 900).read_text()
    assert svg.count("<path") >= len(panel.pie.keys())
    assert panel.pie.value("ffn") and "#009e73" in svg.lower()  # the FFN wedge's fill
    png = export(panel.pie_view.getPlotItem(), tmp_path / "pie.png", 600, 600)
    assert png.stat().st_size > 1000


def test_a_sidebar_config_change_updates_the_pie(qtbot, panel):
    assert panel.model_combo.currentData() == ""  # "current config" is the default
    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        panel.state.set_config(get_preset("tiny-llama"))
    assert_pie_is_breakdown(panel, parameter_breakdown(get_preset("tiny-llama")))
    assert panel.model_combo.itemText(0) == "current config (tiny-llama)"
    assert not panel.tied_check.isChecked()  # follows the new config's tying


def show_tab(qtbot, panel: ParametersPanel, index: int, view) -> None:
    """Bring a sub-tab on screen and wait until its view shows the current inputs' result."""
    panel.tabs.setCurrentIndex(index)
    qtbot.waitUntil(lambda: view.result is not None and not view.is_stale, timeout=RESULT_TIMEOUT_MS)


def test_comparison_sweep_and_budget_tables(qtbot, panel):
    pick(qtbot, panel, "gpt2-small")
    small, medium = get_preset("gpt2-small"), get_preset("gpt2-medium")
    comparison = compare_configs(small, medium)
    show_tab(qtbot, panel, 1, panel.compare)
    cells = {panel.compare_table.item(r, 0).text(): (panel.compare_table.item(r, 1).text(), panel.compare_table.item(r, 2).text())
             for r in range(panel.compare_table.rowCount())}
    assert cells["parameters"] == (format_count(comparison.a.total_params), format_count(comparison.b.total_params)) == ("124.4M", "354.8M")
    assert cells["    share of all"] == (format_share(comparison.a.token_embedding_share), format_share(comparison.b.token_embedding_share))
    assert cells["+ positions: share"] == (format_share(comparison.a.embedding_share), format_share(comparison.b.embedding_share))
    assert cells["FFN share of a block"] == ("66.6%", "66.6%")
    qtbot.waitUntil(lambda: panel.compare_agree_label.text().count(AGREES) == 2, timeout=RESULT_TIMEOUT_MS)
    for config in (small, medium):
        assert f"{config.name}: {parameter_breakdown(config).total:,}" in panel.compare_agree_label.text()
    assert [view.pie.total for view in panel.compare_views] == [comparison.a.total_params, comparison.b.total_params]

    show_tab(qtbot, panel, 2, panel.sweep_view)
    widths = [int(w) for w in panel.sweep.widths]
    assert widths[panel.width_slider.value()] == 768
    assert panel.sweep_marker.getData()[1][0] == pytest.approx(100 * parameter_breakdown(small).embedding_share)
    panel.width_slider.setValue(widths.index(4096))
    assert "d = 4,096" in panel.sweep_label.text()
    assert panel.sweep.embedding_share[widths.index(4096)] < panel.sweep.embedding_share[widths.index(768)]

    show_tab(qtbot, panel, 3, panel.budget)
    budget = compute_budget(small)
    table = panel.budget_table
    assert table.item(0, 1).text() == format_flops(budget.training_flops_per_token) == "746.6 MFLOP"
    assert table.item(3, 1).text() == format_bytes(budget.weight_bytes["fp32"])
    assert table.item(3, 3).text() == format_bytes(budget.weight_bytes["int8"])
    assert table.item(5, 2).text() == format_bytes(budget.kv_cache_bytes_full_context["bf16"])


# ---- the views: stale at once, new numbers after, nothing computed off screen ----------------------
def assert_breakdown_cleared(panel: ParametersPanel) -> None:
    view = panel.breakdown_view
    assert view.is_stale and panel.breakdown is None
    for label in (panel.total_label, panel.tied_label, panel.block_label, panel.moe_label, panel.agree_label):
        assert label.text() == ""
    assert panel.pie.readout_text() == "" and not panel.pie.readout.isVisible()


@pytest.mark.parametrize("change", ["sidebar config", "picked model", "head tying"])
def test_each_input_clears_the_breakdown_and_its_hover_then_shows_the_new_one(qtbot, panel, change):
    panel.pie.hover_key("ffn")
    assert "parameters" in panel.pie.readout_text()
    view, count = panel.breakdown_view, panel.breakdown_view.count
    qtbot.waitUntil(lambda: count.result is not None and not count.is_stale, timeout=RESULT_TIMEOUT_MS)
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        if change == "sidebar config":
            panel.state.set_config(get_preset("tiny-llama"))
        elif change == "picked model":
            panel.model_combo.setCurrentIndex(panel.model_combo.findData("gpt2-small"))
        else:
            panel.tied_check.setChecked(not panel.tied_check.isChecked())
        assert_breakdown_cleared(panel)
        assert count.is_stale or count.showing_message
    expected = panel.shown_config()
    assert panel.breakdown.config == expected
    assert_pie_is_breakdown(panel, parameter_breakdown(expected))
    qtbot.waitUntil(lambda: AGREES in panel.agree_label.text(), timeout=RESULT_TIMEOUT_MS)
    assert f"{parameter_breakdown(expected).total:,}" in panel.agree_label.text()


def test_a_hovered_wedge_reads_nothing_while_stale(qtbot, panel):
    pie = panel.pie
    pie.hover_key("ffn")
    with qtbot.waitSignal(panel.breakdown_view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tied_check.setChecked(not panel.tied_check.isChecked())
        assert pie.stale and pie.hovered == ""
    assert not pie.stale


def test_the_compare_pickers_and_the_config_clear_the_comparison(qtbot, panel):
    show_tab(qtbot, panel, 1, panel.compare)
    compare = panel.compare
    with qtbot.waitSignal(compare.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.compare_b_combo.setCurrentIndex(panel.compare_b_combo.findData("llama2-7b"))
        assert compare.is_stale and (compare.count.is_stale or compare.count.showing_message)
        assert panel.compare_agree_label.text() == ""
    assert panel.compare_table.horizontalHeaderItem(2).text() == "llama2-7b"
    assert panel.compare_views[1].pie.total == parameter_breakdown(get_preset("llama2-7b")).total
    qtbot.waitUntil(lambda: "llama2-7b: " in panel.compare_agree_label.text(), timeout=RESULT_TIMEOUT_MS)
    # The current config is one of the compared only when picked: then a sidebar change is an input.
    computations = compare.computations
    panel.state.set_config(get_preset("tiny-moe"))
    assert not compare.is_stale and compare.computations == computations
    with qtbot.waitSignal(compare.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.compare_a_combo.setCurrentIndex(0)
    assert panel.compare_table.horizontalHeaderItem(1).text() == "tiny-moe"
    with qtbot.waitSignal(compare.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.state.set_config(get_preset("tiny-llama"))
        assert compare.is_stale
    assert panel.compare_table.horizontalHeaderItem(1).text() == "tiny-llama"
    assert panel.compare_a_combo.itemText(0) == "current config (tiny-llama)"


def test_the_sweep_readout_is_cleared_with_the_sweep_and_read_again(qtbot, panel):
    pick(qtbot, panel, "gpt2-small")
    show_tab(qtbot, panel, 2, panel.sweep_view)
    widths = [int(w) for w in panel.sweep.widths]
    panel.width_slider.setValue(widths.index(2048))
    assert "d = 2,048" in panel.sweep_label.text()
    view = panel.sweep_view
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tied_check.setChecked(False)
        assert view.is_stale and panel.sweep is None and panel.sweep_label.text().strip() == ""
        xs, _ys = panel.sweep_marker.getData()
        assert xs is None or len(xs) == 0  # no marker at a width of the old sweep
    # The same model untied: the slider keeps its width, and the sentence reads the new sweep.
    untied = get_preset("gpt2-small").replace(tie_embeddings=False)
    assert "d = 2,048" in panel.sweep_label.text()
    share = panel.sweep.embedding_share[[int(w) for w in panel.sweep.widths].index(2048)]
    assert format_share(float(share)) in panel.sweep_label.text()
    assert view.shown_inputs.config == untied
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.model_combo.setCurrentIndex(panel.model_combo.findData("gpt2-xl"))
    assert panel.breakdown_view.is_stale  # off screen: it catches up when its tab is shown
    assert int(panel.sweep.widths[panel.width_slider.value()]) == 1600  # a new model starts at its own width


def test_the_budget_follows_the_picked_model(qtbot, panel):
    show_tab(qtbot, panel, 3, panel.budget)
    view = panel.budget
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.model_combo.setCurrentIndex(panel.model_combo.findData("mixtral-8x7b"))
        assert view.is_stale and panel.budget_label.text() == ""
    budget = compute_budget(get_preset("mixtral-8x7b"))
    assert panel.budget_table.item(0, 1).text() == format_flops(budget.training_flops_per_token)
    assert "mixtral-8x7b" in panel.budget_label.text()


def test_hidden_sub_tabs_and_a_hidden_panel_do_no_work(qtbot, panel):
    others = (panel.compare, panel.sweep_view, panel.budget)
    before = [view.computations for view in others]
    with qtbot.waitSignal(panel.breakdown_view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.state.set_config(get_preset("tiny-moe"))
    assert [view.computations for view in others] == before
    breakdown = panel.breakdown_view
    computations = (breakdown.computations, breakdown.count.computations)
    panel.hide()
    panel.state.set_config(get_preset("tiny-llama"))
    panel.tied_check.setChecked(not panel.tied_check.isChecked())
    QApplication.processEvents()  # the update each edit queued has run
    assert breakdown.is_stale and panel.total_label.text() == ""
    assert (breakdown.computations, breakdown.count.computations) == computations
    with qtbot.waitSignal(breakdown.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.show()
    assert breakdown.computations == computations[0] + 1
    assert panel.breakdown.config == panel.shown_config()
    with qtbot.waitSignal(panel.budget.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tabs.setCurrentIndex(3)
    assert panel.budget.computations == before[2] + 1


def test_the_formula_does_not_wait_for_torch(qtbot, compute):
    state = LabState()
    widget = ParametersPanel(state, compute)
    qtbot.addWidget(widget)
    widget.show()
    qtbot.waitUntil(lambda: widget.breakdown is not None, timeout=RESULT_TIMEOUT_MS)
    count = widget.breakdown_view.count
    assert count.showing_message and "torch" in count.message.text()
    with qtbot.waitSignal(count.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_torch_ready(True)
    assert AGREES in widget.agree_label.text()


def test_settings_round_trip_and_ignore_junk(qtbot, panel):
    panel.restore_settings({"model": "gpt2-xl", "tied": False, "compare_left": "llama2-7b", "compare_right": "nope",
                            "width": 2048, "tab": 2})
    settings = panel.settings()
    assert settings == {"model": "gpt2-xl", "tied": False, "compare_left": "llama2-7b", "compare_right": "gpt2-medium",
                        "width": 2048, "tab": 2}
    panel.restore_settings({"model": 3, "tied": "no", "width": "wide", "tab": 99})
    assert panel.settings() == settings
    assert len(panel.export_targets()) == 8


def test_an_encoder_decoder_spells_out_its_base_layer_then_the_decoder_block(qtbot, panel):
    pick(qtbot, panel, "transformer-base")
    breakdown = parameter_breakdown(get_preset("transformer-base"))
    encoder, decoder = breakdown.encoder_block, breakdown.decoder_block
    text = panel.block_label.text()
    first, _, rest = text.partition("A decoder block")
    assert first.startswith("One encoder block")
    assert f"{encoder.total:,} = attention {encoder.attention:,} + FFN {encoder.ffn:,}" in first
    assert format_share(encoder.ffn_share) in first
    assert f"{decoder.total:,}" in rest and format_share(decoder.ffn_share) in rest
    pick(qtbot, panel, "gpt2-small")
    one = parameter_breakdown(get_preset("gpt2-small")).decoder_block
    assert panel.block_label.text().startswith(f"One block: {one.total:,} = attention")


def test_an_attention_only_model_has_no_ffn_wedge_and_one_norm_per_block(qtbot, panel):
    pick(qtbot, panel, "tiny-induction-attn")
    config = get_preset("tiny-induction-attn")
    breakdown = parameter_breakdown(config)
    assert_pie_is_breakdown(panel, breakdown)
    qtbot.waitUntil(lambda: AGREES in panel.agree_label.text(), timeout=30_000)
    assert panel.pie_values().get("ffn", 0) == 0
    block = breakdown.decoder_block
    one_norm = 2 * config.d_model  # a LayerNorm's scale and shift
    assert block.norms == one_norm and block.attention == 4 * config.d_model * (config.d_model + 1)
    assert panel.block_label.text() == (f"One block: {block.total:,} = attention {block.attention:,} + norms "
                                        f"{block.norms:,}; attention-only, no FFN.")
    legend = panel.breakdown_view.legend_table
    labels = [legend.item(row, 0).text().strip() for row in range(legend.rowCount()) if legend.item(row, 0)]
    assert "attention" in labels and not any("FFN" in label or "feed-forward" in label for label in labels)
