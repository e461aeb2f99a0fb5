"""A small decoder and an SAE on it, made from seeds: what the feature tests work on in milliseconds."""

from __future__ import annotations

import torch

from core.config import ModelConfig
from core.features.sae import SAEConfig, SparseAutoencoder
from core.model import Transformer

HOOK = "blocks.1.hook_resid_post"


def small_model(norm: str = "layernorm") -> Transformer:
    config = ModelConfig(name="small", vocab_size=23, context_length=16, d_model=16, n_heads=2, n_layers=2, d_ff=32,
                         norm=norm)
    return Transformer.from_seed(config, seed=3)


def small_windows(count: int = 6, length: int = 12, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 23, (count, length), generator=torch.Generator().manual_seed(seed))  # (W, T)


def small_sae(architecture: str = "topk", d_sae: int = 40, k: int = 4, seed: int = 1) -> SparseAutoencoder:
    config = SAEConfig(architecture, d_in=16, d_sae=d_sae, hook_name=HOOK, model_name="small",
                       k=k if architecture == "topk" else 0)
    sae = SparseAutoencoder(config)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in sae.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.5)
        sae.b_enc -= 0.3  # some features never fire on the small windows: the dead fraction is not zero
        sae.W_dec *= 0.3  # reconstructions of about the activations' size
        sae.b_dec.zero_()
    return sae.eval().requires_grad_(False)
