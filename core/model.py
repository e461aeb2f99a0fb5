"""One Transformer built from a ModelConfig: every variant is a field of the config, not a subclass.

Attention has two paths. With nothing observing its scores or weights and a standard mask, it
calls `scaled_dot_product_attention`; when a hook asks for the weights, or an experiment asks for
one of the reading's mask pitfalls, it computes q @ k^T, the mask and the softmax explicitly.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from core.choices import MASK_MODES as MASK_MODES  # re-exported: callers import the mask modes with the model
from core import kernels
from core.choices import MaskMode
from core.config import ModelConfig
from core.hooks import HookPoint
from core.positional import alibi_bias, apply_rope, rope_angles, sinusoidal_table

INIT_STD = 0.02  # GPT-2's initialisation scale for every weight matrix and embedding


class SequenceError(ValueError):
    """Token ids that a model cannot take: too long, out of vocabulary, or the wrong shape."""


def make_norm(config: ModelConfig) -> nn.Module:
    if config.norm == "rmsnorm":
        return nn.RMSNorm(config.d_model, eps=config.norm_eps)
    return nn.LayerNorm(config.d_model, eps=config.norm_eps, bias=config.bias)


def future_mask(n_queries: int, n_keys: int, diagonal: int, device: torch.device) -> torch.Tensor:
    """True where a query may NOT look: keys more than `diagonal - 1` steps ahead of the query."""
    return torch.ones(n_queries, n_keys, dtype=torch.bool, device=device).triu(diagonal=diagonal)  # (T, S)


class Linear(nn.Linear):
    """An nn.Linear whose product takes the process's kernel path and precision (core.kernels).

    The parameters, state_dict keys and initialisation are nn.Linear's own; only forward differs.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return kernels.linear(x, self.weight, self.bias)  # (..., out_features)


class Embedding(nn.Embedding):
    """An nn.Embedding that skips its default init on the meta device.

    torch's meta kernel for `normal_` imports torch._dynamo and sympy (over 800 modules, seconds of
    the interpreter's lock); a meta table holds no values, and `Transformer.from_seed` sets every weight.
    """

    def reset_parameters(self) -> None:
        if not self.weight.is_meta:
            super().reset_parameters()


class Attention(nn.Module):
    """Multi-head attention with grouped-query key/value heads; self- or cross-attention."""

    def __init__(self, config: ModelConfig, cross: bool = False) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.n_kv_heads = config.kv_heads
        self.d_head = config.d_head
        self.cross = cross
        q_width = self.n_heads * self.d_head
        kv_width = self.n_kv_heads * self.d_head
        qkv_bias = config.bias or config.qkv_bias
        if cross:
            self.q_proj = Linear(config.d_model, q_width, bias=qkv_bias)
            self.kv_proj = Linear(config.d_model, 2 * kv_width, bias=qkv_bias)
        else:
            # Q, K and V in one matmul, as in GPT-2's c_attn and the reading's block.
            self.qkv = Linear(config.d_model, q_width + 2 * kv_width, bias=qkv_bias)
        self.out_proj = Linear(q_width, config.d_model, bias=config.bias)
        self.hook_q = HookPoint()
        self.hook_k = HookPoint()
        self.hook_v = HookPoint()
        self.hook_scores = HookPoint()
        self.hook_pattern = HookPoint()
        self.hook_z = HookPoint()  # each head's weights @ v, before the heads are concatenated
        self.hook_out = HookPoint()

    def _split_heads(self, x: torch.Tensor, n_heads: int) -> torch.Tensor:
        batch, seq, _ = x.shape
        # view(B, T, H, d) then transpose: a single view to (B, H, T, d) would mix heads and time.
        return x.view(batch, seq, n_heads, self.d_head).transpose(1, 2)  # (B, H, T, d_head)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        mask_mode: MaskMode = "causal",
        rope: tuple[torch.Tensor, torch.Tensor] | None = None,
        score_bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        batch, seq, _ = x.shape  # x: (B, T, D)
        q_width = self.n_heads * self.d_head
        kv_width = self.n_kv_heads * self.d_head
        if self.cross:
            assert memory is not None, "cross-attention needs the encoder output"
            q = self.q_proj(x)  # (B, T, H*d)
            k, v = self.kv_proj(memory).split(kv_width, dim=-1)  # (B, S, Hkv*d) each
        else:
            q, k, v = self.qkv(x).split((q_width, kv_width, kv_width), dim=-1)  # (B, T, *) each
        q = self._split_heads(q, self.n_heads)  # (B, H, T, d)
        k = self._split_heads(k, self.n_kv_heads)  # (B, Hkv, S, d)
        v = self._split_heads(v, self.n_kv_heads)  # (B, Hkv, S, d)
        if rope is not None:
            cos, sin = rope
            q = apply_rope(q, cos, sin)  # (B, H, T, d)
            k = apply_rope(k, cos, sin)  # (B, Hkv, S, d)
        q, k, v = self.hook_q(q), self.hook_k(k), self.hook_v(v)
        if self.n_kv_heads != self.n_heads:
            group = self.n_heads // self.n_kv_heads
            k = k.repeat_interleave(group, dim=1)  # (B, H, S, d)
            v = v.repeat_interleave(group, dim=1)  # (B, H, S, d)

        explicit = (
            self.hook_scores.is_observed
            or self.hook_pattern.is_observed
            or mask_mode in ("off-by-one", "after-softmax")
        )
        if explicit:
            out = self._explicit_attention(q, k, v, mask_mode, score_bias)  # (B, H, T, d)
        else:
            out = self._fused_attention(q, k, v, mask_mode, score_bias)  # (B, H, T, d)
        out = self.hook_z(out)  # (B, H, T, d)
        out = out.transpose(1, 2).reshape(batch, seq, q_width)  # (B, T, H*d)
        return self.hook_out(self.out_proj(out))  # (B, T, D)

    def _fused_attention(self, q, k, v, mask_mode: MaskMode, score_bias: torch.Tensor | None) -> torch.Tensor:
        causal = mask_mode == "causal"
        if score_bias is None:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # (B, H, T, d)
        bias = score_bias.to(q.dtype)  # (H, T, S)
        if causal:
            blocked = future_mask(q.shape[-2], k.shape[-2], 1, q.device)  # (T, S)
            bias = bias.masked_fill(blocked, float("-inf"))  # (H, T, S)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)  # (B, H, T, d)

    def _explicit_attention(self, q, k, v, mask_mode: MaskMode, score_bias: torch.Tensor | None) -> torch.Tensor:
        n_queries, n_keys = q.shape[-2], k.shape[-2]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, H, T, S)
        if score_bias is not None:
            scores = scores + score_bias.to(scores.dtype)  # (B, H, T, S)
        if mask_mode == "causal":
            scores = scores.masked_fill(future_mask(n_queries, n_keys, 1, q.device), float("-inf"))  # (B, H, T, S)
        elif mask_mode == "off-by-one":
            # The reading's pitfall: triu(diagonal=0) also hides each token from itself.
            scores = scores.masked_fill(future_mask(n_queries, n_keys, 0, q.device), float("-inf"))  # (B, H, T, S)
        scores = self.hook_scores(scores)
        weights = F.softmax(scores, dim=-1)  # (B, H, T, S)
        if mask_mode == "after-softmax":
            # The other pitfall: future scores already shaped the softmax denominator.
            weights = weights.masked_fill(future_mask(n_queries, n_keys, 1, q.device), 0.0)  # (B, H, T, S)
        weights = self.hook_pattern(weights)
        return weights @ v  # (B, H, T, d)


class FeedForward(nn.Module):
    """Position-wise MLP: up, non-linearity, down; SwiGLU multiplies in a gated branch."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.activation = config.activation
        self.up = Linear(config.d_model, config.d_ff, bias=config.bias)
        if config.activation == "swiglu":
            self.gate = Linear(config.d_model, config.d_ff, bias=config.bias)
        self.down = Linear(config.d_ff, config.d_model, bias=config.bias)
        self.hook_hidden = HookPoint()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.activation == "swiglu":
            hidden = F.silu(self.gate(x)) * self.up(x)  # (B, T, d_ff)
        elif self.activation == "relu":
            hidden = F.relu(self.up(x))  # (B, T, d_ff)
        elif self.activation == "gelu-tanh":
            hidden = F.gelu(self.up(x), approximate="tanh")  # (B, T, d_ff)
        elif self.activation == "silu":
            hidden = F.silu(self.up(x))  # (B, T, d_ff)
        else:
            hidden = F.gelu(self.up(x))  # (B, T, d_ff)
        return self.down(self.hook_hidden(hidden))  # (B, T, D)


class MixtureOfExperts(nn.Module):
    """A router sends each token to top_k of n_experts FFNs and mixes their outputs.

    Every expert runs on every token and the router's weights zero out the unchosen ones. That
    costs n_experts / top_k times the routed FLOPs, which a lab-sized model can afford, and keeps
    each token's result independent of how many other tokens an expert received, so edits to one
    token cannot move another through batch-size-dependent kernels.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.top_k = config.top_k
        self.router = Linear(config.d_model, config.n_experts, bias=False)
        self.experts = nn.ModuleList(FeedForward(config) for _ in range(config.n_experts))
        self.hook_router_logits = HookPoint()  # what the load-balancing loss and the router view read
        self.hook_routing = HookPoint()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.hook_router_logits(self.router(x))  # (B, T, E)
        top_logits, top_index = logits.topk(self.top_k, dim=-1)  # (B, T, k) each
        top_weights = F.softmax(top_logits, dim=-1)  # (B, T, k)
        routing = torch.zeros_like(logits).scatter(-1, top_index, top_weights)  # (B, T, E)
        routing = self.hook_routing(routing)
        out = torch.zeros_like(x)  # (B, T, D)
        for index, expert in enumerate(self.experts):
            out = out + routing[..., index : index + 1] * expert(x)  # (B, T, D)
        return out


def activate(x: torch.Tensor, activation: str) -> torch.Tensor:
    """The non-gated activations by name (SwiGLU's gate needs its own matrix: FeedForward)."""
    if activation == "relu":
        return F.relu(x)
    if activation == "gelu-tanh":
        return F.gelu(x, approximate="tanh")
    if activation == "silu":
        return F.silu(x)
    return F.gelu(x)


class HeadTransform(nn.Module):
    """BERT's masked-LM head before the vocabulary matrix: dense, activation, norm."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.activation = "gelu" if config.activation == "swiglu" else config.activation
        self.dense = Linear(config.d_model, config.d_model, bias=config.bias)
        self.norm = make_norm(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(activate(self.dense(x), self.activation))  # (B, T, D)


class Block(nn.Module):
    """Attention then FFN, each wrapped in a residual connection and a norm (pre or post).

    An attention-only block has no FFN, no norm for it and no hook_ffn_out: its output is x + attn.
    """

    def __init__(self, config: ModelConfig, cross_attention: bool = False) -> None:
        super().__init__()
        self.pre_norm = config.norm_placement == "pre"
        self.hook_resid_pre = HookPoint()
        self.norm1 = make_norm(config)
        self.attn = Attention(config)
        self.hook_attn_out = HookPoint()  # what attention writes into the stream (before a post-norm)
        self.hook_resid_mid = HookPoint()
        if cross_attention:
            self.norm_cross = make_norm(config)
            self.cross_attn = Attention(config, cross=True)
            self.hook_resid_cross = HookPoint()
        self.has_ffn = not config.attention_only
        if self.has_ffn:
            self.norm2 = make_norm(config)
            self.ffn: nn.Module = MixtureOfExperts(config) if config.is_moe else FeedForward(config)
            self.hook_ffn_out = HookPoint()  # what the FFN writes into the stream (TransformerLens's hook_mlp_out)
        self.hook_resid_post = HookPoint()

    def _sublayer(self, x: torch.Tensor, norm: nn.Module, sublayer, hook: HookPoint | None = None) -> torch.Tensor:
        if self.pre_norm:
            update = sublayer(norm(x))  # (B, T, D)
            return x + (hook(update) if hook else update)  # (B, T, D)
        update = sublayer(x)  # (B, T, D)
        return norm(x + (hook(update) if hook else update))  # (B, T, D)

    def feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        """The FFN sublayer with its residual and norm; an attention-only block passes the stream on as it is."""
        if not self.has_ffn:
            return x
        return self._sublayer(x, self.norm2, self.ffn, self.hook_ffn_out)  # (B, T, D)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        mask_mode: MaskMode = "causal",
        rope: tuple[torch.Tensor, torch.Tensor] | None = None,
        score_bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        x = self.hook_resid_pre(x)  # (B, T, D)
        x = self._sublayer(x, self.norm1, lambda h: self.attn(h, mask_mode=mask_mode, rope=rope, score_bias=score_bias),
                           self.hook_attn_out)
        x = self.hook_resid_mid(x)  # (B, T, D)
        if hasattr(self, "cross_attn"):
            x = self._sublayer(x, self.norm_cross, lambda h: self.cross_attn(h, memory=memory, mask_mode="none"))
            x = self.hook_resid_cross(x)  # (B, T, D)
        x = self.feed_forward(x)  # (B, T, D)
        return self.hook_resid_post(x)  # (B, T, D)


class Transformer(nn.Module):
    """Embeddings, positions, a stack of blocks (or two towers), a final norm and a vocabulary head."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        config.validated()
        self.config = config
        # The mask its training forward used, as training.json records it (core.training.training_mask_mode);
        # it always runs with its config's own mask, so a leaky-trained model is told apart by this alone.
        self.trained_mask_mode = "causal"
        self.tok_emb = Embedding(config.vocab_size, config.d_model)
        if config.positional == "learned":
            self.pos_emb = Embedding(config.context_length, config.d_model)
        if config.embed_norm:
            self.embed_norm = make_norm(config)
        self.hook_embed = HookPoint()
        if config.encoder_layers and config.decoder_layers:
            self.encoder_blocks = nn.ModuleList(Block(config) for _ in range(config.encoder_layers))
            self.hook_encoder_embed = HookPoint()
            self.encoder_norm = make_norm(config) if config.final_norm else nn.Identity()
            self.hook_encoder_out = HookPoint()
        cross = config.architecture == "encoder-decoder"
        self.blocks = nn.ModuleList(Block(config, cross_attention=cross) for _ in range(config.n_layers))
        self.final_norm = make_norm(config) if config.final_norm else nn.Identity()
        self.hook_final = HookPoint()
        if config.head_transform:
            self.head_transform = HeadTransform(config)
        self.head = Linear(config.d_model, config.vocab_size, bias=config.head_bias)
        self.tie_weights()

    # ---- construction --------------------------------------------------------------------------
    @classmethod
    def from_seed(
        cls,
        config: ModelConfig,
        seed: int = 0,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
        residual_scaling: bool = False,
    ) -> Transformer:
        """Same config and seed give bit-identical weights, whatever the device or global RNG state."""
        with torch.device("meta"):
            model = cls(config)
        # Not to_empty: its empty_like runs on the meta device through torch's Python references, which import
        # sympy (486 modules); init_weights fills every parameter and buffer below.
        model._apply(lambda meta: torch.empty(meta.shape, dtype=meta.dtype, device="cpu"))
        model.tie_weights()
        model.init_weights(seed, residual_scaling=residual_scaling)
        return model.to(device=device, dtype=dtype).eval()

    @classmethod
    def on_meta(cls, config: ModelConfig) -> Transformer:
        """The model's structure with no storage: counts parameters of 47B-parameter presets for free."""
        with torch.device("meta"):
            return cls(config)

    def tie_weights(self) -> None:
        if self.config.tie_embeddings:
            self.head.weight = self.tok_emb.weight

    def init_weights(self, seed: int, residual_scaling: bool = False) -> None:
        """GPT-2's scheme: N(0, 0.02) weights, zero biases, unit norm scales.

        residual_scaling divides the std of each projection that writes into the residual stream
        by sqrt(2 * n_layers), the deep-stack recipe of GPT-2 (two writes per block).
        """
        generator = torch.Generator().manual_seed(seed)
        # Each encoder block writes twice into its stream (attention, FFN); decoder blocks with cross-attention
        # thrice; an attention-only block once fewer.
        ffn_writes = 0 if self.config.attention_only else 1
        writes_per_block = (2 if self.config.architecture == "encoder-decoder" else 1) + ffn_writes
        n_writes = max(1, writes_per_block * self.config.n_layers + (1 + ffn_writes) * self.config.encoder_layers)
        seen: set[int] = set()
        with torch.no_grad():
            for name, param in self.named_parameters():
                if id(param) in seen:
                    continue
                seen.add(id(param))
                leaf = name.rsplit(".", 1)[-1]
                if isinstance(self.get_submodule(name.rsplit(".", 1)[0]), (nn.LayerNorm, nn.RMSNorm)):
                    param.fill_(1.0 if leaf == "weight" else 0.0)
                elif leaf == "bias":
                    param.zero_()
                else:
                    std = INIT_STD
                    if residual_scaling and (name.endswith("out_proj.weight") or name.endswith("down.weight")):
                        std = INIT_STD / math.sqrt(n_writes)
                    param.copy_(torch.randn(param.shape, generator=generator) * std)

    # ---- forward -------------------------------------------------------------------------------
    def _positional_inputs(self, seq: int, device: torch.device, dtype: torch.dtype, causal: bool):
        config = self.config
        rope = None
        score_bias = None
        if config.positional == "rope":
            positions = torch.arange(seq, device=device, dtype=torch.float64 if dtype == torch.float64 else torch.float32)
            cos, sin = rope_angles(positions, config.d_head, config.rope_base, config.rope_scale)  # (T, d/2) each
            rope = (cos.to(dtype), sin.to(dtype))
        elif config.positional == "alibi":
            score_bias = alibi_bias(config.n_heads, seq, causal=causal, device=device)  # (H, T, T)
        return rope, score_bias

    def embed(self, tokens: torch.Tensor, hook: HookPoint | None = None) -> torch.Tensor:
        """Token embeddings plus additive positions, through `hook` (the decoder's hook_embed by default)."""
        seq = tokens.shape[1]
        x = self.tok_emb(tokens)  # (B, T, D)
        if self.config.embed_scale:
            x = x * math.sqrt(self.config.d_model)  # (B, T, D)
        if self.config.positional == "learned":
            x = x + self.pos_emb(torch.arange(seq, device=tokens.device))  # (B, T, D)
        elif self.config.positional == "sinusoidal":
            # On the CPU (then moved), so that every device adds the same float values; on meta, no memory.
            table = sinusoidal_table(seq, self.config.d_model, dtype=x.dtype, device="meta" if x.is_meta else None,
                                     halves=self.config.sinusoidal_halves)  # (T, D)
            x = x + table.to(x.device)  # (B, T, D)
        if self.config.embed_norm:
            x = self.embed_norm(x)  # (B, T, D)
        return (hook or self.hook_embed)(x)

    def check_tokens(self, tokens: torch.Tensor) -> None:
        if tokens.dim() != 2:
            raise SequenceError(f"token ids must be a (batch, sequence) array, got shape {tuple(tokens.shape)}")
        if tokens.shape[1] == 0:
            raise SequenceError("the sequence is empty; give at least one token")
        refusal = self.config.length_refusal(tokens.shape[1])  # past the trained length where positions allow
        if refusal:
            raise SequenceError(refusal)
        if tokens.is_floating_point():
            raise SequenceError("token ids must be whole numbers")
        low, high = int(tokens.min()), int(tokens.max())
        if low < 0 or high >= self.config.vocab_size:
            bad = low if low < 0 else high
            raise SequenceError(f"token id {bad} is outside the vocabulary (0..{self.config.vocab_size - 1})")

    def encode(self, source: torch.Tensor, mask_mode: MaskMode | None = None) -> torch.Tensor:
        """Run the encoder tower of an encoder-decoder model: bidirectional self-attention."""
        self.check_tokens(source)
        x = self.embed(source, self.hook_encoder_embed)  # (B, S, D)
        rope, score_bias = self._positional_inputs(source.shape[1], source.device, x.dtype, causal=False)
        for block in self.encoder_blocks:
            x = block(x, mask_mode=mask_mode or "none", rope=rope, score_bias=score_bias)  # (B, S, D)
        return self.hook_encoder_out(self.encoder_norm(x))  # (B, S, D)

    def forward(
        self,
        tokens: torch.Tensor,
        source: torch.Tensor | None = None,
        mask_mode: MaskMode | None = None,
        n_blocks: int | None = None,
        head: bool = True,
    ) -> torch.Tensor:
        """Logits (B, T, V) for token ids (B, T).

        mask_mode overrides the config's self-attention mask (the experiments' pitfalls);
        n_blocks runs only the first blocks (a depth slider over one set of weights); an
        encoder-decoder model reads `source` through its encoder (the tokens themselves if omitted).
        head=False stops at the final norm and returns its hidden state (B, T, D): the vocabulary
        head is the largest matmul of a small model, wasted when no logits are read.
        """
        self.check_tokens(tokens)
        causal = self.config.self_attention_causal
        mode: MaskMode = mask_mode or ("causal" if causal else "none")
        memory = None
        if self.config.architecture == "encoder-decoder":
            memory = self.encode(tokens if source is None else source)  # (B, S, D)
        x = self.embed(tokens)  # (B, T, D)
        rope, score_bias = self._positional_inputs(tokens.shape[1], tokens.device, x.dtype, causal=mode != "none")
        blocks = self.blocks if n_blocks is None else self.blocks[:n_blocks]
        for block in blocks:
            x = block(x, memory=memory, mask_mode=mode, rope=rope, score_bias=score_bias)  # (B, T, D)
        x = self.hook_final(self.final_norm(x))  # (B, T, D)
        if not head:
            return x  # (B, T, D)
        return self.unembed(x)  # (B, T, V)

    def unembed(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (..., V) of final-norm outputs (..., D): the head transform when there is one, then the head."""
        if self.config.head_transform:
            x = self.head_transform(x)  # (..., D)
        return self.head(x)  # (..., V)


def count_parameters(model: nn.Module) -> int:
    """Unique parameters (a tied head is counted once)."""
    return sum(p.numel() for p in model.parameters())
