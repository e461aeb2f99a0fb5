"""The Tensor shapes view's "what if": the config traced with another d_model and head count.

Torch-free, so the GUI thread may import it; the trace itself is core.experiments.shapes.
"""

from __future__ import annotations

from typing import Any

from core.config import ModelConfig


def what_if_config(config: ModelConfig, d_model: int, heads: int) -> ModelConfig:
    """`config` with another d_model and head count (d_ff keeps its ratio); raises ConfigError if impossible."""
    if (d_model, heads) == (config.d_model, config.n_heads):
        return config
    changes: dict[str, Any] = {"d_model": d_model, "n_heads": heads, "name": f"{config.name} (what-if)"}
    changes["d_ff"] = max(1, round(config.d_ff * d_model / config.d_model))
    if config.n_kv_heads is not None and heads % config.n_kv_heads:
        changes["n_kv_heads"] = None
    return config.replace(**changes)
