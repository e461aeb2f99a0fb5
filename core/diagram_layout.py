"""The model as a block diagram, laid out: boxes (`Part`s) and arrows (`Link`s) in lines of text.

`diagram_parts(config, seq_len)` lays the config out in line-height units ("em", one line of
text) and returns a `Diagram` of `Part`s (boxes a student can hover and click) and `Link`s
(arrows). It is pure Python (no Qt, no torch), so tests count blocks, norms, towers and arrows
without rendering, and the parameter counts come straight from core.params. gui.widgets.block_diagram
draws it.

Layout. The residual stream is a vertical line running top to bottom; each sublayer leaves it on a
branch to one side and comes back to a ⊕ on the stream. Pre-norm puts its norm on the branch, in
front of the sublayer; post-norm puts it on the stream, after the ⊕: the two placements look as
different as they behave. An encoder-decoder gets two towers that face each other, branches
inward, so the cross-attention boxes of the decoder sit next to the bus from the encoder's output.
The side of the stream without branches carries the dashed "tied" link from head to embedding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from core.config import ModelConfig
from core.params import attention_params, block_breakdown, ffn_params, norm_params

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
    #            experts, ellipsis, embed_norm, final_norm, memory, head_transform, head, output
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


def _activation_name(config: ModelConfig, gated: bool = True) -> str:
    """The FFN's activation by name; gated=False names the plain one a head transform uses (GELU for SwiGLU)."""
    activation = "gelu" if config.activation == "swiglu" and not gated else config.activation
    return {"relu": "ReLU", "gelu": "GELU", "gelu-tanh": "GELU (tanh)", "silu": "SiLU", "swiglu": "SwiGLU"}[activation]


class _Builder:
    """Accumulates parts and links for one diagram; one method per kind of row."""

    def __init__(self, config: ModelConfig, seq_len: int) -> None:
        self.config = config
        self.T: int | str = seq_len if seq_len > 0 else "T"
        self.parts: list[Part] = []
        self.links: list[Link] = []
        self.drawn: dict[str, tuple[int, ...]] = {}
        self.anchors: dict[str, dict] = {}  # tower -> points other towers link to
        self.norm_params = norm_params(config)
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
        scaled = f" × √{c.d_model}" if c.embed_scale else ""
        embedding = stream_box(
            "token_embedding", f"Token embedding{shared}", f"{c.vocab_size:,} × {c.d_model} table{scaled}", BOX_H,
            layer=None, parameters=c.vocab_size * c.d_model, shape=self.d(), panel=PANEL_PARAMETERS,
            explanation="A lookup table: each token id picks one learned row of d_model numbers. That row is the "
            "token's first vector on the residual stream." + (" Encoder and decoder use the same table." if shared else "")
            + (f" Each row is multiplied by √{c.d_model} before the positions are added, as in 2017 and Marian."
               if c.embed_scale else ""))
        after_positions = self.positions(tower, sx, direction, embedding, cursor)
        if after_positions is not None:
            y = after_positions
        if c.embed_norm:
            stream_box("embed_norm", f"Embedding {_norm_name(c)}", "before the first block", STREAM_NORM_H + 0.3,
                       layer=None, parameters=self.norm_params, shape=self.d(), panel=PANEL_NORMS,
                       explanation="A norm over token embedding plus position, before the first block (BERT): every "
                       "block then reads a stream of a fixed size.")

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
            sublayers = (["attention"] + (["cross_attention"] if decoder_of_pair else [])
                         + ([] if c.attention_only else ["ffn"]))
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
                     + (" and no feed-forward network (an attention-only model): the block adds attention's output "
                        f"to the residual stream, with the norm {placement}." if c.attention_only else
                        f" and a feed-forward network (each token on its own), each added back onto the residual "
                        f"stream, with the norm {placement}."))
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
        if c.head_transform:
            dense = c.d_model * c.d_model + (c.d_model if c.bias else 0)
            stream_box("head_transform", "Head transform",
                       f"dense, {_activation_name(c, gated=False)}, {_norm_name(c)}", BOX_H, layer=None,
                       parameters=dense + self.norm_params, shape=self.d(), panel=PANEL_PARAMETERS,
                       explanation=f"BERT's masked-LM head begins with a {c.d_model} → {c.d_model} dense layer, "
                       f"{_activation_name(c, gated=False)} and a {_norm_name(c)}: the vocabulary matrix reads this "
                       "transformed vector, not the stream itself, so the logits are not linear in the stream.")
        head_bias = " + a bias per token" if c.head_bias else ""
        head = stream_box(
            "head", "Output head",
            ("tied to the token embedding" if c.tie_embeddings else f"{c.d_model} → {c.vocab_size:,}") + head_bias,
            BOX_H, layer=None, parameters=(0 if c.tie_embeddings else c.vocab_size * c.d_model)
            + (c.vocab_size if c.head_bias else 0),
            shape=(1, self.T, c.vocab_size), panel=PANEL_PARAMETERS,
            explanation="A d_model → vocabulary matrix: one score (logit) per vocabulary entry for each token. "
            + ("Tied: it reuses the token embedding table (transposed), so it adds no parameters"
               if c.tie_embeddings else "Untied: a matrix of its own, as large as the embedding table")
            + (f"; a learned bias of {c.vocab_size:,} numbers is added to the logits." if c.head_bias else "."))
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


__all__ = [
    "DRAWN_EDGE", "MAX_FULL_DEPTH", "Diagram", "Link", "Part", "describe_part", "diagram_parts", "drawn_layers",
    "format_count", "format_shape",
]
