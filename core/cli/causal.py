"""`causal`: edit one token and print, per layer and position, how far the residual stream moved.

`causal --textbook` prints the reading's "minimal block, verified" table. Otherwise the command
builds a model (a preset or config with random weights from --seed, or a --checkpoint), runs the
original and the edited sequence through the same kernels and shapes and marks every position whose vector passed
torch.equal as "0 (exact)"; a tiny nonzero change is printed as the number it is.
"""

from __future__ import annotations

import argparse
import sys

from core.cli import CliError
from core.cli.bounds import bounded_text, seed, token_id, token_ids, whole_number
from core.cli.common import add_model_arguments, config_from_args, print_json, print_table
from core.choices import MASK_MODES
from core.limits import MAX_TEXT_CHARS

CHAR_VOCAB_SIZE = 65  # the Shakespeare character vocabulary the bundled corpus defines
CORPUS_FILE = "tinyshakespeare.txt"
# Typing a newline or a tab into --edit is awkward, so these spellings stand for them.
TOKEN_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\s": " "}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "causal",
        help="edit one token and measure which positions move in every layer",
        description="The causal-mask test of the reading, on any model: the original and the edited "
        "sequence run through the same kernels and shapes; every (layer, position) whose vector is bitwise unchanged "
        "(torch.equal) prints as '0 (exact)'.",
    )
    parser.add_argument("--textbook", action="store_true", help="print the reading's 'minimal block, verified' table")
    add_model_arguments(parser, default_preset=None)
    parser.add_argument(
        "--checkpoint", metavar="NAME_OR_DIR", help="a bundled model name or a checkpoint folder (instead of --preset)"
    )
    tokens = parser.add_mutually_exclusive_group()
    tokens.add_argument("--text", metavar="TEXT", type=bounded_text(MAX_TEXT_CHARS),
                        help="the sequence as text (character vocabulary, 65 tokens)")
    tokens.add_argument("--ids", metavar="ID,ID,...", type=token_ids(),
                        help="the sequence as comma-separated token ids")
    parser.add_argument(
        "--edit",
        metavar="POS=TOKEN",
        help="the edit: position and new token (a character with --text, an id with --ids; \\n \\t \\s for "
        "newline, tab, space)",
    )
    parser.add_argument("--mask", choices=MASK_MODES, help="the self-attention mask (default: the model's own)")
    parser.add_argument("--layers", type=whole_number(1, 10_000), metavar="N", help="run only the first N blocks")
    parser.add_argument("--seed", type=seed(), default=0, metavar="S", help="seed of the random weights (default 0)")
    parser.add_argument("--device", metavar="D", help="cpu, cuda, cuda:N or mps (default: the best present)")
    parser.add_argument("--json", action="store_true", help="print the measurement as JSON")
    parser.set_defaults(run=run_causal)


# ---- --textbook -------------------------------------------------------------------------------------
def _run_textbook(args: argparse.Namespace) -> int:
    chosen = [flag for flag, value in (("--preset", args.preset), ("--config", args.config), ("--set", args.set),
              ("--checkpoint", args.checkpoint), ("--text", args.text), ("--ids", args.ids), ("--edit", args.edit),
              ("--mask", args.mask), ("--layers", args.layers)) if value]
    if chosen:
        raise CliError(f"--textbook runs the reading's fixed script; leave out {', '.join(chosen)}")
    from core.experiments.textbook_table import textbook_causal_table

    table = textbook_causal_table()
    if args.json:
        print_json(
            {
                "input_shape": list(table.input_shape),
                "output_shape": list(table.output_shape),
                "parameters": table.n_parameters,
                "edit_position": table.edit_position,
                "max_change": table.max_change.tolist(),
                "max_change_exact": table.max_change_exact.tolist(),
                "exactly_unchanged": table.exactly_unchanged.tolist(),
                "max_change_no_mask": table.max_change_no_mask.tolist(),
                "no_mask_past_max_change": table.no_mask_past_max_change,
            }
        )
        return 0
    for line in table.lines():
        print(line)
    return 0


# ---- model, tokenizer, sequence ------------------------------------------------------------------------
def _load_checkpoint(name_or_dir: str, device):
    from core.checkpoints import CheckpointError, resolve_checkpoint

    try:
        loaded = resolve_checkpoint(name_or_dir, device=device)
    except CheckpointError as error:
        raise CliError(str(error)) from None
    return loaded.model, loaded.tokenizer, loaded.source


def _preset_tokenizer(config):
    """The text tokenizer of a preset's random-weight model: the Shakespeare characters when the vocabulary is
    theirs, else the bundled model of the preset's name when its vocabulary has the preset's size (the blank of
    tiny-encoder, the dates of tiny-encoder-decoder), else none."""
    from core.checkpoints import bundled_model_names, load_bundled
    from core.tokenizers import CharTokenizer
    from resources import resource_path

    if config.vocab_size == CHAR_VOCAB_SIZE:
        return CharTokenizer.from_text(resource_path(CORPUS_FILE).read_text(encoding="utf-8"))
    if config.name in bundled_model_names():
        tokenizer = load_bundled(config.name).tokenizer
        if tokenizer is not None and tokenizer.vocab_size == config.vocab_size:
            return tokenizer
    return None


def _parse_edit(text: str | None, tokenizer) -> tuple[int, int]:
    """POS=TOKEN -> (position, new token id); TOKEN is text with a tokenizer, an id without one."""
    if not text:
        raise CliError("give the edit as --edit POS=TOKEN (e.g. --edit 5=x), or use --textbook")
    if "=" not in text:
        raise CliError(f"--edit expects POS=TOKEN, got {text!r}")
    position_text, token_text = text.split("=", 1)
    try:
        position = int(position_text)
    except ValueError:
        raise CliError(f"--edit position must be a whole number, got {position_text!r}") from None
    if tokenizer is None:
        try:
            return position, token_id()(token_text)
        except argparse.ArgumentTypeError as error:
            raise CliError(f"--edit: without a tokenizer the new token is an id, which {error}") from None
    if token_text == "":
        raise CliError("--edit needs a token after '=' (use \\s for a space)")
    return position, tokenizer.id_of(TOKEN_ESCAPES.get(token_text, token_text))


def _sequence(args: argparse.Namespace, tokenizer, vocab_size: int):
    """The token ids and the tokenizer used for labels and for the edit's token."""
    if args.text is not None:
        if tokenizer is None:
            raise CliError(
                f"this model's vocabulary has {vocab_size} tokens and no text tokenizer; give --ids and --edit POS=ID"
            )
        ids = tokenizer.encode(args.text)
        if not ids:
            raise CliError("--text is empty; give at least one character")
        return ids, tokenizer
    if args.ids is not None:
        return list(args.ids), None
    raise CliError("give the sequence with --text TEXT or --ids 1,2,3")


def _build_model(args: argparse.Namespace, n_tokens_hint: int | None):
    """(model, tokenizer or None, description)."""
    from core.device import check_fits, choose_device, estimate_memory
    from core.model import Transformer

    choice = choose_device(args.device)
    if choice.message:
        print(f"note: {choice.message}", file=sys.stderr)
    if args.checkpoint:
        if args.preset or args.config or args.set:
            raise CliError("--checkpoint brings its own config; leave out --preset, --config and --set")
        return _load_checkpoint(args.checkpoint, choice.device)
    if not args.preset and not args.config:
        args.preset = "tiny-gpt"
    config = config_from_args(args)
    seq = min(n_tokens_hint or config.context_length, config.accepted_length)
    estimate = estimate_memory(config, batch=2, seq=seq, captured_residual_layers=config.n_layers + 1, mask_mode=args.mask)
    check_fits(estimate, choice.device)
    model = Transformer.from_seed(config, seed=args.seed, device=choice.device)
    tokenizer = _preset_tokenizer(config)
    return model, tokenizer, f"{config.name}, random weights from seed {args.seed}"


# ---- output ---------------------------------------------------------------------------------------------
def format_change(value: float, exact: bool, is_nan: bool) -> str:
    """'0 (exact)' only when torch.equal said so; any other value as the number it is, never rounded to 0."""
    if exact:
        return "0 (exact)"
    if is_nan:
        return "nan"
    return f"{value:.3g}"


def _print_result(result, description: str) -> None:
    from core.experiments.causal_edit import past_span

    t = result.edit_position
    old, new = result.token_labels[t], result.edited_token_labels[t]
    print(f"{description}: {result.mask_mode} mask, position {t} edited {old!r} -> {new!r}")
    print("max |change| of the residual stream (rows: positions, columns: layers); '0 (exact)' = torch.equal")
    header = ["pos", "token", *result.layer_labels, "logits", ""]
    rows = []
    for position in range(result.n_tokens):
        label = result.token_labels[position]
        if position == t:
            label = f"{old}->{new}"
        cells = [
            format_change(result.max_change[row, position], result.exactly_unchanged[row, position], result.nan_entries[row, position])
            for row in range(result.n_layers + 1)
        ]
        logits = result.logits_change[position]
        logits_cell = format_change(logits, bool(result.logits_exactly_unchanged[position]), bool(logits != logits))
        marker = "<- edit" if position == t else ("before" if result.bidirectional else "past") if position < t else ""
        rows.append([str(position), label, *cells, logits_cell, marker])
    print_table(rows, header, set(range(2, len(header) - 1)) | {0})
    if t == 0:
        print("the edit is at position 0: there is no past")
    elif result.past_exactly_unchanged:
        print(f"{past_span(t)} (before the edit): bitwise unchanged in every layer")
    elif result.leaks_into_past and result.bidirectional:
        print(f"{past_span(t)} (before the edit): moved, from {result.layer_labels[result.first_leaking_layer]} on, "
              "as a bidirectional model's must (no causal mask)")
    elif result.leaks_into_past:
        print(f"{past_span(t)} (before the edit): MOVED, from {result.layer_labels[result.first_leaking_layer]} on")
    else:
        print(f"{past_span(t)} (before the edit): unchanged wherever defined; NaN elsewhere")
    print(f"note: {result.note}")


def run_causal(args: argparse.Namespace) -> int:
    if args.textbook:
        return _run_textbook(args)
    if args.layers is not None and args.layers < 0:
        raise CliError(f"--layers must be 0 or more, got {args.layers}")
    # The memory check sizes activations by the real sequence, not the preset's whole context.
    n_tokens_hint = len(args.text) if args.text is not None else (len(args.ids) if args.ids else None)
    model, tokenizer, description = _build_model(args, n_tokens_hint)
    if args.layers is not None and args.layers > len(model.blocks):
        raise CliError(f"--layers {args.layers}: the model has only {len(model.blocks)} blocks")
    ids, labels_from = _sequence(args, tokenizer, model.config.vocab_size)
    position, new_token = _parse_edit(args.edit, labels_from)

    from core.experiments.causal_edit import causal_edit_diff

    result = causal_edit_diff(
        model, ids, position, new_token, mask_mode=args.mask, n_blocks=args.layers, tokenizer_or_labels=labels_from
    )
    if args.json:
        data = result.to_dict()
        data["model"] = description
        data["tokens"] = ids
        data["edited_tokens"] = [new_token if i == position else token for i, token in enumerate(ids)]
        print_json(data)
        return 0
    _print_result(result, description)
    return 0
