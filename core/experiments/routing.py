"""The router of a mixture of experts: per token and layer, the experts chosen, the router's probabilities, the
load each expert got over the text, and the parameters one token uses against the model's total.

The figures are read off the model's own hook points (`blocks.{i}.ffn.hook_router_logits`, (B, T, E), and
`blocks.{i}.ffn.hook_routing`, the top-k mixing weights scattered into (B, T, E)) in one forward pass. The
load is core.objectives.load_balance's count, the one the load-balancing loss uses; the parameter counts are
core.params' formulas, checked against the instantiated model. Nothing here imports Qt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from core.config import ModelConfig
from core.experiments.common import ReadOnlyArrays, as_token_list, model_device, token_labels
from core.hooks import capture
from core.model import Transformer, count_parameters
from core.objectives.load_balance import expert_load
from core.params import parameter_breakdown

ROUTER_LOGITS = "blocks.{layer}.ffn.hook_router_logits"
ROUTING = "blocks.{layer}.ffn.hook_routing"


class RoutingError(ValueError):
    """A model without a router the experiment can read."""


def moe_problem(config: ModelConfig) -> str:
    """Why a model has no router to show ("" when it has one in its token stack)."""
    if not config.is_moe:
        return (f"the loaded model, {config.name}, has a dense feed-forward network in every block: there is no "
                "router; load a mixture of experts (tiny-moe)")
    if config.architecture == "encoder-decoder":
        return (f"the loaded model, {config.name}, has experts in two towers; the router view reads one stack of "
                "blocks (a decoder-only or encoder-only mixture of experts)")
    return ""


@dataclass(frozen=True)
class RoutingResult(ReadOnlyArrays):
    tokens: tuple[int, ...]  # T
    token_labels: tuple[str, ...]
    top_k: int
    router_logits: np.ndarray  # (L, T, E) float32 the router's scores
    probabilities: np.ndarray  # (L, T, E) float64 softmax of the scores over every expert
    chosen: np.ndarray  # (L, T, k) int64 the experts each token is sent to, highest score first
    weights: np.ndarray  # (L, T, E) float32 the mixing weights the model used: softmax over the chosen, 0 elsewhere
    load: np.ndarray  # (L, E) int64 tokens each expert received in each layer
    total_parameters: int  # every parameter of the model (core.params formula)
    active_parameters: int  # the parameters one token's forward pass uses
    instantiated_parameters: int  # counted on the model itself
    expert_parameters: int  # one expert's FFN

    @property
    def n_layers(self) -> int:
        return self.router_logits.shape[0]

    @property
    def n_experts(self) -> int:
        return self.router_logits.shape[2]

    @property
    def active_share(self) -> float:
        return self.active_parameters / self.total_parameters

    @property
    def balanced_load(self) -> float:
        """Tokens per expert if the router spread the text's T x k assignments evenly."""
        return len(self.tokens) * self.top_k / self.n_experts

    def to_dict(self) -> dict:
        return {
            "tokens": list(self.tokens), "top_k": self.top_k, "n_experts": self.n_experts,
            "layers": [{"layer": layer, "load": self.load[layer].tolist(), "tokens": [
                {"position": t, "token": self.token_labels[t], "chosen": self.chosen[layer, t].tolist(),
                 "weights": [float(self.weights[layer, t, e]) for e in self.chosen[layer, t]],
                 "probabilities": self.probabilities[layer, t].tolist(),
                 "router_logits": self.router_logits[layer, t].tolist()} for t in range(len(self.tokens))]}
                for layer in range(self.n_layers)],
            "balanced_load": self.balanced_load,
            "total_parameters": self.total_parameters, "active_parameters": self.active_parameters,
            "instantiated_parameters": self.instantiated_parameters, "expert_parameters": self.expert_parameters,
            "active_share": self.active_share,
        }


def routing(model: Transformer, tokens, tokenizer=None) -> RoutingResult:
    """One forward pass of the text, with every layer's router read off its hook points."""
    config = model.config
    problem = moe_problem(config)
    if problem:
        raise RoutingError(problem)
    ids = as_token_list(tokens)
    batch = torch.tensor([ids], dtype=torch.long, device=model_device(model))  # (1, T)
    model.check_tokens(batch)
    layers = range(config.n_layers)
    names = [ROUTER_LOGITS.format(layer=layer) for layer in layers] + [ROUTING.format(layer=layer) for layer in layers]
    with torch.inference_mode(), capture(model, names) as store:
        model(batch, head=False)
    logits = torch.stack([store[ROUTER_LOGITS.format(layer=layer)][0] for layer in layers]).float()  # (L, T, E)
    weights = torch.stack([store[ROUTING.format(layer=layer)][0] for layer in layers]).float()  # (L, T, E)
    chosen = logits.topk(config.top_k, dim=-1).indices  # (L, T, k) as the model's own forward chose them
    load = expert_load(list(logits), config.top_k).assignments  # (L, E)
    breakdown = parameter_breakdown(config)
    assert breakdown.decoder_block is not None
    return RoutingResult(
        tokens=tuple(ids), token_labels=token_labels(ids, tokenizer), top_k=config.top_k,
        router_logits=logits.cpu().numpy(), probabilities=F.softmax(logits.double(), dim=-1).cpu().numpy(),
        chosen=chosen.cpu().numpy().astype(np.int64), weights=weights.cpu().numpy(),
        load=load.cpu().numpy().round().astype(np.int64),
        total_parameters=breakdown.total, active_parameters=breakdown.active,
        instantiated_parameters=count_parameters(model), expert_parameters=breakdown.decoder_block.expert,
    )


__all__ = ["ROUTER_LOGITS", "ROUTING", "RoutingError", "RoutingResult", "moe_problem", "routing"]
