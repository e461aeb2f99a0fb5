"""`shapes`: the reading's tensor-shape walk-through, traced from a forward pass on the meta device."""

from __future__ import annotations

import argparse

from core.cli import CliError
from core.cli.bounds import whole_number
from core.cli.common import add_model_arguments, config_from_args, print_json, print_table


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "shapes",
        help="trace every tensor's shape and memory through one block",
        description="Run one forward pass with hooks on the meta device (no memory used) and print the "
        "shape, element count and memory of each tensor from token ids to logits.",
    )
    add_model_arguments(parser)
    parser.add_argument("--batch", "-B", type=whole_number(1, 1_000_000), default=1, metavar="B", help="batch size (default 1)")
    parser.add_argument("--seq", "-T", type=whole_number(1, 10_000_000), default=None, metavar="T", help="sequence length (default: 128 or the context length)")
    parser.add_argument("--source-seq", "-S", type=whole_number(1, 10_000_000), default=None, metavar="S",
                        help="an encoder-decoder's source length, what its encoder reads (default: T)")
    parser.add_argument("--json", action="store_true", help="print the trace as JSON")
    parser.set_defaults(run=run_shapes)


def run_shapes(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    seq = args.seq if args.seq is not None else min(128, config.context_length)
    if args.batch < 1:
        raise CliError(f"--batch must be at least 1, got {args.batch}")
    if seq < 1:
        raise CliError(f"--seq must be at least 1, got {seq}")

    pair = config.architecture == "encoder-decoder"
    if args.source_seq is not None and not pair:
        raise CliError(f"--source-seq is the encoder input's length of an encoder-decoder; {config.name} is "
                       f"{config.architecture}-only and reads one sequence")

    from core.device import format_bytes
    from core.experiments.shapes import trace_shapes
    from core.model import SequenceError

    try:
        trace = trace_shapes(config, args.batch, seq, source_seq=args.source_seq)
    except SequenceError as error:
        raise CliError(str(error)) from None
    if args.json:
        print_json(trace.to_dict())
        return 0
    source = f", S={trace.source_seq}" if pair else ""
    print(f"{config.name}: B={args.batch}, T={seq}{source}, d_model={config.d_model}, heads={config.n_heads}, "
          f"traced on {trace.device}")
    rows = [
        [
            ("! " if row.is_attention_matrix else "  ") + row.name,
            "(" + ", ".join(str(n) for n in row.shape) + ")",
            row.dtype,
            f"{row.elements:,}",
            format_bytes(row.bytes),
            row.note,
        ]
        for row in trace.rows
    ]
    print_table(rows, ["step", "shape", "dtype", "elements", "memory", "note"], {3, 4})
    share = trace.attention_matrix_bytes / max(1, trace.residual_bytes)
    print(
        f"! the (B, h, T, T) attention matrix: {format_bytes(trace.attention_matrix_bytes)} per layer, "
        f"{share:.1f}x one (B, T, d_model) activation; it grows with T squared"
    )
    return 0
