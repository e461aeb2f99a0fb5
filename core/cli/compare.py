"""`params --compare NAME`: two models side by side, the reading's exercise 6 (GPT-2 small vs medium)."""

from __future__ import annotations

from collections.abc import Callable

from core.cli.common import print_json, print_table
from core.config import ModelConfig
from core.experiments.budgets import ConfigSide, compare_configs


def print_comparison(a: ModelConfig, b: ModelConfig, as_json: bool = False) -> int:
    """Print where two models' parameters live: embedding share of the total, FFN share of a block."""
    comparison = compare_configs(a, b)
    if as_json:
        print_json(comparison.as_dict())
        return 0
    rows_spec: list[tuple[str, Callable[[ConfigSide], str]]] = [
        ("layers", lambda s: f"{s.n_layers}"),
        ("d_model", lambda s: f"{s.d_model}"),
        ("total parameters", lambda s: f"{s.total_params:,}"),
        ("token embeddings", lambda s: f"{s.token_embeddings:,}"),
        ("position embeddings", lambda s: f"{s.position_embeddings:,}"),
        ("token embedding share", lambda s: f"{s.token_embedding_share:.1%}"),
        ("embedding share (token + position)", lambda s: f"{s.embedding_share:.1%}"),
        ("one block", lambda s: f"{s.block_params:,}"),
        ("one block: attention", lambda s: f"{s.block_attention:,}"),
        ("one block: FFN", lambda s: f"{s.block_ffn:,}"),
        ("FFN share of block params", lambda s: f"{s.ffn_share_of_block:.1%}"),
    ]
    sides: list[ConfigSide] = [comparison.a, comparison.b]
    rows = [[label, *(render(side) for side in sides)] for label, render in rows_spec]
    print_table(rows, ["", comparison.a.name, comparison.b.name], {1, 2})
    return 0
