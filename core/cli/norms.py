"""`norms` and `budget`: residual-stream and gradient norms through a deep stack; a model's compute and memory bill."""

from __future__ import annotations

import argparse

from core.cli import CliError
from core.cli.bounds import seed, whole_number
from core.cli.common import add_model_arguments, config_from_args, print_json, print_table
from core.device import format_bytes
from core.experiments.budgets import BYTES_PER_VALUE, BudgetError, compute_budget
from core.experiments.norms import (
    INIT_NAMES,
    INITS,
    MAX_DEPTH,
    MAX_WIDTH,
    NormCurves,
    NormsError,
    compare_placements,
    norm_curves,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    norms = subparsers.add_parser(
        "norms",
        help="forward, stream-gradient and weight-gradient norms per layer of a random pre- or post-norm stack",
        description="Build a stack of random blocks (GPT-2's N(0, 0.02) initialisation, or with --init xavier the "
        "set-up of Xiong et al. 2020: Xavier-uniform linears, N(0, 1) embeddings, sinusoidal positions, ReLU, no "
        "final norm after post-norm), run random tokens through it, "
        "and print per block boundary the mean per-token norm of the residual stream and the norm of "
        "d loss / d residual from one backward pass of the next-token loss, and beside each block's output "
        "the norm of d loss / d W over that block's weight matrices and over its FFN output matrix W^{FFN,2} "
        "(what Xiong et al. plot) from the same pass. Layer 0 is the embedding output.",
    )
    norms.add_argument("--depth", type=whole_number(1, MAX_DEPTH), default=12, metavar="N", help=f"blocks, 1..{MAX_DEPTH} (default 12)")
    norms.add_argument(
        "--placement", choices=("pre", "post", "both"), default="pre", help="where the norm sits (default pre)"
    )
    norms.add_argument("--norm", choices=("layernorm", "rmsnorm"), default="layernorm", help="norm kind")
    norms.add_argument(
        "--residual-scaling", action="store_true", help="GPT-2's deep-stack init: residual writes / sqrt(2 * depth)"
    )
    norms.add_argument("--seed", type=seed(), default=0, help="seed of the weights and tokens (default 0)")
    norms.add_argument("--init", choices=INITS, default="gpt2", help="gpt2: N(0, 0.02); xavier: Xiong et al.'s set-up")
    norms.add_argument("--d-model", type=whole_number(1, MAX_WIDTH), default=64, metavar="D", help="width (default 64)")
    norms.add_argument("--heads", type=whole_number(1, 256), default=4, metavar="H", help="attention heads (default 4)")
    norms.add_argument("--seq", type=whole_number(1, 4096), default=16, metavar="T", help="tokens per sequence (default 16)")
    norms.add_argument("--batch", type=whole_number(1, 1024), default=4, metavar="B", help="sequences (default 4)")
    norms.add_argument("--json", action="store_true", help="print JSON")
    norms.set_defaults(run=run_norms)

    budget = subparsers.add_parser(
        "budget",
        help="training and inference FLOPs per token, weight memory and KV cache of a model",
        description="Compute and memory arithmetic from the parameter count: 6N training FLOPs per token, "
        "2N + 2 * layers * T * d_attn inference FLOPs per token, weights and KV cache in fp32 / bf16 / int8.",
    )
    add_model_arguments(budget, default_preset=None)
    budget.add_argument(
        "--seq", type=whole_number(1, 100_000_000), metavar="T", help="context length for the attention FLOPs (default: the full context)"
    )
    budget.add_argument("--json", action="store_true", help="print JSON")
    budget.set_defaults(run=run_budget)


def _curves_dict(curves: NormCurves) -> dict:
    return {
        "label": curves.label,
        "depth": curves.depth,
        "placement": curves.placement,
        "norm": curves.norm,
        "residual_scaling": curves.residual_scaling,
        "d_model": curves.d_model,
        "seed": curves.seed,
        "loss": curves.loss,
        "layers": curves.layers.tolist(),
        "forward_norms": curves.forward_norms.tolist(),
        "gradient_norms": curves.gradient_norms.tolist(),
        "parameter_gradient_norms": curves.parameter_gradient_norms.tolist(),  # block b: layer b + 1's row
        "ffn_out_gradient_norms": curves.ffn_out_gradient_norms.tolist(),
        "write_ratios": curves.write_ratios.tolist(),
        "init": curves.init,
    }


def run_norms(args: argparse.Namespace) -> int:
    settings = dict(
        depth=args.depth,
        norm=args.norm,
        seed=args.seed,
        d_model=args.d_model,
        n_heads=args.heads,
        seq=args.seq,
        batch=args.batch,
        residual_scaling=args.residual_scaling,
        init=args.init,
    )
    try:
        if args.placement == "both":
            comparison = compare_placements(**settings)
            curves = [comparison.pre, comparison.post]
        else:
            curves = [norm_curves(placement=args.placement, **settings)]
    except NormsError as error:
        raise CliError(str(error)) from None
    if args.json:
        print_json(_curves_dict(curves[0]) if len(curves) == 1 else {c.placement: _curves_dict(c) for c in curves})
        return 0
    first = curves[0]
    print(
        f"{first.depth} random blocks, d_model {first.d_model}, {first.norm}"
        f"{', residual scaling' if first.residual_scaling else ''}, {INIT_NAMES[first.init]} init, seed {first.seed}; "
        f"layer 0 = embeddings, layer l = output of block l-1"
    )
    print(
        f"forward: mean per-token ||x||; gradient: ||d loss / d x||; weight gradient: ||d loss / d W|| over "
        f"the weight matrices of the block whose output the row is (loss {first.loss:.4f})"
    )
    header = ["layer"]
    for c in curves:
        header += [f"{c.placement} forward", f"{c.placement} gradient", f"{c.placement} weight gradient",
                   f"{c.placement} W_FFN2 gradient"]
    rows = []
    for layer in first.layers.tolist():
        row = [str(layer)]
        for c in curves:
            weight = f"{c.parameter_gradient_norms[layer - 1]:.6f}" if layer else "-"
            ffn_out = f"{c.ffn_out_gradient_norms[layer - 1]:.6f}" if layer else "-"
            row += [f"{c.forward_norms[layer]:.4f}", f"{c.gradient_norms[layer]:.6f}", weight, ffn_out]
        rows.append(row)
    print_table(rows, header, set(range(len(header))))
    for c in curves:
        growth = c.forward_norms[-1] / c.forward_norms[1]
        weights = c.parameter_gradient_norms
        print(
            f"{c.placement}-norm: residual norm after block 1 {c.forward_norms[1]:.4f}, after block {c.depth} "
            f"{c.forward_norms[-1]:.4f} (x{growth:.2f}); gradient after block 1 / after block {c.depth}: "
            f"{c.gradient_norms[1] / c.gradient_norms[-1]:.2f}"
        )
        print(
            f"  gradient at the embeddings / after block 1: "
            f"{c.gradient_norms[0] / c.gradient_norms[1]:.2f} (stream length {c.forward_norms[0]:.4f} -> "
            f"{c.forward_norms[1]:.4f}); weight gradient of block {c.depth} / block 1: {weights[-1] / weights[0]:.2f}"
        )
        print(
            f"  W_FFN2 gradient of block {c.depth} / block 1: "
            f"{c.ffn_out_gradient_norms[-1] / c.ffn_out_gradient_norms[0]:.2f}; mean FFN write / stream it joins: "
            f"{c.write_ratios.mean():.3f}"
        )
    return 0


def run_budget(args: argparse.Namespace) -> int:
    if not (args.preset or args.config):
        raise CliError("choose a model with --preset NAME or --config FILE")
    config = config_from_args(args)
    try:
        budget = compute_budget(config, args.seq)
    except BudgetError as error:
        raise CliError(str(error)) from None
    if args.json:
        print_json(budget.as_dict())
        return 0
    n = budget.active_params
    attention_layers_note = f"2 * attention layers * {budget.seq_len:,} * d_attn"
    print(f"{budget.name}: {budget.total_params:,} parameters, N = {n:,} active per token")
    training = budget.training_flops_per_token
    print(f"training FLOPs per token   6N = {training:,} ({training / 1e9:.3g} GFLOP)")
    print(
        f"inference FLOPs per token  2N + {attention_layers_note} = {2 * n:,} + {budget.attention_flops_per_token:,} "
        f"= {budget.inference_flops_per_token:,} ({budget.inference_flops_per_token / 1e9:.3g} GFLOP)"
    )
    rows = [
        [
            dtype,
            f"{BYTES_PER_VALUE[dtype]}",
            format_bytes(budget.weight_bytes[dtype]),
            f"{budget.kv_cache_bytes_per_token[dtype]:,} B ({format_bytes(budget.kv_cache_bytes_per_token[dtype])})",
            format_bytes(budget.kv_cache_bytes_full_context[dtype]),
        ]
        for dtype in BYTES_PER_VALUE
    ]
    print_table(
        rows,
        ["dtype", "bytes", "weights", "KV cache per token", f"KV cache at {budget.context_length:,} tokens"],
        {1, 2, 3, 4},
    )
    return 0
