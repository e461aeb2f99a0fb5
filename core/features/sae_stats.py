"""An SAE's four figures on a text, and the contexts where one feature fires most.

On windows (W, T) of token ids, with x the activations the SAE reads (every token of every window):
- variance explained = 1 - sum ||x - x_hat||^2 / sum ||x - mean(x)||^2, the mean per dimension over all tokens;
- L0 = the mean number of active (> 0) features a token;
- dead fraction = the share of features active on no token;
- CE recovered = (CE zero - CE spliced) / (CE zero - CE clean): the next-token loss over every prediction
  of every window with the activation replaced by the reconstruction (spliced) or by zeros.
A transcoder reads its input hook and is spliced in at its output hook.
Sums are taken in float64 so that 4,096 tokens' figures do not depend on the order of a float32 sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from core.features.hook_names import app_hook
from core.features.sae import SparseAutoencoder, check_feature
from core.hooks import capture
from core.interventions import intervene


@dataclass(frozen=True)
class SAEStats:
    variance_explained: float
    l0: float
    dead_fraction: float
    ce_recovered: float
    ce_clean: float
    ce_spliced: float
    ce_zero: float
    tokens: int

    def as_dict(self) -> dict[str, float | int]:
        return {"variance_explained": self.variance_explained, "l0": self.l0, "dead_fraction": self.dead_fraction,
                "ce_recovered": self.ce_recovered, "ce_clean": self.ce_clean, "ce_spliced": self.ce_spliced,
                "ce_zero": self.ce_zero, "tokens": self.tokens}


LOGITS_PER_CHUNK = 8_388_608  # float32 logits held at once (32 MB): a 50,257-token head reads 1 window of 128 a chunk


def _next_token_loss_sum(logits: torch.Tensor, windows: torch.Tensor) -> float:
    """Summed cross-entropy over every next-token prediction of every window, in float64 (on the CPU: MPS has none)."""
    return float(F.cross_entropy(logits[:, :-1].cpu().double().flatten(0, 1), windows[:, 1:].cpu().flatten(),
                                 reduction="sum"))


def _windows_per_chunk(windows: torch.Tensor, vocab_size: int) -> int:
    return max(1, LOGITS_PER_CHUNK // max(1, windows.shape[1] * vocab_size))


@torch.inference_mode()
def sae_stats(model, sae: SparseAutoencoder, windows: torch.Tensor) -> SAEStats:
    """The four figures over `windows` (W, T), run a few windows at a time so that the three sets of logits a
    large vocabulary makes (clean, spliced, zeroed) are never held for the whole text at once."""
    config = sae.config
    in_hook = app_hook(model, config.hook_name)
    out_hook = app_hook(model, config.hook_name_out) if config.is_transcoder else in_hook
    device = next(model.parameters()).device
    windows = windows.to(device)  # (W, T)
    targets: list[torch.Tensor] = []
    error = torch.zeros((), dtype=torch.float64)
    active_count = torch.zeros((), dtype=torch.float64)
    ever_active = torch.zeros(config.d_sae, dtype=torch.bool)
    ce_sums = {"clean": 0.0, "spliced": 0.0, "zero": 0.0}
    step = _windows_per_chunk(windows, model.config.vocab_size)
    for start in range(0, windows.shape[0], step):
        chunk = windows[start:start + step]  # (C, T)
        with capture(model, list(dict.fromkeys([in_hook, out_hook]))) as captured:
            ce_sums["clean"] += _next_token_loss_sum(model(chunk), chunk)  # model(chunk): (C, T, V)
        features = sae.encode(captured[in_hook])  # (C, T, F)
        reconstruction = sae.decode(features)  # (C, T, d_out)
        target64 = captured[out_hook].flatten(0, 1).cpu().double()  # (C*T, d_out)
        targets.append(target64)
        error += (target64 - reconstruction.flatten(0, 1).cpu().double()).pow(2).sum()
        active = (features.flatten(0, 1) > 0).cpu()  # (C*T, F)
        active_count += active.sum(dtype=torch.float64)
        ever_active |= active.any(dim=0)
        with intervene(model, [(out_hook, lambda _output, _name: reconstruction)]):
            ce_sums["spliced"] += _next_token_loss_sum(model(chunk), chunk)
        with intervene(model, [(out_hook, lambda output, _name: torch.zeros_like(output))]):
            ce_sums["zero"] += _next_token_loss_sum(model(chunk), chunk)
    everything = torch.cat(targets)  # (N, d_out)
    spread = (everything - everything.mean(dim=0)).pow(2).sum()
    predictions = windows.shape[0] * (windows.shape[1] - 1)
    ce_clean, ce_spliced, ce_zero = (ce_sums[key] / predictions for key in ("clean", "spliced", "zero"))
    denominator = ce_zero - ce_clean
    return SAEStats(
        variance_explained=float(1.0 - error / spread) if float(spread) > 0 else float("nan"),
        l0=float(active_count / everything.shape[0]),
        dead_fraction=float((~ever_active).double().mean()),
        ce_recovered=(ce_zero - ce_spliced) / denominator if denominator != 0 else float("nan"),
        ce_clean=ce_clean, ce_spliced=ce_spliced, ce_zero=ce_zero, tokens=int(windows.numel()),
    )


@torch.inference_mode()
def feature_activations(model, sae: SparseAutoencoder, windows: torch.Tensor) -> torch.Tensor:
    """(W, T, F) every feature's activation at every token of every window."""
    hook = app_hook(model, sae.config.hook_name)
    device = next(model.parameters()).device
    with capture(model, [hook]) as captured:
        model(windows.to(device), head=False)
    return sae.encode(captured[hook]).cpu()  # (W, T, F)


@dataclass(frozen=True)
class TopContext:
    window: int
    position: int  # the firing token's position in its window
    activation: float
    ids: tuple[int, ...]  # the context's ids, ending `after` tokens past the firing token
    activations: tuple[float, ...]  # the feature's activation at each of them
    marked: int  # index of the firing token in `ids`


def top_contexts(activations: torch.Tensor, windows: torch.Tensor, feature: int, count: int = 10,
                 before: int = 24, after: int = 4) -> list[TopContext]:
    """The `count` tokens where `feature` fires most (strongest first; positive activations only), with their
    surroundings inside the window."""
    values = activations[..., feature]  # (W, T)
    flat = values.flatten()  # (W*T,)
    chosen = flat.topk(min(count, flat.numel()))  # (count,) each
    width = values.shape[1]
    contexts = []
    for value, index in zip(chosen.values.tolist(), chosen.indices.tolist()):
        if value <= 0:
            break
        window, position = divmod(index, width)
        start, end = max(0, position - before), min(width, position + after + 1)
        contexts.append(TopContext(window, position, value, tuple(windows[window, start:end].tolist()),
                                   tuple(values[window, start:end].tolist()), position - start))
    return contexts


@dataclass(frozen=True)
class FeatureSummary:
    """One feature across a text: what a dashboard shows beside its top contexts."""

    feature: int
    density: float  # share of tokens where it is active
    max_activation: float
    histogram_counts: np.ndarray  # (B,) active tokens per bin
    histogram_edges: np.ndarray  # (B + 1,)
    up_ids: np.ndarray  # (n,) tokens whose logit its decoder direction raises most
    up_values: np.ndarray  # (n,)
    down_ids: np.ndarray  # (n,) and lowers most
    down_values: np.ndarray  # (n,)


def decoder_logit_effect(model, sae: SparseAutoencoder, feature: int) -> torch.Tensor:
    """(V,) the feature's decoder direction read straight through the unembedding (W_U d, no final norm)."""
    direction = sae.W_dec[feature].detach()  # (d_model,)
    head = model.head.weight.detach().float().cpu()  # (V, d_model)
    return head @ direction  # (V,)


def feature_summary(model, sae: SparseAutoencoder, activations: torch.Tensor, feature: int, bins: int = 30,
                    n_tokens: int = 8) -> FeatureSummary:
    check_feature(sae, feature)
    values = activations[..., feature].flatten().double()  # (N,)
    active = values[values > 0]
    top = float(values.max()) if values.numel() else 0.0
    counts, edges = np.histogram(active.numpy(), bins=bins, range=(0.0, max(top, 1e-6)))
    effect = decoder_logit_effect(model, sae, feature)  # (V,)
    n = min(n_tokens, effect.numel())
    up, down = effect.topk(n), (-effect).topk(n)
    return FeatureSummary(feature, float((values > 0).double().mean()) if values.numel() else 0.0, top,
                          counts, edges, up.indices.numpy(), up.values.numpy(), down.indices.numpy(),
                          -down.values.numpy())


def features_at(activations: torch.Tensor, positions: list[int], count: int = 8) -> list[tuple[int, float]]:
    """(feature, summed activation) of the features most active over `positions` of one text's (T, F) activations."""
    if not positions:
        return []
    summed = activations[positions].sum(dim=0)  # (F,)
    top = summed.topk(min(count, summed.numel()))
    return [(int(i), float(v)) for v, i in zip(top.values.tolist(), top.indices.tolist()) if v > 0]


__all__ = ["FeatureSummary", "SAEStats", "TopContext", "decoder_logit_effect", "feature_activations",
           "feature_summary", "features_at", "sae_stats", "top_contexts"]
