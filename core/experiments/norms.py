"""Norms: how big the residual stream and its gradient get through a deep stack, pre- vs post-norm.

The reading's exercise 3 compares the output norm of a 12-block stack in both placements. Here a
stack of 1..96 random blocks reads random tokens, in one of two initialisations:

- "gpt2": GPT-2's N(0, 0.02) on every weight matrix and embedding (`Transformer.from_seed`), GELU,
  learned positions, a tied head, a final norm in both placements. At this scale every sublayer
  writes little next to the stream, so post-norm's LayerNorms barely rescale anything.
- "xavier": the set-up of Xiong et al. (2020): Xavier-uniform weights on every linear layer (the
  fused query/key/value matrix as three d x d matrices), zero biases, token embeddings N(0, 1)
  (fairseq's N(0, 1/d) times its sqrt(d) embedding scale, so the input has length about sqrt(d)
  like the stream), sinusoidal positions, ReLU, an untied head, and a final norm only in the
  pre-norm stack (the 2017 post-norm stack has none). The loss is the lab's next-token loss on a
  batch of random tokens, not the paper's translation loss.

every block boundary is captured through the model's hook points with the autograd graph kept,
and one backward pass of the next-token cross-entropy gives d loss / d residual at each boundary
and d loss / d W for every block's weight matrices.

The two gradients answer different questions. d loss / d residual is what flows down the stream;
in post-norm its size is set by the norms it passes back through (from the first block into the
embeddings it is stretched by the first norm's gain, the embeddings being much shorter than sqrt(d)).
d loss / d W is what an optimiser step sees for each block, the quantity the pre-norm / post-norm
analysis of Xiong et al. (2020) follows from layer to layer at initialisation.

Layer index l in the boundary results: 0 is the stream entering block 0 (embeddings plus positions),
l >= 1 is the output of block l - 1. The final norm and head sit after layer `depth`. Block index b
in the parameter results is the block itself, 0 .. depth - 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from core.config import ModelConfig
from core.hooks import capture
from core.model import Transformer

MAX_DEPTH = 96
MAX_WIDTH = 1024
MAX_STACK_WEIGHTS = 60_000_000  # 12 d^2 weight entries per block: 96 blocks at d 512 would be 300M
INITS = ("gpt2", "xavier")
INIT_NAMES = {"gpt2": "GPT-2 N(0, 0.02)", "xavier": "Xavier (Xiong et al.)"}
# The base Transformer's sizes, where the weight gradients are set side by side with the paper.
PAPER_WIDTH, PAPER_HEADS, PAPER_DEPTH = 512, 8, 12
DEFAULT_VOCAB = 65  # the bundled character vocabulary: any small vocabulary works for random tokens


class NormsError(ValueError):
    """A norm-curve request outside what the experiment supports."""


@dataclass(frozen=True)
class NormCurves:
    """Per block boundary: forward size of the residual stream and size of the loss gradient there."""

    layers: np.ndarray  # (depth + 1,) 0 = embeddings, l = output of block l - 1
    forward_norms: np.ndarray  # (depth + 1,) mean over (batch, position) of ||x_token||_2
    gradient_norms: np.ndarray  # (depth + 1,) ||d loss / d x||: Frobenius norm over the whole (B, T, D) tensor
    parameter_gradient_norms: np.ndarray  # (depth,) block b's ||d loss / d W|| over all its weight matrices together
    ffn_out_gradient_norms: np.ndarray  # (depth,) block b's ||d loss / d W^{FFN,2}||, the matrix Xiong et al. plot
    write_ratios: np.ndarray  # (depth,) block b's mean ||FFN write|| / ||stream it is added to|| over tokens
    loss: float  # the cross-entropy the gradients come from (about ln(vocab) for random weights)
    depth: int
    placement: str  # "pre" or "post"
    norm: str  # "layernorm" or "rmsnorm"
    residual_scaling: bool
    d_model: int
    seed: int
    label: str
    init: str = "gpt2"  # "gpt2" or "xavier"
    n_heads: int = 4
    seq: int = 16
    batch: int = 4


@dataclass(frozen=True)
class PlacementComparison:
    """Pre- and post-norm stacks with identical sizes, seed and tokens, for one pair of axes."""

    pre: NormCurves
    post: NormCurves


def norm_curve_config(
    depth: int,
    placement: str = "pre",
    norm: str = "layernorm",
    d_model: int = 64,
    n_heads: int = 4,
    seq: int = 16,
    init: str = "gpt2",
) -> ModelConfig:
    """The stack the curves are measured on: d_ff = 4 d; the rest follows the initialisation's set-up."""
    if not 1 <= depth <= MAX_DEPTH:
        raise NormsError(f"depth must be between 1 and {MAX_DEPTH} blocks, got {depth}")
    if init not in INITS:
        raise NormsError(f"init must be one of {', '.join(INITS)}, got {init!r}")
    if not 1 <= d_model <= MAX_WIDTH:
        raise NormsError(f"d_model must be between 1 and {MAX_WIDTH}, got {d_model}")
    if 12 * depth * d_model * d_model > MAX_STACK_WEIGHTS:
        raise NormsError(f"{depth} blocks of width {d_model} hold {12 * depth * d_model * d_model:,} weights, more "
                         f"than {MAX_STACK_WEIGHTS:,}: choose fewer blocks or a smaller width")
    paper = init == "xavier"
    if seq < 2:
        raise NormsError(f"a next-token loss needs at least 2 positions, got seq = {seq}")
    try:
        return ModelConfig(
            name=f"{depth}-block {placement}-{norm} stack",
            vocab_size=DEFAULT_VOCAB,
            context_length=seq,
            d_model=d_model,
            n_heads=n_heads,
            n_layers=depth,
            d_ff=4 * d_model,
            norm=norm,  # type: ignore[arg-type]
            norm_placement=placement,  # type: ignore[arg-type]
            activation="relu" if paper else "gelu",
            positional="sinusoidal" if paper else "learned",
            tie_embeddings=not paper,
            final_norm=placement == "pre" or not paper,
        ).validated()
    except ValueError as error:
        raise NormsError(str(error)) from None


def xavier_init(model: Transformer, seed: int) -> None:
    """Xiong et al.'s initialisation in place: Xavier-uniform linear weights, N(0, 1) token embeddings."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            owner, leaf = name.rsplit(".", 1)
            if isinstance(model.get_submodule(owner), (torch.nn.LayerNorm, torch.nn.RMSNorm)):
                param.fill_(1.0 if leaf == "weight" else 0.0)
            elif leaf == "bias":
                param.zero_()
            elif name == "tok_emb.weight":
                param.copy_(torch.randn(param.shape, generator=generator))  # (V, D)
            else:
                # The fused query/key/value projection is three d x d matrices, each Xavier on its own.
                parts = 3 if name.endswith("qkv.weight") else 1
                fan_out, fan_in = param.shape[0] // parts, param.shape[1]
                bound = math.sqrt(6.0 / (fan_in + fan_out))
                param.copy_((torch.rand(param.shape, generator=generator) * 2 - 1) * bound)  # (out, in)


def build_stack(config: ModelConfig, seed: int, init: str, residual_scaling: bool) -> Transformer:
    model = Transformer.from_seed(config, seed, residual_scaling=residual_scaling)
    if init == "xavier":
        xavier_init(model, seed)
    return model


def random_tokens(vocab_size: int, batch: int, seq: int, seed: int) -> torch.Tensor:
    """seq + 1 random ids per row: inputs are the first seq, next-token targets the last seq."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab_size, (batch, seq + 1), generator=generator)  # (B, T+1)


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())  # ()


def block_weight_matrices(model: Transformer) -> list[list[torch.nn.Parameter]]:
    """Per block, its weight matrices (attention projections, FFN layers): biases and norm gains left out."""
    return [[param for param in block.parameters() if param.dim() == 2] for block in model.blocks]


def per_block_norms(gradients: tuple[torch.Tensor, ...], sizes: list[int]) -> torch.Tensor:
    """One Frobenius norm per block over its consecutive gradients in `gradients`, summed in float64."""
    norms, start = [], 0
    for size in sizes:
        squares = [(g.double() ** 2).sum() for g in gradients[start:start + size]]
        norms.append(torch.stack(squares).sum().sqrt())
        start += size
    return torch.stack(norms)  # (depth,)


def norm_curves(
    depth: int,
    placement: str = "pre",
    norm: str = "layernorm",
    seed: int = 0,
    d_model: int = 64,
    n_heads: int = 4,
    seq: int = 16,
    batch: int = 4,
    residual_scaling: bool = False,
    init: str = "gpt2",
) -> NormCurves:
    """Forward residual norms and loss-gradient norms at every block boundary of a random stack,
    and each block's weight-gradient norm from the same backward pass.

    The weights come from `seed` (`init` says how they are drawn); the tokens from `seed` too, through a
    separate generator, so pre and post stacks with one seed see the same tokens.
    """
    if batch < 1:
        raise NormsError(f"batch must be at least 1, got {batch}")
    if residual_scaling and init != "gpt2":
        raise NormsError("residual scaling is part of GPT-2's initialisation; Xiong et al.'s set-up has none")
    config = norm_curve_config(depth, placement, norm, d_model, n_heads, seq, init)
    model = build_stack(config, seed, init, residual_scaling)
    tokens = random_tokens(config.vocab_size, batch, seq, seed)  # (B, T+1)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]  # (B, T) each

    names = ["blocks.0.hook_resid_pre"] + [f"blocks.{i}.hook_resid_post" for i in range(depth)]
    write_names = [(f"blocks.{i}.hook_resid_mid", f"blocks.{i}.hook_ffn_out") for i in range(depth)]
    weights = block_weight_matrices(model)
    with capture(model, names + [name for pair in write_names for name in pair], keep_graph=True) as store:
        loss = next_token_loss(model(inputs), targets)  # ()
        boundaries = [store[name] for name in names]  # depth + 1 tensors of (B, T, D)
        # Returned, not accumulated: no parameter .grad is filled or kept.
        gradients = torch.autograd.grad(loss, [*boundaries, *(w for block in weights for w in block)])
        writes = torch.stack([
            (store[write].norm(dim=-1) / store[stream].norm(dim=-1)).mean() for stream, write in write_names
        ]).detach()  # (depth,)
    stream_gradients, weight_gradients = gradients[:len(boundaries)], gradients[len(boundaries):]
    forward = torch.stack([x.detach().norm(dim=-1).mean() for x in boundaries])  # (depth + 1,)
    backward = torch.stack([g.norm() for g in stream_gradients])  # (depth + 1,)
    parameter = per_block_norms(weight_gradients, [len(block) for block in weights])  # (depth,)
    flat_weights = [w for block in weights for w in block]
    down = {id(block.ffn.down.weight) for block in model.blocks}
    ffn_out = torch.stack([g.double().norm() for w, g in zip(flat_weights, weight_gradients) if id(w) in down])  # (depth,)
    scaled = ", residual scaling" if residual_scaling else ""
    return NormCurves(
        layers=np.arange(depth + 1),
        forward_norms=forward.double().numpy(),
        gradient_norms=backward.double().numpy(),
        parameter_gradient_norms=parameter.numpy(),
        ffn_out_gradient_norms=ffn_out.numpy(),
        write_ratios=writes.double().numpy(),
        loss=float(loss.detach()),
        depth=depth,
        placement=placement,
        norm=norm,
        residual_scaling=residual_scaling,
        d_model=d_model,
        seed=seed,
        label=f"{placement}-norm, {norm}{scaled}, {depth} blocks, {INIT_NAMES[init]} init",
        init=init,
        n_heads=n_heads,
        seq=seq,
        batch=batch,
    )


def compare_placements(
    depth: int,
    norm: str = "layernorm",
    seed: int = 0,
    d_model: int = 64,
    n_heads: int = 4,
    seq: int = 16,
    batch: int = 4,
    residual_scaling: bool = False,
    init: str = "gpt2",
) -> PlacementComparison:
    """The same stack twice, pre-norm and post-norm; from_seed draws identical weights for both."""
    kwargs = dict(
        depth=depth, norm=norm, seed=seed, d_model=d_model, n_heads=n_heads, seq=seq, batch=batch,
        residual_scaling=residual_scaling, init=init,
    )
    return PlacementComparison(pre=norm_curves(placement="pre", **kwargs), post=norm_curves(placement="post", **kwargs))
