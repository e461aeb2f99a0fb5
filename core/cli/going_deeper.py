"""`extrapolate` and `ladder`: stretching a model's context past its trained length, and the 2017 block updated
part by part.

`extrapolate` scores a model at several input lengths (core.going_deeper.extrapolation), or with --train trains
the six context models. `ladder` prints the bundled ladder's record, or with --train reruns it. Bad input is
refused in one line (exit 2) before any long work; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.cli import CliError
from core.cli.bounds import real_number, whole_number
from core.cli.progress import Progress, add_quiet_argument

MAX_LENGTHS = 32
MAX_LENGTH = 4096  # a length past what any model here accepts is still a row (refused), not a parse error
MAX_SEEDS = 16


def _lengths(text: str) -> list[int]:
    parse = whole_number(2, MAX_LENGTH)
    parts = [part for part in text.split(",") if part.strip()]
    if not parts or len(parts) > MAX_LENGTHS:
        raise argparse.ArgumentTypeError(f"give 1 to {MAX_LENGTHS} comma-separated lengths, e.g. 64,128,256")
    return [parse(part) for part in parts]


def _names(text: str) -> list[str]:
    from core.going_deeper.recipe import RUNGS

    names = [part.strip() for part in text.split(",") if part.strip()]
    known = [rung.name for rung in RUNGS]
    unknown = [name for name in names if name not in known]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"unknown rung {unknown[0] if unknown else '(none)'}; the rungs are "
                                         + ", ".join(known))
    return names


def register(subparsers: argparse._SubParsersAction) -> None:
    extrapolate = subparsers.add_parser(
        "extrapolate", help="loss against input length past the length a model was trained at",
        description="Cut a text into consecutive, non-overlapping windows of each length L (a shorter tail is dropped) "
        "and report the mean next-character loss over every prediction inside every window (L - 1 a window), in nats "
        "per character, and over the predictions made at positions past the trained length alone. A learned "
        "position table refuses a length past its rows; the other schemes accept up to the app's bound. With --train "
        "it trains the bundled context models instead (ctx-learned, ctx-sinusoidal, ctx-rope, ctx-alibi, ctx-none, "
        "and ctx-rope-pi fine-tuned from ctx-rope with its positions divided by 4).")
    what = extrapolate.add_mutually_exclusive_group(required=True)
    what.add_argument("--checkpoint", metavar="NAME_OR_DIR", help="a bundled model name or a checkpoint folder")
    what.add_argument("--train", action="store_true", help="train the six context models into --out")
    extrapolate.add_argument("--lengths", type=_lengths, default=[64, 128, 256, 512], metavar="L,L,...",
                             help=f"window lengths, 2 to {MAX_LENGTH:,} (default: 64,128,256,512)")
    text = extrapolate.add_mutually_exclusive_group()
    text.add_argument("--text-file", metavar="FILE", help="a UTF-8 text file in the model's vocabulary")
    text.add_argument("--held-out", action="store_true",
                      help="the last 10%% of the bundled Shakespeare, which no model here trained on")
    extrapolate.add_argument("--rope-scale", type=real_number(0.01, 1000.0), metavar="S",
                             help="a RoPE model's positions divided by S instead of its own rope_scale (no training)")
    extrapolate.add_argument("--out", metavar="DIR", help="with --train: the folder to write the models into")
    extrapolate.add_argument("--steps", type=whole_number(1, 1_000_000), help="with --train: steps instead of the recipe's")
    extrapolate.add_argument("--device", metavar="D", help="cpu, cuda, cuda:N or mps (default: the best present)")
    extrapolate.add_argument("--json", action="store_true", help="print JSON")
    add_quiet_argument(extrapolate)
    extrapolate.set_defaults(run=run_extrapolate)

    ladder = subparsers.add_parser(
        "ladder", help="the 2017 block updated part by part: each rung's held-out loss over seeds",
        description="Print the ladder: the 2017 block (post-norm, LayerNorm, ReLU, sinusoidal positions, biases), then "
        "one change per rung up to today's block (pre-norm, RMSNorm, SwiGLU, RoPE, no biases, grouped-query "
        "attention), every rung trained alike with several seeds and scored on the held-out last 10%% of the bundled "
        "Shakespeare in nats per character. A rung whose seeds' range overlaps the rung before's is no different "
        "within the spread. With --train it reruns the ladder and writes ladder.json and each rung's model into --out.")
    ladder.add_argument("--train", action="store_true", help="rerun the ladder (minutes a run on one thread)")
    ladder.add_argument("--seeds", type=whole_number(1, MAX_SEEDS), default=3, help="with --train: seeds a rung "
                        "(0, 1, ...; default: %(default)s)")
    ladder.add_argument("--rungs", type=_names, metavar="NAME,NAME", help="with --train: only these rungs")
    ladder.add_argument("--steps", type=whole_number(1, 1_000_000), help="with --train: steps instead of the recipe's")
    ladder.add_argument("--out", metavar="DIR", help="with --train: the folder for ladder.json and the rung models")
    ladder.add_argument("--write-held-out", metavar="FILE",
                        help="write the held-out last 10%% of the bundled Shakespeare to FILE (a new file), for "
                        "`evaluate --text-file`")
    ladder.add_argument("--json", action="store_true", help="print JSON")
    add_quiet_argument(ladder)
    ladder.set_defaults(run=run_ladder)


def _new_folder(path_text: str | None, option: str) -> Path:
    if not path_text:
        raise CliError(f"--train needs {option} DIR, the folder to write")
    out = Path(path_text)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CliError(f"{option} {out} exists and is not an empty folder; name a new one")
    if not out.parent.is_dir():
        raise CliError(f"the folder {out.parent} does not exist")
    return out


def _threads_note(quiet: bool, what: str) -> None:
    if not quiet:
        print(f"{what}: one thread a run, so that a rerun on the same CPU type repeats the weights", file=sys.stderr)


# ---- extrapolate --------------------------------------------------------------------------------------------------


def run_extrapolate(args: argparse.Namespace) -> int:
    if args.train:
        return _train_context_models(args)
    if not args.text_file and not args.held_out:
        raise CliError("give the text to score: --text-file FILE or --held-out")
    from core.cli.models import _encode, _load, _read_text

    text = _read_text(args.text_file) if args.text_file else None  # before loading, so a wrong path fails at once
    loaded = _load(args)
    if loaded.config.architecture != "decoder":
        raise CliError(f"{loaded.source} is an {loaded.config.architecture} model; extrapolate scores next-token "
                       "decoders")
    if args.rope_scale is not None:
        if loaded.config.positional != "rope":
            raise CliError(f"--rope-scale rescales RoPE positions; {loaded.source} has {loaded.config.positional} "
                           "positions")
        loaded.model.config = loaded.config.replace(rope_scale=args.rope_scale)
    if text is None:
        from core.going_deeper.recipe import held_out_text
        from core.going_deeper.trainer import corpus_text

        text = held_out_text(corpus_text())
    import torch

    from core.going_deeper.extrapolation import ExtrapolationError, extrapolate

    ids = torch.tensor(_encode(loaded, text), dtype=torch.long)  # (N,)
    trained = loaded.config.context_length
    with Progress("extrapolate", 1, "window", quiet=args.quiet) as progress:
        def advance(done: int, total: int) -> None:
            progress.total = max(1, total)
            progress.update(done)

        try:
            rows = extrapolate(loaded.model, ids, args.lengths, trained, on_progress=advance)
        except ExtrapolationError as error:
            raise CliError(str(error)) from None
    if args.json:
        from core.cli.common import print_json

        print_json({"checkpoint": loaded.source, "train_context": trained, "positional": loaded.model.config.positional,
                    "rope_scale": loaded.model.config.rope_scale, "accepted_length": loaded.config.accepted_length,
                    "characters": len(ids), "rows": [row.to_dict() for row in rows]})
        return 0
    from core.cli.common import print_table

    print(f"{loaded.source}: trained at {trained}, accepts up to {loaded.config.accepted_length:,} "
          f"({loaded.config.positional} positions); {len(ids):,} characters")
    table = [[str(row.length), str(row.windows), "refused" if row.refused else f"{row.nats_per_char:.4f}",
              "" if row.nats_per_char_beyond is None else f"{row.nats_per_char_beyond:.4f}", row.refused]
             for row in rows]
    print_table(table, ["length", "windows", "nats/char", "past trained", "note"], right_align={0, 1, 2, 3})
    return 0


def _train_context_models(args: argparse.Namespace) -> int:
    from core.going_deeper.trainer import train_context_models

    out = _new_folder(args.out, "--out")
    _threads_note(args.quiet, "extrapolate --train")
    report = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    out.mkdir(exist_ok=True)
    folders = train_context_models(out, steps=args.steps, report=report)
    print(f"wrote {len(folders)} models into {out}: " + ", ".join(folder.name for folder in folders))
    return 0


# ---- ladder -------------------------------------------------------------------------------------------------------


def run_ladder(args: argparse.Namespace) -> int:
    if args.write_held_out:
        return _write_held_out(Path(args.write_held_out))
    if args.train:
        record = _train_ladder(args)
    else:
        from core.going_deeper.ladder import LadderError, read_record

        try:
            record = read_record()
        except LadderError as error:
            raise CliError(str(error)) from None
    if args.json:
        from core.cli.common import print_json

        print_json(record)
        return 0
    _print_ladder(record)
    return 0


def _print_ladder(record: dict) -> None:
    from core.cli.common import print_table

    rows = []
    for rung in record["rungs"]:
        losses = ", ".join(f"{seed['nats_per_char']:.4f}" for seed in rung["seeds"])
        change = rung.get("change_from_previous")
        rows.append([rung["name"], f"{rung['parameters']:,}", f"{rung['mean_nats_per_char']:.4f}",
                     f"{rung['spread_nats_per_char']:.4f}", "" if change is None else f"{change:+.4f}", losses,
                     rung.get("against_previous") or "the first rung"])
    print_table(rows, ["rung", "parameters", "mean nats/char", "spread", "change", "seeds", "against the rung before"],
                right_align={1, 2, 3, 4})
    print(f"steps {record['recipe']['steps']}, batch {record['recipe']['batch_size']} x {record['recipe']['seq_len']}; "
          f"held-out last 10% of {record.get('corpus', 'the corpus')}; {record.get('seconds', 0):.0f} s of training")


def _train_ladder(args: argparse.Namespace) -> dict:
    from core.going_deeper.recipe import RECIPE, RUNGS
    from core.going_deeper.trainer import train_ladder

    out = _new_folder(args.out, "--out")
    seeds = list(range(args.seeds))
    rungs = args.rungs or [rung.name for rung in RUNGS]
    steps = args.steps or RECIPE["steps"]
    _threads_note(args.quiet, "ladder --train")
    out.mkdir(exist_ok=True)
    with Progress("ladder", len(rungs) * len(seeds), "run", quiet=args.quiet) as progress:
        runs = 0

        def report(line: str) -> None:
            nonlocal runs
            if line.startswith("run "):
                progress.update(runs, line)
                runs += 1
            elif not args.quiet:
                print(line, file=sys.stderr, flush=True)

        record = train_ladder(out, seeds=seeds, rung_names=rungs, steps=steps, report=report)
        progress.update(runs, "done")
    return record


def _write_held_out(path: Path) -> int:
    from core.going_deeper.recipe import held_out_text
    from core.going_deeper.trainer import corpus_text

    if path.exists():
        raise CliError(f"{path} exists; name a new file (nothing is overwritten)")
    if not path.parent.is_dir():
        raise CliError(f"the folder {path.parent} does not exist")
    text = held_out_text(corpus_text())
    with path.open("x", encoding="utf-8", newline="") as handle:
        handle.write(text)
    print(f"wrote {path}: the last 10% of the bundled Shakespeare ({len(text):,} characters)")
    return 0
