"""The tuned lens (Belrose et al. 2023): one affine translator per block, trained to read the model's output early.

Translator i reads the stream entering block i (blocks.i.hook_resid_pre) and gives h + W_i h + b_i,
which the model's own final norm and head turn into logits. The logit lens is the same read with
W_i = 0 and b_i = 0, where training starts. Training minimises the KL divergence from the model's
final output distribution, KL(final || lens), summed over the blocks, on cached streams.

A lens file is safetensors with `layer_translators.{i}.weight` (d_model, d_model; applied as
weight @ h) and `layer_translators.{i}.bias`, and the model's name in its metadata.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import save_file
from torch import nn

from core.checkpoint_files import CheckpointError, read_safetensors
from core.features.activations import collect
from core.whole_file import replacing

FORMAT = "transformer-explorer-tuned-lens"
MAX_HEADER_BYTES = 1 << 20


class LensFileError(CheckpointError):
    """A lens file that cannot be read, or one made for another model."""


class TunedLens(nn.Module):
    def __init__(self, n_layers: int, d_model: int, model_name: str = "", model_fingerprint: str = "") -> None:
        super().__init__()
        self.model_name = model_name
        self.model_fingerprint = model_fingerprint  # core.features.fingerprint of the weights it was trained on
        self.layer_translators = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(n_layers))
        with torch.no_grad():
            for translator in self.layer_translators:
                translator.weight.zero_()
                translator.bias.zero_()

    def translate(self, layer: int, stream: torch.Tensor) -> torch.Tensor:
        return stream + self.layer_translators[layer](stream)  # (..., D): h + W h + b


def residual_hooks(model) -> list[str]:
    return [f"blocks.{i}.hook_resid_pre" for i in range(model.config.n_layers)]


def read_out(model, stream: torch.Tensor) -> torch.Tensor:
    """(..., V) logits of a stream read through the model's final norm and head."""
    return model.unembed(model.final_norm(stream))


def lens_log_probs(model, lens: TunedLens | None, layer: int, stream: torch.Tensor) -> torch.Tensor:
    """(..., V) log-probabilities of the logit lens (lens None) or the tuned lens at one block's entrance."""
    translated = stream if lens is None else lens.translate(layer, stream)
    return F.log_softmax(read_out(model, translated).float(), dim=-1)


def kl_from_final(final_log_probs: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
    """(...,) KL(final || lens) in nats at every position."""
    return (final_log_probs.exp() * (final_log_probs - log_probs)).sum(dim=-1)


def _streams_and_output(model, windows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(L, N, D) the stream entering every block at every token, and (N, V) the model's final log-probabilities."""
    hooks = residual_hooks(model) + ["hook_final"]
    captured = collect(model, windows, hooks)
    streams = torch.stack([captured[hook] for hook in hooks[:-1]])  # (L, N, D)
    with torch.inference_mode():
        final = F.log_softmax(model.unembed(captured["hook_final"].to(next(model.parameters()).device)).float(),
                              dim=-1).cpu()  # (N, V)
    return streams, final


@dataclass
class LensTrainResult:
    lens: TunedLens
    steps_done: int
    losses: list[tuple[int, float]]
    wall_time_s: float


def train_lens(model, windows: torch.Tensor, steps: int = 600, batch_tokens: int = 2048, lr: float = 1e-3,
               seed: int = 0, on_progress: Callable[[int, float], None] | None = None,
               progress_every: int = 25) -> LensTrainResult:
    """Fit every translator on the streams of `windows` (W, T); on_progress(step, mean KL over blocks)."""
    start = time.perf_counter()
    streams, final = _streams_and_output(model, windows)
    n_layers, n_tokens, d_model = streams.shape
    from core.features.fingerprint import weights_fingerprint

    lens = TunedLens(n_layers, d_model, model.config.name, weights_fingerprint(model))
    optimiser = torch.optim.Adam(lens.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(seed)
    previous = [(parameter, parameter.requires_grad) for parameter in model.parameters()]
    model.requires_grad_(False)  # gradients flow through the model's norm and head to the translators only
    losses: list[tuple[int, float]] = []
    batch = min(batch_tokens, n_tokens)
    try:
        for step in range(steps):
            for group in optimiser.param_groups:  # the last fifth decays linearly to zero
                group["lr"] = lr * min(1.0, (steps - step) / max(1, steps // 5))
            index = torch.randint(0, n_tokens, (batch,), generator=generator)  # (B,)
            target = final[index]  # (B, V)
            loss = torch.zeros(())
            for layer in range(n_layers):
                log_probs = lens_log_probs(model, lens, layer, streams[layer, index])  # (B, V)
                loss = loss + kl_from_final(target, log_probs).mean()
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
            if (step + 1) % progress_every == 0 or step + 1 == steps:
                losses.append((step + 1, float(loss.detach()) / n_layers))
                if on_progress is not None:
                    on_progress(step + 1, losses[-1][1])
    finally:
        for parameter, wanted in previous:
            parameter.requires_grad_(wanted)
    lens.requires_grad_(False)
    return LensTrainResult(lens.eval(), steps, losses, time.perf_counter() - start)


@torch.inference_mode()
def lens_kl(model, lens: TunedLens | None, windows: torch.Tensor) -> dict[str, list[float]]:
    """{"logit_lens_kl": [...], "tuned_lens_kl": [...]}: KL(final || lens) per block, the mean over every position."""
    streams, final = _streams_and_output(model, windows)
    device = next(model.parameters()).device
    report: dict[str, list[float]] = {"logit_lens_kl": [], "tuned_lens_kl": []}
    for layer in range(streams.shape[0]):
        stream = streams[layer].to(device)  # (N, D)
        for key, which in (("logit_lens_kl", None), ("tuned_lens_kl", lens)):
            if key == "tuned_lens_kl" and lens is None:
                continue
            log_probs = lens_log_probs(model, which, layer, stream).cpu()  # (N, V)
            report[key].append(float(kl_from_final(final.double(), log_probs.double()).mean()))
    return report


# ---- files ----------------------------------------------------------------------------------------


def save_lens(lens: TunedLens, path: str | Path) -> Path:
    """Write the file whole or not at all (core.whole_file)."""
    path = Path(os.path.abspath(path))
    tensors = {name: tensor.detach().float().contiguous().cpu() for name, tensor in lens.state_dict().items()}
    n_layers = len(lens.layer_translators)
    metadata = {"format": FORMAT, "model": lens.model_name, "model_fingerprint": lens.model_fingerprint,
                "n_layers": str(n_layers),
                "d_model": str(lens.layer_translators[0].weight.shape[0]),
                "reads": "blocks.{i}.hook_resid_pre", "applied_as": "h + weight @ h + bias"}
    with replacing(path) as temporary:
        save_file(tensors, str(temporary), metadata=metadata)
    return path



def read_lens_header(path: str | Path) -> dict[str, str]:
    """The metadata of a lens file (model name, sizes); LensFileError if it is not one."""
    path = Path(path)
    if not path.is_file():
        raise LensFileError(f"no lens file at {path}")
    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
    except Exception as error:  # noqa: BLE001 - any damage of the file is a one-line refusal
        raise LensFileError(f"{path} is not a readable safetensors file: {str(error).splitlines()[0][:200]}") from None
    if metadata.get("format") != FORMAT:
        raise LensFileError(f"{path} is not a tuned lens file (no {FORMAT} tag in its metadata)")
    return dict(metadata)


def load_lens(path: str | Path, model=None) -> TunedLens:
    """Open a lens file; with `model`, refuse one made for another model's sizes or name."""
    path = Path(path)
    header = read_lens_header(path)
    tensors = read_safetensors(path)
    n_layers = sum(1 for name in tensors if name.endswith(".weight"))
    if n_layers < 1 or "layer_translators.0.weight" not in tensors:
        raise LensFileError(f"{path}: no layer_translators.{{i}}.weight tensors")
    d_model = tensors["layer_translators.0.weight"].shape[0]
    lens = TunedLens(n_layers, d_model, header.get("model", ""), header.get("model_fingerprint", ""))
    expected = {f"layer_translators.{i}.{part}" for i in range(n_layers) for part in ("weight", "bias")}
    if set(tensors) != expected:
        raise LensFileError(f"{path}: tensors {sorted(set(tensors) ^ expected)[:4]} do not fit {n_layers} translators")
    for name, tensor in tensors.items():
        shape = (d_model, d_model) if name.endswith("weight") else (d_model,)
        if tuple(tensor.shape) != shape or not bool(torch.isfinite(tensor).all()):
            raise LensFileError(f"{path}: {name} must be a finite {shape} tensor, got {tuple(tensor.shape)}")
    lens.load_state_dict({name: tensor.float() for name, tensor in tensors.items()})
    if model is not None:
        config = model.config
        if (n_layers, d_model) != (config.n_layers, config.d_model) or (
                lens.model_name and lens.model_name != config.name):
            raise LensFileError(f"{path} is a lens for {lens.model_name or 'another model'} ({n_layers} blocks of "
                                f"width {d_model}), not for {config.name} ({config.n_layers} of {config.d_model})")
        from core.features.fingerprint import weights_fingerprint

        if lens.model_fingerprint and weights_fingerprint(model) != lens.model_fingerprint:
            raise LensFileError(f"{path} is a lens for other weights of {config.name} (a fresh seed or a further "
                                "trained copy reads differently); load the model it names")
    lens.requires_grad_(False)
    return lens.eval()




def translator_of_stage(hook: str, n_layers: int) -> int:
    """The translator that reads a follow-a-token stage's vector: the stream entering block i, or -1."""
    if hook == "hook_embed":
        return 0
    parts = hook.split(".")
    if len(parts) == 3 and parts[0] == "blocks" and parts[2] == "hook_resid_post" and parts[1].isdigit():
        following = int(parts[1]) + 1
        return following if following < n_layers else -1
    return -1


@torch.inference_mode()
def follow_lenses(model, lens: TunedLens, tokens: list[int], position: int, stage_hooks: tuple[str, ...],
                  k: int) -> dict[str, object]:
    """Per follow-a-token stage at one position: the tuned lens's top-k ids and probabilities, and KL(final || lens)
    of the logit lens and the tuned lens; stages no translator reads get ids -1 and NaN."""
    import numpy as np

    from core.hooks import capture

    n_stages, n_layers = len(stage_hooks), len(lens.layer_translators)
    translators = [translator_of_stage(hook, n_layers) for hook in stage_hooks]
    wanted = [f"blocks.{i}.hook_resid_pre" for i in sorted({t for t in translators if t >= 0})]
    device = next(model.parameters()).device
    with capture(model, wanted) as captured:
        final = F.log_softmax(model(torch.tensor([tokens], device=device))[0, position].float(), dim=-1)  # (V,)
    ids = np.full((n_stages, k), -1, dtype=np.int64)
    probs = np.full((n_stages, k), np.nan)
    logit_kl, tuned_kl = np.full(n_stages, np.nan), np.full(n_stages, np.nan)
    for stage, layer in enumerate(translators):
        if layer < 0:
            continue
        stream = captured[f"blocks.{layer}.hook_resid_pre"][0, position]  # (D,)
        tuned = lens_log_probs(model, lens, layer, stream)  # (V,)
        logit_kl[stage] = float(kl_from_final(final.double(), lens_log_probs(model, None, layer, stream).double()))
        tuned_kl[stage] = float(kl_from_final(final.double(), tuned.double()))
        top = tuned.exp().topk(min(k, tuned.numel()))
        ids[stage, : top.indices.numel()] = top.indices.cpu().numpy()
        probs[stage, : top.values.numel()] = top.values.double().cpu().numpy()
    return {"ids": ids, "probs": probs, "logit_kl": logit_kl, "tuned_kl": tuned_kl}




__all__ = ["FORMAT", "LensFileError", "LensTrainResult", "TunedLens", "kl_from_final", "lens_kl", "lens_log_probs",
           "load_lens", "read_lens_header", "read_out", "residual_hooks", "save_lens", "train_lens", "follow_lenses",
           "translator_of_stage"]
