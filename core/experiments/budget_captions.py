"""The Budgets view's words: the sentence under the table and the table's rows, read from a ComputeBudget.

Torch-free; the window and the offline pages both write a budget through these, so they say the same.
"""

from __future__ import annotations

from typing import Any

from core.display import format_flops, short_count


def budget_summary(shown_name: str, budget: Any) -> str:
    """The sentence under the table; `shown_name` is the config's name as the caller writes it (plain or markup)."""
    moe = f", of {short_count(budget.total_params)} in all" if budget.active_params != budget.total_params else ""
    return (f"{shown_name}: N = {short_count(budget.active_params)} parameters per token{moe}. Training ≈ 6N FLOP "
            f"per token (forward 2N, backward 4N); inference adds the attention scores at T = {budget.seq_len:,}. "
            "Weights count every parameter; the KV cache holds K and V of every layer.")


def budget_rows(budget: Any) -> list[tuple[str, Any]]:
    """(quantity, value) rows: a FLOP count as text (it does not depend on the dtype), else bytes per dtype."""
    return [
        ("training FLOPs per token (6N)", format_flops(budget.training_flops_per_token)),
        (f"inference FLOPs per token (at T = {budget.seq_len:,})", format_flops(budget.inference_flops_per_token)),
        ("    of which attention scores", format_flops(budget.attention_flops_per_token)),
        ("weights", budget.weight_bytes),
        ("KV cache per token", budget.kv_cache_bytes_per_token),
        (f"KV cache at the context length ({budget.context_length:,} tokens)", budget.kv_cache_bytes_full_context),
    ]
