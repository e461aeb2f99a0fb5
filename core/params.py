"""Parameter accounting: an analytic breakdown by formula, checked against the instantiated model.

The formulas are the reading's (QKV + output projection, two FFN matrices, two norms per block,
embeddings, head), extended to grouped-query attention, SwiGLU, RMSNorm, bias-free layers,
mixture-of-experts and cross-attention. The instantiated count builds the model on PyTorch's
`meta` device, where tensors have shapes but no storage, so a 47B-parameter preset costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.config import ModelConfig

GROUP_ORDER = ("token_embeddings", "position_embeddings", "attention", "ffn", "router", "norms", "head")
GROUP_LABELS = {
    "token_embeddings": "token embeddings",
    "position_embeddings": "position embeddings",
    "attention": "attention",
    "ffn": "feed-forward",
    "router": "MoE routers",
    "norms": "norms",
    "head": "output head",
}


@dataclass(frozen=True)
class BlockBreakdown:
    """Parameters of one block (one FFN when experts are present: `ffn` counts all experts)."""

    attention: int  # self-attention, plus cross-attention in a decoder block of an encoder-decoder
    ffn: int  # the dense FFN, or every expert together (0 for an attention-only block)
    router: int  # the MoE router (0 for a dense block)
    norms: int  # the block's norms: one per sublayer (two, three with cross-attention, one fewer without an FFN)
    expert: int  # one expert's FFN (equals ffn for a dense block)

    @property
    def total(self) -> int:
        return self.attention + self.ffn + self.router + self.norms

    @property
    def ffn_share(self) -> float:
        return self.ffn / self.total


@dataclass(frozen=True)
class ParameterBreakdown:
    config: ModelConfig
    groups: dict[str, int]  # GROUP_ORDER keys -> parameters in that group over the whole model
    decoder_block: BlockBreakdown | None  # one block of the token stack (decoder, or the only stack)
    encoder_block: BlockBreakdown | None  # one block of the encoder tower of an encoder-decoder
    total: int  # unique parameters (a tied head counts once)
    active: int  # parameters one token touches (differs from total for mixture-of-experts)
    tied_saving: int = field(default=0)  # V x d parameters the tied head does not add

    def share(self, group: str) -> float:
        return self.groups[group] / self.total

    @property
    def embedding_share(self) -> float:
        return (self.groups["token_embeddings"] + self.groups["position_embeddings"]) / self.total

    def as_dict(self) -> dict:
        def block(b: BlockBreakdown | None) -> dict | None:
            if b is None:
                return None
            return {"attention": b.attention, "ffn": b.ffn, "router": b.router, "norms": b.norms, "total": b.total}

        return {
            "name": self.config.name,
            "total": self.total,
            "active": self.active,
            "groups": dict(self.groups),
            "decoder_block": block(self.decoder_block),
            "encoder_block": block(self.encoder_block),
            "tied": self.config.tie_embeddings,
            "tied_saving": self.tied_saving,
        }


def norm_params(config: ModelConfig) -> int:
    """One norm: a scale per feature, and a shift too for LayerNorm with biases."""
    if config.norm == "rmsnorm":
        return config.d_model
    return config.d_model * (2 if config.bias else 1)


def _linear(n_in: int, n_out: int, bias: bool) -> int:
    return n_in * n_out + (n_out if bias else 0)


def attention_params(config: ModelConfig) -> int:
    """One attention layer: Q (H heads), K and V (Hkv heads each), output projection."""
    d, dh, bias = config.d_model, config.d_head, config.bias
    q_width, kv_width = config.n_heads * dh, config.kv_heads * dh
    return _linear(d, q_width + 2 * kv_width, bias or config.qkv_bias) + _linear(q_width, d, bias)


def ffn_params(config: ModelConfig) -> int:
    """One dense FFN (or one expert): up and down projections, plus the gate for SwiGLU."""
    d, f, bias = config.d_model, config.d_ff, config.bias
    matrices = _linear(d, f, bias) + _linear(f, d, bias)
    if config.activation == "swiglu":
        matrices += _linear(d, f, bias)
    return matrices


def block_breakdown(config: ModelConfig, cross_attention: bool) -> BlockBreakdown:
    expert = 0 if config.attention_only else ffn_params(config)
    n_experts = max(config.n_experts, 1)
    sublayers = (2 if cross_attention else 1) + (0 if config.attention_only else 1)  # each has its norm
    return BlockBreakdown(
        attention=attention_params(config) * (2 if cross_attention else 1),
        ffn=expert * n_experts,
        router=config.d_model * config.n_experts,
        norms=norm_params(config) * sublayers,
        expert=expert,
    )


def parameter_breakdown(config: ModelConfig) -> ParameterBreakdown:
    """Every parameter of the model by formula, grouped the way the pie chart shows them."""
    config.validated()
    d, V = config.d_model, config.vocab_size
    decoder = block_breakdown(config, cross_attention=config.architecture == "encoder-decoder")
    encoder = block_breakdown(config, cross_attention=False) if config.architecture == "encoder-decoder" else None
    n_encoder = config.encoder_layers if encoder else 0
    n_stack = config.n_layers

    final_norms = 0
    if config.final_norm:
        final_norms = norm_params(config) * (2 if encoder else 1)
    groups = {
        "token_embeddings": V * d,
        "position_embeddings": config.context_length * d if config.positional == "learned" else 0,
        "attention": n_stack * decoder.attention + (n_encoder * encoder.attention if encoder else 0),
        "ffn": n_stack * decoder.ffn + (n_encoder * encoder.ffn if encoder else 0),
        "router": n_stack * decoder.router + (n_encoder * encoder.router if encoder else 0),
        "norms": n_stack * decoder.norms + (n_encoder * encoder.norms if encoder else 0) + final_norms
        + (norm_params(config) if config.embed_norm else 0),
        "head": (0 if config.tie_embeddings else V * d) + (V if config.head_bias else 0)
        + (_linear(d, d, config.bias) + norm_params(config) if config.head_transform else 0),
    }
    total = sum(groups.values())
    idle_experts = max(config.n_experts - config.top_k, 0) if config.is_moe else 0
    active = total - idle_experts * decoder.expert * (n_stack + n_encoder)
    return ParameterBreakdown(
        config=config,
        groups=groups,
        decoder_block=decoder,
        encoder_block=encoder,
        total=total,
        active=active,
        tied_saving=V * d if config.tie_embeddings else 0,
    )


def instantiated_parameter_count(config: ModelConfig) -> int:
    """Build the real module tree on the meta device and count its unique parameters."""
    from core.model import Transformer, count_parameters

    return count_parameters(Transformer.on_meta(config))


def gpt2_small_textbook_lines(config: ModelConfig) -> list[tuple[str, str]]:
    """The reading's GPT-2 small accounting table, as (label, figure) rows, for any LayerNorm GPT."""
    b = parameter_breakdown(config)
    untied = parameter_breakdown(config.replace(tie_embeddings=False))
    tied = parameter_breakdown(config.replace(tie_embeddings=True))
    block = b.decoder_block
    assert block is not None
    layers = config.n_layers
    final_norm = norm_params(config) if config.final_norm else 0
    return [
        ("token embeddings", f"{b.groups['token_embeddings']:>12,}"),
        ("position embeddings", f"{b.groups['position_embeddings']:>12,}"),
        ("one block: attention", f"{block.attention:>12,}"),
        ("one block: FFN", f"{block.ffn:>12,}"),
        ("one block: LayerNorms", f"{block.norms:>12,}"),
        ("one block total", f"{block.total:>12,}   x {layers} layers = {layers * block.total:,}"),
        ("final LayerNorm", f"{final_norm:>12,}"),
        ("TOTAL (tied head)", f"{tied.total:>12,}"),
        ("TOTAL (untied head)", f"{untied.total:>12,}"),
    ]
