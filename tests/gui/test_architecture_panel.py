"""The Architecture panel: the drawing matches the config, hover and click tell the truth, the table matches core."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLabel, QTabWidget

from core.config import ModelConfig
from core.diagram_layout import DRAWN_EDGE, MAX_FULL_DEPTH, Diagram, diagram_parts, drawn_layers
from core.params import attention_params, block_breakdown, ffn_params
from core.presets import PRESETS, get_preset
from core.tokenizers import CharTokenizer
from gui.panels import PANEL_CLASSES
from gui.panels.architecture import HOVER_HINT, LENS_COLUMN, ArchitecturePanel
from gui.state import LabState
from gui.widgets.export import export
from tests.configs import small_configs

T = 7


# ---- the pure layout ----------------------------------------------------------------------------
def _overlaps(a, b) -> bool:
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    return ax < bx + bw - 1e-9 and bx < ax + aw - 1e-9 and ay < by + bh - 1e-9 and by < ay + ah - 1e-9


def check_diagram(config: ModelConfig, diagram: Diagram) -> None:
    """Every structural claim the drawing makes about `config`."""
    pair = config.architecture == "encoder-decoder"
    expected_towers = {"decoder": ("decoder",), "encoder": ("encoder",), "encoder-decoder": ("encoder", "decoder")}
    assert diagram.towers == expected_towers[config.architecture]
    keys = [p.key for p in diagram.parts]
    assert len(keys) == len(set(keys))

    for tower in diagram.towers:
        depth = config.encoder_layers if tower == "encoder" else config.decoder_layers
        drawn = drawn_layers(depth)
        assert diagram.drawn_layers[tower] == drawn
        blocks = diagram.of_kind("block", tower)
        assert [b.layer for b in blocks] == list(drawn)
        ellipses = diagram.of_kind("ellipsis", tower)
        if depth > MAX_FULL_DEPTH:
            assert len(drawn) == 2 * DRAWN_EDGE and drawn[-1] == depth - 1
            assert len(ellipses) == 1 and f"× {depth - 2 * DRAWN_EDGE} more" in ellipses[0].label
        else:
            assert drawn == tuple(range(depth)) and not ellipses
        cross = pair and tower == "decoder"
        ffn = not config.attention_only
        sublayers = ["attention"] + (["cross_attention"] if cross else []) + (["ffn"] if ffn else [])
        norms = diagram.of_kind("norm", tower)
        assert len(norms) == len(drawn) * len(sublayers)
        assert {n.placement for n in norms} == {config.norm_placement}
        for layer in drawn:
            prefix = f"{tower}.block{layer}."
            norm_names = ["norm1"] + (["norm_cross"] if cross else []) + ["norm2"] * ffn
            for sublayer, norm_name in zip(sublayers, norm_names):
                norm, add = diagram.part(prefix + norm_name), diagram.part(prefix + f"add_{sublayer}")
                if config.norm_placement == "pre":
                    # On the branch, in the sublayer's row, before the ⊕.
                    assert not norm.on_stream and norm.center[0] != pytest.approx(add.center[0])
                    assert norm.rect[1] + norm.rect[3] < add.rect[1]
                else:
                    # On the stream, after the ⊕.
                    assert norm.on_stream and norm.center[0] == pytest.approx(add.center[0])
                    assert norm.rect[1] > add.rect[1] + add.rect[3]
            assert (prefix + "add_ffn" in keys) == ffn
            if not ffn:
                continue
            if config.is_moe:
                assert diagram.part(prefix + "router").detail == f"top-{config.top_k} of {config.n_experts}"
                assert f"top-{config.top_k} of {config.n_experts}" in diagram.part(prefix + "experts").detail
            elif config.activation == "swiglu":
                for kind in ("ffn_gate", "ffn_up", "ffn_multiply", "ffn_down"):
                    diagram.part(prefix + kind)
            else:
                diagram.part(prefix + "ffn")
        moe_parts = len(drawn) if config.is_moe else 0
        assert len(diagram.of_kind("router", tower)) == len(diagram.of_kind("experts", tower)) == moe_parts
        gated = config.activation == "swiglu" and not config.is_moe and ffn
        assert len(diagram.of_kind("ffn_gate", tower)) == (len(drawn) if gated else 0)
        assert len(diagram.of_kind("ffn", tower)) == (0 if gated or config.is_moe or not ffn else len(drawn))
        attention_boxes = diagram.of_kind("attention", tower)
        assert len(attention_boxes) == len(drawn)
        causal = config.self_attention_causal and tower == "decoder"
        assert all(("causal" if causal else "bidirectional") in a.detail for a in attention_boxes)
        markers = {"rope": "rope_marker", "alibi": "alibi_marker"}
        for kind in markers.values():
            assert len(diagram.of_kind(kind, tower)) == (len(drawn) if markers.get(config.positional) == kind else 0)
        additive = config.positional in ("learned", "sinusoidal")
        assert len(diagram.of_kind("position_embedding", tower)) == int(additive)
        assert len(diagram.of_kind("position_note", tower)) == int(config.positional == "none")
        assert len(diagram.of_kind("final_norm", tower)) == int(config.final_norm)
        assert len(diagram.of_kind("token_embedding", tower)) == 1

    head_tower = "decoder" if config.architecture != "encoder" else "encoder"
    assert len(diagram.of_kind("head")) == 1 and diagram.of_kind("head")[0].tower == head_tower
    tied = diagram.links_of_kind("tied")
    if config.tie_embeddings:
        assert len(tied) == 1 and tied[0].label == "tied"
        head, embedding = diagram.part(f"{head_tower}.head"), diagram.part(f"{head_tower}.token_embedding")
        assert tied[0].points[0][1] == pytest.approx(head.center[1])
        assert tied[0].points[-1][1] == pytest.approx(embedding.center[1])
    else:
        assert not tied
    cross_boxes = diagram.of_kind("cross_attention")
    cross_links = diagram.links_of_kind("cross")
    if pair:
        assert len(cross_boxes) == len(cross_links) == len(diagram.drawn_layers["decoder"])
        memory = diagram.part("encoder.memory")
        for link, box in zip(cross_links, cross_boxes):
            assert link.points[0][1] == pytest.approx(memory.center[1])
            assert link.points[-1][1] == pytest.approx(box.center[1])
            x, _, w, _ = box.rect
            assert link.points[-1][0] in (pytest.approx(x), pytest.approx(x + w))
    else:
        assert not cross_boxes and not cross_links

    # Readable: no two boxes overlap (frames hold boxes; a marker sits on its own attention box), all inside.
    boxes = [p for p in diagram.parts if p.kind != "block"]
    for a, b in itertools.combinations(boxes, 2):
        if {a.kind, b.kind} & {"rope_marker", "alibi_marker"} and a.layer == b.layer and a.tower == b.tower \
                and {a.kind, b.kind} & {"attention"}:
            continue
        assert not _overlaps(a.rect, b.rect), (a.key, b.key)
    for part in diagram.parts:
        x, y, w, h = part.rect
        assert 0 <= x and x + w <= diagram.width and 0 <= y and y + h <= diagram.height, part.key


@pytest.mark.parametrize("name", list(PRESETS))
def test_the_drawing_matches_every_preset(name):
    config = get_preset(name)
    check_diagram(config, diagram_parts(config, T))


@settings(max_examples=25)
@given(small_configs(max_layers=8))
def test_the_drawing_matches_drawn_configs(config):
    check_diagram(config, diagram_parts(config, T))


def test_parameter_counts_and_shapes_come_from_core_params():
    config = get_preset("mixtral-8x7b")
    diagram = diagram_parts(config, 42)
    block = block_breakdown(config, cross_attention=False)
    assert diagram.part("decoder.block0.attention").parameters == attention_params(config)
    assert diagram.part("decoder.block0.experts").parameters == block.ffn
    assert diagram.part("decoder.block0.router").parameters == block.router
    assert diagram.part("decoder.block0.norm1").parameters == block.norms // 2
    assert diagram.part("decoder.block31").parameters == block.total
    assert diagram.part("decoder.ellipsis2").parameters == 28 * block.total
    assert diagram.part("decoder.block0.router").shape == (1, 42, 8)
    assert diagram.part("decoder.head").shape == (1, 42, 32000)
    llama = get_preset("llama2-7b")
    gated = diagram_parts(llama, 5)
    parts = [gated.part(f"decoder.block0.{kind}").parameters for kind in ("ffn_gate", "ffn_up", "ffn_down")]
    assert sum(parts) == ffn_params(llama)
    assert diagram_parts(get_preset("tiny-gpt"), 0).part("decoder.block0.ffn").shape == (1, "T", 128)


# ---- the panel ----------------------------------------------------------------------------------
@pytest.fixture
def panel(qtbot, compute):
    state = LabState()
    widget = ArchitecturePanel(state, compute)
    qtbot.addWidget(widget)
    widget.resize(1300, 850)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def test_the_panel_is_registered():
    assert ArchitecturePanel in PANEL_CLASSES


def test_hover_shows_parameters_and_shape_from_core(qtbot, panel):
    state = panel.state
    state.set_config(get_preset("tiny-llama"))
    state.set_tokens([1, 2, 3, 4, 5])
    config = state.config
    expected = {
        "decoder.block0.attention": (attention_params(config), "(1, 5, 128)"),
        "decoder.block1.norm2": (block_breakdown(config, False).norms // 2, "(1, 5, 128)"),
        "decoder.block0.ffn_up": (config.d_model * config.d_ff, "(1, 5, 352)"),
        "decoder.token_embedding": (config.vocab_size * config.d_model, "(1, 5, 128)"),
        "decoder.head": (config.vocab_size * config.d_model, "(1, 5, 65)"),  # untied
    }
    for key, (count, shape) in expected.items():
        panel.view.hover_key(key)
        text = panel.hover_label.text()
        assert f"<b>Parameters:</b> {count:,}" in text and shape in text, key
    # A real mouse move over the box does the same.
    with qtbot.waitSignal(panel.view.part_hovered, check_params_cb=lambda part: part is not None and part.kind == "ffn_down"):
        qtbot.mouseMove(panel.view.viewport(), panel.view.item_center("decoder.block0.ffn_down"))
    assert f"{config.d_ff * config.d_model:,}" in panel.hover_label.text()


def test_clicking_a_part_asks_for_the_panel_that_studies_it(qtbot, panel):
    view = panel.view
    for key, title in (("decoder.block0.attention", "Tokens & masks"), ("decoder.position_embedding", "Positions"),
                       ("decoder.block1.norm1", "Norms"), ("decoder.block0.ffn", "Parameters"),
                       ("decoder.input", "Tensor shapes")):
        view.ensureVisible(view.items[key])
        with qtbot.waitSignal(panel.navigate_requested, check_params_cb=lambda t, title=title: t == title):
            qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.item_center(key))


def test_the_layer_control_changes_the_model_everywhere(qtbot, panel):
    state = panel.state
    panel.layers_spin.setValue(7)
    assert state.config.n_layers == 7 and state.config.d_model == get_preset("tiny-gpt").d_model
    assert [b.layer for b in panel.diagram.of_kind("block")] == [0, 1, 5, 6]
    assert "× 3 more blocks" in panel.diagram.of_kind("ellipsis")[0].label
    state.undo_stack.undo()
    assert state.config.n_layers == 4 and panel.layers_spin.value() == 4
    state.set_config(get_preset("gpt2-xl"))
    assert panel.layers_spin.value() == 48
    assert len(panel.view.items) == len(panel.diagram.parts)
    assert "gpt2-xl" in panel.config_label.text() and "48 blocks" in panel.config_label.text()


def test_the_follow_table_matches_core(qtbot, panel, tmp_path):
    from core.checkpoints import load_bundled
    from core.experiments.follow_token import follow_token

    bundled = load_bundled("tiny-gpt")
    state = panel.state
    state.set_tokenizer(bundled.tokenizer)
    state.set_text("To be, or not to be")
    state.set_model(bundled.model)
    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        state.set_torch_ready(True)
    tokens = state.tokens
    position = len(tokens) - 2
    assert panel.token_combo.currentIndex() == position
    expected = follow_token(bundled.model, tokens, position, bundled.tokenizer, k=5)
    table = panel.table
    assert table.rowCount() == expected.n_stages
    for row in range(expected.n_stages):
        assert table.item(row, 0).text() == expected.stage_labels[row]
        assert table.item(row, 1).text() == f"{expected.norms[row]:.2f}"
        assert table.item(row, 2).text() == f"{expected.update_norms[row]:.2f}"
        assert table.item(row, LENS_COLUMN).text().startswith(expected.top_labels[row][0] + " ")
    np.testing.assert_allclose(panel.norm_bars.opts["width"], expected.norms)
    np.testing.assert_allclose(panel.update_bars.opts["width"], expected.update_norms)
    assert f"Token {position}" in panel.follow_caption.text()
    # The drawing carries the same readings beside the places they are read.
    annotations = panel.view.annotation_items
    assert annotations["decoder.add_positions"].text() == f"‖x‖ {expected.norms[0]:.2f}"
    assert annotations["decoder.block0.add_attention"].text() == f"‖x‖ {expected.norms[1]:.2f}"
    assert annotations["decoder.final_norm"].text() == f"‖x‖ {expected.norms[-1]:.2f}"

    with qtbot.waitSignal(panel.result_shown, timeout=30_000):
        panel.token_combo.setCurrentIndex(1)
        panel.token_combo.activated.emit(1)
    assert panel.result.position == 1
    assert panel.settings() == {"follow_position": 1, "follow_tower": "decoder", "tuned_lens": False}

    table.selectRow(2)  # a stage row lights up its ⊕ in the drawing
    assert panel.view.hovered is not None and panel.view.hovered.key == "decoder.block0.add_ffn"

    # Another config: the old numbers go; no model for it yet, so the panel says it waits.
    state.set_config(get_preset("tiny-moe"))
    assert panel.result is None and not panel.view.annotation_items and panel.follow_caption.text() == ""
    qtbot.waitUntil(lambda: panel.follow.showing_message)
    assert "Waiting for the model" in panel.follow.message.text()


def test_export_theme_and_settings(qtbot, panel, tmp_path):
    state = panel.state
    state.set_config(get_preset("transformer-base"))
    normal_unit = panel.view.unit
    state.set_font_scale(1.6)
    from gui import theme
    from PySide6.QtWidgets import QApplication

    theme.apply_theme(QApplication.instance(), "projector", 1.6)
    state.set_theme("projector")
    assert panel.view.unit > 1.5 * normal_unit
    for name in ("whole.png", "whole.svg"):
        path = export(panel.picture, tmp_path / name, 900, 1600)
        assert path.stat().st_size > 5000
    assert "Cross-attention" in (tmp_path / "whole.svg").read_text()
    export(panel, tmp_path / "panel.png", 1200, 800)  # the whole panel, the view inside it included
    export(panel.diagram_pane, tmp_path / "view.png", 800, 600)
    assert (tmp_path / "view.png").stat().st_size > 5000
    labels = [label for label, _ in panel.export_targets()]
    assert labels[:2] == ["Architecture", "Block diagram (whole)"]
    panel.restore_settings({"follow_position": "x", "unknown": 1})
    panel.restore_settings(None)
    assert panel.chosen_position is None
    panel.restore_settings({"follow_position": 3})
    assert panel.chosen_position == 3
    theme.apply_theme(QApplication.instance(), "light", 1.0)


# ---- the follow view: nothing old on screen, nothing computed while hidden -------------------------
RESULT_TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def bundled():
    from core.checkpoints import load_bundled

    return load_bundled("tiny-gpt")


@pytest.fixture
def followed(qtbot, panel, bundled):
    """The panel following a token of a short text through the bundled model."""
    state = panel.state
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokenizer(bundled.tokenizer)
        state.set_text("To be, or not to be")
        state.set_model(bundled.model)
        state.set_torch_ready(True)
    yield panel
    qtbot.waitUntil(lambda: not panel.compute.busy, timeout=RESULT_TIMEOUT_MS)


def assert_no_old_numbers(panel: ArchitecturePanel) -> None:
    follow = panel.follow
    assert follow.is_stale or follow.showing_message
    assert panel.result is None
    assert panel.follow_caption.text() == ""
    assert not panel.view.annotations and not panel.view.annotation_items


def expected_follow(panel: ArchitecturePanel):
    from core.experiments.follow_token import follow_token

    state = panel.state
    return follow_token(state.model, state.tokens, panel.followed_position(), state.tokenizer, k=5)


def assert_shows(panel: ArchitecturePanel, expected) -> None:
    assert not panel.follow.is_stale and panel.result.position == expected.position
    assert [panel.table.item(row, 1).text() for row in range(panel.table.rowCount())] == \
        [f"{norm:.2f}" for norm in expected.norms]
    assert panel.view.annotation_items["decoder.final_norm"].text() == f"‖x‖ {expected.norms[-1]:.2f}"
    assert f"Token {expected.position}" in panel.follow_caption.text()


def test_a_token_edit_clears_the_old_reading_then_shows_the_new_one(qtbot, followed, bundled):
    panel, state = followed, followed.state
    before = panel.follow.computations
    tokens = list(state.tokens)
    tokens[-2] = bundled.tokenizer.id_of("X")
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokens(tokens)
        assert_no_old_numbers(panel)
    assert panel.follow.computations == before + 1
    expected = expected_follow(panel)
    assert expected.token_label == "X"
    assert_shows(panel, expected)


def test_the_followed_position_and_the_model_are_inputs(qtbot, followed, bundled):
    from core.model import Transformer

    panel, state = followed, followed.state
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.token_combo.setCurrentIndex(3)
        panel.token_combo.activated.emit(3)
        assert_no_old_numbers(panel)
    assert_shows(panel, expected_follow(panel))
    assert panel.result.position == 3
    other = Transformer.from_seed(bundled.model.config, seed=5).eval()
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_model(other)
        assert_no_old_numbers(panel)
    assert_shows(panel, expected_follow(panel))
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokenizer(CharTokenizer(bundled.tokenizer.chars))  # another object: another input
        assert_no_old_numbers(panel)
    assert_shows(panel, expected_follow(panel))


def test_inputs_the_model_cannot_take_are_refused_in_place_of_the_reading(qtbot, followed, bundled):
    panel, state = followed, followed.state
    too_long = [1] * (state.config.context_length + 1)
    with qtbot.waitSignal(panel.follow.error_shown, timeout=5000) as refused:
        state.set_tokens(too_long)
        assert_no_old_numbers(panel)
    assert "exceed tiny-gpt's context length" in refused.args[0]
    assert panel.follow.showing_message and "context length" in panel.follow.message.text()
    with qtbot.waitSignal(panel.follow.error_shown, timeout=5000) as refused:
        state.set_config(get_preset("mixtral-8x7b"))
    assert "weights" in refused.args[0] and "mixtral-8x7b" in refused.args[0]
    assert panel.diagram.config == get_preset("mixtral-8x7b")  # the drawing still holds


def test_the_hover_text_follows_the_drawing_at_once(qtbot, followed):
    panel, state = followed, followed.state
    panel.view.hover_key("decoder.block0.attention")
    length, width = len(state.tokens), state.config.d_model
    assert f"(1, {length}, {width})" in panel.hover_label.text()
    state.set_tokens(state.tokens + [3])  # one more token: every shape is one longer, right now
    assert f"(1, {length + 1}, {width})" in panel.hover_label.text() and f"T = {length + 1}" in panel.hover_label.text()
    llama = get_preset("tiny-llama")
    assert attention_params(llama) != attention_params(state.config)
    state.set_config(llama)
    assert panel.diagram.config == llama
    assert f"<b>Parameters:</b> {attention_params(llama):,}" in panel.hover_label.text()


def test_a_hidden_panel_does_no_work_on_a_token_edit(qtbot, compute, bundled):
    state = LabState()
    tabs = QTabWidget()
    qtbot.addWidget(tabs)
    panel = ArchitecturePanel(state, compute)
    other = QLabel("another panel")
    tabs.addTab(panel, panel.title)
    tabs.addTab(other, "other")
    tabs.resize(1300, 850)
    tabs.show()
    qtbot.waitExposed(tabs)
    follow = panel.follow
    with qtbot.waitSignal(follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokenizer(bundled.tokenizer)
        state.set_text("To be, or not to be")
        state.set_model(bundled.model)
        state.set_torch_ready(True)
    panel.view.hover_key("decoder.block0.attention")
    tabs.setCurrentWidget(other)
    computations, rebuilds, combo = follow.computations, panel.diagram_rebuilds, panel.token_combo.count()
    for extra in range(1, 4):
        state.set_tokens(state.tokens + [extra])
        QApplication.processEvents()  # the update each edit queued has run
        assert follow.is_stale and panel.result is None and not panel.view.annotation_items
        assert panel.hover_label.text() == HOVER_HINT  # the old drawing's numbers are gone at once
    assert follow.computations == computations and not compute.busy_with(follow.channel)
    assert panel.diagram_rebuilds == rebuilds and panel.token_combo.count() == combo
    with qtbot.waitSignal(follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        tabs.setCurrentWidget(panel)
    assert follow.computations == computations + 1 and panel.diagram_rebuilds == rebuilds + 1
    assert panel.diagram.seq_len == len(state.tokens) == panel.token_combo.count()
    assert_shows(panel, expected_follow(panel))
    qtbot.waitUntil(lambda: not compute.busy, timeout=RESULT_TIMEOUT_MS)


def test_a_replace_edit_keeps_the_drawing(qtbot, followed, bundled):
    panel, state = followed, followed.state
    rebuilds = panel.diagram_rebuilds
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokens([bundled.tokenizer.id_of("a")] * len(state.tokens))
    assert panel.diagram_rebuilds == rebuilds  # same config, same T: the same drawing


def test_token_labels_are_plain_text_in_the_caption(qtbot, followed, bundled):
    panel, state = followed, followed.state
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokens([bundled.tokenizer.id_of(c) for c in "a&b;c"])
        panel.set_followed_position(1)
    assert "<b>'&amp;'</b>" in panel.follow_caption.text()  # shown as the character itself, not markup


def test_a_model_of_another_vocabulary_is_read_in_ids_in_the_picker_and_the_caption(qtbot, followed, bundled):
    """The text's character tokenizer does not belong to a random gpt2-small: both say 'id N', never a character."""
    from core.model import Transformer
    from core.presets import get_preset

    panel, state = followed, followed.state
    config = get_preset("tiny-gpt").replace(vocab_size=bundled.tokenizer.vocab_size + 7, name="other-vocab")
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_config(config)
        state.set_model(Transformer.from_seed(config, seed=0).eval())
    panel._fill_token_combo()
    position = panel.followed_position()
    token = state.tokens[position]
    assert panel.token_combo.itemText(position) == f"{position}: id {token}"
    caption = panel.follow_caption.text()
    assert f"Token {position} <b>id {token}</b>" in caption and "Token ids only" in caption
    assert all(part.strip().startswith("id ") for part in panel.table.item(0, LENS_COLUMN).text().split("│"))


def test_an_attention_only_model_is_followed_through_one_add_per_block(qtbot, followed, bundled):
    from core.model import Transformer

    panel, state = followed, followed.state
    config = bundled.model.config.replace(attention_only=True, name="attn-only")
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_config(config)
        state.set_model(Transformer.from_seed(config, seed=1).eval())
    expected = expected_follow(panel)
    assert_shows(panel, expected)
    assert expected.n_stages == config.n_layers + 2  # the embedding, one add per block, the final norm
    keys = {panel.follow.stage_part_key(row) for row in range(expected.n_stages)}
    assert len(keys) == expected.n_stages and keys == set(panel.view.annotation_items)
    assert "attention-only (no FFN)" in panel.config_label.text()
