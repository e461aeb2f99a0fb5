"""`head`: one attention head worked by hand for one query, printed as a table, and checked against the model.

Every key's q.k, the scaled score, any ALiBi penalty, the mask and the softmax weight; the hand
output weights . v beside the model's own head output (hook_z), and the verdict with its float
rounding tolerance (core.experiments.worked_head). A block, head or query the model does not have
is refused with one line and exit code 2 before the forward pass.
"""

from __future__ import annotations

import argparse

from core.cli import CliError
from core.cli.bounds import bounded_text, seed, token_ids, whole_number
from core.cli.causal import _build_model as build_model
from core.cli.causal import _sequence as read_sequence
from core.cli.common import add_model_arguments, print_json, print_table
from core.choices import MASK_MODES
from core.limits import MAX_TEXT_CHARS

DEFAULT_TOP = 12  # keys printed unless --all-keys: those of largest weight, in key order
MAX_INDEX = 100_000  # a block, head or token index: far beyond any model the lab runs
OMITTABLE = ("scale", "mask", "rope", "alibi")  # core.experiments.worked_head.OMITTABLE_STEPS, without torch


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "head",
        help="one attention head worked by hand for one query, checked against the model's own output",
        description="q, every k, q.k, / sqrt(d_head), the mask, the softmax weights and weights . v for one "
        "head and one query token, compared with the model's own head output (hook_z).",
    )
    add_model_arguments(parser, default_preset=None)
    parser.add_argument(
        "--checkpoint", metavar="NAME_OR_DIR", help="a bundled model name or a checkpoint folder (instead of --preset)"
    )
    tokens = parser.add_mutually_exclusive_group()
    tokens.add_argument("--text", metavar="TEXT", type=bounded_text(MAX_TEXT_CHARS), help="the sequence as text")
    tokens.add_argument("--ids", metavar="ID,ID,...", type=token_ids(),
                        help="the sequence as comma-separated token ids")
    parser.add_argument("--layer", type=whole_number(0, MAX_INDEX), default=0, metavar="L", help="the block (default 0)")
    parser.add_argument("--head", type=whole_number(0, MAX_INDEX), default=0, metavar="H", help="the head (default 0)")
    parser.add_argument("--query", type=whole_number(0, MAX_INDEX), metavar="T",
                        help="the query token's position (default: the last token)")
    parser.add_argument("--mask", choices=MASK_MODES, help="the self-attention mask (default: the model's own)")
    parser.add_argument("--omit", choices=OMITTABLE, help="leave one step out of the hand computation")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--top", type=whole_number(1, MAX_INDEX), default=DEFAULT_TOP, metavar="N",
                       help=f"print the N keys of largest weight (default {DEFAULT_TOP})")
    shown.add_argument("--all-keys", action="store_true", help="print every key")
    parser.add_argument("--seed", type=seed(), default=0, metavar="S", help="seed of the random weights (default 0)")
    parser.add_argument("--device", metavar="D", help="cpu, cuda, cuda:N or mps (default: the best present)")
    parser.add_argument("--json", action="store_true", help="print every array of the worked head as JSON")
    parser.set_defaults(run=run_head)


def _number(value: float) -> str:
    if value == float("-inf"):
        return "-inf"
    return "nan" if value != value else f"{value + 0.0:.6g}"  # + 0.0: a zero penalty prints as 0, not -0


def _vector(values) -> str:
    return "[" + ", ".join(_number(float(v)) for v in values) + "]"


def _as_json(worked, description: str, ids: list[int]) -> dict:
    def number(v):
        return None if v != v else ("-inf" if v == float("-inf") else v)

    def cleaned(listed):
        return [cleaned(row) if isinstance(row, list) else number(row) for row in listed]

    def clean(array):  # keeps the array's shape: a (T, d) array is T lists of d numbers
        return None if array is None else cleaned(array.reshape(array.shape or (1,)).tolist())

    return {
        "model": description, "tokens": ids, "labels": list(worked.labels), "layer": worked.layer,
        "head": worked.head, "query": worked.query, "mask_mode": worked.mask_mode, "omitted": list(worked.omitted),
        "kv_head": worked.kv_head, "shared_heads": list(worked.shared_heads), "d_head": worked.d_head,
        "scale": worked.scale, "q_before_rope": clean(worked.q_before), "q": clean(worked.q),
        "k_before_rope": clean(worked.k_before), "k": clean(worked.k), "v": clean(worked.v),
        "rope_angles": clean(worked.rope_angles), "model_q": clean(worked.model_q),
        "zeroed_after_softmax": worked.zeroed_after_softmax.tolist(),
        "step_checks": [{"step": step, "max_difference": difference, "tolerance": tolerance}
                        for step, difference, tolerance in worked.step_checks],
        "dots": clean(worked.dots), "scaled": clean(worked.scaled), "alibi_slope": worked.alibi_slope,
        "alibi_penalty": clean(worked.alibi_penalty), "visible": worked.visible.tolist(),
        "scores": clean(worked.scores), "weights": clean(worked.weights),
        "hand_output": clean(worked.hand_output), "model_output": clean(worked.model_output),
        "max_difference": worked.max_difference, "rounding": worked.rounding, "tolerance": worked.tolerance,
        "equal": worked.equal, "verdict": worked.verdict,
    }


def run_head(args: argparse.Namespace) -> int:
    n_tokens_hint = len(args.text) if args.text is not None else (len(args.ids) if args.ids else None)
    model, tokenizer, description = build_model(args, n_tokens_hint)
    ids, labels_from = read_sequence(args, tokenizer, model.config.vocab_size)

    from core.experiments.worked_head import WorkedHeadError, worked_head

    try:
        worked = worked_head(model, ids, args.layer, args.head, args.query, mask_mode=args.mask,
                             omit=(args.omit,) if args.omit else (), tokenizer_or_labels=labels_from)
    except WorkedHeadError as error:
        raise CliError(str(error)) from None
    if args.json:
        print_json(_as_json(worked, description, ids))
        return _exit_code(worked)
    print(f"{description}: {worked.block_label}, head {worked.head}, query {worked.query} "
          f"{worked.labels[worked.query]!r} ({worked.mask_mode} mask), d_head {worked.d_head}")
    if worked.n_kv_heads < worked.n_heads:
        print(f"this head reads kv head {worked.kv_head}, shared by query heads "
              f"{', '.join(map(str, worked.shared_heads))}")
    if worked.omitted:
        print(f"left out of the hand computation: {', '.join(worked.omitted)}")
    keys = (list(range(worked.n_keys)) if args.all_keys
            else sorted(int(k) for k in worked.keys_by_weight()[:args.top]))
    alibi = worked.alibi_slope is not None
    header = ["key", "token", "q.k", "/sqrt(d)", *(["alibi"] if alibi else []), "mask", "score", "weight"]
    rows = []
    for key in keys:
        mask = ("zeroed after" if worked.zeroed_after_softmax[key]
                else "visible" if worked.visible[key] else "masked")
        rows.append([str(key), worked.labels[key], _number(float(worked.dots[key])), _number(float(worked.scaled[key])),
                     *([_number(float(worked.alibi_penalty[key]))] if alibi else []), mask,
                     _number(float(worked.scores[key])), _number(float(worked.weights[key]))])
    numeric = {0, 2, 3, 4, 6, 7} if not alibi else {0, 2, 3, 4, 5, 7, 8}
    print_table(rows, header, numeric)
    if len(keys) < worked.n_keys:
        print(f"({len(keys)} of {worked.n_keys} keys, those of largest weight; --all-keys prints every key)")
    print(f"hand output   weights . v: {_vector(worked.hand_output)}")
    print(f"model output  hook_z:      {_vector(worked.model_output)}")
    print(f"verdict: hand result {worked.verdict}")
    print(f"note: the same steps in {worked.dtype} with every sum reversed move the output by "
          f"{worked.rounding:.1e}; the model sums in another order, so the tolerance is "
          f"{worked.reorder_factor:g} x that plus {worked.floor_ulps} ulps")
    return _exit_code(worked)


def _exit_code(worked) -> int:
    """1 when the full hand computation misses the model (a real failure); a step left out is meant to miss."""
    return 0 if worked.equal or worked.omitted else 1
