"""The Parameters panel: the pie is parameter_breakdown, the meta-device count agrees, tying moves V*d."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint

from core.experiments.budgets import compare_configs, compute_budget
from core.params import parameter_breakdown
from core.presets import get_preset
from gui.panels.parameters import AGREES, ParametersPanel, block_norm_params, format_bytes, format_flops
from gui.state import LabState
from gui.widgets.export import export
from gui.widgets.pie import format_count, format_share


@pytest.fixture
def panel(qtbot, compute):
    state = LabState()
    state.set_torch_ready(True)
    widget = ParametersPanel(state, compute)
    qtbot.addWidget(widget)
    widget.resize(1300, 800)
    widget.show()
    qtbot.waitUntil(lambda: widget.breakdown is not None, timeout=5000)
    return widget


def pick(qtbot, panel: ParametersPanel, name: str) -> None:
    panel.model_combo.setCurrentIndex(panel.model_combo.findData(name))
    qtbot.waitUntil(lambda: panel.breakdown is not None and panel.breakdown.config.name == name, timeout=5000)


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


def test_comparison_sweep_and_budget_tables(qtbot, panel):
    pick(qtbot, panel, "gpt2-small")
    small, medium = get_preset("gpt2-small"), get_preset("gpt2-medium")
    comparison = compare_configs(small, medium)
    cells = {panel.compare_table.item(r, 0).text(): (panel.compare_table.item(r, 1).text(), panel.compare_table.item(r, 2).text())
             for r in range(panel.compare_table.rowCount())}
    assert cells["parameters"] == (format_count(comparison.a.total_params), format_count(comparison.b.total_params)) == ("124.4M", "354.8M")
    assert cells["    share of all"] == (format_share(comparison.a.token_embedding_share), format_share(comparison.b.token_embedding_share))
    assert cells["+ positions: share"] == (format_share(comparison.a.embedding_share), format_share(comparison.b.embedding_share))
    assert cells["FFN share of a block"] == ("66.6%", "66.6%")
    qtbot.waitUntil(lambda: AGREES in panel.compare_table.item(panel.compare_table.rowCount() - 1, 2).text(), timeout=30_000)
    assert [view.pie.total for view in panel.compare_views] == [comparison.a.total_params, comparison.b.total_params]

    widths = [int(w) for w in panel.sweep.widths]
    assert widths[panel.width_slider.value()] == 768
    assert panel.sweep_marker.getData()[1][0] == pytest.approx(100 * parameter_breakdown(small).embedding_share)
    panel.width_slider.setValue(widths.index(4096))
    assert "d = 4,096" in panel.sweep_label.text()
    assert panel.sweep.embedding_share[widths.index(4096)] < panel.sweep.embedding_share[widths.index(768)]

    budget = compute_budget(small)
    table = panel.budget_table
    assert table.item(0, 1).text() == format_flops(budget.training_flops_per_token) == "746.6 MFLOP"
    assert table.item(3, 1).text() == format_bytes(budget.weight_bytes["fp32"])
    assert table.item(3, 3).text() == format_bytes(budget.weight_bytes["int8"])
    assert table.item(5, 2).text() == format_bytes(budget.kv_cache_bytes_full_context["bf16"])


def test_settings_round_trip_and_ignore_junk(qtbot, panel):
    panel.restore_settings({"model": "gpt2-xl", "tied": False, "compare_left": "llama2-7b", "compare_right": "nope",
                            "width": 2048, "tab": 2})
    settings = panel.settings()
    assert settings == {"model": "gpt2-xl", "tied": False, "compare_left": "llama2-7b", "compare_right": "gpt2-medium",
                        "width": 2048, "tab": 2}
    panel.restore_settings({"model": 3, "tied": "no", "width": "wide", "tab": 99})
    assert panel.settings() == settings
    assert len(panel.export_targets()) == 8
