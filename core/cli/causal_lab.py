"""`patch`, `attribute`, `induction`: the causal lab's experiments on a bundled model or a checkpoint folder.

`patch` runs the corrupted input and patches one activation from the clean run per cell of a
(layer x position) or (layer x head) map; `attribute` splits one position's logit (difference) into
what each embedding, head, bias and FFN wrote; `induction` scores every head on a repeated random
sequence. Each prints a table, or with --json every figure. Bad input is refused in one line
(exit 2) before any forward pass.
"""

from __future__ import annotations

import argparse
import math
import sys

from core.cli import CliError
from core.cli.bounds import bounded_text, seed, token_id, token_ids, whole_number
from core.cli.common import print_json, print_table
from core.limits import MAX_TEXT_CHARS

MAX_INDEX = 100_000  # a position: far beyond any context the lab runs
MAX_TOKEN_CHARS = 200  # --answer / --foil: one token's text
MAX_PERIOD = 4096  # core.experiments.induction.MAX_PERIOD, without importing torch for --help
SITE_NAMES = ("resid_pre", "attn_out", "mlp_out", "head")  # core.experiments.patching.SITES


def _add_checkpoint(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", metavar="NAME_OR_DIR", required=True,
                        help="a bundled model name, a checkpoint folder, or a Hugging Face model folder")
    parser.add_argument("--device", metavar="D", help="cpu, cuda, cuda:N or mps (default: the best present)")
    parser.add_argument("--json", action="store_true", help="print every figure as JSON")


def _add_answer(parser: argparse.ArgumentParser) -> None:
    answer = parser.add_mutually_exclusive_group(required=True)
    answer.add_argument("--answer", metavar="TOKEN", type=bounded_text(MAX_TOKEN_CHARS), help="the answer token as text")
    answer.add_argument("--answer-id", metavar="ID", type=token_id(), help="the answer token's id")
    foil = parser.add_mutually_exclusive_group()
    foil.add_argument("--foil", metavar="TOKEN", type=bounded_text(MAX_TOKEN_CHARS),
                      help="a foil token: the metric is the answer's logit minus the foil's")
    foil.add_argument("--foil-id", metavar="ID", type=token_id(), help="the foil token's id")


def register(subparsers: argparse._SubParsersAction) -> None:
    patch = subparsers.add_parser(
        "patch", help="activation patching: which layer and position (or head) carries what the corrupted token changed",
        description="Run the corrupted input, take one activation from the clean run, and measure the answer-minus-foil "
        "logit difference at one position (the last by default; an encoder's blank), for every layer and position "
        "(or head).",
    )
    _add_checkpoint(patch)
    clean = patch.add_mutually_exclusive_group(required=True)
    clean.add_argument("--clean", metavar="TEXT", type=bounded_text(MAX_TEXT_CHARS), help="the clean input as text")
    clean.add_argument("--clean-ids", metavar="ID,ID,...", type=token_ids(), help="the clean input's ids")
    corrupt = patch.add_mutually_exclusive_group(required=True)
    corrupt.add_argument("--corrupt", metavar="TEXT", type=bounded_text(MAX_TEXT_CHARS), help="the corrupted input as text")
    corrupt.add_argument("--corrupt-ids", metavar="ID,ID,...", type=token_ids(),
                         help="the corrupted input's ids (as many as the clean input's)")
    _add_answer(patch)
    patch.add_argument("--site", choices=SITE_NAMES, default="resid_pre",
                       help="what is patched: the stream entering a block, attention's or the FFN's write (layer x "
                       "position), or one head's output at every position (layer x head); default resid_pre")
    patch.add_argument("--position", type=whole_number(0, MAX_INDEX), metavar="T",
                       help="where the metric is read (default: the last position); a decoder's logits there score the "
                       "next token, an encoder's the token at that position, such as a blank it fills in")
    patch.set_defaults(run=run_patch)

    attribute = subparsers.add_parser(
        "attribute", help="direct logit attribution: the logit split into what each embedding, head, bias and FFN wrote",
        description="Split one position's answer logit (minus a foil's) into the token and positional embeddings, each "
        "head, each attention-output bias, each FFN or expert and the final norm's bias, through the final norm's scale "
        "of this run. The parts sum to the model's logit; the sum and the difference are printed beside it.",
    )
    _add_checkpoint(attribute)
    tokens = attribute.add_mutually_exclusive_group(required=True)
    tokens.add_argument("--text", metavar="TEXT", type=bounded_text(MAX_TEXT_CHARS), help="the sequence as text")
    tokens.add_argument("--ids", metavar="ID,ID,...", type=token_ids(), help="the sequence's ids")
    attribute.add_argument("--position", type=whole_number(0, MAX_INDEX), metavar="T",
                           help="the position whose logit is split (default: the last); a decoder's logit there "
                           "scores the next token, an encoder's the token at that position")
    _add_answer(attribute)
    attribute.set_defaults(run=run_attribute)

    induction = subparsers.add_parser(
        "induction", help="induction and previous-token scores of every head on a repeated random sequence",
        description="N random tokens (seeded) repeated once: each head's mean attention from the second repeat to the "
        "token after the previous occurrence (induction score) and to the previous token, and the loss per position "
        "of the first repeat against the second.",
    )
    _add_checkpoint(induction)
    induction.add_argument("--length", type=whole_number(2, MAX_PERIOD), default=20, metavar="N",
                           help="tokens in one repeat (default 20)")
    induction.add_argument("--seed", type=seed(), default=0, metavar="S", help="seed of the random tokens (default 0)")
    induction.set_defaults(run=run_induction)


# ---- inputs ---------------------------------------------------------------------------------------------
def _load(args: argparse.Namespace):
    from core.checkpoints import CheckpointError, resolve_checkpoint
    from core.device import choose_device

    choice = choose_device(args.device)
    if choice.message:
        print(f"note: {choice.message}", file=sys.stderr)
    try:
        loaded = resolve_checkpoint(args.checkpoint, device=choice.device)
    except CheckpointError as error:
        raise CliError(str(error)) from None
    return loaded


def _sequence(text: str | None, ids: list[int] | None, tokenizer, option: str) -> list[int]:
    if ids is not None:
        return list(ids)
    if tokenizer is None:
        raise CliError(f"this model has no tokenizer; give the tokens as {option}-ids" if option != "--text"
                       else "this model has no tokenizer; give the tokens as --ids")
    encoded = tokenizer.encode(text or "")
    if not encoded:
        raise CliError(f"{option} gives no tokens; give at least one character")
    return encoded


def _token(text: str | None, token_id: int | None, tokenizer, option: str) -> int | None:
    if token_id is not None:
        return token_id
    if text is None:
        return None
    if tokenizer is None:
        raise CliError(f"this model has no tokenizer; give {option}-id")
    from core.tokenizers import UnknownTokenError

    try:
        return tokenizer.id_of(text)
    except UnknownTokenError:
        pass
    encoded = tokenizer.encode(text)
    if len(encoded) != 1:
        raise CliError(f"{option} {text!r} is {len(encoded)} tokens ({encoded[:8]}); give one token or {option}-id")
    return encoded[0]


def _label(tokenizer, token_id: int | None) -> str | None:
    if token_id is None:
        return None
    from core.display import display_token

    if tokenizer is not None and 0 <= token_id < tokenizer.vocab_size:
        return display_token(tokenizer.token_text(token_id))
    return f"#{token_id}"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


# ---- commands -------------------------------------------------------------------------------------------
def run_patch(args: argparse.Namespace) -> int:
    loaded = _load(args)
    tokenizer = loaded.tokenizer
    clean = _sequence(args.clean, args.clean_ids, tokenizer, "--clean")
    corrupt = _sequence(args.corrupt, args.corrupt_ids, tokenizer, "--corrupt")
    answer = _token(args.answer, args.answer_id, tokenizer, "--answer")
    foil = _token(args.foil, args.foil_id, tokenizer, "--foil")
    from core.experiments.patching import UNDEFINED, PatchingError, activation_patch

    try:
        result = activation_patch(loaded.model, clean, corrupt, answer, foil, site=args.site, position=args.position)
    except PatchingError as error:
        raise CliError(str(error)) from None
    if args.json:
        print_json({
            "model": loaded.source, "site": args.site, "clean": clean, "corrupt": corrupt, "answer": answer,
            "foil": foil, "clean_metric": _finite(result.clean_metric),
            "corrupt_metric": _finite(result.corrupt_metric),
            "columns": "head" if args.site == "head" else "position",
            "values": [[_finite(v) for v in row] for row in result.values.tolist()],
            # null cells (never NaN, which is not JSON) when the two metrics agree: see "normalised_undefined"
            "normalised": [[_finite(v) for v in row] for row in result.normalised.tolist()],
            "normalised_undefined": UNDEFINED if result.metrics_agree else None,
            "patch_all_equals_clean": list(result.patch_all_equal), "patch_none_equals_corrupt": result.patch_none_equal,
            "changed_positions": list(result.changed_positions), "position": result.position,
        })
        return 0
    metric = f"logit({_label(tokenizer, answer)})" + (f" - logit({_label(tokenizer, foil)})" if foil is not None else "")
    where = "the last position" if result.position == len(clean) - 1 else f"position {result.position}"
    scores = " (an encoder's logits there score the token at that position)" \
        if loaded.model.config.architecture == "encoder" else ""
    print(f"{loaded.source}: patching {args.site}, metric {metric} at {where}{scores}")
    print(f"clean {result.clean_metric:.6g}, corrupted {result.corrupt_metric:.6g}; "
          f"changed positions: {', '.join(map(str, result.changed_positions)) or 'none'}")
    columns = result.values.shape[1]
    if args.site == "head":
        header = ["layer", *(f"H{h}" for h in range(columns))]
    else:
        header = ["layer", *(f"{t}:{_label(tokenizer, token)}" for t, token in enumerate(corrupt))]
    if result.metrics_agree:
        print(f"normalised (0 = corrupted, 1 = clean): {UNDEFINED}; the metric with one activation patched:")
        table = result.values
    else:
        print("normalised (0 = corrupted, 1 = clean):")
        table = result.normalised
    rows = [[str(layer), *(f"{v:.3f}" for v in row)] for layer, row in enumerate(table)]
    print_table(rows, header, set(range(len(header))))
    all_equal = all(result.patch_all_equal)
    print(f"check: every position of each layer's resid_pre patched = clean logits (torch.equal): "
          f"{'yes' if all_equal else 'NO'}; nothing patched = corrupted logits: {'yes' if result.patch_none_equal else 'NO'}")
    return 0 if all_equal and result.patch_none_equal else 1


def run_attribute(args: argparse.Namespace) -> int:
    loaded = _load(args)
    tokenizer = loaded.tokenizer
    ids = _sequence(args.text, args.ids, tokenizer, "--text")
    answer = _token(args.answer, args.answer_id, tokenizer, "--answer")
    foil = _token(args.foil, args.foil_id, tokenizer, "--foil")
    from core.experiments.attribution import AttributionError, direct_logit_attribution

    try:
        result = direct_logit_attribution(loaded.model, ids, answer, foil, args.position)
    except AttributionError as error:
        raise CliError(str(error)) from None
    if args.json:
        print_json({
            "model": loaded.source, "tokens": ids, "position": result.position, "answer": answer, "foil": foil,
            "total": result.total, "sum": result.parts_sum, "difference": result.difference,
            "tolerance": result.tolerance, "agrees": result.agrees, "norm": result.norm,
            "final_scale": result.final_scale,
            "components": [{"name": p.name, "kind": p.kind, "layer": p.layer, "head": p.head, "value": p.value}
                           for p in result.components],
            "logit_lens": result.lens.tolist(), "lens_final_scale": result.lens_final_scale.tolist(),
        })
        return 0
    metric = f"logit({_label(tokenizer, answer)})" + (f" - logit({_label(tokenizer, foil)})" if foil is not None else "")
    print(f"{loaded.source}: {metric} at position {result.position}, through the final {result.norm} "
          f"scale of this run ({result.final_scale:.6g})")
    rows = [[p.name, p.kind, f"{p.value:.6g}"] for p in result.components]
    print_table(rows, ["component", "kind", "value"], {2})
    print(f"sum of the parts {result.parts_sum:.9g}; the model's logit {result.total:.9g}; "
          f"difference {result.difference:.3g} (float32 rounding bound {result.tolerance:.2g}): "
          f"{'agrees' if result.agrees else 'DOES NOT AGREE'}")
    return 0 if result.agrees else 1


def run_induction(args: argparse.Namespace) -> int:
    loaded = _load(args)
    from core.experiments.induction import InductionError, induction

    try:
        result = induction(loaded.model, period=args.length, seed=args.seed)
    except InductionError as error:
        raise CliError(str(error)) from None
    if args.json:
        print_json({
            "model": loaded.source, "tokens": list(result.tokens), "period": result.period,
            "repeat_start": result.repeat_start, "seed": result.seed,
            "induction_score": result.induction_score.tolist(),
            "previous_token_score": result.previous_token_score.tolist(),
            "loss_first": result.loss_first.tolist(), "loss_second": result.loss_second.tolist(),
        })
        return 0
    n_heads = result.induction_score.shape[1]
    print(f"{loaded.source}: {result.period} random tokens (seed {result.seed}) repeated once; "
          f"the second repeat starts at {result.repeat_start}")
    for title, grid in (("induction score", result.induction_score), ("previous-token score", result.previous_token_score)):
        print(f"{title} (rows: layers, columns: heads):")
        print_table([[str(layer), *(f"{v:.3f}" for v in row)] for layer, row in enumerate(grid)],
                    ["layer", *(f"H{h}" for h in range(n_heads))], set(range(n_heads + 1)))
    layer, head = result.best_head()
    print(f"strongest induction head: L{layer}H{head} ({result.induction_score[layer, head]:.3f})")
    print(f"mean loss, first repeat {result.loss_first.mean():.4f}; second repeat {result.loss_second.mean():.4f}")
    return 0
