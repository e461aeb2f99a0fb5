"""`rope` and `permutation`: the reading's positional-encoding scripts, and the same probes for any preset."""

from __future__ import annotations

import argparse

import numpy as np

from core.cli import CliError
from core.cli.bounds import real_number, seed, whole_number
from core.cli.common import add_model_arguments, config_from_args, print_json, print_table
from core.experiments.positions import (
    DEFAULT_BASE,
    TEXTBOOK_ROPE_DIM,
    TEXTBOOK_ROPE_SEED,
    PositionsError,
    permutation_equivariance,
    rope_norms,
    rope_score,
    seeded_qk,
    sinusoidal_pe_table,
    textbook_permutation_table,
    textbook_rope_table,
)

# Key positions of the non-textbook table: the reading's start / middle / far-out triple.
PROBE_KEY_POSITIONS = (1, 11, 101)
NORM_PROBE_POSITIONS = (0, 1, 10, 100, 1000)
DEFAULT_PERMUTATION_T = 6


def register(subparsers: argparse._SubParsersAction) -> None:
    rope = subparsers.add_parser(
        "rope",
        help="RoPE scores depend on the offset m - n only; additive sinusoids do not",
        description="Rotate a random q and k to several (query, key) positions and print their scores. "
        "--textbook prints the reading's script; --preset uses the preset's head width, RoPE base and scale.",
    )
    rope.add_argument("--textbook", action="store_true", help="print the reading's RoPE table (seed 0, d 8)")
    add_model_arguments(rope, default_preset=None)
    rope.add_argument("--d", type=whole_number(2, 1024), metavar="D", help=f"vector length (even; default {TEXTBOOK_ROPE_DIM})")
    rope.add_argument("--base", type=real_number(1.0, 1e12), metavar="B", help=f"RoPE base (default {DEFAULT_BASE:g})")
    rope.add_argument("--scale", type=real_number(0.0, 1e6), metavar="S", help="position interpolation factor (default 1)")
    rope.add_argument("--offset", type=whole_number(0, 10_000), default=2, metavar="K", help="query - key offset to test (default 2)")
    rope.add_argument("--seed", type=seed(), default=TEXTBOOK_ROPE_SEED, help="seed of q and k (default 0)")
    rope.add_argument("--json", action="store_true", help="print JSON")
    rope.set_defaults(run=run_rope)

    permutation = subparsers.add_parser(
        "permutation",
        help="attention is blind to order until an encoding is added",
        description="Shuffle the input of one attention layer and compare with the shuffled output, "
        "with no encoding, sinusoids, an untrained learned table and RoPE. --textbook prints the reading's script.",
    )
    permutation.add_argument("--textbook", action="store_true", help="print the reading's permutation script output")
    add_model_arguments(permutation, default_preset=None)
    permutation.add_argument("--seed", type=seed(), default=0, help="seed of the weights, x and the learned table")
    permutation.add_argument(
        "--T", type=whole_number(1, 4096), dest="seq", metavar="T", help="sequence length (default: the --perm length, else 6)"
    )
    permutation.add_argument(
        "--perm", metavar="I,J,...", help="the shuffle as comma-separated positions (default: reversed order)"
    )
    permutation.add_argument("--json", action="store_true", help="print JSON")
    permutation.set_defaults(run=run_permutation)


def _uses_model(args: argparse.Namespace) -> bool:
    return bool(args.preset or args.config or args.set)


# ---- rope ------------------------------------------------------------------------------------------
def _score_line(m: int, n: int, score: float) -> str:
    return f"  m = {m:>3}, n = {n:>3}  (m - n = {m - n}):  score = {score:.10f}"


def run_rope(args: argparse.Namespace) -> int:
    if args.textbook:
        if _uses_model(args) or any(v is not None for v in (args.d, args.base, args.scale)):
            raise CliError(
                "--textbook prints the reading's fixed script; drop --preset, --config, --set, --d, --base and --scale"
            )
        return _print_textbook_rope(args.json)
    if _uses_model(args):
        if args.d is not None:
            raise CliError("--d sets the width of a preset-free probe; with --preset the width is the preset's d_head")
        config = config_from_args(args)
        d, base, scale = config.d_head, config.rope_base, config.rope_scale
        source = f"{config.name}: d_head {d}"
        if config.positional != "rope":
            source += f" (the model itself uses {config.positional} positions)"
    else:
        d, base, scale = TEXTBOOK_ROPE_DIM if args.d is None else args.d, DEFAULT_BASE, 1.0
        source = f"d {d}"
    base = base if args.base is None else args.base
    scale = scale if args.scale is None else args.scale
    if args.offset < 0:
        raise CliError(f"--offset must be 0 or more (the key sits behind the query), got {args.offset}")
    try:
        pair = seeded_qk(args.seed, d, base, scale)
        pairs = [(n + args.offset, n) for n in PROBE_KEY_POSITIONS]
        rope_scores = [rope_score(pair.q, pair.k, m, n, base, scale) for m, n in pairs]
        table = sinusoidal_pe_table(max(m for m, _ in pairs) + 1, d, base)  # (P, d)
        additive_scores = [float((pair.q + table[m]) @ (pair.k + table[n])) for m, n in pairs]
        norms = rope_norms(pair.q, NORM_PROBE_POSITIONS, base, scale)
    except PositionsError as error:
        raise CliError(str(error)) from None
    if args.json:
        print_json(
            {
                "source": source,
                "seed": args.seed,
                "d": d,
                "base": base,
                "scale": scale,
                "offset": args.offset,
                "q": pair.q.tolist(),
                "k": pair.k.tolist(),
                "rope": [{"m": m, "n": n, "score": s} for (m, n), s in zip(pairs, rope_scores)],
                "additive_sinusoidal": [{"m": m, "n": n, "score": s} for (m, n), s in zip(pairs, additive_scores)],
                "rope_spread": float(np.ptp(rope_scores)),
                "additive_spread": float(np.ptp(additive_scores)),
                "norms": {
                    "positions": norms.positions.tolist(),
                    "norms": norms.norms.tolist(),
                    "original": norms.original_norm,
                },
            }
        )
        return 0
    print(f"random q, k (seed {args.seed}) for {source}; RoPE base {base:g}, scale {scale:g}")
    print("score q.k with RoPE applied, at various (query pos m, key pos n):")
    for (m, n), score in zip(pairs, rope_scores):
        print(_score_line(m, n, score))
    print(f"  spread across positions: {np.ptp(rope_scores):.3g}")
    print("\nscore (q + PE[m]).(k + PE[n]) with additive sinusoidal encodings:")
    for (m, n), score in zip(pairs, additive_scores):
        print(_score_line(m, n, score))
    print(f"  spread across positions: {np.ptp(additive_scores):.3g}")
    listed = ", ".join(f"{v:.10f}" for v in norms.norms)
    print(f"\n||R(m) q|| at m = {', '.join(str(int(p)) for p in norms.positions)}: {listed}")
    print(f"||q|| = {norms.original_norm:.10f}: rotations are orthogonal, so lengths never change")
    return 0


def _print_textbook_rope(as_json: bool) -> int:
    table = textbook_rope_table()
    rope_rows = list(zip(table.rope_queries.tolist(), table.rope_keys.tolist(), table.rope_scores.tolist()))
    additive_rows = list(
        zip(table.additive_queries.tolist(), table.additive_keys.tolist(), table.additive_scores.tolist())
    )
    if as_json:
        print_json(
            {
                "q": table.q.tolist(),
                "k": table.k.tolist(),
                "rope": [{"m": m, "n": n, "score": s} for m, n, s in rope_rows],
                "additive_sinusoidal": [{"m": m, "n": n, "score": s} for m, n, s in additive_rows],
            }
        )
        return 0
    print("score q.k with RoPE applied, at various (query pos m, key pos n):")
    for m, n, score in rope_rows:
        print(_score_line(m, n, score))
    print("\nscore (q + PE[m]).(k + PE[n]) with additive sinusoidal encodings:")
    for m, n, score in additive_rows:
        print(_score_line(m, n, score))
    return 0


# ---- permutation ----------------------------------------------------------------------------------
def _parse_perm(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CliError(f"--perm expects comma-separated whole numbers such as 3,1,5,0,2,4, got {text!r}") from None


def run_permutation(args: argparse.Namespace) -> int:
    if args.textbook:
        if _uses_model(args) or args.perm is not None:
            raise CliError(
                "--textbook prints the reading's fixed script; leave out --preset, --config, --set and --perm"
            )
        return _print_textbook_permutation(args.json)
    perm = _parse_perm(args.perm)
    seq = args.seq if args.seq is not None else (len(perm) if perm is not None else DEFAULT_PERMUTATION_T)
    try:
        if _uses_model(args):
            result = permutation_equivariance(config_from_args(args), seed=args.seed, T=seq, perm=perm)
        else:
            result = permutation_equivariance(None, seed=args.seed, T=seq, perm=perm)
    except PositionsError as error:
        raise CliError(str(error)) from None
    if args.json:
        print_json(
            {
                "encodings": list(result.encodings),
                "permutation": result.permutation.tolist(),
                "max_diff": dict(zip(result.encodings, result.max_diff.tolist())),
                "per_position": dict(zip(result.encodings, result.per_position.tolist())),
                "equivariant": dict(zip(result.encodings, result.equivariant.tolist())),
                "noise_tolerance": result.noise_tolerance,
                "d_model": result.d_model,
                "n_heads": result.n_heads,
                "seed": result.seed,
                "dtype": result.dtype,
            }
        )
        return 0
    print(
        f"one attention layer, d_model {result.d_model}, {result.n_heads} head(s), seed {result.seed}, {result.dtype}; "
        f"shuffle {result.permutation.tolist()}"
    )
    print("max |attn(shuffled x + enc) - shuffle(attn(x + enc))| per output position:")
    rows = []
    for encoding, max_diff, per_position, equivariant in zip(
        result.encodings, result.max_diff, result.per_position, result.equivariant
    ):
        verdict = "order invisible (float noise)" if equivariant else "order visible"
        rows.append([encoding, f"{max_diff:.8f}", " ".join(f"{v:.2e}" for v in per_position), verdict])
    print_table(rows, ["encoding", "max", "per position", "verdict"], {1})
    return 0


def _print_textbook_permutation(as_json: bool) -> int:
    table = textbook_permutation_table()
    if as_json:
        print_json(
            {
                "permutation": table.permutation.tolist(),
                "no_pe_max_diff": table.no_pe_max_diff,
                "with_pe_max_diff": table.with_pe_max_diff,
                "pe_rows": {str(row): values.tolist() for row, values in zip(table.pe_rows.tolist(), table.pe_values)},
            }
        )
        return 0
    print(f"no PE:  max |attn(shuffled x) - shuffle(attn(x))| = {table.no_pe_max_diff:.8f}")
    print(f"with PE: max |attn(shuffled x+PE) - shuffle(attn(x+PE))| = {table.with_pe_max_diff:.8f}")
    print()
    for row, values in zip(table.pe_rows.tolist(), table.pe_values):
        print(f"PE row {row}, first {len(values)} dims: {[f'{v:.4f}' for v in values]}")
    return 0
