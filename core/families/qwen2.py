"""Qwen2 (Qwen2ForCausalLM): Llama with biases on the q, k and v projections only (the lab's qkv_bias)."""

from __future__ import annotations

from typing import Any

from core.checkpoint_files import CheckpointError
from core.config import ModelConfig
from core.families import llama
from core.families.common import Family, HFConfig, causal_decoder_needs


def config_fields(hf: HFConfig, where: str) -> dict[str, Any]:
    """Qwen2 is Llama with q, k, v biases (no other bias) and an optional sliding window."""
    if hf.get("use_sliding_window"):
        raise CheckpointError(f"{where}: use_sliding_window (attention over a local window) is not supported")
    layer_types = hf.get("layer_types")
    if isinstance(layer_types, list) and any(kind != "full_attention" for kind in layer_types):
        raise CheckpointError(f"{where}: layer_types other than full_attention are not supported")
    fields = llama.config_fields({**hf, "attention_bias": False, "mlp_bias": False}, where)
    fields["qkv_bias"] = True
    return fields


def export_needs(config: ModelConfig) -> list[str] | None:
    if not (llama.is_llama_like(config) and config.qkv_bias and not config.bias):
        return None
    return causal_decoder_needs(config)


def export_config(config: ModelConfig) -> HFConfig:
    hf = llama.llama_style_config(config, "qwen2", "Qwen2ForCausalLM")
    hf.update(use_sliding_window=False)
    return hf


FAMILY = Family(
    model_type="qwen2",
    title="Qwen2",
    architectures=("Qwen2ForCausalLM",),
    auto_class="AutoModelForCausalLM",
    config_fields=config_fields,
    import_tensors=llama.import_tensors,  # the q, k, v biases are taken because the config sets qkv_bias
    export_needs=export_needs,
    export_config=export_config,
    export_tensors=llama.export_tensors,
)
