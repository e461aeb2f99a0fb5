"""Training an SAE (TopK, or ReLU with an L1 penalty) or a transcoder on cached activations.

The model runs once over the training split to fill the cache (core.features.activations); every
step then reads a shuffled batch of it. The loss is the squared reconstruction error divided by the
activations' total variance (so one learning rate suits any scale), plus for TopK the auxiliary
loss of Gao et al. (2024): the dead features (no firing for `dead_after_tokens`) reconstruct what
the live ones missed, which brings them back; for ReLU the L1 penalty sum_i f_i ||W_dec,i||.
Decoder rows are kept at unit norm after every TopK step.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from core.features.sae import SAEConfig, SparseAutoencoder

MAX_STEPS = 1_000_000
MAX_BATCH = 65_536
AUX_COEFFICIENT = 1 / 32  # Gao et al.'s weight of the auxiliary loss


@dataclass(frozen=True)
class SAETrainSettings:
    steps: int = 3000
    batch_tokens: int = 4096
    lr: float = 2e-3
    seed: int = 0
    l1_coefficient: float = 3.0  # the ReLU SAE's penalty on the normalised loss
    dead_after_tokens: int = 500_000  # a feature that fired on none of the last this-many tokens is dead
    warmup_steps: int = 50
    decay_fraction: float = 0.2  # the last fifth of the steps decays the rate linearly to zero

    def validated(self) -> SAETrainSettings:
        if not 1 <= self.steps <= MAX_STEPS:
            raise ValueError(f"steps must be 1..{MAX_STEPS:,}, got {self.steps}")
        if not 16 <= self.batch_tokens <= MAX_BATCH:
            raise ValueError(f"a batch holds 16..{MAX_BATCH:,} tokens, got {self.batch_tokens}")
        if not (math.isfinite(self.lr) and 0 < self.lr <= 1):
            raise ValueError(f"the learning rate must be in (0, 1], got {self.lr}")
        if not (math.isfinite(self.l1_coefficient) and self.l1_coefficient >= 0):
            raise ValueError(f"the L1 coefficient must be 0 or more, got {self.l1_coefficient}")
        return self


@dataclass
class SAETrainResult:
    sae: SparseAutoencoder
    steps_done: int
    losses: list[tuple[int, float]] = field(default_factory=list)  # (step, reconstruction loss / variance)
    dead_fraction: float = 0.0  # features with no firing in the last dead_after_tokens
    wall_time_s: float = 0.0
    tokens_per_s: float = 0.0
    stopped_early: bool = False


def learning_rate(step: int, settings: SAETrainSettings) -> float:
    if step < settings.warmup_steps:
        return settings.lr * (step + 1) / settings.warmup_steps
    decay_start = int(settings.steps * (1 - settings.decay_fraction))
    if step < decay_start:
        return settings.lr
    return settings.lr * max(0.0, (settings.steps - step) / max(1, settings.steps - decay_start))


def train_sae(
    config: SAEConfig,
    inputs: torch.Tensor,
    targets: torch.Tensor | None = None,
    settings: SAETrainSettings | None = None,
    on_progress: Callable[[int, float, float], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    progress_every: int = 25,
) -> SAETrainResult:
    """Train on cached activations: inputs (N, d_in); a transcoder's targets (N, d_out), else the inputs.

    on_progress(step, loss, dead_fraction) is called every `progress_every` steps and at the end;
    should_stop() ending the run early keeps what was learned so far.
    """
    settings = (settings or SAETrainSettings()).validated()
    targets = inputs if targets is None else targets
    if inputs.shape[1] != config.d_in or targets.shape[1] != config.width_out or len(inputs) != len(targets):
        raise ValueError(f"activations of shape {tuple(inputs.shape)} -> {tuple(targets.shape)} do not fit an SAE of "
                         f"{config.d_in} -> {config.width_out}")
    mean = targets.double().mean(dim=0)  # (D_out,)
    variance = float((targets.double() - mean).pow(2).sum(dim=-1).mean())  # mean squared distance from the mean
    scale = 1.0 / max(variance, 1e-12)
    sae = SparseAutoencoder.initialised(config, settings.seed, b_dec=mean.float())
    sae.train()
    optimiser = torch.optim.Adam(sae.parameters(), lr=settings.lr, betas=(0.9, 0.999))
    generator = torch.Generator().manual_seed(settings.seed + 1)
    batch = min(settings.batch_tokens, len(inputs))
    order = torch.randperm(len(inputs), generator=generator)  # (N,)
    cursor = 0
    last_fired = torch.zeros(config.d_sae, dtype=torch.long)  # tokens seen since each feature last fired
    topk = config.architecture == "topk"
    k_aux = max(1, min(config.d_sae // 2, config.width_out // 2))
    result = SAETrainResult(sae=sae, steps_done=0)
    start = time.perf_counter()
    for step in range(settings.steps):
        if should_stop is not None and should_stop():
            result.stopped_early = True
            break
        if cursor + batch > len(order):
            order = torch.randperm(len(inputs), generator=generator)
            cursor = 0
        index = order[cursor:cursor + batch]  # (B,)
        cursor += batch
        x, y = inputs[index], targets[index]  # (B, d_in), (B, d_out)
        for group in optimiser.param_groups:
            group["lr"] = learning_rate(step, settings)
        pre = sae.pre_activations(x)  # (B, F)
        features = sae.activate(pre)  # (B, F)
        reconstruction = sae.decode(features)  # (B, d_out)
        error = y - reconstruction  # (B, d_out)
        recon_loss = error.pow(2).sum(dim=-1).mean() * scale
        loss = recon_loss
        fired = (features > 0).any(dim=0)  # (F,)
        last_fired = torch.where(fired, torch.zeros_like(last_fired), last_fired + batch)
        dead = last_fired >= settings.dead_after_tokens  # (F,)
        if topk and bool(dead.any()):
            loss = loss + AUX_COEFFICIENT * _aux_loss(sae, pre, dead, error, k_aux)
        elif not topk:
            sparsity = (features * sae.W_dec.norm(dim=-1)).sum(dim=-1).mean()
            loss = loss + settings.l1_coefficient * sparsity / math.sqrt(max(variance, 1e-12))
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        if topk:
            sae.normalise_decoder()
        result.steps_done = step + 1
        if (step + 1) % progress_every == 0 or step + 1 == settings.steps:
            value = float(recon_loss.detach())
            dead_share = float(dead.double().mean())
            result.losses.append((step + 1, value))
            result.dead_fraction = dead_share
            if on_progress is not None:
                on_progress(step + 1, value, dead_share)
    sae.eval()
    sae.requires_grad_(False)
    result.wall_time_s = time.perf_counter() - start
    result.tokens_per_s = result.steps_done * batch / max(result.wall_time_s, 1e-9)
    return result


def _aux_loss(sae: SparseAutoencoder, pre: torch.Tensor, dead: torch.Tensor, error: torch.Tensor,
              k_aux: int) -> torch.Tensor:
    """The dead features' top-k_aux reconstruction of the live ones' error, normalised by its variance."""
    dead_pre = pre.masked_fill(~dead, float("-inf"))  # (B, F): only dead features compete
    count = min(k_aux, int(dead.sum()))
    top = dead_pre.topk(count, dim=-1, sorted=False)  # (B, count) each
    aux_features = torch.zeros_like(pre).scatter(-1, top.indices, torch.relu(top.values))  # (B, F)
    aux_reconstruction = aux_features @ sae.W_dec  # (B, d_out): no bias, it reconstructs an error
    target = error.detach()  # (B, d_out)
    spread = (target - target.mean(dim=0)).pow(2).sum(dim=-1).mean().clamp_min(1e-12)
    return (target - aux_reconstruction).pow(2).sum(dim=-1).mean() / spread


__all__ = ["SAETrainResult", "SAETrainSettings", "learning_rate", "train_sae"]
