"""Activation patching, denoising direction: run the corrupted input, take one activation from the clean run.

One generic function serves every site. A site is a hook name pattern with a `{layer}` slot and the
axis its index runs along: positions for the stream (`resid_pre`) and the sublayers' writes
(`attn_out`, `mlp_out`), heads for `hook_z` (a head patched at every position). Both indices sit on
dimension 1 of their activations ((B, T, D) and (B, H, T, d)), so one intervention serves all four.

Only what a patch changes is re-run: the clean and corrupted runs are kept, and each patched run
starts at the patched layer from the corrupted run's stream there, with every index of that layer
patched in one batch (one batch element per index). The checks are full forward passes on the
same code path as the runs they are compared with: patching every position of a layer's stream
gives the clean logits and patching nothing the corrupted ones, both by `torch.equal`.

The metric is read at one position, the last by default. A decoder's logits there score the next
token; an encoder's score the token that belongs at that position, so an encoder is patched with
the metric at its blank. A patched run ends as the model's own forward does: the final norm, then
`unembed` (BERT's head transform included, then the vocabulary matrix and any logit bias).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from core.hooks import capture
from core.interventions import intervene
from core.model import Transformer


class PatchingError(ValueError):
    """Inputs patching cannot compare (different lengths, unknown site, ...); the message says why."""


@dataclass(frozen=True)
class Site:
    hook: str  # hook name with a {layer} slot
    axis: str  # "position" or "head": what the map's columns index
    description: str


SITES: dict[str, Site] = {
    "resid_pre": Site("blocks.{layer}.hook_resid_pre", "position", "the residual stream entering the block"),
    "attn_out": Site("blocks.{layer}.hook_attn_out", "position", "what the block's attention writes into the stream"),
    "mlp_out": Site("blocks.{layer}.hook_ffn_out", "position", "what the block's FFN writes into the stream"),
    "head": Site("blocks.{layer}.attn.hook_z", "head", "one head's output at every position"),
}
MAX_BATCH_ELEMENTS = 2**24  # floats of one patched batch's stream (B * T * D): bounds a layer's batch (64 MiB)
# Multiply-adds of a whole map (see map_cost): about a minute on a laptop's CPU. GPT-2 small's resid_pre map
# fits up to ~130 tokens, a tiny bundled model's over its whole context.
MAX_MAP_FLOPS = 2e13
# Clean and corrupted metrics closer than this (relative to their size, at least 1 logit) differ by float32 rounding
# alone: a few units in the last place of a logit (float32's eps is 1.2e-7).
AGREE_RTOL = 8 * float(np.finfo(np.float32).eps)
UNDEFINED = "undefined: clean and corrupted agree"  # what a normalised cell says when metrics_agree


def site_problem(config, site: str) -> str | None:
    """Why `site` is not in this model (a sentence), or None when it is."""
    if site not in SITES:
        return f"unknown site {site!r}; choose one of {', '.join(SITES)}"
    if site == "mlp_out" and config.attention_only:
        return (f"attention-only {config.name} has no FFN in its blocks, so there is no mlp_out to patch; "
                "patch resid_pre, attn_out or head")
    return None


def map_cost(config, n_tokens: int, site: str) -> float:
    """FLOPs of a map's patched runs: each column re-runs the blocks from its layer on, every block ~24 d^2 per token."""
    n_columns = n_tokens if SITES[site].axis == "position" else config.n_heads
    block_passes = config.n_layers * (config.n_layers + 1) / 2  # a run from layer l passes L - l blocks
    width = config.d_model
    ffn = 0 if config.attention_only else 2 * width * config.d_ff * max(1, config.n_experts)
    per_token = 2 * (4 * width * width + ffn + 2 * n_tokens * width)
    return n_columns * n_tokens * block_passes * per_token


def cost_problem(config, n_tokens: int, site: str) -> str | None:
    cost = map_cost(config, n_tokens, site)
    if cost <= MAX_MAP_FLOPS:
        return None
    return (f"the {site} map of {n_tokens} tokens would take about {cost / 1e12:.0f} TFLOP of patched runs, more than "
            f"the {MAX_MAP_FLOPS / 1e12:.0f} TFLOP this lab allows; shorten the text or patch heads")


@dataclass(frozen=True)
class PatchingResult:
    site: str
    answer: int
    foil: int | None
    clean_metric: float  # answer-minus-foil logit at `position`, clean run
    corrupt_metric: float  # the same, corrupted run
    values: np.ndarray  # (L, T) or (L, H): the corrupted run's metric with that one activation patched
    patch_all_equal: tuple[bool, ...]  # per layer: every position of resid_pre patched gives the clean logits (torch.equal); () unchecked
    patch_none_equal: bool | None  # a run with the patch hooks attached and nothing patched gives the corrupted logits
    changed_positions: tuple[int, ...]  # where the clean and corrupted tokens differ
    position: int = -1  # where the metric is read (the last position of the sequence by default)

    @property
    def metrics_agree(self) -> bool:
        """The clean and corrupted metrics are equal up to float32 rounding: the normalised map is undefined."""
        span = abs(self.clean_metric - self.corrupt_metric)
        return span <= AGREE_RTOL * max(1.0, abs(self.clean_metric), abs(self.corrupt_metric))

    @property
    def normalised(self) -> np.ndarray:
        """(L, columns) 0 = corrupted, 1 = clean; NaN everywhere when the two metrics agree (metrics_agree):
        dividing by their difference would give no number, or one made of rounding error."""
        if self.metrics_agree:
            return np.full_like(self.values, np.nan)
        return (self.values - self.corrupt_metric) / (self.clean_metric - self.corrupt_metric)


def metric(logits: torch.Tensor, answer: int, foil: int | None) -> torch.Tensor:
    """(B,) the answer-minus-foil logit difference of (B, V) last-position logits (the answer's logit without a foil)."""
    value = logits[:, answer]  # (B,)
    return value - logits[:, foil] if foil is not None else value


def check_pair(model: Transformer, clean: Sequence[int], corrupt: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """The two sequences as (1, T) tensors on the model's device, or a PatchingError saying why not."""
    if model.config.architecture == "encoder-decoder":
        raise PatchingError("patching runs one stack; an encoder-decoder model reads a second sequence through its encoder")
    if len(clean) != len(corrupt):
        raise PatchingError(
            f"the clean input has {len(clean)} tokens and the corrupted one {len(corrupt)}: patching compares "
            "activations position by position, so edit tokens without adding or removing any"
        )
    device = next(model.parameters()).device
    clean_t = torch.tensor([list(clean)], device=device)  # (1, T)
    corrupt_t = torch.tensor([list(corrupt)], device=device)  # (1, T)
    model.check_tokens(clean_t)
    model.check_tokens(corrupt_t)
    return clean_t, corrupt_t


def run_from_layer(model: Transformer, stream: torch.Tensor, start: int, position: int = -1) -> torch.Tensor:
    """(B, V) logits at `position` of blocks start.. run on a (B, T, D) stream entering block `start`."""
    seq = stream.shape[1]
    mode = "causal" if model.config.self_attention_causal else "none"
    rope, score_bias = model._positional_inputs(seq, stream.device, stream.dtype, causal=mode != "none")
    for block in model.blocks[start:]:
        stream = block(stream, mask_mode=mode, rope=rope, score_bias=score_bias)  # (B, T, D)
    read = model.final_norm(stream[:, position])  # (B, D): the norm is per position
    return model.unembed(read)  # (B, V)


def _patch_along_dim1(clean: torch.Tensor, indices: torch.Tensor):
    """An intervention setting batch element b's index indices[b] (dimension 1) to the clean run's."""

    def patch(activation: torch.Tensor, _name: str) -> torch.Tensor:
        patched = activation.clone()
        rows = torch.arange(len(indices), device=activation.device)
        patched[rows, indices] = clean[0, indices]
        return patched

    return patch


def activation_patch(
    model: Transformer,
    clean: Sequence[int],
    corrupt: Sequence[int],
    answer: int | None,
    foil: int | None = None,
    site: str = "resid_pre",
    layers: Sequence[int] | None = None,
    progress: Callable[[float, str], None] | None = None,
    on_row: Callable[[int, np.ndarray], None] | None = None,
    checks: bool = True,
    position: int | None = None,
) -> PatchingResult:
    """The map of the metric with each (layer, index) of `site` patched from clean into corrupted.

    The metric is read at `position` (None: the last); answer None measures the clean run's top
    prediction there.

    progress(fraction, text) is called after each layer and may raise to stop; on_row(layer, values)
    hands each finished row over as it is made. checks=False leaves out the patch-all and patch-none
    forward passes (a benchmark of the map alone).
    """
    problem = site_problem(model.config, site)
    if problem:
        raise PatchingError(problem)
    spec = SITES[site]
    config = model.config
    for role, token in (("answer", answer), ("foil", foil)):
        if token is not None and not 0 <= token < config.vocab_size:
            raise PatchingError(f"the {role} token id {token} is outside the vocabulary (0..{config.vocab_size - 1})")
    clean_t, corrupt_t = check_pair(model, clean, corrupt)
    n_layers, seq = config.n_layers, clean_t.shape[1]
    position = check_metric_position(position, seq)
    problem = cost_problem(config, seq, site)
    if problem:
        raise PatchingError(problem)
    layers = list(range(n_layers)) if layers is None else list(layers)
    site_names = [spec.hook.format(layer=layer) for layer in range(n_layers)]
    stream_names = [f"blocks.{layer}.hook_resid_pre" for layer in range(n_layers)]
    with torch.no_grad():
        with capture(model, list(dict.fromkeys(site_names + stream_names))) as clean_cache:
            clean_logits = model(clean_t)  # (1, T, V)
        with capture(model, stream_names) as corrupt_cache:
            corrupt_logits = model(corrupt_t)  # (1, T, V)
        if answer is None:
            answer = int(clean_logits[0, position].argmax())
        clean_metric = float(metric(clean_logits[:, position], answer, foil)[0])
        corrupt_metric = float(metric(corrupt_logits[:, position], answer, foil)[0])
        n_columns = seq if spec.axis == "position" else config.n_heads
        values = np.full((n_layers, n_columns), np.nan)
        width = config.d_model
        chunk = max(1, min(n_columns, MAX_BATCH_ELEMENTS // max(1, seq * width)))
        for done, layer in enumerate(layers):
            start_stream = corrupt_cache[stream_names[layer]]  # (1, T, D)
            for first in range(0, n_columns, chunk):
                indices = torch.arange(first, min(n_columns, first + chunk), device=start_stream.device)  # (b,)
                batch = start_stream.expand(len(indices), -1, -1).contiguous()  # (b, T, D)
                with intervene(model, [(site_names[layer], _patch_along_dim1(clean_cache[site_names[layer]], indices))]):
                    logits = run_from_layer(model, batch, layer, position)  # (b, V)
                values[layer, first:first + len(indices)] = metric(logits, answer, foil).double().cpu().numpy()
            if on_row is not None:
                on_row(layer, values[layer].copy())
            if progress is not None:
                progress((done + 1) / len(layers), f"layer {layer + 1} of {n_layers}")
        patch_all: tuple[bool, ...] = ()
        patch_none = None
        if checks:
            patch_all = tuple(_full_patch_equal(model, corrupt_t, clean_cache, stream_names[layer], clean_logits)
                              for layer in range(n_layers))
            with intervene(model, [(name, lambda activation, _name: None) for name in site_names]):
                patch_none = bool(torch.equal(model(corrupt_t), corrupt_logits))
    changed = tuple(int(i) for i in torch.nonzero(clean_t[0] != corrupt_t[0]).flatten())
    return PatchingResult(site, answer, foil, clean_metric, corrupt_metric, values, patch_all, patch_none, changed,
                          position)


def check_metric_position(position: int | None, n_tokens: int) -> int:
    """The position the metric is read at: the last one for None; a PatchingError outside the sequence."""
    if position is None:
        return n_tokens - 1
    if not 0 <= position < n_tokens:
        raise PatchingError(f"the metric position {position} is outside the sequence (0..{n_tokens - 1})")
    return position


def _full_patch_equal(model: Transformer, corrupt_t: torch.Tensor, clean_cache, name: str, clean_logits: torch.Tensor) -> bool:
    """A full corrupted forward with every position of `name` taken from the clean run: the clean logits, bitwise?"""
    everything = torch.arange(corrupt_t.shape[1], device=corrupt_t.device)  # (T,)

    def patch_all(activation: torch.Tensor, _name: str) -> torch.Tensor:
        patched = activation.clone()
        patched[:, everything] = clean_cache[name][:, everything]
        return patched

    with intervene(model, [(name, patch_all)]):
        return bool(torch.equal(model(corrupt_t), clean_logits))


def naive_patch(model: Transformer, clean: Sequence[int], corrupt: Sequence[int], answer: int, foil: int | None,
                site: str = "resid_pre", position: int | None = None) -> np.ndarray:
    """The same map by one full corrupted forward per cell: the baseline the fast path is measured against."""
    problem = site_problem(model.config, site)
    if problem:
        raise PatchingError(problem)
    spec = SITES[site]
    clean_t, corrupt_t = check_pair(model, clean, corrupt)
    n_layers = model.config.n_layers
    position = check_metric_position(position, clean_t.shape[1])
    names = [spec.hook.format(layer=layer) for layer in range(n_layers)]
    n_columns = clean_t.shape[1] if spec.axis == "position" else model.config.n_heads
    values = np.zeros((n_layers, n_columns))
    with torch.no_grad():
        with capture(model, names) as cache:
            model(clean_t)
        for layer in range(n_layers):
            for column in range(n_columns):
                index = torch.tensor([column], device=clean_t.device)
                with intervene(model, [(names[layer], _patch_along_dim1(cache[names[layer]], index))]):
                    values[layer, column] = float(metric(model(corrupt_t)[:, position], answer, foil)[0])
    return values
