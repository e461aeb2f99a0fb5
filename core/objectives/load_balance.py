"""The router's load-balancing loss for a mixture of experts (Switch Transformer, Fedus et al. 2021, eq. 4-6).

For E experts, f_e is the share of routing assignments that went to expert e (each token makes top_k of
them) and P_e the router's mean probability for e over the tokens. The loss E * sum_e f_e * P_e is smallest
when both are uniform, and pushes the router to spread tokens over the experts. With top_k > 1 the shares
f_e sum to top_k, as in Mixtral's training code; layers are pooled: their assignments and probabilities are
summed before the shares are taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class ExpertLoad:
    assignments: torch.Tensor  # (L, E) tokens each layer's router sent to each expert
    mean_probability: torch.Tensor  # (L, E) the router's mean softmax probability per expert
    tokens: int  # tokens per layer


def expert_load(router_logits: Sequence[torch.Tensor], top_k: int) -> ExpertLoad:
    """Per layer: how many tokens each expert received, and the router's mean probability for it.

    router_logits: one (N, E) tensor per MoE layer, N tokens (batch and positions flattened).
    """
    if not router_logits:
        raise ValueError("no router logits: the model has no mixture-of-experts layer")
    counts, means = [], []
    for logits in router_logits:
        n_experts = logits.shape[-1]
        chosen = logits.topk(top_k, dim=-1).indices  # (N, k) the experts each token is sent to
        counts.append(F.one_hot(chosen, n_experts).sum(dim=(0, 1)).float())  # (E,)
        means.append(F.softmax(logits.float(), dim=-1).mean(dim=0))  # (E,)
    return ExpertLoad(torch.stack(counts), torch.stack(means), int(router_logits[0].shape[0]))


def load_balancing_loss(router_logits: Sequence[torch.Tensor], top_k: int) -> torch.Tensor:
    """E * sum_e f_e * P_e over the pooled layers; differentiable through the router's probabilities."""
    n_experts = router_logits[0].shape[-1]
    rows = sum(logits.shape[0] for logits in router_logits)
    assignments = sum(F.one_hot(logits.topk(top_k, dim=-1).indices, n_experts).sum(dim=(0, 1)).float()
                      for logits in router_logits)  # (E,) no gradient: a count
    probability = sum(F.softmax(logits.float(), dim=-1).sum(dim=0) for logits in router_logits)  # (E,)
    return n_experts * torch.sum((assignments / rows) * (probability / rows))  # ()


__all__ = ["ExpertLoad", "expert_load", "load_balancing_loss"]
