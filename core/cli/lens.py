"""`lens`: a tuned lens trained on a model, the bundled ones listed, and its KL from the output beside the logit lens's.

`lens train --checkpoint M --out F` caches the stream entering every block over the training split
(the first nine tenths of the text) and fits one translator per block; `lens --checkpoint M
--text-file F --window 128 --json` prints KL(final || lens) per block for both lenses, the mean over
every position of the text's consecutive windows.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from core.cli import CliError
from core.cli.bounds import real_number, seed, whole_number
from core.cli.common import print_json, print_table
from core.cli.progress import Progress, add_quiet_argument

MAX_STEPS = 100_000
MAX_WINDOW = 4096
MAX_TOKENS = 4_000_000


def register(subparsers: argparse._SubParsersAction) -> None:
    lens = subparsers.add_parser(
        "lens", help="tuned lens: train one, list the bundled ones, or compare its KL per block with the logit lens's",
        description="With no action: KL(final || lens) per block of the logit lens and the tuned lens on a text read "
        "as consecutive windows. `lens train` fits a lens; `lens list` names the bundled ones.")
    lens.add_argument("--checkpoint", metavar="NAME_OR_DIR", help="a bundled model name or a checkpoint folder")
    lens.add_argument("--lens", metavar="NAME_OR_FILE", help="the tuned lens (default: the bundled one of the model)")
    lens.add_argument("--device", metavar="D", help="cpu, cuda, cuda:N or mps (default: the best present)")
    lens.add_argument("--text-file", metavar="F", help="a UTF-8 text (default: the bundled Shakespeare corpus)")
    lens.add_argument("--part", choices=("all", "train", "held-out"), default="all",
                      help="all of the text, its first nine tenths or its last tenth (default all)")
    lens.add_argument("--window", type=whole_number(2, MAX_WINDOW), default=128, metavar="T",
                      help="tokens per window (default 128)")
    lens.add_argument("--tokens", type=whole_number(2, MAX_TOKENS), default=4096, metavar="N",
                      help="at most this many tokens from the start of the part (default 4,096)")
    lens.add_argument("--json", action="store_true", help="print every figure as JSON")
    lens.set_defaults(run=run_lens_report, action=None)
    actions = lens.add_subparsers(dest="action", metavar="ACTION", parser_class=type(lens))

    train = actions.add_parser("train", help="fit one affine translator per block by the KL from the model's output")
    train.add_argument("--checkpoint", metavar="NAME_OR_DIR", required=True, help="a bundled model name or a folder")
    train.add_argument("--device", metavar="D", help="cpu, cuda, cuda:N or mps (default: the best present)")
    train.add_argument("--out", required=True, metavar="FILE", help="the lens file to write (.safetensors)")
    train.add_argument("--text-file", metavar="F", help="the corpus (default: the bundled Shakespeare); its first "
                       "nine tenths are read")
    train.add_argument("--steps", type=whole_number(1, MAX_STEPS), default=600, metavar="N", help="steps (default 600)")
    train.add_argument("--batch", type=whole_number(16, 65536), default=2048, metavar="B",
                       help="tokens a step (default 2048)")
    train.add_argument("--lr", type=real_number(1e-6, 1.0), default=1e-3, help="Adam's learning rate (default 0.001)")
    train.add_argument("--tokens", type=whole_number(128, MAX_TOKENS), default=131_072, metavar="N",
                       help="tokens whose streams are cached (default 131,072)")
    train.add_argument("--window", type=whole_number(2, MAX_WINDOW), default=128, metavar="T",
                       help="tokens per window (default 128)")
    train.add_argument("--seed", type=seed(), default=0, metavar="S", help="seed (default 0)")
    add_quiet_argument(train)
    train.set_defaults(run=run_lens_train)

    listing = actions.add_parser("list", help="the bundled tuned lenses")
    listing.add_argument("--json", action="store_true", help="print them as JSON")
    listing.set_defaults(run=run_lens_list)


def _check_out(path_text: str) -> Path:
    path = Path(path_text)
    if path.is_dir():
        raise CliError(f"{path} is a folder; give a file name for the lens")
    if not path.parent.is_dir():
        raise CliError(f"the folder {path.parent} does not exist")
    if path.exists():
        from core.features.tuned_lens import read_lens_header

        read_lens_header(path)  # only a lens file is replaced: anything else is refused, untouched
    return path


def run_lens_train(args: argparse.Namespace) -> int:
    from core.cli.features import load_model, read_windows
    from core.features.activations import random_windows
    from core.features.tuned_lens import save_lens, train_lens

    out = _check_out(args.out)
    loaded = load_model(args.checkpoint, args.device)
    ids = read_windows(argparse.Namespace(text_file=args.text_file, window=args.window, tokens=None),
                       loaded.tokenizer, default_part="train").flatten()
    windows = random_windows(ids, args.window, max(1, args.tokens // args.window), args.seed)
    with Progress("lens train", args.steps, "step", quiet=args.quiet) as progress:
        result = train_lens(loaded.model, windows, steps=args.steps, batch_tokens=args.batch, lr=args.lr,
                            seed=args.seed, on_progress=lambda step, kl: progress.update(step, f"KL {kl:.4f}"))
    save_lens(result.lens, out)
    final = result.losses[-1][1] if result.losses else float("nan")
    print(f"wrote {out}: a tuned lens of {len(result.lens.layer_translators)} translators for {loaded.config.name}; "
          f"{result.steps_done} steps in {result.wall_time_s:.1f} s, final mean KL {final:.4f} nats on its batch")
    return 0


def run_lens_list(args: argparse.Namespace) -> int:
    from core.features.library import bundled_lenses

    rows = bundled_lenses()
    if args.json:
        print_json({"lenses": rows})
    else:
        print_table([[r["name"], r["model"], r["path"]] for r in rows], ["name", "model", "path"])
    return 0


def run_lens_report(args: argparse.Namespace) -> int:
    from core.cli.features import load_model, read_windows
    from core.features.library import bundled_lens_for, lens_path
    from core.features.tuned_lens import lens_kl, load_lens

    if not args.checkpoint:
        raise CliError("give --checkpoint (or an action: train, list)")
    loaded = load_model(args.checkpoint, args.device)
    path = lens_path(args.lens) if args.lens else bundled_lens_for(loaded.config.name)
    if path is None:
        raise CliError(f"no bundled tuned lens for {loaded.config.name}; give --lens FILE (see `lens train`)")
    lens = load_lens(path, loaded.model)
    windows = read_windows(args, loaded.tokenizer)
    report = lens_kl(loaded.model, lens, windows)
    if args.json:
        print_json({**report, "tokens": int(windows.numel()), "lens": str(path)})
        return 0
    rows = [[str(i), f"{a:.4f}", f"{b:.4f}"] for i, (a, b) in
            enumerate(zip(report["logit_lens_kl"], report["tuned_lens_kl"]))]
    print(f"KL(final || lens) in nats, mean over {windows.numel():,} tokens of {loaded.source}, "
          "read entering each block:")
    print_table(rows, ["block", "logit lens", "tuned lens"], right_align={0, 1, 2})
    return 0
