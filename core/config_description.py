"""A config in one line, as the Architecture panel writes it over its diagram: family, depth, norm, positions,
FFN, head and parameter count. Torch-free; the window and the offline pages both write it from here."""

from __future__ import annotations

from collections.abc import Callable

from core.config import ModelConfig
from core.diagram_layout import format_count
from core.params import parameter_breakdown

ARCHITECTURE_NAMES = {"decoder": "decoder-only", "encoder": "encoder-only", "encoder-decoder": "encoder-decoder"}
POSITIONAL_NAMES = {"none": "no positions", "sinusoidal": "sinusoidal positions", "learned": "learned positions",
                    "rope": "RoPE", "alibi": "ALiBi"}


def describe_config(config: ModelConfig, name_markup: Callable[[str], str] = str) -> str:
    """One line naming what the diagram shows; `name_markup` writes the config's name (plain text by default)."""
    total = parameter_breakdown(config).total
    depth = (f"{config.encoder_layers} + {config.decoder_layers} blocks" if config.architecture == "encoder-decoder"
             else f"{config.n_layers} block{'s' * (config.n_layers != 1)}")
    ffn = f"MoE top-{config.top_k} of {config.n_experts}" if config.is_moe else config.activation
    ffn = "attention-only (no FFN)" if config.attention_only else f"{ffn} FFN"
    return (f"{name_markup(config.name)}: {ARCHITECTURE_NAMES[config.architecture]}, {depth}, "
            f"{config.norm_placement}-norm {config.norm}, {POSITIONAL_NAMES[config.positional]}, {ffn}, "
            f"{'tied' if config.tie_embeddings else 'untied'} head; {format_count(total)} parameters")


__all__ = ["ARCHITECTURE_NAMES", "POSITIONAL_NAMES", "describe_config"]
