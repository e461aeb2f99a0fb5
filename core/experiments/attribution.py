"""Direct logit attribution: the logit (difference) of one position split into what wrote it.

In a pre-norm decoder the final residual stream is a sum: the token embedding, the positional
embedding (a learned or sinusoidal table), and every sublayer's write. Attention's write is itself
a sum over heads, each head's output `hook_z` times its own slice of W_O, plus the output bias; a
mixture of experts writes the routed sum of its experts; an attention-only model writes no FFN part.
The final norm is linear once its scale is fixed: LayerNorm subtracts the mean and divides by the
standard deviation of *this run's* final residual, RMSNorm divides by its root mean square. With that
scale taken from the run (never a cached or averaged one), each part's share of the logit is exact and
the parts sum to the logit the model produced, up to float32 rounding; the result carries both and
their difference.

A post-norm stack normalises inside every block, so its output is not a sum of per-part terms:
it is refused in words, as is BERT's masked-LM head, whose dense layer, activation and norm stand
between the stream and the vocabulary matrix (the logit is not linear in the stream), and an
encoder-decoder, whose decoder stream also holds cross-attention writes this split does not follow.
A pre-norm encoder splits like a decoder; its logit at a position scores the token that belongs
there, not the next one. An embedding norm or scale makes the embedding one part (the stream
entering block 0); a logit bias is a part of its own. The logit lens shares one thing with this split: applied to the whole
final residual (the stream after the last block) it is the model's logit, and the parts summed up
to a layer are the lens at that layer read through the final run's scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from core.hooks import capture
from core.model import MixtureOfExperts, Transformer
from core.positional import sinusoidal_table


class AttributionError(ValueError):
    """A model or request the exact split does not cover; the message says why."""


@dataclass(frozen=True)
class Component:
    name: str  # "embed", "pos_embed", "L0H3", "L0 attn bias", "L1 ffn", "L1 expert 2", "final norm bias"
    kind: str  # embed, pos_embed, head, attn_bias, ffn, expert, norm_bias
    layer: int | None
    head: int | None  # the head, or the expert for kind "expert"
    value: float  # this part's share of the logit (difference), in float64 from the run's float32 activations


@dataclass(frozen=True)
class Attribution:
    position: int
    answer: int
    foil: int | None
    components: tuple[Component, ...]
    total: float  # the model's own logit (difference) at `position`, from its float32 logits
    parts_sum: float  # the components summed (float64)
    difference: float  # parts_sum - total
    tolerance: float  # float32 rounding bound for that difference (see `rounding_bound`)
    norm: str  # layernorm, rmsnorm or none: how the final scale was applied
    final_scale: float  # 1/std (LayerNorm) or 1/rms (RMSNorm) of this run's final residual; 1 without a norm
    lens: np.ndarray  # (L + 1,) logit lens: each stream (before block 0, after each block) through the final norm with its own scale
    lens_final_scale: np.ndarray  # (L + 1,) the same streams through the final run's scale: the parts summed so far
    accumulated: np.ndarray  # (L + 1,) the components written before each stream (and the norm bias), summed

    @property
    def agrees(self) -> bool:
        return abs(self.difference) <= self.tolerance

    def head_matrix(self, n_layers: int, n_heads: int) -> np.ndarray:
        """(L, H) the heads' direct effects."""
        grid = np.zeros((n_layers, n_heads))
        for part in self.components:
            if part.kind == "head":
                grid[part.layer, part.head] = part.value
        return grid


def refusal(model: Transformer) -> str | None:
    """Why the exact split does not apply to this model, or None when it does."""
    config = model.config
    if config.architecture == "encoder-decoder":
        return ("direct logit attribution splits one stack's stream; an encoder-decoder's decoder stream also holds "
                "what its cross-attention read from the encoder, which this split does not follow")
    reasons = []
    if config.head_transform:
        reasons.append("its masked-LM head puts a dense layer, an activation and a norm between the stream and the "
                       "vocabulary matrix (BERT's head transform), so the logit is not linear in the stream")
    if config.norm_placement != "pre":
        reasons.append("a post-norm stack normalises the stream inside every block, so its logit is not a sum of "
                       "per-part terms")
    if reasons:
        return "; and ".join(reasons) + "; the exact split needs a pre-norm model whose head reads the stream directly"
    return None


def rounding_bound(model: Transformer, magnitudes: float) -> float:
    """How far float32 rounding may move a logit whose terms have the given summed magnitude.

    The model's logit is a dot product over d_model of a vector made by d_model-long sums; each
    float32 operation rounds by at most 2^-24 relatively, so the error is bounded by a few times
    d_model units of rounding on the sum of the absolute terms.
    """
    eps = float(torch.finfo(torch.float32).eps)
    return 4.0 * model.config.d_model * eps * magnitudes + 1e-6


def direct_logit_attribution(
    model: Transformer, ids: Sequence[int], answer: int | None, foil: int | None = None, position: int | None = None
) -> Attribution:
    """The split of the logit of `answer` (None: the model's top prediction there) minus `foil` at `position`."""
    problem = refusal(model)
    if problem:
        raise AttributionError(problem)
    config = model.config
    tokens = torch.tensor([list(ids)], device=next(model.parameters()).device)  # (1, T)
    model.check_tokens(tokens)
    n_tokens = tokens.shape[1]
    position = n_tokens - 1 if position is None else position
    if not 0 <= position < n_tokens:
        raise AttributionError(f"position {position} is outside the sequence (0..{n_tokens - 1})")
    for role, token in (("answer", answer), ("foil", foil)):
        if token is not None and not 0 <= token < config.vocab_size:
            raise AttributionError(f"the {role} token id {token} is outside the vocabulary (0..{config.vocab_size - 1})")
    n_layers = config.n_layers
    names = ["hook_embed"]
    for layer in range(n_layers):
        names += [f"blocks.{layer}.hook_resid_pre", f"blocks.{layer}.attn.hook_z", f"blocks.{layer}.hook_resid_mid"]
        if not config.attention_only:
            names.append(f"blocks.{layer}.hook_ffn_out")
        if config.is_moe:
            names.append(f"blocks.{layer}.ffn.hook_routing")
    seen: dict[str, torch.Tensor] = {}  # each hook's output at `position` alone; the rest of the run is not read

    def keep_position(name: str, output: torch.Tensor) -> None:
        dim = 2 if name.endswith("hook_z") else 1  # hook_z is (B, H, T, d_head); the others (B, T, ...)
        seen[name] = output.narrow(dim, position, 1).clone()  # (1, 1, D), (1, H, 1, d_head) or (1, 1, E)

    with torch.no_grad(), capture(model, names, on_output=keep_position):
        hidden = model(tokens, head=False)  # (1, T, D)
    with torch.no_grad():
        logits = model.unembed(hidden[0, position])  # (V,): no other position's logits are read
    del hidden
    if answer is None:
        answer = int(logits.argmax())
    total = float(logits[answer])
    if foil is not None:
        total = float(logits[answer] - logits[foil])  # the float32 difference

    with torch.no_grad():
        direction64 = model.head.weight[answer].double()  # (D,)
        if foil is not None:
            direction64 = direction64 - model.head.weight[foil].double()  # (D,)
        parts = _stream_parts(model, tokens, seen, position)  # list of (Component-without-value, (D,) float64)
        stream = _final_residual(model, seen)  # (D,) float64: the stream the final norm reads
        norm = model.final_norm
        through = _final_norm_map(model, stream)  # maps a stream part to its share of the normed vector
        components = [Component(name, kind, layer, head, float(through(vector) @ direction64))
                      for name, kind, layer, head, vector in parts]
        if isinstance(norm, torch.nn.LayerNorm) and norm.bias is not None:
            components.append(Component("final norm bias", "norm_bias", None, None,
                                        float(norm.bias.double() @ direction64)))
        head_bias = _head_bias_share(model, answer, foil)
        if config.head_bias:
            components.append(Component("logit bias", "head_bias", None, None, head_bias))
        streams = [seen[f"blocks.{layer}.hook_resid_pre"][0, 0].double() for layer in range(n_layers)]
        streams.append(stream)
        lens = np.array([float(_normed(model, s) @ direction64) + head_bias for s in streams])  # (L + 1,)
        lens_final = np.array([float(through(s) @ direction64) + _bias_share(model, direction64) + head_bias
                               for s in streams])
        accumulated = _accumulated(components, n_layers)  # (L + 1,)
    parts_sum = float(sum(part.value for part in components))
    magnitude = float(sum(abs(part.value) for part in components)) + abs(total)
    kind = "none" if isinstance(norm, torch.nn.Identity) else ("rmsnorm" if isinstance(norm, torch.nn.RMSNorm) else "layernorm")
    return Attribution(
        position=position, answer=answer, foil=foil, components=tuple(components), total=total,
        parts_sum=parts_sum, difference=parts_sum - total, tolerance=rounding_bound(model, magnitude), norm=kind,
        final_scale=float(_scale(model, stream)), lens=lens, lens_final_scale=lens_final, accumulated=accumulated,
    )


def _final_residual(model: Transformer, seen) -> torch.Tensor:
    """The stream after the last block at the position `seen` holds, rebuilt as the last block's resid_mid + its
    FFN write."""
    last = model.config.n_layers - 1
    if last < 0:
        return seen["hook_embed"][0, 0].double()
    if model.config.attention_only:  # the block's output is its stream after attention
        return seen[f"blocks.{last}.hook_resid_mid"][0, 0].double()
    # hook_resid_post is not captured: resid_mid + ffn_out is the same float32 sum the block made.
    return (seen[f"blocks.{last}.hook_resid_mid"][0, 0] + seen[f"blocks.{last}.hook_ffn_out"][0, 0]).double()


def _scale(model: Transformer, stream: torch.Tensor) -> torch.Tensor:
    norm = model.final_norm
    if isinstance(norm, torch.nn.LayerNorm):
        centred = stream - stream.mean()
        return 1.0 / torch.sqrt((centred * centred).mean() + norm.eps)
    if isinstance(norm, torch.nn.RMSNorm):
        eps = norm.eps if norm.eps is not None else torch.finfo(torch.float32).eps
        return 1.0 / torch.sqrt((stream * stream).mean() + eps)
    return torch.tensor(1.0, dtype=torch.float64)


def _final_norm_map(model: Transformer, stream: torch.Tensor):
    """The final norm as a linear map with this run's scale: part -> its share of the normed vector (no bias)."""
    norm = model.final_norm
    scale = _scale(model, stream)
    weight = norm.weight.double() if getattr(norm, "weight", None) is not None else None

    def through(part: torch.Tensor) -> torch.Tensor:
        if isinstance(norm, torch.nn.LayerNorm):
            part = part - part.mean()
        part = part * scale
        return part * weight if weight is not None else part

    return through


def _head_bias_share(model: Transformer, answer: int, foil: int | None) -> float:
    """The logit bias's part of the logit (difference): the head's own bias, 0 without one."""
    bias = model.head.bias
    if bias is None:
        return 0.0
    return float(bias[answer].double() - (bias[foil].double() if foil is not None else 0.0))


def _bias_share(model: Transformer, direction: torch.Tensor) -> float:
    bias = getattr(model.final_norm, "bias", None)
    return float(bias.double() @ direction) if bias is not None else 0.0


def _normed(model: Transformer, stream: torch.Tensor) -> torch.Tensor:
    """The logit lens: the final norm applied to a stream with that stream's own scale (float64)."""
    norm = model.final_norm
    if isinstance(norm, torch.nn.Identity):
        return stream
    out = _final_norm_map(model, stream)(stream)
    bias = getattr(norm, "bias", None)
    return out + bias.double() if bias is not None else out


def _stream_parts(model: Transformer, tokens: torch.Tensor, seen, position: int):
    """(name, kind, layer, head, (D,) float64 vector) for everything written into the stream at `position`
    (the one position `seen` holds)."""
    config = model.config
    token = tokens[0, position]
    if config.embed_norm or config.embed_scale:
        # A normed (or scaled) sum is no longer the table rows themselves: the embedding enters as one part.
        embedded = [("embed (+ positions)", "embed", None, None, seen["hook_embed"][0, 0].double())]
        return embedded + _block_parts(model, seen)
    parts = [("embed", "embed", None, None, model.tok_emb.weight[token].double())]
    if config.positional == "learned":
        parts.append(("pos_embed", "pos_embed", None, None, model.pos_emb.weight[position].double()))
    elif config.positional == "sinusoidal":
        table = sinusoidal_table(tokens.shape[1], config.d_model, dtype=torch.float32,
                                 halves=config.sinusoidal_halves)  # (T, D)
        parts.append(("pos_embed", "pos_embed", None, None, table[position].double()))
    return parts + _block_parts(model, seen)


def _block_parts(model: Transformer, seen):
    """(name, kind, layer, head, (D,) float64 vector) for every head, bias and FFN write at the position `seen`
    holds."""
    config = model.config
    parts = []
    d_head = config.d_head
    for layer, block in enumerate(model.blocks):
        z = seen[f"blocks.{layer}.attn.hook_z"][0, :, 0].double()  # (H, d_head)
        w_out = block.attn.out_proj.weight.double()  # (D, H*d_head)
        for head in range(config.n_heads):
            slice_ = w_out[:, head * d_head:(head + 1) * d_head]  # (D, d_head)
            parts.append((f"L{layer}H{head}", "head", layer, head, slice_ @ z[head]))
        if block.attn.out_proj.bias is not None:
            parts.append((f"L{layer} attn bias", "attn_bias", layer, None, block.attn.out_proj.bias.double()))
        if not block.has_ffn:
            continue
        if isinstance(block.ffn, MixtureOfExperts):
            routing = seen[f"blocks.{layer}.ffn.hook_routing"][0, 0]  # (E,)
            normed = block.norm2(seen[f"blocks.{layer}.hook_resid_mid"])  # (1, 1, D)
            for index, expert in enumerate(block.ffn.experts):
                write = (routing[index] * expert(normed)[0, 0]).double()  # (D,)
                parts.append((f"L{layer} expert {index}", "expert", layer, index, write))
        else:
            parts.append((f"L{layer} ffn", "ffn", layer, None, seen[f"blocks.{layer}.hook_ffn_out"][0, 0].double()))
    return parts


def _accumulated(components: list[Component], n_layers: int) -> np.ndarray:
    """(L + 1,) the components written before block l (l = 0..L-1), then all of them; the norm bias in each."""
    sums = np.zeros(n_layers + 1)
    for part in components:
        first = 0 if part.layer is None else part.layer + 1
        sums[first:] += part.value
    return sums
