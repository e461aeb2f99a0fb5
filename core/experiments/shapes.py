"""The reading's shape walk-through, traced from a real forward pass instead of written out.

token ids -> embeddings -> fused Q, K, V -> heads -> scores -> weights -> heads concatenated ->
attention output -> FFN expansion -> block output -> logits, for any config, batch and sequence.

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

    @property
    def attention_matrix_bytes(self) -> int:
        """One (B, h, T, T) weights tensor of one layer."""
        return next((row.bytes for row in self.rows if row.name == "attention weights"), 0)

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


def _check_sizes(config: ModelConfig, batch: int, seq: int) -> None:
    if batch < 1:
        raise SequenceError(f"batch must be at least 1, got {batch}")
    if seq < 1:
        raise SequenceError(f"the sequence must hold at least one token, got {seq}")
    if seq > config.context_length:
        raise SequenceError(f"{seq} tokens exceed the model's context length of {config.context_length}")


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


def trace_shapes(
    config: ModelConfig,
    batch: int,
    seq: int,
    model: Transformer | None = None,
    dtype: torch.dtype = torch.float32,
) -> ShapeTrace:
    """Run one forward pass with hooks on the first (decoder) block and record every tensor's shape.

    Without a model the pass runs on a meta-device copy of the config; with a model (a small real
    one) it runs on that model's device with zero token ids.
    """
    config = config.validated()
    _check_sizes(config, batch, seq)
    if model is None:
        model = meta_model(config, dtype)
    device = next(model.parameters()).device
    block_prefix = "blocks.0"
    block = model.blocks[0]
    ffn_hidden_hook = f"{block_prefix}.ffn.hook_hidden" if not config.is_moe else f"{block_prefix}.ffn.experts.0.hook_hidden"
    ffn_hooks = [] if config.attention_only else [ffn_hidden_hook, f"{block_prefix}.hook_ffn_out"]
    patterns = [
        "hook_embed",
        f"{block_prefix}.attn.hook_q",
        f"{block_prefix}.attn.hook_k",
        f"{block_prefix}.attn.hook_v",
        f"{block_prefix}.attn.hook_scores",
        f"{block_prefix}.attn.hook_pattern",
        f"{block_prefix}.attn.hook_out",
        f"{block_prefix}.hook_resid_mid",
        *ffn_hooks,
        f"{block_prefix}.hook_resid_post",
        "hook_final",
    ]
    # Two tensors have no hook point of their own: the fused projection and the heads just before
    # they are concatenated back; plain module hooks on the layers around them record those.
    extra: dict[str, torch.Tensor] = {}
    handles = [
        block.attn.qkv.register_forward_hook(lambda _m, _i, out: extra.__setitem__("qkv", out.detach())),
        block.attn.out_proj.register_forward_pre_hook(lambda _m, inputs: extra.__setitem__("concat", inputs[0].detach())),
    ]
    tokens = torch.zeros(batch, seq, dtype=torch.long, device=device)  # (B, T)
    try:
        with torch.no_grad(), capture(model, patterns) as seen:
            # Every block of a stack has the same shapes, so the pass stops after the first one.
            logits = model(tokens, n_blocks=1)  # (B, T, V)
    finally:
        for handle in handles:
            handle.remove()

    c = config
    h, hkv, d = c.n_heads, c.kv_heads, c.d_head
    gqa = f"; {h // hkv} query heads share each key/value head" if hkv != h else ""
    ratio = c.d_ff / c.d_model
    expansion = f"{ratio:g}x d_model" if c.d_ff % c.d_model == 0 else f"d_ff = {c.d_ff}"
    ffn_steps: list[tuple[str, str, torch.Tensor, str, bool]] = [] if c.attention_only else [
        (
            "FFN hidden",
            ffn_hidden_hook,
            seen[ffn_hidden_hook],
            f"(B, T, d_ff) expansion layer: {expansion}" + (", per expert" if c.is_moe else ""),
            False,
        ),
        ("FFN output", f"{block_prefix}.hook_ffn_out", seen[f"{block_prefix}.hook_ffn_out"],
         "(B, T, d_model) projected back", False),
    ]
    block_output = ("(B, T, d_model) = the residual after attention (no FFN), ready for the next block"
                    if c.attention_only else "(B, T, d_model) ready for the next block")
    steps: list[tuple[str, str, torch.Tensor, str, bool]] = [
        ("token ids", "input", tokens, "(B, T) integer ids", False),
        ("embeddings + positions", "hook_embed", seen["hook_embed"], f"(B, T, d_model) positions: {c.positional}", False),
        (
            "Q, K, V projection",
            f"{block_prefix}.attn.qkv",
            extra["qkv"],
            "(B, T, (h + 2 h_kv) d_head): one matmul makes Q, K and V side by side",
            False,
        ),
        ("Q per head", f"{block_prefix}.attn.hook_q", seen[f"{block_prefix}.attn.hook_q"], f"(B, h, T, d_head), d_head = {c.d_model}/{h} = {d}", False),
        ("K per head", f"{block_prefix}.attn.hook_k", seen[f"{block_prefix}.attn.hook_k"], f"(B, h_kv, T, d_head){gqa}", False),
        ("V per head", f"{block_prefix}.attn.hook_v", seen[f"{block_prefix}.attn.hook_v"], f"(B, h_kv, T, d_head){gqa}", False),
        (
            "attention scores",
            f"{block_prefix}.attn.hook_scores",
            seen[f"{block_prefix}.attn.hook_scores"],
            f"(B, h, T, T) = Q @ K^T / sqrt(d_head): {seq * seq:,} entries per head per sequence",
            True,
        ),
        (
            "attention weights",
            f"{block_prefix}.attn.hook_pattern",
            seen[f"{block_prefix}.attn.hook_pattern"],
            "(B, h, T, T) softmax over keys: grows with T squared",
            True,
        ),
        ("heads concatenated", f"{block_prefix}.attn.out_proj (input)", extra["concat"], "(B, T, h d_head) = weights @ V, heads side by side", False),
        ("attention output", f"{block_prefix}.attn.hook_out", seen[f"{block_prefix}.attn.hook_out"], "(B, T, d_model) after the output projection", False),
        ("residual after attention", f"{block_prefix}.hook_resid_mid", seen[f"{block_prefix}.hook_resid_mid"], "(B, T, d_model) x + attention", False),
        *ffn_steps,
        ("block output", f"{block_prefix}.hook_resid_post", seen[f"{block_prefix}.hook_resid_post"], block_output,
         False),
        ("final norm", "hook_final", seen["hook_final"], "(B, T, d_model) after the last block, before the head", False),
        ("logits", "head", logits, "(B, T, vocab_size) one score per vocabulary entry", False),
    ]
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
    return ShapeTrace(config=config, batch=batch, seq=seq, device=str(device), rows=rows)


def growth_lengths(context_length: int, current: int) -> tuple[int, ...]:
    """Powers of two up to the context length, plus the current length."""
    lengths = {current, context_length}
    n = 1
    while n < context_length:
        lengths.add(n)
        n *= 2
    return tuple(sorted(length for length in lengths if 1 <= length <= context_length))


def attention_growth(
    config: ModelConfig, batch: int, seqs: tuple[int, ...], model: Transformer | None = None
) -> AttentionGrowth:
    """Trace the meta model at each length: the attention matrix grows as T^2, the residual as T."""
    attention, residual = [], []
    model = model if model is not None else meta_model(config)
    for seq in seqs:
        trace = trace_shapes(config, batch, seq, model=model)
        attention.append(trace.attention_matrix_bytes)
        residual.append(trace.residual_bytes)
    return AttentionGrowth(config, batch, tuple(seqs), tuple(attention), tuple(residual))


__all__ = ["ShapeRow", "ShapeTrace", "AttentionGrowth", "trace_shapes", "meta_model", "attention_growth", "growth_lengths"]
