"""`presets` and `params`: what the models are and where their parameters live."""

from __future__ import annotations

import argparse

from core.cli import CliError
from core.cli.common import add_model_arguments, config_from_args, print_json, print_table
from core.config import ModelConfig
from core.params import (
    GROUP_LABELS,
    GROUP_ORDER,
    ParameterBreakdown,
    gpt2_small_textbook_lines,
    instantiated_parameter_count,
    parameter_breakdown,
)
from core.presets import PRESETS, get_preset


def register(subparsers: argparse._SubParsersAction) -> None:
    presets = subparsers.add_parser("presets", help="list the named model configurations")
    presets.add_argument("--json", action="store_true", help="print every preset's full config as JSON")
    presets.set_defaults(run=run_presets)

    params = subparsers.add_parser(
        "params",
        help="count a model's parameters by formula and by instantiation",
        description="Parameter accounting: the analytic breakdown beside the count of the model "
        "instantiated on the meta device (no memory used, so 47B-parameter presets are fine).",
    )
    add_model_arguments(params, default_preset=None)
    tying = params.add_mutually_exclusive_group()
    tying.add_argument("--tied", dest="tied", action="store_const", const=True, help="tie the head to the embeddings")
    tying.add_argument("--untied", dest="tied", action="store_const", const=False, help="give the head its own matrix")
    params.add_argument("--textbook", action="store_true", help="print the reading's GPT-2 small accounting table")
    params.add_argument("--compare", metavar="NAME", help="print this model beside preset NAME: embedding and FFN shares")
    params.add_argument("--json", action="store_true", help="print JSON (total, instantiated_total, groups, ...)")
    params.set_defaults(run=run_params)


def _describe(config: ModelConfig) -> str:
    ffn = "attention-only" if config.attention_only else config.activation
    parts = [config.architecture, config.positional, config.norm, ffn]
    if config.is_moe:
        parts.append(f"{config.n_experts} experts, top-{config.top_k}")
    return ", ".join(parts)


def run_presets(args: argparse.Namespace) -> int:
    if args.json:
        print_json({name: config.to_dict() for name, config in PRESETS.items()})
        return 0
    rows = []
    for name, config in PRESETS.items():
        b = parameter_breakdown(config)
        rows.append(
            [
                name,
                str(config.n_layers if config.architecture != "encoder-decoder" else f"{config.encoder_layers}+{config.n_layers}"),
                str(config.d_model),
                f"{config.n_heads}/{config.kv_heads}",
                "-" if config.attention_only else str(config.d_ff),
                f"{config.vocab_size:,}",
                f"{b.total:,}",
                _describe(config),
            ]
        )
    print_table(rows, ["preset", "layers", "d_model", "heads/kv", "d_ff", "vocab", "parameters", "kind"], {1, 2, 3, 4, 5, 6})
    return 0


def _params_dict(b: ParameterBreakdown, instantiated: int) -> dict:
    data = b.as_dict()
    data["instantiated_total"] = instantiated
    data["agree"] = instantiated == b.total
    data["shares"] = {group: count / b.total for group, count in b.groups.items()}
    data["config"] = b.config.to_dict()
    return data


def run_params(args: argparse.Namespace) -> int:
    if args.textbook:
        if args.preset or args.config or args.set:
            raise CliError("--textbook prints the reading's GPT-2 small table; leave out --preset, --config and --set")
        config = get_preset("gpt2-small")
    else:
        config = config_from_args(args)
    if args.tied is not None:
        config = config.replace(tie_embeddings=args.tied)
    if args.compare:
        from core.cli.compare import print_comparison

        return print_comparison(config, get_preset(args.compare), as_json=args.json)
    if args.textbook:
        return _print_textbook(config, as_json=args.json)
    b = parameter_breakdown(config)
    instantiated = instantiated_parameter_count(config)
    if args.json:
        print_json(_params_dict(b, instantiated))
        return 0
    print(f"{config.name}: {_describe(config)}, {'tied' if config.tie_embeddings else 'untied'} head")
    rows = [
        [GROUP_LABELS[group], f"{b.groups[group]:,}", f"{b.share(group):.1%}"]
        for group in GROUP_ORDER
        if b.groups[group] or group in ("token_embeddings", "attention", "ffn", "norms")
    ]
    print_table(rows, ["group", "parameters", "share"], {1, 2})
    for label, block in (("decoder block" if b.encoder_block else "one block", b.decoder_block), ("encoder block", b.encoder_block)):
        if block is not None and config.attention_only:
            print(f"{label}: {block.total:,} (attention {block.attention:,}, norms {block.norms:,}); "
                  "attention-only, no FFN")
        elif block is not None:
            print(
                f"{label}: {block.total:,} (attention {block.attention:,}, FFN {block.ffn:,}, norms {block.norms:,}"
                f"{f', router {block.router:,}' if block.router else ''}); FFN share {block.ffn_share:.1%}"
            )
    print(f"total (by formula)        {b.total:,}")
    print(f"instantiated (meta device) {instantiated:,}  {'agrees' if instantiated == b.total else 'DISAGREES'}")
    if config.is_moe:
        print(f"active per token          {b.active:,} ({b.active / b.total:.1%} of total)")
    if config.tie_embeddings:
        print(f"tying saves               {b.tied_saving:,} (the V x d head matrix)")
    return 0


def _print_textbook(config: ModelConfig, as_json: bool) -> int:
    b = parameter_breakdown(config)
    instantiated = instantiated_parameter_count(config)
    if as_json:
        print_json(_params_dict(b, instantiated))
        return 0
    for label, figure in gpt2_small_textbook_lines(config):
        print(f"{label:<22}{figure}")
    assert b.decoder_block is not None
    print(f"FFN share of block params: {b.decoder_block.ffn_share:.1%}")
    print()
    print(f"instantiated and counted (deduplicating tied weights): {instantiated:,}")
    print(f"matches hand arithmetic: {instantiated == b.total}")
    return 0
