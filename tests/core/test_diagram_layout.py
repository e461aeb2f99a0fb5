"""The block diagram's layout, without a window: parts and links for every kind of model, placed sanely."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given

from core.diagram_layout import Diagram, diagram_parts
from core.presets import PRESETS
from tests.configs import small_configs

MARKERS = ("rope_marker", "alibi_marker")  # badges drawn on their attention box, on purpose
TOL = 1e-6


def _inside(point, rect) -> bool:
    x, y = point
    rx, ry, rw, rh = rect
    return rx - TOL <= x <= rx + rw + TOL and ry - TOL <= y <= ry + rh + TOL


def _overlap(a, b) -> bool:
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    return ax + TOL < bx + bw and bx + TOL < ax + aw and ay + TOL < by + bh and by + TOL < ay + ah


def _on_segment(point, start, end) -> bool:
    (x, y), (x1, y1), (x2, y2) = point, start, end
    within = min(x1, x2) - TOL <= x <= max(x1, x2) + TOL and min(y1, y2) - TOL <= y <= max(y1, y2) + TOL
    return within and abs((x2 - x1) * (y - y1) - (y2 - y1) * (x - x1)) < TOL


def _check_layout(diagram: Diagram) -> None:
    boxes = [p for p in diagram.parts if p.kind != "block"]  # a block is a frame around its parts
    assert len({p.key for p in diagram.parts}) == len(diagram.parts), "part keys are unique"
    for part in diagram.parts:
        x, y, w, h = part.rect
        assert w > 0 and h > 0 and x >= 0 and y >= 0, part.key
        assert x + w <= diagram.width + TOL and y + h <= diagram.height + TOL, part.key
    for a, b in itertools.combinations(boxes, 2):
        if a.kind in MARKERS or b.kind in MARKERS:
            continue
        assert not _overlap(a.rect, b.rect), (a.key, b.key)
    for marker in (p for p in boxes if p.kind in MARKERS):
        assert any(_overlap(marker.rect, p.rect) for p in boxes if p.kind == "attention"), marker.key
    segments = [(link, s, e) for link in diagram.links for s, e in itertools.pairwise(link.points)]
    for link in diagram.links:
        assert len(link.points) >= 2
        for end in (link.points[0], link.points[-1]):
            # An arrow ends at a part, or leaves from another line (a branch from the stream, a bus).
            at_part = any(_inside(end, p.rect) for p in boxes)
            on_line = any(_on_segment(end, s, e) for other, s, e in segments if other is not link)
            assert at_part or on_line, (link.kind, end)


def _expected_kinds(config) -> set[str]:
    kinds = {"input", "token_embedding", "attention", "add", "head"}
    if not config.attention_only:
        kinds.add("ffn" if config.n_experts == 0 else "experts")
    if config.architecture == "encoder-decoder":
        kinds |= {"cross_attention", "memory"}
    if config.n_experts:
        kinds.add("router")
    return kinds


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_has_its_parts_and_a_sane_layout(name):
    config = PRESETS[name]
    diagram = diagram_parts(config, seq_len=8)
    kinds = {p.kind for p in diagram.parts}
    missing = _expected_kinds(config) - kinds
    assert not missing or missing == {"ffn"} and kinds & {"ffn_gate", "ffn_up"}, missing  # a gated FFN is split
    expected_towers = {"encoder", "decoder"} if config.architecture == "encoder-decoder" else {
        "encoder" if config.architecture == "encoder" else "decoder"}
    assert set(diagram.towers) == expected_towers
    _check_layout(diagram)


@given(small_configs())
def test_any_config_is_laid_out_without_overlaps_or_loose_links(config):
    diagram = diagram_parts(config)
    _check_layout(diagram)
    assert {p.kind for p in diagram.parts} >= {"input", "token_embedding", "attention", "add", "head"}
    assert diagram.of_kind("cross_attention") == [] or config.architecture == "encoder-decoder"
