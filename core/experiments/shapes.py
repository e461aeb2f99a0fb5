"""The reading's shape walk-through, traced from a real forward pass instead of written out.

token ids -> embeddings -> fused Q, K, V -> heads -> scores -> weights -> heads concatenated ->
attention output -> FFN expansion -> block output -> logits, for any config, batch and sequence.
An encoder-decoder's encoder tower comes first (source ids (B, S) to the memory (B, S, d_model)),
and its decoder block adds cross-attention: Q from the decoder (B, h, T, d_head), K and V from the
memory (B, h_kv, S, d_head), weights (B, h, T, S). A mixture of experts adds the router's logits
(B, T, n_experts), the top-k experts (B, T, k) and the routing weights. A model without a final norm
has no such row; BERT's head transform has one before the logits.

The pass runs on the meta device by default: every operator computes its output shape and dtype
but no storage is allocated, so a (32, 12, 4096, 4096) attention matrix costs nothing to trace.
Bytes are shape x element size of the dtype the tensor really had.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from core.config import ModelConfig
from core.hooks import capture
from core.model import SequenceError, Transformer

SCORE_ROWS = ("attention scores", "attention weights")


@dataclass(frozen=True)
class ShapeRow:
    name: str  # step of the walk-through, e.g. "attention weights"
    shape: tuple[int, ...]  # the traced tensor's shape
    bytes: int  # elements x element size of the traced dtype
    note: str  # the symbolic shape and what it means
    hook: str = ""  # where it was captured (hook point or module)
    dtype: str = "float32"
    is_attention_matrix: bool = False  # the (B, h, T, T) tensors that grow with T squared

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class ShapeTrace:
    config: ModelConfig
    batch: int
    seq: int
    device: str  # "meta" or the real device the pass ran on
    rows: tuple[ShapeRow, ...]
    source_seq: int | None = None  # S, the encoder's input length of an encoder-decoder; None for one stack

    @property
    def attention_matrix_bytes(self) -> int:
        """One (B, h, T, T) weights tensor of one layer."""
        return next((row.bytes for row in self.rows if row.name == "attention weights"), 0)

    @property
    def all_attention_weights_bytes(self) -> int:
        """Every layer's attention weights kept at once: the stream's T x T in each of its blocks, and an
        encoder-decoder's cross-attention T x S in each decoder block and encoder S x S in each encoder block."""
        layers = {"attention weights": self.config.n_layers, "cross-attention weights": self.config.n_layers,
                  "encoder: attention weights": self.config.encoder_layers if self.source_seq is not None else 0}
        return sum(row.bytes * layers[row.name] for row in self.rows if row.name in layers)

    @property
    def residual_bytes(self) -> int:
        """One (B, T, d_model) residual-stream tensor."""
        return next((row.bytes for row in self.rows if row.name == "embeddings + positions"), 0)

    def row(self, name: str) -> ShapeRow:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(name)

    def to_dict(self) -> dict:
        return {
            "config": self.config.to_dict(),
            "batch": self.batch,
            "seq": self.seq,
            "source_seq": self.source_seq,
            "device": self.device,
            "rows": [
                {
                    "name": r.name,
                    "shape": list(r.shape),
                    "dtype": r.dtype,
                    "elements": r.elements,
                    "bytes": r.bytes,
                    "note": r.note,
                    "hook": r.hook,
                    "is_attention_matrix": r.is_attention_matrix,
                }
                for r in self.rows
            ],
            "attention_matrix_bytes": self.attention_matrix_bytes,
        }


@dataclass(frozen=True)
class AttentionGrowth:
    """Traced memory of one layer's attention weights and of one residual tensor, per sequence length."""

    config: ModelConfig
    batch: int
    seqs: tuple[int, ...]
    attention_bytes: tuple[int, ...]
    residual_bytes: tuple[int, ...]


def _nbytes(tensor: torch.Tensor) -> int:
    return math.prod(tensor.shape) * tensor.element_size()


def _check_sizes(config: ModelConfig, batch: int, seq: int, source_seq: int | None = None) -> None:
    if batch < 1:
        raise SequenceError(f"batch must be at least 1, got {batch}")
    if seq < 1:
        raise SequenceError(f"the sequence must hold at least one token, got {seq}")
    if seq > config.context_length:
        raise SequenceError(f"{seq} tokens exceed the model's context length of {config.context_length}")
    if source_seq is not None:
        if source_seq < 1:
            raise SequenceError(f"the source must hold at least one token, got {source_seq}")
        if source_seq > config.context_length:
            raise SequenceError(f"a source of {source_seq} tokens exceeds the model's context length of "
                                f"{config.context_length}")


def meta_model(config: ModelConfig, dtype: torch.dtype = torch.float32) -> Transformer:
    """The config's model on the meta device with one block per tower, ready for shape-only passes.

    Every block of a tower has the same shapes and the trace stops after the first, so the other
    blocks would only cost construction time (seconds of pure Python for a 32-layer MoE).
    """
    one_block = {"n_layers": 1}
    if config.architecture == "encoder-decoder":
        one_block["n_encoder_layers"] = 1
    model = Transformer.on_meta(config.replace(**one_block))
    if dtype != torch.float32:
        model = model.to(dtype)
    # Meta tensors have no values, so the vocabulary range check (which reads min/max) cannot run;
    # the length check it also does is _check_sizes in trace_shapes.
    model.check_tokens = lambda tokens: None  # type: ignore[method-assign]
    return model


def _hook_patterns(config: ModelConfig, pair: bool) -> list[str]:
    block = "blocks.0"
    patterns = ["hook_embed", *(f"{block}.attn.hook_{part}" for part in ("q", "k", "v", "scores", "pattern", "out")),
                f"{block}.hook_resid_mid", *([] if config.attention_only else [f"{block}.hook_ffn_out"]),
                f"{block}.hook_resid_post", "hook_final"]
    if pair:
        patterns += ["hook_encoder_embed", "encoder_blocks.0.attn.hook_pattern", "hook_encoder_out",
                     *(f"{block}.cross_attn.hook_{part}" for part in ("q", "k", "v", "scores", "pattern", "out")),
                     f"{block}.hook_resid_cross"]
    if config.attention_only:
        return patterns
    if config.is_moe:
        patterns += [f"{block}.ffn.hook_router_logits", f"{block}.ffn.hook_routing", f"{block}.ffn.experts.0.hook_hidden"]
    else:
        patterns.append(f"{block}.ffn.hook_hidden")
    return patterns


def trace_shapes(
    config: ModelConfig,
    batch: int,
    seq: int,
    model: Transformer | None = None,
    dtype: torch.dtype = torch.float32,
    source_seq: int | None = None,
) -> ShapeTrace:
    """Run one forward pass with hooks on the first block of each tower and record every tensor's shape.

    Without a model the pass runs on a meta-device copy of the config; with a model (a small real
    one) it runs on that model's device with zero token ids. An encoder-decoder's encoder reads a
    source of `source_seq` tokens (S; default T): its tower comes first, and the decoder's
    cross-attention takes its queries from the decoder (T) and its keys and values from the memory (S).
    """
    config = config.validated()
    pair = config.architecture == "encoder-decoder"
    source_seq = (seq if source_seq is None else source_seq) if pair else None
    _check_sizes(config, batch, seq, source_seq)
    if model is None:
        model = meta_model(config, dtype)
    device = next(model.parameters()).device
    block = model.blocks[0]
    # Three tensors have no hook point of their own: the fused projections and the heads just before
    # they are concatenated back; plain module hooks on the layers around them record those.
    extra: dict[str, torch.Tensor] = {}
    handles = [
        block.attn.qkv.register_forward_hook(lambda _m, _i, out: extra.__setitem__("qkv", out.detach())),
        block.attn.out_proj.register_forward_pre_hook(lambda _m, inputs: extra.__setitem__("concat", inputs[0].detach())),
    ]
    if pair:
        handles.append(model.encoder_blocks[0].attn.qkv.register_forward_hook(
            lambda _m, _i, out: extra.__setitem__("encoder qkv", out.detach())))
    if config.head_transform:
        handles.append(model.head_transform.register_forward_hook(
            lambda _m, _i, out: extra.__setitem__("head transform", out.detach())))
    tokens = torch.zeros(batch, seq, dtype=torch.long, device=device)  # (B, T)
    source = torch.zeros(batch, source_seq, dtype=torch.long, device=device) if pair else None  # (B, S)
    try:
        with torch.no_grad(), capture(model, _hook_patterns(config, pair)) as seen:
            # Every block of a stack has the same shapes, so the pass stops after the first one.
            logits = model(tokens, source=source, n_blocks=1)  # (B, T, V)
    finally:
        for handle in handles:
            handle.remove()
    steps = _steps(config, seq, source_seq, tokens, source, seen, extra, logits)
    rows = tuple(
        ShapeRow(
            name=name,
            shape=tuple(int(n) for n in tensor.shape),
            bytes=_nbytes(tensor),
            note=note,
            hook=hook,
            dtype=str(tensor.dtype).removeprefix("torch."),
            is_attention_matrix=is_matrix,
        )
        for name, hook, tensor, note, is_matrix in steps
    )
    return ShapeTrace(config=config, batch=batch, seq=seq, device=str(device), rows=rows, source_seq=source_seq)


def _steps(config: ModelConfig, seq: int, source_seq: int | None, tokens, source, seen, extra, logits):
    """(name, where captured, tensor, symbolic shape and meaning, is an attention matrix) in forward order."""
    c = config
    b = "blocks.0"
    h, hkv, d = c.n_heads, c.kv_heads, c.d_head
    gqa = f"; {h // hkv} query heads share each key/value head" if hkv != h else ""
    ratio = c.d_ff / c.d_model
    expansion = f"{ratio:g}x d_model" if c.d_ff % c.d_model == 0 else f"d_ff = {c.d_ff}"
    steps: list[tuple[str, str, torch.Tensor, str, bool]] = []
    if source is not None:
        steps += [
            ("source ids", "input (encoder)", source, "(B, S) the encoder's input: S source tokens", False),
            ("encoder: embeddings + positions", "hook_encoder_embed", seen["hook_encoder_embed"],
             f"(B, S, d_model) positions: {c.positional}", False),
            ("encoder: Q, K, V projection", "encoder_blocks.0.attn.qkv", extra["encoder qkv"],
             "(B, S, (h + 2 h_kv) d_head): the encoder's self-attention, one matmul", False),
            ("encoder: attention weights", "encoder_blocks.0.attn.hook_pattern", seen["encoder_blocks.0.attn.hook_pattern"],
             f"(B, h, S, S) no mask: every source token reads all {source_seq:,}", True),
            ("encoder output (memory)", "hook_encoder_out", seen["hook_encoder_out"],
             "(B, S, d_model) after the encoder's last block: every cross-attention reads it", False),
        ]
    token_note = "(B, T) the decoder's input: T target tokens" if source is not None else "(B, T) integer ids"
    steps += [
        ("token ids", "input", tokens, token_note, False),
        ("embeddings + positions", "hook_embed", seen["hook_embed"], f"(B, T, d_model) positions: {c.positional}"
         + (", then a norm" if c.embed_norm else ""), False),
        ("Q, K, V projection", f"{b}.attn.qkv", extra["qkv"],
         "(B, T, (h + 2 h_kv) d_head): one matmul makes Q, K and V side by side", False),
        ("Q per head", f"{b}.attn.hook_q", seen[f"{b}.attn.hook_q"], f"(B, h, T, d_head), d_head = {c.d_model}/{h} = {d}", False),
        ("K per head", f"{b}.attn.hook_k", seen[f"{b}.attn.hook_k"], f"(B, h_kv, T, d_head){gqa}", False),
        ("V per head", f"{b}.attn.hook_v", seen[f"{b}.attn.hook_v"], f"(B, h_kv, T, d_head){gqa}", False),
        ("attention scores", f"{b}.attn.hook_scores", seen[f"{b}.attn.hook_scores"],
         f"(B, h, T, T) = Q @ K^T / sqrt(d_head): {seq * seq:,} entries per head per sequence", True),
        ("attention weights", f"{b}.attn.hook_pattern", seen[f"{b}.attn.hook_pattern"],
         "(B, h, T, T) softmax over keys: grows with T squared"
         + ("" if c.self_attention_causal else "; no causal mask, every token reads every other"), True),
        ("heads concatenated", f"{b}.attn.out_proj (input)", extra["concat"], "(B, T, h d_head) = weights @ V, heads side by side", False),
        ("attention output", f"{b}.attn.hook_out", seen[f"{b}.attn.hook_out"], "(B, T, d_model) after the output projection", False),
        ("residual after attention", f"{b}.hook_resid_mid", seen[f"{b}.hook_resid_mid"], "(B, T, d_model) x + attention", False),
    ]
    if source is not None:
        cross = f"{b}.cross_attn"
        steps += [
            ("cross-attention Q per head", f"{cross}.hook_q", seen[f"{cross}.hook_q"],
             "(B, h, T, d_head) from the decoder's stream", False),
            ("cross-attention K per head", f"{cross}.hook_k", seen[f"{cross}.hook_k"],
             f"(B, h_kv, S, d_head) from the memory: one key per source token{gqa}", False),
            ("cross-attention V per head", f"{cross}.hook_v", seen[f"{cross}.hook_v"],
             f"(B, h_kv, S, d_head) from the memory{gqa}", False),
            ("cross-attention scores", f"{cross}.hook_scores", seen[f"{cross}.hook_scores"],
             (f"(B, h, T, S) = Q @ K^T / sqrt(d_head): each of {seq:,} decoder positions against {source_seq:,} "
              "source positions"), True),
            ("cross-attention weights", f"{cross}.hook_pattern", seen[f"{cross}.hook_pattern"],
             "(B, h, T, S) softmax over the source: no mask", True),
            ("cross-attention output", f"{cross}.hook_out", seen[f"{cross}.hook_out"],
             "(B, T, d_model) back to the decoder's width", False),
            ("residual after cross-attention", f"{b}.hook_resid_cross", seen[f"{b}.hook_resid_cross"],
             "(B, T, d_model) x + cross-attention", False),
        ]
    if c.attention_only:
        pass  # no FFN: the block's output is the stream after attention
    elif c.is_moe:
        router = seen[f"{b}.ffn.hook_router_logits"]
        chosen = router.topk(c.top_k, dim=-1).indices  # (B, T, k): what the router keeps
        steps += [
            ("router logits", f"{b}.ffn.hook_router_logits", router,
             f"(B, T, n_experts): one score per expert per token, {c.n_experts} experts", False),
            ("top-k experts", f"{b}.ffn.hook_router_logits (top-k)", chosen,
             f"(B, T, k) the {c.top_k} experts each token is sent to (their ids)", False),
            ("routing weights", f"{b}.ffn.hook_routing", seen[f"{b}.ffn.hook_routing"],
             f"(B, T, n_experts): softmax over the top-{c.top_k} scores, zero for the other experts", False),
        ]
        hidden = f"{b}.ffn.experts.0.hook_hidden"
        steps.append(("FFN hidden", hidden, seen[hidden], f"(B, T, d_ff) expansion layer: {expansion}, per expert", False))
        steps.append(("FFN output", f"{b}.hook_ffn_out", seen[f"{b}.hook_ffn_out"],
                      "(B, T, d_model) the experts' outputs mixed by the routing weights", False))
    else:
        hidden = f"{b}.ffn.hook_hidden"
        steps.append(("FFN hidden", hidden, seen[hidden], f"(B, T, d_ff) expansion layer: {expansion}", False))
        steps.append(("FFN output", f"{b}.hook_ffn_out", seen[f"{b}.hook_ffn_out"], "(B, T, d_model) projected back", False))
    steps.append(("block output", f"{b}.hook_resid_post", seen[f"{b}.hook_resid_post"],
                  "(B, T, d_model) = the residual after attention (no FFN), ready for the next block"
                  if c.attention_only else "(B, T, d_model) ready for the next block", False))
    if c.final_norm:
        steps.append(("final norm", "hook_final", seen["hook_final"], "(B, T, d_model) after the last block, before the head",
                      False))
    if c.head_transform:
        steps.append(("head transform", "head_transform", extra["head transform"],
                      "(B, T, d_model) dense, activation, norm: what the vocabulary matrix reads", False))
    steps.append(("logits", "head", logits, "(B, T, vocab_size) one score per vocabulary entry", False))
    return steps


def growth_lengths(context_length: int, current: int) -> tuple[int, ...]:
    """Powers of two up to the context length, plus the current length."""
    lengths = {current, context_length}
    n = 1
    while n < context_length:
        lengths.add(n)
        n *= 2
    return tuple(sorted(length for length in lengths if 1 <= length <= context_length))


def attention_growth(
    config: ModelConfig, batch: int, seqs: tuple[int, ...], model: Transformer | None = None,
    source_seq: int | None = None,
) -> AttentionGrowth:
    """Trace the meta model at each length: the attention matrix grows as T^2, the residual as T
    (an encoder-decoder's source stays at `source_seq` tokens)."""
    attention, residual = [], []
    model = model if model is not None else meta_model(config)
    for seq in seqs:
        trace = trace_shapes(config, batch, seq, model=model, source_seq=source_seq)
        attention.append(trace.attention_matrix_bytes)
        residual.append(trace.residual_bytes)
    return AttentionGrowth(config, batch, tuple(seqs), tuple(attention), tuple(residual))


__all__ = ["ShapeRow", "ShapeTrace", "AttentionGrowth", "trace_shapes", "meta_model", "attention_growth", "growth_lengths"]
