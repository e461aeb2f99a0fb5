"""The model as a block diagram: a pure layout function and a QGraphicsView that draws it.

`diagram_parts(config, seq_len)` lays the config out in line-height units ("em", one line of
text) and returns a `Diagram` of `Part`s (boxes a student can hover and click) and `Link`s
(arrows). It is pure Python (no Qt, no torch), so tests count blocks, norms, towers and arrows
without rendering, and the parameter counts come straight from core.params.

Layout. The residual stream is a vertical line running top to bottom; each sublayer leaves it on a
branch to one side and comes back to a ⊕ on the stream. Pre-norm puts its norm on the branch, in
front of the sublayer; post-norm puts it on the stream, after the ⊕: the two placements look as
different as they behave. An encoder-decoder gets two towers that face each other, branches
inward, so the cross-attention boxes of the decoder sit next to the bus from the encoder's output.
The side of the stream without branches carries the dashed "tied" link from head to embedding.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFontInfo, QFontMetricsF, QPainter, QPainterPath, QPen, QPolygonF, QTransform
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsSimpleTextItem,
    QGraphicsView,
    QWidget,
)

from core.config import ModelConfig
from core.params import attention_params, block_breakdown, ffn_params
from gui import theme
from gui.theme import MIN_TEXT_PX

# ---- geometry, in lines of text ---------------------------------------------------------------
MARGIN = 1.2
BOX_H = 2.6  # a title line and a detail line
SMALL_H = 1.9  # the two halves of a gated FFN, the markers
STREAM_W = 14.0  # boxes centred on the stream: embedding, final norm, head
STREAM_NORM_W = 9.0  # a post-norm norm on the stream
STREAM_NORM_H = 2.2
NORM_W = 7.5
WIDE_W = 12.5  # attention, FFN, experts
ROUTER_W = 9.0
GATE_W = 9.5
DOWN_W = 9.0
BRANCH_GAP = 2.2  # from the stream to the first box of a branch
BOX_GAP = 1.6  # between boxes along a branch (room for an arrow)
ADD_R = 0.65
RETURN_DROP = 1.1
ROW_GAP = 1.2
BLOCK_HEADER = 2.0
FRAME_PAD = 0.7
ELLIPSIS_W = STREAM_W + 2
TIED_OFFSET = ELLIPSIS_W / 2 + 1.8  # the tied link runs this far from the stream, on the branch-free side
TOWER_GAP = 6.0  # between the branch sides of two towers; the memory bus runs in the middle
EXPERT_SHADOW = 0.35  # offset of each of the two copies drawn behind an experts box
MAX_FULL_DEPTH = 5  # deeper stacks show the first and last DRAWN_EDGE blocks around an ellipsis
DRAWN_EDGE = 2

PANEL_TOKENS = "Tokens & masks"
PANEL_POSITIONS = "Positions"
PANEL_NORMS = "Norms"
PANEL_PARAMETERS = "Parameters"
PANEL_SHAPES = "Tensor shapes"


@dataclass(frozen=True)
class Part:
    """One hoverable element of the diagram."""

    key: str  # unique: "decoder.block0.attention"
    kind: str  # input, token_embedding, position_embedding, position_note, rope_marker, alibi_marker, block,
    #            attention, cross_attention, norm, add, ffn, ffn_gate, ffn_up, ffn_multiply, ffn_down, router,
    #            experts, ellipsis, final_norm, memory, head, output
    label: str  # the title written in the box
    detail: str  # the smaller second line
    tower: str  # "decoder" or "encoder" (the only stack of a decoder- or encoder-only model is named so)
    layer: int | None  # block index, None outside the blocks
    rect: tuple[float, float, float, float]  # x, y, width, height in lines of text
    parameters: int  # from core.params
    shape: tuple[int | str, ...]  # output shape for B = 1 and the current T
    explanation: str  # a short text for students
    panel: str  # the panel that studies this part (its title)
    placement: str = ""  # "pre" or "post" for norms; the norm's place is also visible in the geometry
    on_stream: bool = False  # centred on the residual stream (not on a branch)
    branch_side: int = 1  # +1: this part's tower branches to the right of its stream, -1 to the left
    text_rect: tuple[float, float, float, float] | None = None  # where the label goes, when not in `rect`

    @property
    def center(self) -> tuple[float, float]:
        x, y, w, h = self.rect
        return x + w / 2, y + h / 2


@dataclass(frozen=True)
class Link:
    """An arrow or line: the stream, a branch, a return to ⊕, cross-attention, the tied link."""

    kind: str  # stream, branch, return, cross, tied
    points: tuple[tuple[float, float], ...]
    tower: str = ""
    label: str = ""
    arrow: bool = True  # an arrowhead at the last point


@dataclass(frozen=True)
class Diagram:
    config: ModelConfig
    seq_len: int  # T the shapes were given for (0: unknown, written "T")
    parts: tuple[Part, ...]
    links: tuple[Link, ...]
    width: float
    height: float
    drawn_layers: dict[str, tuple[int, ...]] = field(default_factory=dict)  # tower -> block indices drawn

    def of_kind(self, kind: str, tower: str | None = None) -> list[Part]:
        return [p for p in self.parts if p.kind == kind and (tower is None or p.tower == tower)]

    def links_of_kind(self, kind: str) -> list[Link]:
        return [link for link in self.links if link.kind == kind]

    def part(self, key: str) -> Part:
        for part in self.parts:
            if part.key == key:
                return part
        raise KeyError(key)

    @property
    def towers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.tower for p in self.parts))


def drawn_layers(n_layers: int) -> tuple[int, ...]:
    """Which blocks a stack of n_layers draws; a gap between two indices is drawn as an ellipsis."""
    if n_layers <= MAX_FULL_DEPTH:
        return tuple(range(n_layers))
    return tuple(range(DRAWN_EDGE)) + tuple(range(n_layers - DRAWN_EDGE, n_layers))


def format_shape(shape: tuple[int | str, ...]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"


def format_count(n: int) -> str:
    """12,345 below a million, 1.23M / 4.56B above (the exact figure is in the hover text)."""
    if n >= 1e9:
        return f"{n / 1e9:.2f}B"
    if n >= 1e6:
        return f"{n / 1e6:.2f}M"
    return f"{n:,}"


def _norm_name(config: ModelConfig) -> str:
    return "RMSNorm" if config.norm == "rmsnorm" else "LayerNorm"


def _activation_name(config: ModelConfig) -> str:
    return {"relu": "ReLU", "gelu": "GELU", "gelu-tanh": "GELU (tanh)", "swiglu": "SwiGLU", "silu": "SiLU"}[config.activation]


class _Builder:
    """Accumulates parts and links for one diagram; one method per kind of row."""

    def __init__(self, config: ModelConfig, seq_len: int) -> None:
        self.config = config
        self.T: int | str = seq_len if seq_len > 0 else "T"
        self.parts: list[Part] = []
        self.links: list[Link] = []
        self.drawn: dict[str, tuple[int, ...]] = {}
        self.anchors: dict[str, dict] = {}  # tower -> points other towers link to
        norms_per_block = block_breakdown(config, cross_attention=False).norms
        self.norm_params = norms_per_block // 2
        d, f, bias = config.d_model, config.d_ff, config.bias
        self.in_projection = d * f + (f if bias else 0)  # d -> d_ff (up, and gate for SwiGLU)
        self.out_projection = f * d + (d if bias else 0)  # d_ff -> d

    # ---- helpers -------------------------------------------------------------------------------
    def add(self, **values) -> Part:
        part = Part(**values)
        self.parts.append(part)
        return part

    def link(self, kind: str, points, tower: str = "", label: str = "", arrow: bool = True) -> None:
        self.links.append(Link(kind, tuple((float(x), float(y)) for x, y in points), tower, label, arrow))

    @staticmethod
    def side_rect(sx: float, direction: int, offset: float, width: float, y: float, height: float):
        """A box `offset` away from the stream on the branch side, `width` wide."""
        x = sx + offset if direction > 0 else sx - offset - width
        return (x, y, width, height)

    def d(self) -> tuple[int | str, ...]:
        return (1, self.T, self.config.d_model)

    # ---- one tower -----------------------------------------------------------------------------
    def tower(self, tower: str, sx: float, direction: int, top: float, encoder_of_pair: bool = False,
              decoder_of_pair: bool = False) -> dict:
        """Lay out one stack from token ids to its output; returns anchor points for cross links."""
        c = self.config
        y = top
        prefix = f"{tower}."
        cursor: list[float] = []  # the y where the stream last left a box

        def stream_box(kind: str, label: str, detail: str, height: float, width: float = STREAM_W, **values) -> Part:
            nonlocal y
            if cursor:
                self.link("stream", [(sx, cursor[0]), (sx, y)], tower)
            part = self.add(key=prefix + values.pop("key_suffix", kind), kind=kind, label=label, detail=detail,
                            tower=tower, rect=(sx - width / 2, y, width, height), on_stream=True, **values)
            cursor[:] = [y + height]
            y += height + ROW_GAP
            return part

        stream_box("input", "Token ids", f"shape {format_shape((1, self.T))}", SMALL_H + 0.3, layer=None,
                   parameters=0, shape=(1, self.T), panel=PANEL_SHAPES,
                   explanation="The text as token ids: one whole number per token. Nothing learned has touched it yet."
                   + (" The encoder reads the same tokens as its source sentence." if encoder_of_pair else ""))
        shared = " (shared)" if (encoder_of_pair or decoder_of_pair) else ""
        embedding = stream_box(
            "token_embedding", f"Token embedding{shared}", f"{c.vocab_size:,} × {c.d_model} table", BOX_H, layer=None,
            parameters=c.vocab_size * c.d_model, shape=self.d(), panel=PANEL_PARAMETERS,
            explanation="A lookup table: each token id picks one learned row of d_model numbers. That row is the "
            "token's first vector on the residual stream." + (" Encoder and decoder use the same table." if shared else ""))
        after_positions = self.positions(tower, sx, direction, embedding, cursor)
        if after_positions is not None:
            y = after_positions

        layers = c.encoder_layers if tower == "encoder" else c.decoder_layers
        drawn = drawn_layers(layers)
        self.drawn[tower] = drawn
        cross_targets: list[tuple[float, float]] = []
        frames: list[int] = []
        previous = -1
        for index in drawn:
            if index != previous + 1:
                hidden = index - previous - 1
                block_total = block_breakdown(c, cross_attention=decoder_of_pair).total
                stream_box("ellipsis", f"⋮  × {hidden} more blocks", f"blocks {previous + 1} to {index - 1}, same shape",
                           BOX_H, width=ELLIPSIS_W, key_suffix=f"ellipsis{previous + 1}", layer=None,
                           parameters=hidden * block_total, shape=self.d(), panel=PANEL_PARAMETERS,
                           explanation=f"{hidden} more blocks of exactly the same shape, each with its own weights: "
                           "drawn as one row so the diagram stays readable.")
            frame_top = y
            # RoPE / ALiBi tags sit on the attention box's top edge and need a taller header.
            y += BLOCK_HEADER + (0.7 if c.positional in ("rope", "alibi") else 0.0)
            first_part = len(self.parts)
            sublayers = ["attention"] + (["cross_attention"] if decoder_of_pair else []) + ["ffn"]
            for sublayer in sublayers:
                new_y, target = self.sublayer_row(tower, sx, direction, y, index, sublayer, cursor)
                if target is not None:
                    cross_targets.append(target)
                y = new_y
            block_parts = self.parts[first_part:]
            xs = [p.rect[0] for p in block_parts] + [p.rect[0] + p.rect[2] for p in block_parts]
            xs += [p.rect[0] + p.rect[2] + EXPERT_SHADOW * 2 for p in block_parts if p.kind == "experts"]
            frames.append(len(self.parts))
            block = block_breakdown(c, cross_attention=decoder_of_pair)
            placement = "before each sublayer (pre-norm)" if c.norm_placement == "pre" else "after each residual add (post-norm)"
            name = {"encoder": "Encoder block", "decoder": "Decoder block" if decoder_of_pair else "Block"}[tower]
            self.add(key=f"{prefix}block{index}", kind="block", label=f"{name} {index}",
                     detail=f"{format_count(block.total)} parameters", tower=tower, layer=index,
                     rect=(min(xs) - FRAME_PAD, frame_top, max(xs) - min(xs) + 2 * FRAME_PAD, y - frame_top - ROW_GAP / 2),
                     parameters=block.total, shape=self.d(), panel=PANEL_PARAMETERS,
                     explanation=f"Block {index}: self-attention (tokens exchange information)"
                     + (", cross-attention (the decoder reads the encoder)" if decoder_of_pair else "")
                     + f" and a feed-forward network (each token on its own), each added back onto the residual "
                     f"stream, with the norm {placement}.")
            previous = index
        self.unify_frames(frames, sx, direction)

        if c.final_norm:
            stream_box("final_norm", f"Final {_norm_name(c)}", "before the head" if not encoder_of_pair else "encoder output",
                       STREAM_NORM_H + 0.3, layer=None, parameters=self.norm_params, shape=self.d(), panel=PANEL_NORMS,
                       placement=c.norm_placement,
                       explanation="The last norm rescales each token's vector before it leaves the stack. A pre-norm "
                       "stream was never normalised inside the blocks, so it needs this one.")
        if encoder_of_pair:
            memory = stream_box("memory", "Encoder output (memory)", f"{format_shape(self.d())} to every decoder block",
                                BOX_H, layer=None, parameters=0, shape=self.d(), panel=PANEL_SHAPES,
                                explanation="The encoder's final vector for every source token. Every decoder block's "
                                "cross-attention reads it as keys and values.")
            return {"memory": memory}
        head = stream_box(
            "head", "Output head", "tied to the token embedding" if c.tie_embeddings else f"{c.d_model} → {c.vocab_size:,}",
            BOX_H, layer=None, parameters=0 if c.tie_embeddings else c.vocab_size * c.d_model,
            shape=(1, self.T, c.vocab_size), panel=PANEL_PARAMETERS,
            explanation="A d_model → vocabulary matrix: one score (logit) per vocabulary entry for each token. "
            + ("Tied: it reuses the token embedding table (transposed), so it adds no parameters."
               if c.tie_embeddings else "Untied: a matrix of its own, as large as the embedding table."))
        causal = c.self_attention_causal
        stream_box("output", "Next-token probabilities" if causal else "Token scores",
                   f"softmax over {c.vocab_size:,} entries", SMALL_H + 0.3, layer=None, parameters=0,
                   shape=(1, self.T, c.vocab_size), panel=PANEL_SHAPES,
                   explanation="A softmax turns each position's logits into probabilities "
                   + ("for the token that comes next." if causal else "over the vocabulary (an encoder fills in masked tokens)."))
        if c.tie_embeddings:
            outer = sx - direction * TIED_OFFSET
            ex, ey, ew, eh = embedding.rect
            hx, hy, hw, hh = head.rect
            head_edge = hx if direction > 0 else hx + hw
            embedding_edge = ex if direction > 0 else ex + ew
            self.link("tied", [(head_edge, hy + hh / 2), (outer, hy + hh / 2), (outer, ey + eh / 2),
                               (embedding_edge, ey + eh / 2)], tower, label="tied")
        return {"cross_targets": cross_targets}

    def positions(self, tower, sx, direction, embedding: Part, cursor) -> float | None:
        """Additive positions as a side box feeding a ⊕ (returns where the stream continues); RoPE and ALiBi
        are marked at attention instead."""
        c = self.config
        kind = c.positional
        if kind in ("learned", "sinusoidal"):
            ex, ey, ew, eh = embedding.rect
            y = ey + eh + ROW_GAP
            learned = kind == "learned"
            box = self.add(
                key=f"{tower}.position_embedding", kind="position_embedding",
                label="Position embedding" if learned else "Sinusoidal positions",
                detail=f"learned {c.context_length:,} × {c.d_model}" if learned else "fixed sin / cos, no parameters",
                tower=tower, layer=None, rect=self.side_rect(sx, direction, BRANCH_GAP + 1.0, WIDE_W + 1, y, BOX_H),
                parameters=c.context_length * c.d_model if learned else 0, shape=self.d(), panel=PANEL_POSITIONS,
                explanation=("A learned vector per position, added to the token's vector so attention can tell the "
                             "first token from the fifth. It cannot extrapolate past the context length."
                             if learned else "Sine and cosine waves of many frequencies, added to the token's vector: "
                             "a unique fingerprint per position that needs no training."))
            add_y = y + BOX_H / 2
            self.stream_add(tower, sx, add_y, None, "positions", cursor, "Add positions",
                            "The position vector is added to the token's vector: from here on the stream knows where "
                            "each token is.")
            bx, by, bw, bh = box.rect
            near = bx if direction > 0 else bx + bw
            self.link("branch", [(near, add_y), (sx + direction * ADD_R, add_y)], tower)
            return add_y + ADD_R + ROW_GAP
        if kind == "none":
            ex, ey, ew, eh = embedding.rect
            self.add(key=f"{tower}.position_note", kind="position_note", label="No positions",
                     detail="order is invisible", tower=tower, layer=None,
                     rect=self.side_rect(sx, direction, ew / 2 + 0.8, ROUTER_W, ey + (eh - SMALL_H) / 2, SMALL_H),
                     parameters=0, shape=self.d(), panel=PANEL_POSITIONS,
                     explanation="This model adds no position information. Attention alone treats the tokens as a "
                     "set; only a causal mask lets it infer order.")
        return None

    def stream_add(self, tower, sx, add_y, layer, suffix, cursor, label, explanation) -> Part:
        if cursor:
            self.link("stream", [(sx, cursor[0]), (sx, add_y - ADD_R)], tower)
        cursor[:] = [add_y + ADD_R]
        return self.add(key=f"{tower}.{'block' + str(layer) + '.' if layer is not None else ''}add_{suffix}", kind="add",
                        label=label, detail="", tower=tower, layer=layer,
                        rect=(sx - ADD_R, add_y - ADD_R, 2 * ADD_R, 2 * ADD_R), parameters=0, shape=self.d(),
                        panel=PANEL_NORMS, explanation=explanation, on_stream=True)

    def sublayer_row(self, tower, sx, direction, top, layer, sublayer, cursor) -> tuple[float, tuple | None]:
        """One branch (norm? + sublayer) and its return to a ⊕; post-norm adds the norm below the ⊕."""
        c = self.config
        pre = c.norm_placement == "pre"
        prefix = f"{tower}.block{layer}."
        d_shape = self.d()
        gated = sublayer == "ffn" and c.activation == "swiglu" and not c.is_moe
        row_h = 2 * SMALL_H + 0.5 if gated else BOX_H
        mid = top + row_h / 2
        offset = BRANCH_GAP
        chain: list[Part] = []
        norm_key = {"attention": "norm1", "cross_attention": "norm_cross", "ffn": "norm2"}[sublayer]
        norm_text = (f"{_norm_name(c)} on the branch (pre-norm): it rescales the vector the sublayer reads; the residual "
                     "stream itself is never normalised and can grow with depth.")
        if pre:
            chain.append(self.add(key=prefix + norm_key, kind="norm", label=_norm_name(c), detail="pre-norm",
                                  tower=tower, layer=layer,
                                  rect=self.side_rect(sx, direction, offset, NORM_W, mid - BOX_H / 2, BOX_H),
                                  parameters=self.norm_params, shape=d_shape, panel=PANEL_NORMS, placement="pre",
                                  explanation=norm_text))
            offset += NORM_W + BOX_GAP
        cross_target = None
        if sublayer in ("attention", "cross_attention"):
            cross = sublayer == "cross_attention"
            heads = f"{c.n_heads} heads" + (f", {c.kv_heads} kv" if c.kv_heads != c.n_heads else "")
            if cross:
                label, detail = "Cross-attention", f"{heads}, reads memory"
                explanation = ("Each decoder token asks the encoder's output: queries come from the decoder, keys "
                               "and values from the memory. This is how a translation reads its source sentence.")
                panel = PANEL_TOKENS
            else:
                causal = c.self_attention_causal and tower == "decoder"  # an encoder tower always looks both ways
                label = "Self-attention"
                detail = f"{'causal' if causal else 'bidirectional'}, {heads}"
                explanation = ("Each token looks at " + ("the tokens before it (a causal mask hides the future)"
                               if causal else "every token of the sequence, in both directions")
                               + ", and adds a weighted mix of their values: the only place where tokens exchange "
                               f"information. {c.n_heads} heads of size {c.d_head} look for different relations"
                               + (f"; {c.kv_heads} key/value heads are shared between them (grouped-query)."
                                  if c.kv_heads != c.n_heads else "."))
                panel = PANEL_TOKENS
            box = self.add(key=prefix + sublayer, kind=sublayer, label=label, detail=detail, tower=tower, layer=layer,
                           rect=self.side_rect(sx, direction, offset, WIDE_W, mid - BOX_H / 2, BOX_H),
                           parameters=attention_params(c), shape=d_shape, panel=panel, explanation=explanation)
            chain.append(box)
            if cross:
                bx, by, bw, bh = box.rect
                cross_target = (bx + bw if direction > 0 else bx, mid)
            elif c.positional in ("rope", "alibi"):
                self.marker(prefix, tower, layer, box, direction)
        elif c.is_moe:
            router = self.add(key=prefix + "router", kind="router", label="Router", detail=f"top-{c.top_k} of {c.n_experts}",
                              tower=tower, layer=layer,
                              rect=self.side_rect(sx, direction, offset, ROUTER_W, mid - BOX_H / 2, BOX_H),
                              parameters=c.d_model * c.n_experts, shape=(1, self.T, c.n_experts), panel=PANEL_PARAMETERS,
                              explanation=f"The router scores all {c.n_experts} experts for each token and keeps the "
                              f"top {c.top_k}; their outputs are mixed with softmax weights over those {c.top_k}.")
            offset += ROUTER_W + BOX_GAP
            chain.append(router)
            expert = ffn_params(c)
            chain.append(self.add(
                key=prefix + "experts", kind="experts", label=f"{c.n_experts} experts",
                detail=f"top-{c.top_k} of {c.n_experts}, {_activation_name(c)}", tower=tower, layer=layer,
                rect=self.side_rect(sx, direction, offset, WIDE_W, mid - BOX_H / 2, BOX_H),
                parameters=expert * c.n_experts, shape=d_shape, panel=PANEL_PARAMETERS,
                explanation=f"{c.n_experts} separate feed-forward networks of {format_count(expert)} parameters each. "
                f"Each token runs through only {c.top_k} of them, so the block holds {c.n_experts / c.top_k:g}× the "
                "FFN parameters that one token computes with."))
        elif gated:
            chain.extend(self.gated_ffn(prefix, tower, layer, sx, direction, offset, top, mid))
        else:
            chain.append(self.add(
                key=prefix + "ffn", kind="ffn", label="Feed-forward",
                detail=f"{_activation_name(c)}, {c.d_model}→{c.d_ff}→{c.d_model}",
                tower=tower, layer=layer, rect=self.side_rect(sx, direction, offset, WIDE_W, mid - BOX_H / 2, BOX_H),
                parameters=ffn_params(c), shape=d_shape, panel=PANEL_PARAMETERS,
                explanation=f"Each token on its own (no mixing between tokens): expand {c.d_model} → {c.d_ff}, apply "
                f"{_activation_name(c)}, project back to {c.d_model}. Most of a block's parameters live here."))

        # Arrows: stream -> first box, box -> box (a gated FFN wires its own), last box back to the ⊕.
        first = chain[0]
        near = first.rect[0] if direction > 0 else first.rect[0] + first.rect[2]
        if not gated or pre:
            self.link("branch", [(sx, mid), (near, mid)], tower)
        if not gated:
            for a, b in zip(chain, chain[1:]):
                self.link("branch", [self.edge(a, direction, far=True), self.edge(b, direction, far=False)], tower)
        elif pre:
            self.wire_gated(chain[0], chain[1:], direction, tower)
        else:
            self.wire_gated(None, chain, direction, tower, stream_point=(sx, mid))
        last = chain[-1]
        row_bottom = max(p.rect[1] + p.rect[3] for p in chain)
        add_y = row_bottom + RETURN_DROP
        lx, ly, lw, lh = last.rect
        self.link("return", [(lx + lw / 2, ly + lh), (lx + lw / 2, add_y), (sx + direction * ADD_R, add_y)], tower)
        name = {"attention": "attention", "cross_attention": "cross-attention", "ffn": "FFN"}[sublayer]
        self.stream_add(tower, sx, add_y, layer, sublayer, cursor, "Residual add",
                        f"The {name} output is added to its input: x + f(x). The stream carries everything earlier "
                        "forward, and gradients get a direct path down through the stack.")
        bottom = add_y + ADD_R
        if not pre:
            norm_top = bottom + 1.0
            self.link("stream", [(sx, cursor[0]), (sx, norm_top)], tower)
            self.add(key=prefix + norm_key, kind="norm", label=_norm_name(c), detail="post-norm, after the add", tower=tower,
                     layer=layer, rect=(sx - STREAM_NORM_W / 2, norm_top, STREAM_NORM_W, STREAM_NORM_H),
                     parameters=self.norm_params, shape=d_shape, panel=PANEL_NORMS, placement="post", on_stream=True,
                     explanation=f"{_norm_name(c)} after the residual add (post-norm, as in 2017): the stream itself is "
                     "normalised after every sublayer, so its size stays fixed but gradients pass through every norm.")
            bottom = norm_top + STREAM_NORM_H
            cursor[:] = [bottom]
        return bottom + ROW_GAP, cross_target

    def gated_ffn(self, prefix, tower, layer, sx, direction, offset, top, mid) -> list[Part]:
        c = self.config
        d_ff = (1, self.T, c.d_ff)
        gate = self.add(key=prefix + "ffn_gate", kind="ffn_gate", label="Gate · SiLU", detail=f"{c.d_model}→{c.d_ff}",
                        tower=tower, layer=layer, rect=self.side_rect(sx, direction, offset, GATE_W, top, SMALL_H),
                        parameters=self.in_projection, shape=d_ff, panel=PANEL_PARAMETERS,
                        explanation="SwiGLU's gate: a second projection through SiLU decides, per hidden unit, how much "
                        "of the up projection passes.")
        up = self.add(key=prefix + "ffn_up", kind="ffn_up", label="Up", detail=f"{c.d_model}→{c.d_ff}", tower=tower,
                      layer=layer, rect=self.side_rect(sx, direction, offset, GATE_W, top + SMALL_H + 0.5, SMALL_H),
                      parameters=self.in_projection, shape=d_ff, panel=PANEL_PARAMETERS,
                      explanation="The up projection expands each token's vector to the hidden width; the gate "
                      "multiplies it element by element.")
        offset += GATE_W + BOX_GAP
        multiply = self.add(key=prefix + "ffn_multiply", kind="ffn_multiply", label="Gate × up", detail="", tower=tower,
                            layer=layer, rect=self.side_rect(sx, direction, offset, 2 * ADD_R, mid - ADD_R, 2 * ADD_R),
                            parameters=0, shape=d_ff, panel=PANEL_PARAMETERS,
                            explanation="Gate times up, element by element: the 'gated' of a gated linear unit.")
        offset += 2 * ADD_R + BOX_GAP
        down = self.add(key=prefix + "ffn_down", kind="ffn_down", label="Down", detail=f"{c.d_ff}→{c.d_model}",
                        tower=tower, layer=layer, rect=self.side_rect(sx, direction, offset, DOWN_W, mid - BOX_H / 2, BOX_H),
                        parameters=self.out_projection, shape=self.d(), panel=PANEL_PARAMETERS,
                        explanation="The down projection brings the gated hidden vector back to the residual width.")
        return [gate, up, multiply, down]

    def wire_gated(self, norm: Part | None, gated: list[Part], direction, tower, stream_point=None) -> None:
        gate, up, multiply, down = gated
        start = self.edge(norm, direction, far=True) if norm is not None else stream_point
        fork_x = (start[0] + self.edge(gate, direction, far=False)[0]) / 2
        for box in (gate, up):
            target = self.edge(box, direction, far=False)
            self.link("branch", [start, (fork_x, start[1]), (fork_x, target[1]), target], tower)
        mx, my = multiply.center
        for box in (gate, up):
            source = self.edge(box, direction, far=True)
            self.link("branch", [source, (mx, source[1]), (mx, my - ADD_R if source[1] < my else my + ADD_R)], tower)
        self.link("branch", [(mx + direction * ADD_R, my), self.edge(down, direction, far=False)], tower)

    @staticmethod
    def edge(part: Part, direction: int, far: bool) -> tuple[float, float]:
        """The middle of a box's side facing the stream (far=False) or facing away from it."""
        x, y, w, h = part.rect
        right = (direction > 0) == far
        return (x + w if right else x, y + h / 2)

    def marker(self, prefix, tower, layer, box: Part, direction) -> None:
        c = self.config
        bx, by, bw, bh = box.rect
        rope = c.positional == "rope"
        width = 6.2
        x = bx + bw - width - 0.3 if direction > 0 else bx + 0.3
        self.add(key=prefix + ("rope" if rope else "alibi"), kind="rope_marker" if rope else "alibi_marker",
                 label="RoPE on q, k" if rope else "ALiBi on scores", detail="", tower=tower, layer=layer,
                 rect=(x, by - 1.05, width, 1.3), parameters=0,
                 shape=(1, c.n_heads, self.T, c.d_head) if rope else (1, c.n_heads, self.T, self.T), panel=PANEL_POSITIONS,
                 explanation=("RoPE rotates every query and key by an angle proportional to its position, so their "
                              "dot product depends on how far apart two tokens are. Nothing is added to the stream; "
                              "no parameters." if rope else
                              "ALiBi subtracts a penalty proportional to the distance from every attention score, "
                              "with a different slope per head. Nothing is added to the stream; no parameters."))

    def unify_frames(self, indices: list[int], sx: float, direction: int) -> None:
        """Give every block frame of a tower the same width (the widest block's), for a calm column."""
        frames = [self.parts[i] for i in indices]
        if not frames:
            return
        left = min(f.rect[0] for f in frames)
        right = max(f.rect[0] + f.rect[2] for f in frames)
        for i, frame in zip(indices, frames):
            x, y, w, h = frame.rect
            # The title sits in the header on the branch side, clear of the stream line.
            if direction > 0:
                text_rect = (sx + 0.8, y + 0.15, right - sx - 1.2, 1.4)
            else:
                text_rect = (left + 0.4, y + 0.15, sx - left - 1.2, 1.4)
            self.parts[i] = replace(frame, rect=(left, y, right - left, h), text_rect=text_rect)


def _tower_extent(builder_factory: Callable[[], _Builder], tower: str, direction: int, **flags) -> tuple[float, float]:
    """(left, right) of a tower laid out around x = 0."""
    builder = builder_factory()
    builder.tower(tower, 0.0, direction, 0.0, **flags)
    xs = [p.rect[0] for p in builder.parts] + [p.rect[0] + p.rect[2] for p in builder.parts]
    xs += [x for link in builder.links for x, _ in link.points]
    return min(xs), max(xs)


def describe_part(part: Part, seq_len: int = 0) -> str:
    """The hover text of a part, as rich text: what it is, its parameters, its output shape, where to study it."""
    if part.layer is not None and part.kind != "block":
        where = f" ({'encoder ' if part.tower == 'encoder' else ''}block {part.layer})"
    else:
        where = " (encoder)" if part.tower == "encoder" and part.kind not in ("block", "memory") else ""
    sizes = f" for B = 1, T = {seq_len}" if seq_len > 0 else " for B = 1 and T tokens"
    return (f"<b>{part.label}{where}</b> — {part.explanation}<br>"
            f"<b>Parameters:</b> {part.parameters:,} &nbsp; <b>Output shape:</b> {format_shape(part.shape)}{sizes}"
            f" &nbsp; <i>click to open {part.panel}</i>")


def diagram_parts(config: ModelConfig, seq_len: int = 0) -> Diagram:
    """Lay out `config` as a block diagram; shapes use B = 1 and T = seq_len (0 writes "T")."""
    config.validated()
    builder = _Builder(config, seq_len)
    if config.architecture == "encoder-decoder":
        enc_left, enc_right = _tower_extent(lambda: _Builder(config, seq_len), "encoder", +1, encoder_of_pair=True)
        dec_left, dec_right = _tower_extent(lambda: _Builder(config, seq_len), "decoder", -1, decoder_of_pair=True)
        encoder_x = MARGIN - enc_left
        decoder_x = encoder_x + enc_right + TOWER_GAP - dec_left
        _run_tower(builder, "encoder", encoder_x, +1, encoder_of_pair=True)
        anchors = _run_tower(builder, "decoder", decoder_x, -1, decoder_of_pair=True)
        memory = builder.anchors["encoder"]["memory"]
        bus_x = encoder_x + enc_right + TOWER_GAP / 2
        mx, my, mw, mh = memory.rect
        start = (mx + mw, my + mh / 2)
        for target in anchors["cross_targets"]:
            builder.link("cross", [start, (bus_x, start[1]), (bus_x, target[1]), target], "decoder")
        width = decoder_x + dec_right + MARGIN
    else:
        tower = "encoder" if config.architecture == "encoder" else "decoder"
        left, right = _tower_extent(lambda: _Builder(config, seq_len), tower, +1)
        x = MARGIN - left
        _run_tower(builder, tower, x, +1)
        width = x + right + MARGIN
    height = max(p.rect[1] + p.rect[3] for p in builder.parts) + MARGIN
    return Diagram(config, seq_len, tuple(builder.parts), tuple(builder.links), width, height, dict(builder.drawn))


def _run_tower(builder: _Builder, tower: str, sx: float, direction: int, **flags) -> dict:
    first = len(builder.parts)
    anchors = builder.tower(tower, sx, direction, MARGIN, **flags)
    if direction < 0:
        builder.parts[first:] = [replace(part, branch_side=-1) for part in builder.parts[first:]]
        anchors = {key: replace(value, branch_side=-1) if isinstance(value, Part) else value for key, value in anchors.items()}
    builder.anchors[tower] = anchors
    return anchors




# ---- drawing ------------------------------------------------------------------------------------

MIN_VIEW_SCALE = 0.55  # below this the view scrolls sideways rather than shrinking text further
# Shrinking to the width stops where the smallest text (a box's detail line, a marker) would fall under
# the legibility rule's MIN_TEXT_PX, or, for text smaller than that at full size (a laptop at 100%), under
# MIN_SHRUNK_TEXT_PX: a wide encoder-decoder scrolls sideways instead.
MIN_SHRUNK_TEXT_PX = 10
SMALLEST_TEXT = 0.8  # relative size of the smallest font the diagram draws (theme.font(relative))
KIND_COLORS = {  # Okabe-Ito indices (theme.series_color); None: the theme's muted grey
    "attention": 0, "cross_attention": 0, "memory": 0,
    "norm": 1, "final_norm": 1,
    "ffn": 2, "ffn_gate": 2, "ffn_up": 2, "ffn_down": 2, "ffn_multiply": 2, "experts": 2,
    "router": 3,
    "token_embedding": 4, "position_embedding": 4, "head": 4,
}


def kind_color(kind: str) -> QColor:
    index = KIND_COLORS.get(kind)
    if index is None:
        return theme.color("muted")
    return theme.series_color(index)


class PartItem(QGraphicsPathItem):
    """A box (or circle) of the diagram: reports hover and clicks to its view."""

    def __init__(self, part: Part, path: QPainterPath, view: BlockDiagramView) -> None:
        super().__init__(path)
        self.part = part
        self._view = view
        self.base_pen = QPen()
        self.setAcceptHoverEvents(True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)

    def set_highlighted(self, on: bool) -> None:
        if on:
            pen = QPen(theme.color("accent"), self.base_pen.widthF() * 2.2)
            self.setPen(pen)
        else:
            self.setPen(self.base_pen)

    def hoverEnterEvent(self, event) -> None:
        self._view.set_hovered(self.part)
        super().hoverEnterEvent(event)

    def hoverLeaveEvent(self, event) -> None:
        self._view.set_hovered(None)
        super().hoverLeaveEvent(event)

    def mousePressEvent(self, event) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self._view.part_clicked.emit(self.part)
            event.accept()
            return
        super().mousePressEvent(event)


class BlockDiagramView(QGraphicsView):
    """Draws a Diagram; hover a part for its description, click it to ask for the panel that studies it."""

    part_hovered = Signal(object)  # Part, or None when the mouse left every part
    part_clicked = Signal(object)  # Part

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("block-diagram")
        self.setScene(QGraphicsScene(self))
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.setMouseTracking(True)
        self.diagram: Diagram | None = None
        self.items: dict[str, PartItem] = {}
        self.hovered: Part | None = None
        self.annotations: dict[str, str] = {}  # part key -> a short reading beside it (the followed token)
        self.annotation_items: dict[str, QGraphicsSimpleTextItem] = {}
        self.unit = 16.0  # pixels per line of text, set from the theme font on every rebuild

    # ---- public --------------------------------------------------------------------------------
    def set_diagram(self, diagram: Diagram) -> None:
        another_model = self.diagram is None or self.diagram.config.name != diagram.config.name
        self.diagram = diagram
        self.rebuild()
        if another_model:  # a new model starts at its input; a changed depth keeps the place being read
            self.verticalScrollBar().setValue(0)
            self.horizontalScrollBar().setValue(0)

    def rebuild(self) -> None:
        """Redraw the whole scene (a new config, new T, or a new theme / font scale)."""
        scene = self.scene()
        hovered_key = self.hovered.key if self.hovered is not None else None
        scene.clear()
        self.items = {}
        self.annotation_items = {}
        diagram = self.diagram
        self.setBackgroundBrush(QBrush(theme.color("base")))
        if diagram is None:
            return
        self.unit = QFontMetricsF(theme.font()).height()
        for part in diagram.parts:
            if part.kind == "block":
                self._draw_part(part, z=0)
        for link in diagram.links:
            self._draw_link(link)
        for part in diagram.parts:
            if part.kind != "block":
                self._draw_part(part, z=3 if part.kind.endswith("_marker") else 2)
        u = self.unit
        scene.setSceneRect(QRectF(0, 0, diagram.width * u, diagram.height * u))
        self._draw_annotations()
        if hovered_key in self.items:
            self.hovered = self.items[hovered_key].part
            self.items[hovered_key].set_highlighted(True)
        else:
            self.hovered = None
        self.fit()

    def set_annotations(self, annotations: dict[str, str]) -> None:
        """Write a short text beside each part named (keys not drawn are skipped); {} removes them all."""
        self.annotations = dict(annotations)
        for item in self.annotation_items.values():
            self.scene().removeItem(item)
        self.annotation_items = {}
        self._draw_annotations()

    def _draw_annotations(self) -> None:
        u = self.unit
        for key, text in self.annotations.items():
            if key not in self.items:
                continue
            part = self.items[key].part
            label = QGraphicsSimpleTextItem(text)
            label.setFont(theme.font(0.82, bold=True))
            label.setBrush(QBrush(theme.color("primary")))
            label.setZValue(4)
            bounds = label.boundingRect()
            rect = self._rect(part)
            # A ⊕ is read on the stream's free side; a box on the stream, beside it on the branch side.
            side = -part.branch_side if part.kind == "add" else part.branch_side
            gap = 0.45 * u
            x = rect.right() + gap if side > 0 else rect.left() - gap - bounds.width()
            label.setPos(x, rect.center().y() - bounds.height() / 2)
            self.scene().addItem(label)
            self.annotation_items[key] = label

    def fit(self) -> None:
        """Full size when it fits the width; shrink to the width down to MIN_VIEW_SCALE, then scroll."""
        rect = self.sceneRect()
        if rect.width() <= 0:
            return
        available = max(1.0, self.viewport().width() - 2)
        scale = min(1.0, max(self.min_scale(), available / rect.width()))
        self.setTransform(QTransform.fromScale(scale, scale))

    @staticmethod
    def min_scale() -> float:
        """How far the diagram may shrink: its smallest text stays legible."""
        smallest = max(1, QFontInfo(theme.font(SMALLEST_TEXT)).pixelSize())
        floor = MIN_TEXT_PX if smallest >= MIN_TEXT_PX else min(smallest, MIN_SHRUNK_TEXT_PX)
        return min(1.0, max(MIN_VIEW_SCALE, floor / smallest))

    def set_hovered(self, part: Part | None) -> None:
        if self.hovered is not None and self.hovered.key in self.items:
            self.items[self.hovered.key].set_highlighted(False)
        self.hovered = part
        if part is not None and part.key in self.items:
            self.items[part.key].set_highlighted(True)
        self.part_hovered.emit(part)

    def hover_key(self, key: str) -> Part:
        """Do what hovering the part with this key does (for keyboard users and tests)."""
        part = self.items[key].part
        self.set_hovered(part)
        return part

    def item_center(self, key: str):
        """The part's centre in viewport pixels (for tests that move the real mouse)."""
        return self.mapFromScene(self.items[key].sceneBoundingRect().center())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.fit()

    # ---- drawing -------------------------------------------------------------------------------
    def _rect(self, part: Part) -> QRectF:
        x, y, w, h = part.rect
        u = self.unit
        return QRectF(x * u, y * u, w * u, h * u)

    def _draw_part(self, part: Part, z: float) -> None:
        current = theme.current()
        rect = self._rect(part)
        u = self.unit
        path = QPainterPath()
        round_kinds = ("add", "ffn_multiply")
        if part.kind in round_kinds:
            path.addEllipse(rect)
        else:
            radius = 0.15 * u if part.kind == "block" else 0.35 * u
            path.addRoundedRect(rect, radius, radius)
        item = PartItem(part, path, self)
        color = kind_color(part.kind)
        width = max(1.2, current.line_width * 0.75)
        pen = QPen(color, width)
        fill = QColor(color)
        fill.setAlpha(40)
        base = theme.color("base")
        if part.kind == "block":
            pen = QPen(theme.color("grid"), max(1.0, current.axis_width), Qt.PenStyle.DashLine)
            fill = QColor(theme.current().alternate)
            fill.setAlpha(120)
        elif part.kind in ("ellipsis", "position_note"):
            pen = QPen(theme.color("muted"), width, Qt.PenStyle.DotLine)
            fill = QColor(base)
        elif part.kind in ("input", "output", "memory") and part.kind != "memory":
            fill = QColor(theme.current().alternate)
        elif part.kind in round_kinds:
            pen = QPen(theme.color("text"), width)
            fill = QColor(base)
        elif part.kind.endswith("_marker"):
            pen = QPen(theme.color("highlight"), width)
            fill = QColor(base)
        if part.kind not in ("block", "ellipsis", "position_note") and fill.alpha() < 255:
            # Opaque boxes: the stream and arrows pass behind them, never through their text.
            fill = _blend(base, color, fill.alpha() / 255)
        item.base_pen = pen
        item.setPen(pen)
        item.setBrush(QBrush(fill))
        item.setZValue(z)
        item.setToolTip(_plain(describe_part(part, self.diagram.seq_len)))
        self.scene().addItem(item)
        self.items[part.key] = item
        if part.kind == "experts":
            # Two offset copies behind the box read as "a stack of experts".
            for step in (2, 1):
                shadow = QGraphicsPathItem(path.translated(EXPERT_SHADOW * u * step, -EXPERT_SHADOW * u * step))
                shadow.setPen(pen)
                shadow.setBrush(QBrush(fill))
                shadow.setZValue(z - 0.1 * step)
                self.scene().addItem(shadow)
        self._draw_text(part, item, rect)

    def _draw_text(self, part: Part, item: PartItem, rect: QRectF) -> None:
        text_color = theme.color("text")
        if part.kind == "add":
            self._centered(item, "+", theme.font(1.25, bold=True), text_color, rect, rect.center().y())
            return
        if part.kind == "ffn_multiply":
            self._centered(item, "×", theme.font(1.15, bold=True), text_color, rect, rect.center().y())
            return
        if part.kind == "block":
            self._frame_title(part, item)
            return
        muted = part.kind in ("ellipsis", "position_note")
        color = theme.color("muted") if muted else text_color
        if part.kind.endswith("_marker"):
            self._centered(item, part.label, theme.font(0.8, bold=True), theme.color("highlight"), rect, rect.center().y())
            return
        title_font = theme.font(1.0, bold=True)
        detail_font = theme.font(0.82)
        title_h = QFontMetricsF(title_font).height()
        detail_h = QFontMetricsF(detail_font).height() if part.detail else 0.0
        if rect.height() < title_h + detail_h:  # a small box keeps its title only
            detail_h = 0.0
        top = rect.center().y() - (title_h + detail_h) / 2
        self._centered(item, part.label, title_font, color, rect, top + title_h / 2)
        if detail_h:
            self._centered(item, part.detail, detail_font, theme.color("muted") if not muted else color, rect,
                           top + title_h + detail_h / 2)

    def _frame_title(self, part: Part, item: PartItem) -> None:
        """'Block 3 · 1.45B parameters' in the header on the branch side; only the name when room is short."""
        u = self.unit
        x, y, w, h = part.text_rect or part.rect
        room = QRectF(x * u, y * u, w * u, h * u)
        title = QGraphicsSimpleTextItem(f"{part.label}  ·  {part.detail}", item)
        title.setFont(theme.font(0.9, bold=True))
        title.setBrush(QBrush(theme.color("muted")))
        if title.boundingRect().width() > room.width():
            title.setText(part.label)
        bounds = title.boundingRect()
        scale = min(1.0, room.width() / max(1.0, bounds.width()))
        title.setScale(scale)
        left = room.right() - bounds.width() * scale if part.branch_side > 0 else room.left()
        title.setPos(left, room.center().y() - bounds.height() * scale / 2)

    def _centered(self, parent: QGraphicsItem, text: str, font, color: QColor, rect: QRectF, center_y: float) -> None:
        """Text centred in rect at center_y, shrunk (never clipped) when wider than the box."""
        item = QGraphicsSimpleTextItem(text, parent)
        item.setFont(font)
        item.setBrush(QBrush(color))
        bounds = item.boundingRect()
        room = max(1.0, rect.width() - 0.5 * self.unit)
        scale = min(1.0, room / max(1.0, bounds.width()))
        item.setScale(scale)
        item.setPos(rect.center().x() - bounds.width() * scale / 2, center_y - bounds.height() * scale / 2)

    def _draw_link(self, link: Link) -> None:
        current = theme.current()
        u = self.unit
        points = [QPointF(x * u, y * u) for x, y in link.points]
        if link.kind == "stream":
            color, width, style = theme.color("text"), max(2.0, current.line_width * 1.3), Qt.PenStyle.SolidLine
        elif link.kind == "cross":
            color, width, style = theme.color("primary"), max(1.5, current.line_width), Qt.PenStyle.SolidLine
        elif link.kind == "tied":
            color, width, style = theme.color("highlight"), max(1.5, current.line_width * 0.8), Qt.PenStyle.DashLine
        else:
            color, width, style = theme.color("text"), max(1.2, current.line_width * 0.7), Qt.PenStyle.SolidLine
        path = QPainterPath(points[0])
        for point in points[1:]:
            path.lineTo(point)
        line = QGraphicsPathItem(path)
        pen = QPen(color, width, style)
        pen.setCapStyle(Qt.PenCapStyle.FlatCap)
        line.setPen(pen)
        line.setZValue(1)
        self.scene().addItem(line)
        if link.arrow and len(points) >= 2:
            self._arrowhead(points[-2], points[-1], color, width)
        if link.label:
            a, b = points[1], points[2]  # the tied link's long vertical run
            label = QGraphicsSimpleTextItem(link.label)
            label.setFont(theme.font(0.9, bold=True))
            label.setBrush(QBrush(color))
            bounds = label.boundingRect()
            pad = 0.2 * u
            middle = QPointF((a.x() + b.x()) / 2, (a.y() + b.y()) / 2)
            backdrop = QGraphicsRectItem(QRectF(middle.x() - bounds.width() / 2 - pad, middle.y() - bounds.height() / 2,
                                                bounds.width() + 2 * pad, bounds.height()))
            backdrop.setBrush(QBrush(theme.color("base")))
            backdrop.setPen(QPen(Qt.PenStyle.NoPen))
            backdrop.setZValue(1.5)
            label.setPos(middle.x() - bounds.width() / 2, middle.y() - bounds.height() / 2)
            label.setZValue(1.6)
            self.scene().addItem(backdrop)
            self.scene().addItem(label)

    def _arrowhead(self, start: QPointF, end: QPointF, color: QColor, width: float) -> None:
        dx, dy = end.x() - start.x(), end.y() - start.y()
        length = math.hypot(dx, dy)
        if length == 0:
            return
        ux, uy = dx / length, dy / length
        size = max(0.42 * self.unit, 2.6 * width)
        half = size * 0.5
        base = QPointF(end.x() - ux * size, end.y() - uy * size)
        left = QPointF(base.x() - uy * half, base.y() + ux * half)
        right = QPointF(base.x() + uy * half, base.y() - ux * half)
        polygon = QPolygonF([end, left, right])
        path = QPainterPath()
        path.addPolygon(polygon)
        path.closeSubpath()
        head = QGraphicsPathItem(path)
        head.setPen(QPen(Qt.PenStyle.NoPen))
        head.setBrush(QBrush(color))
        head.setZValue(2.5)
        self.scene().addItem(head)


class DiagramPicture(QWidget):
    """The whole diagram as one widget, for File > Export (the view itself shows only what is scrolled in)."""

    def __init__(self, view: BlockDiagramView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self.setObjectName("block-diagram-picture")

    def sync_size(self) -> None:
        rect = self.view.sceneRect()
        self.resize(max(16, round(rect.width())), max(16, round(rect.height())))

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        try:
            painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
            painter.fillRect(QRectF(self.rect()), theme.color("base"))
            self.view.scene().render(painter, QRectF(self.rect()), self.view.sceneRect(), Qt.AspectRatioMode.KeepAspectRatio)
        finally:
            painter.end()


def _blend(base: QColor, color: QColor, amount: float) -> QColor:
    return QColor(
        round(base.red() + (color.red() - base.red()) * amount),
        round(base.green() + (color.green() - base.green()) * amount),
        round(base.blue() + (color.blue() - base.blue()) * amount),
    )


def _plain(rich: str) -> str:
    import re

    return re.sub(r"<[^>]+>", "", rich.replace("<br>", "\n")).replace("&nbsp;", " ")


__all__ = [
    "Part", "Link", "Diagram", "diagram_parts", "describe_part", "drawn_layers", "format_shape", "format_count",
    "BlockDiagramView", "DiagramPicture", "PartItem", "kind_color",
]
