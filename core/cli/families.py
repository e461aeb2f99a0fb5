"""`fill-mask`, `translate`, `route`: what an encoder, an encoder-decoder and a mixture of experts do, on a bundled
model or a checkpoint folder.

`fill-mask` prints an encoder's top tokens at every blank of a text; `translate` decodes a source greedily and,
with --json, gives each step's cross-attention; `route` prints which experts each token went to in every layer,
the router's probabilities, each expert's load and the parameters one token uses. Bad input is refused in one
line (exit 2) before any forward pass.
"""

from __future__ import annotations

import argparse
import sys

from core.cli import PROG, CliError
from core.cli.bounds import bounded_text, token_ids, whole_number
from core.cli.causal_lab import _load, _sequence
from core.cli.common import print_json, print_table
from core.limits import MAX_TEXT_CHARS

MAX_TOP_K = 50  # core.experiments.fill_mask.MAX_TOP_K, without importing torch for --help
MAX_NEW_TOKENS = 256  # core.experiments.cross_attention.MAX_NEW_TOKENS


def _add_checkpoint(parser: argparse.ArgumentParser, family: str) -> None:
    parser.add_argument("--checkpoint", metavar="NAME_OR_DIR", required=True,
                        help=f"{family}: a bundled model name, a checkpoint folder, or a Hugging Face model folder")
    parser.add_argument("--device", metavar="D", help="cpu, cuda, cuda:N or mps (default: the best present)")
    parser.add_argument("--json", action="store_true", help="print every figure as JSON")


def register(subparsers: argparse._SubParsersAction) -> None:
    fill = subparsers.add_parser(
        "fill-mask", help="an encoder's top tokens and their probabilities at every blank of a text",
        description="Run an encoder-only model on a text whose blanks hold its mask token ('_' for the lab's "
        "character models, [MASK] or <mask> for BERT and RoBERTa) and print, per blank, the most probable tokens "
        "with their softmax probabilities over the whole vocabulary.",
    )
    _add_checkpoint(fill, "an encoder (tiny-encoder, a BERT folder)")
    text = fill.add_mutually_exclusive_group(required=True)
    text.add_argument("--text", metavar="TEXT", type=bounded_text(MAX_TEXT_CHARS), help="the text, blanks included")
    text.add_argument("--ids", metavar="ID,ID,...", type=token_ids(),
                      help="the text's ids, the mask token's id at each blank")
    fill.add_argument("--top", type=whole_number(1, MAX_TOP_K), default=5, metavar="K",
                      help="tokens listed per blank (default 5)")
    fill.set_defaults(run=run_fill_mask)

    translate = subparsers.add_parser(
        "translate", help="greedy decoding of an encoder-decoder model, with each step's cross-attention",
        description="The encoder reads the source; the decoder starts from START (tab) and appends its most probable "
        "token until END (newline) or --max-new steps. Prints each step's input, choice and top tokens; with --json "
        "also every step's cross-attention weights (layers x heads x steps x source) and their mean.",
    )
    _add_checkpoint(translate, "an encoder-decoder trained by the lab's seq2seq objective (tiny-encoder-decoder)")
    source = translate.add_mutually_exclusive_group(required=True)
    source.add_argument("--source", metavar="TEXT", type=bounded_text(MAX_TEXT_CHARS), help="the source text")
    source.add_argument("--source-ids", metavar="ID,ID,...", type=token_ids(), help="the source's ids")
    translate.add_argument("--max-new", type=whole_number(1, MAX_NEW_TOKENS), default=32, metavar="N",
                           help="most decoding steps (default 32); decoding stops after END")
    translate.add_argument("--top", type=whole_number(1, MAX_TOP_K), default=3, metavar="K",
                           help="tokens listed per step (default 3)")
    translate.set_defaults(run=run_translate)

    route = subparsers.add_parser(
        "route", help="a mixture of experts' routing: chosen experts, router probabilities, load, active parameters",
        description="One forward pass of the text through a mixture-of-experts model: per layer and token the experts "
        "chosen (top k of the router's scores) with their mixing weights and the router's probabilities over every "
        "expert, the tokens each expert received, and the parameters one token uses against the total.",
    )
    _add_checkpoint(route, "a mixture of experts (tiny-moe)")
    tokens = route.add_mutually_exclusive_group(required=True)
    tokens.add_argument("--text", metavar="TEXT", type=bounded_text(MAX_TEXT_CHARS), help="the text")
    tokens.add_argument("--ids", metavar="ID,ID,...", type=token_ids(), help="the text's ids")
    route.set_defaults(run=run_route)


def _refuse(problem: str) -> None:
    if problem:
        raise CliError(problem)


# ---- fill-mask ----------------------------------------------------------------------------------------------
def run_fill_mask(args: argparse.Namespace) -> int:
    from core.experiments.fill_mask import MASK_TOKENS, FillMaskError, encoder_problem, fill_mask, mask_id_of

    loaded = _load(args)
    _refuse(encoder_problem(loaded.config))
    tokenizer = loaded.tokenizer
    mask_id = mask_id_of(tokenizer)
    if mask_id is None:
        raise CliError(f"{loaded.source}: the tokenizer has no mask token ({', '.join(MASK_TOKENS)}); "
                       "the model was not trained to fill blanks")
    ids = _sequence(args.text, args.ids, tokenizer, "--text")
    try:
        result = fill_mask(loaded.model, ids, mask_id, args.top, tokenizer)
    except FillMaskError as error:
        raise CliError(str(error)) from None
    if args.json:
        print_json({"model": loaded.source, **result.to_dict()})
        return 0
    blanks = len(result.blanks)
    print(f"{loaded.source}: {blanks} blank{'s' if blanks != 1 else ''} (mask token id {mask_id}) in {len(ids)} tokens")
    for n, position in enumerate(result.blanks):
        print(f"blank at position {position}:")
        rows = [[str(rank + 1), label, f"{p:.4f}"]
                for rank, (label, p) in enumerate(zip(result.top_labels[n], result.top_probabilities[n]))]
        print_table(rows, ["rank", "token", "probability"], {0, 2})
    return 0


# ---- translate ----------------------------------------------------------------------------------------------
def _special(label: str, token_id: int, start_id: int, end_id: int) -> str:
    return "START" if token_id == start_id else "END" if token_id == end_id else label


def run_translate(args: argparse.Namespace) -> int:
    from core.experiments.cross_attention import DecodeError, greedy_decode, seq2seq_problem, special_ids

    loaded = _load(args)
    _refuse(seq2seq_problem(loaded.config))
    tokenizer = loaded.tokenizer
    try:
        start_id, end_id = special_ids(tokenizer)
    except DecodeError as error:
        raise CliError(f"{loaded.source}: {error}") from None
    source = _sequence(args.source, args.source_ids, tokenizer, "--source")
    max_new = min(args.max_new, loaded.config.context_length)
    try:
        result = greedy_decode(loaded.model, source, start_id, end_id, max_new, args.top, tokenizer)
    except DecodeError as error:
        raise CliError(str(error)) from None
    text = tokenizer.decode(list(result.output)) if tokenizer is not None else None
    warning = _spelling_warning(args.source if args.source is not None else
                                tokenizer.decode(source) if tokenizer is not None else None, tokenizer)
    if args.json:
        from core.date_corpus import LEARNED_SPELLINGS, reads_dates

        learned = list(LEARNED_SPELLINGS) if reads_dates(tokenizer) else None
        print_json({"model": loaded.source, "text": text, "learned_spellings": learned, "spelling_warning": warning,
                    **result.to_dict()})
        return 0
    if warning:
        print(f"{PROG} translate: warning: {warning}", file=sys.stderr)
    print(f"{loaded.source}: greedy decoding of {len(source)} source tokens, at most {max_new} steps")
    mean = result.cross_attention.mean(axis=(0, 1))  # (N, S) over layers and heads
    rows = []
    for n, (read, made) in enumerate(zip(result.decoder_input, result.generated)):
        top = ", ".join(f"{_special(label, int(i), start_id, end_id)} {p:.3f}" for i, label, p in
                        zip(result.top_ids[n], result.top_labels[n], result.top_probabilities[n]))
        looked = int(mean[n].argmax())
        rows.append([str(n), _special(result.input_labels[n], read, start_id, end_id),
                     _special(result.top_labels[n][0], made, start_id, end_id), top,
                     f"{looked}:{result.source_labels[looked]} {mean[n, looked]:.3f}"])
    print_table(rows, ["step", "reads", "produces", "top tokens", "most attended source (mean of layers, heads)"], {0})
    ending = "ended with END" if result.finished else f"no END within {max_new} steps"
    print(f"output: {text!r} ({ending})" if text is not None else f"output ids: {list(result.output)} ({ending})")
    return 0


def _spelling_warning(source: str | None, tokenizer) -> str | None:
    """Why a dates translator's answer for `source` is not what it learned (a spelling outside its pairs), or None."""
    from core.date_corpus import learned_spellings_text, reads_dates, spelling_problem

    if source is None or not reads_dates(tokenizer):
        return None
    problem = spelling_problem(source)
    if not problem:
        return None
    return (f"the source is outside the spellings the dates translator learned ({problem}); it learned "
            f"{learned_spellings_text()}, so its answer here, however confident, may be wrong")


# ---- route --------------------------------------------------------------------------------------------------
def run_route(args: argparse.Namespace) -> int:
    from core.experiments.routing import RoutingError, moe_problem, routing

    loaded = _load(args)
    _refuse(moe_problem(loaded.config))
    ids = _sequence(args.text, args.ids, loaded.tokenizer, "--text")
    try:
        result = routing(loaded.model, ids, loaded.tokenizer)
    except RoutingError as error:
        raise CliError(str(error)) from None
    if args.json:
        print_json({"model": loaded.source, **result.to_dict()})
        return 0
    print(f"{loaded.source}: {result.n_layers} layers of {result.n_experts} experts, each token sent to "
          f"{result.top_k}; {len(ids)} tokens")
    for layer in range(result.n_layers):
        print(f"layer {layer}:")
        rows = []
        for t, label in enumerate(result.token_labels):
            chosen = ", ".join(f"E{e} {result.weights[layer, t, e]:.3f}" for e in result.chosen[layer, t])
            probabilities = " ".join(f"{p:.3f}" for p in result.probabilities[layer, t])
            rows.append([str(t), label, chosen, probabilities])
        print_table(rows, ["position", "token", "experts (mixing weight)", "router probabilities E0.."], {0})
        load = ", ".join(f"E{e} {n}" for e, n in enumerate(result.load[layer]))
        print(f"load: {load} (balanced: {result.balanced_load:g} each)")
    agrees = "the same as" if result.instantiated_parameters == result.total_parameters else "but"
    print(f"parameters: {result.total_parameters:,} in all by formula ({agrees} {result.instantiated_parameters:,} "
          f"counted on the model); one token uses {result.active_parameters:,} ({result.active_share:.1%}): {result.top_k} of "
          f"{result.n_experts} experts of {result.expert_parameters:,} each per layer")
    return 0
