"""The Architecture panel on an encoder, an encoder-decoder and a mixture of experts: the drawing and the
followed token say what each model does, with the numbers core computes."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QCoreApplication

from core.checkpoints import resolve_checkpoint
from core.config import ModelConfig
from core.diagram_layout import diagram_parts
from core.experiments.follow_token import follow_token
from core.families import bert, marian
from core.model import Transformer
from core.params import parameter_breakdown
from core.presets import get_preset
from core.tokenizers import CharTokenizer
from gui.panels.architecture import LENS_COLUMN, LENS_HEADERS, READS_COLUMN, ArchitecturePanel, describe_reads
from gui.state import LabState
from resources import resource_path
from tests.encoder_folders import bert_folder
from tests.gui.test_architecture_panel import check_diagram

RESULT_TIMEOUT_MS = 30_000
CHARS = CharTokenizer.from_text(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8"))
TEXT = "the cat sat"


@pytest.fixture
def panel(qtbot, compute):
    state = LabState()
    widget = ArchitecturePanel(state, compute)
    qtbot.addWidget(widget)
    widget.resize(1300, 850)
    widget.show()
    qtbot.waitExposed(widget)
    yield widget
    qtbot.waitUntil(lambda: not compute.busy, timeout=RESULT_TIMEOUT_MS)
    QCoreApplication.sendPostedEvents()  # a result on its way reaches the panel while it still exists


def _load(qtbot, panel, model, tokenizer, text=TEXT):
    state = panel.state
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        state.set_tokenizer(tokenizer)
        state.set_text(text)
        state.set_config(model.config)
        state.set_model(model)
        state.set_torch_ready(True)


def _row(panel, row: int) -> list[str]:
    return [panel.table.item(row, column).text() for column in range(panel.table.columnCount())]


def _config_of(family, hf: dict) -> ModelConfig:
    return ModelConfig(name=family.__name__.rsplit(".", 1)[-1], **family.config_fields(hf, "config.json")).validated()


BERT_HF = {"vocab_size": 200, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
           "intermediate_size": 64, "max_position_embeddings": 64}
MARIAN_HF = {"vocab_size": 200, "d_model": 32, "encoder_layers": 2, "decoder_layers": 3, "encoder_attention_heads": 4,
             "decoder_attention_heads": 4, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "max_position_embeddings": 64,
             "activation_function": "swish", "scale_embedding": True}


def test_the_drawing_of_bert_and_marian_carries_their_own_parts():
    bert_config, marian_config = _config_of(bert, BERT_HF), _config_of(marian, MARIAN_HF)
    for config in (bert_config, marian_config):
        diagram = diagram_parts(config, 7)
        check_diagram(config, diagram)
        # Every parameter of the model is in a drawn part (blocks count their inner parts); a pair's two towers
        # each draw the one shared token table.
        drawn = sum(p.parameters for p in diagram.parts if p.layer is None and p.kind != "ellipsis")
        blocks = sum(p.parameters for p in diagram.parts if p.kind == "block")
        shared = config.vocab_size * config.d_model if config.architecture == "encoder-decoder" else 0
        assert drawn + blocks - shared == parameter_breakdown(config).total
    drawing = diagram_parts(bert_config, 7)
    transform = drawing.part("encoder.head_transform")
    assert transform.parameters == 32 * 32 + 32 + 2 * 32 and "GELU" in transform.detail
    assert drawing.part("encoder.embed_norm").parameters == 2 * 32
    assert drawing.part("encoder.head").parameters == 200 and "bias" in drawing.part("encoder.head").detail
    assert drawing.part("encoder.output").label == "Token scores"
    stream = [p.key for p in drawing.parts if p.on_stream and p.layer is None]
    assert stream.index("encoder.embed_norm") < stream.index("encoder.head_transform") < stream.index("encoder.head")
    pair = diagram_parts(marian_config, 7)
    assert "× √32" in pair.part("encoder.token_embedding").detail and "× √32" in pair.part("decoder.token_embedding").detail
    assert not pair.of_kind("head_transform") and not pair.of_kind("final_norm")


def test_an_encoder_is_followed_to_its_own_position_through_the_head_transform(qtbot, panel, tmp_path):
    loaded = resolve_checkpoint(bert_folder(tmp_path / "bert"))
    _load(qtbot, panel, loaded.model, loaded.tokenizer)
    state = panel.state
    position = panel.followed_position()
    expected = follow_token(loaded.model, state.tokens, position, loaded.tokenizer, k=5)
    assert panel.table.horizontalHeaderItem(LENS_COLUMN).text() == LENS_HEADERS["here"]
    caption = panel.follow_caption.text()
    assert "of an encoder" in caption and "belongs at this position" in caption and "the text continues" not in caption
    assert "no final norm, the head transform and the head" in caption
    last = _row(panel, panel.table.rowCount() - 1)
    assert last[0] == "head transform" and last[1] == f"{expected.norms[-1]:.2f}"
    assert last[LENS_COLUMN].startswith(expected.top_labels[-1][0] + " ")
    attention = expected.stage_kinds.index("attention")
    reads = expected.reads(attention)
    assert _row(panel, attention)[READS_COLUMN] == describe_reads(expected, attention)
    assert _row(panel, attention)[READS_COLUMN].startswith(f"{reads[0][0]}:{reads[0][1]} {reads[0][2]:.0%}")
    # Its keys lie on both sides of the followed position somewhere in the stack: no causal mask.
    seen = {p for row in range(expected.n_stages) for p, _, _ in expected.reads(row)}
    assert any(p > position for p in seen) or position == len(state.tokens) - 1
    assert panel.view.annotation_items["encoder.head_transform"].text() == f"‖x‖ {expected.norms[-1]:.2f}"
    assert not panel.tower_combo.isVisible()


def test_an_encoder_decoder_token_shows_the_source_it_read_and_the_encoder_can_be_followed(qtbot, panel):
    config = get_preset("tiny-encoder-decoder").replace(name="random-pair", vocab_size=CHARS.vocab_size,
                                                           n_encoder_layers=None)
    model = Transformer.from_seed(config, seed=2)
    tokenizer = CHARS
    _load(qtbot, panel, model, tokenizer)
    state = panel.state
    position = panel.followed_position()
    expected = follow_token(model, state.tokens, position, tokenizer, k=5)
    assert panel.tower_combo.isVisible()
    cross = [row for row, kind in enumerate(expected.stage_kinds) if kind == "cross-attention"]
    assert len(cross) == config.n_layers
    for row in cross:
        cells = _row(panel, row)
        assert cells[0] == f"block {expected.stage_layers[row]}: + cross-attention"
        position_read, label, weight = expected.reads(row)[0]
        assert cells[READS_COLUMN].startswith(f"source {position_read}:{label} {weight:.0%}")
    caption = panel.follow_caption.text()
    assert "the text continues with" in caption and f"source of {len(state.tokens)} tokens" in caption
    assert panel.view.annotation_items["decoder.block0.add_cross_attention"].text() == f"‖x‖ {expected.norms[cross[0]]:.2f}"
    read = expected.reads(cross[-1])[:2]
    assert panel.view.annotation_items["decoder.block1.cross_attention"].text() == \
        "reads " + ", ".join(f"{p}:{label} {w:.0%}" for p, label, w in read)
    box = panel.view.items["decoder.block1.cross_attention"].sceneBoundingRect()
    note = panel.view.annotation_items["decoder.block1.cross_attention"].sceneBoundingRect()
    assert note.bottom() <= box.top()  # above the box: beside it runs the memory's bus

    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.tower_combo.setCurrentIndex(1)
        panel.tower_combo.activated.emit(1)
    encoder = follow_token(model, state.tokens, position, tokenizer, k=5, tower="encoder")
    assert panel.result.tower == "encoder" and panel.settings()["follow_tower"] == "encoder"
    assert panel.table.rowCount() == encoder.n_stages and "cross-attention" not in encoder.stage_kinds
    assert all(_row(panel, row)[LENS_COLUMN] == "—" for row in range(encoder.n_stages))
    assert [_row(panel, row)[1] for row in range(encoder.n_stages)] == [f"{n:.2f}" for n in encoder.norms]
    assert "no logit lens" in panel.follow_caption.text()
    assert panel.view.annotation_items["encoder.block1.add_ffn"].text() == f"‖x‖ {encoder.norms[-2]:.2f}"
    assert "decoder.block0.add_cross_attention" not in panel.view.annotation_items


def test_a_mixture_shows_the_chosen_experts_in_the_table_and_beside_the_router(qtbot, panel):
    config = get_preset("tiny-moe")
    model = Transformer.from_seed(config, seed=5)
    tokenizer = CHARS
    _load(qtbot, panel, model, tokenizer)
    expected = follow_token(model, panel.state.tokens, panel.followed_position(), tokenizer, k=5)
    rows = [row for row, kind in enumerate(expected.stage_kinds) if kind == "ffn"]
    for row in rows:
        experts = expected.experts(row)
        # float32 weights: their sum is 1 within a rounding per term.
        assert len(experts) == config.top_k and abs(sum(w for _, w in experts) - 1) <= config.top_k * np.finfo(np.float32).eps
        text = "experts " + ", ".join(f"{e} {w:.0%}" for e, w in experts)
        assert _row(panel, row)[READS_COLUMN] == text
        layer = int(expected.stage_layers[row])
        note = panel.view.annotation_items[f"decoder.block{layer}.router"].text()
        assert note == "→ " + ", ".join(f"e{e} {w:.0%}" for e, w in experts)
    np.testing.assert_allclose(panel.norm_bars.opts["width"], expected.norms)
    # A new text: the router's old choice goes with the old numbers, and the new one comes with the new ones.
    with qtbot.waitSignal(panel.follow.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.state.set_text("another text")
        assert not panel.view.annotation_items
    assert "decoder.block0.router" in panel.view.annotation_items
