"""`sae` and `lens`: sparse autoencoders and tuned lenses trained on a model, listed, measured and read.

`sae train` caches a hook's activations over the training split of a text (the first nine tenths)
once, trains a TopK (or ReLU + L1) SAE, or a transcoder, on them and saves it in SAELens's layout;
`sae stats` prints the four figures on a text read as consecutive windows; `sae top` the contexts
where one feature fires most. `lens train` fits one affine translator per block; `lens` with no action
prints the logit lens's and the tuned lens's KL from the model's output per block. Bad input is refused
in one line (exit 2) before any long work.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from core.cli import CliError
from core.cli.bounds import real_number, seed, whole_number
from core.cli.common import print_json
from core.cli.progress import Progress, add_quiet_argument

MAX_FEATURES = 1 << 17
MAX_STEPS = 1_000_000
MAX_CACHE_TOKENS = 4_000_000  # core.features.activations.MAX_TOKENS, without importing torch for --help
MAX_WINDOW = 4096
PARTS = ("all", "train", "held-out")


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", metavar="NAME_OR_DIR", required=True,
                        help="a bundled model name or a checkpoint folder")
    parser.add_argument("--device", metavar="D", help="cpu, cuda, cuda:N or mps (default: the best present)")


def _text_options(parser: argparse.ArgumentParser, default_tokens: int) -> None:
    parser.add_argument("--text-file", metavar="F", help="a UTF-8 text (default: the bundled Shakespeare corpus)")
    parser.add_argument("--part", choices=PARTS, default="all",
                        help="read all of it, its first nine tenths (train) or its last tenth (held-out), as training "
                        "splits a corpus; default all")
    parser.add_argument("--window", type=whole_number(2, MAX_WINDOW), default=128, metavar="T",
                        help="tokens per window (default 128)")
    parser.add_argument("--tokens", type=whole_number(2, MAX_CACHE_TOKENS), default=default_tokens, metavar="N",
                        help=f"at most this many tokens, from the start of the part (default {default_tokens:,})")


def register(subparsers: argparse._SubParsersAction) -> None:
    sae = subparsers.add_parser(
        "sae", help="sparse autoencoders: train one on a hook's activations, list, measure, and read a feature",
        description="Sparse autoencoders in SAELens's on-disk layout (cfg.json, sae_weights.safetensors).")
    actions = sae.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(sae))

    train = actions.add_parser("train", help="train a TopK or ReLU SAE, or a transcoder, on cached activations")
    _model_options(train)
    train.add_argument("--hook", required=True, metavar="NAME",
                       help="the TransformerLens hook read, e.g. blocks.2.hook_resid_post")
    train.add_argument("--hook-out", metavar="NAME",
                       help="a transcoder: the hook it predicts (e.g. blocks.2.hook_mlp_out)")
    train.add_argument("--d-sae", type=whole_number(1, MAX_FEATURES), default=512, metavar="F",
                       help="features (default 512)")
    train.add_argument("--k", type=whole_number(1, MAX_FEATURES), default=16,
                       help="TopK's active features a token (default 16)")
    train.add_argument("--l1", type=real_number(0.0, 1000.0), metavar="C",
                       help="train a ReLU SAE with this L1 coefficient instead of TopK (a transcoder always is one)")
    train.add_argument("--steps", type=whole_number(1, MAX_STEPS), default=800, metavar="N", help="steps (default 800)")
    train.add_argument("--batch", type=whole_number(16, 65536), default=4096, metavar="B",
                       help="tokens a step (default 4096)")
    train.add_argument("--lr", type=real_number(1e-6, 1.0), default=2e-3, help="Adam's learning rate (default 0.002)")
    train.add_argument("--seed", type=seed(), default=0, metavar="S", help="seed (default 0)")
    train.add_argument("--text-file", metavar="F", help="the corpus (default: the bundled Shakespeare); its first nine "
                       "tenths are read")
    train.add_argument("--window", type=whole_number(2, MAX_WINDOW), default=128, metavar="T",
                       help="tokens per window when caching (default 128)")
    train.add_argument("--cache-tokens", type=whole_number(128, MAX_CACHE_TOKENS), default=262_144, metavar="N",
                       help="activations cached once, read by every step (default 262,144)")
    train.add_argument("--out", required=True, metavar="DIR", help="the SAE folder to write")
    add_quiet_argument(train)
    train.set_defaults(run=run_sae_train)

    listing = actions.add_parser("list", help="the bundled SAEs")
    listing.add_argument("--json", action="store_true", help="print them as JSON")
    listing.set_defaults(run=run_sae_list)

    stats = actions.add_parser("stats", help="variance explained, L0, dead fraction and CE loss recovered on a text")
    _model_options_optional(stats)
    stats.add_argument("--sae", required=True, metavar="NAME_OR_DIR", help="a bundled SAE's name or an SAE folder")
    _text_options(stats, 4096)
    stats.add_argument("--json", action="store_true", help="print every figure as JSON")
    stats.set_defaults(run=run_sae_stats)

    top = actions.add_parser("top", help="the contexts where one feature fires most, the firing token marked")
    _model_options_optional(top)
    top.add_argument("--sae", required=True, metavar="NAME_OR_DIR", help="a bundled SAE's name or an SAE folder")
    top.add_argument("--feature", type=whole_number(0, MAX_FEATURES), required=True, metavar="I", help="the feature")
    top.add_argument("--count", type=whole_number(1, 100), default=10, metavar="N", help="contexts (default 10)")
    _text_options(top, 16384)
    top.add_argument("--json", action="store_true", help="print them as JSON")
    top.set_defaults(run=run_sae_top)


def _model_options_optional(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", metavar="NAME_OR_DIR",
                        help="the model (default: the one the SAE names, when it is bundled)")
    parser.add_argument("--device", metavar="D", help="cpu, cuda, cuda:N or mps (default: the best present)")


# ---- shared ---------------------------------------------------------------------------------------


def load_model(checkpoint: str, device_name: str | None):
    from core.checkpoints import resolve_checkpoint
    from core.device import choose_device

    choice = choose_device(device_name)
    if choice.message:
        print(f"note: {choice.message}", file=sys.stderr)
    loaded = resolve_checkpoint(checkpoint, device=choice.device)
    if loaded.tokenizer is None:
        raise CliError(f"{loaded.source} has no tokenizer, so it cannot read a text")
    if loaded.config.architecture != "decoder":
        raise CliError(f"{loaded.source} is an {loaded.config.architecture} model; SAEs and lenses here read decoders")
    return loaded


def read_windows(args: argparse.Namespace, tokenizer, default_part: str | None = None):
    """(W, T) consecutive windows of the chosen part of the text file (or the bundled corpus)."""
    from core.features.activations import consecutive_windows, split_ids, token_ids
    from core.features.library import read_text

    if args.text_file:
        text = read_text(args.text_file)
    else:
        from core.corpus import bundled_corpus

        text = bundled_corpus().text
    part = default_part or args.part
    return consecutive_windows(split_ids(token_ids(tokenizer, text), part), args.window, getattr(args, "tokens", None))


def _open_sae_and_model(args: argparse.Namespace):
    from core.features.library import open_sae
    from core.features.sae import check_fits

    sae = open_sae(args.sae)
    checkpoint = args.checkpoint or sae.config.model_name
    if not checkpoint:
        raise CliError("this SAE names no model; give --checkpoint")
    loaded = load_model(checkpoint, args.device)
    check_fits(sae, loaded.model, loaded.config.name)
    return sae, loaded


# ---- sae ------------------------------------------------------------------------------------------


def run_sae_train(args: argparse.Namespace) -> int:
    import torch

    from core.checkpoints import check_destination
    from core.features.activations import collect, random_windows
    from core.features.hook_names import app_hook, hook_width
    from core.features.sae import SAEConfig, save_sae
    from core.features.sae_training import SAETrainSettings, train_sae

    check_destination(args.out)
    if args.hook_out and args.l1 is None:
        raise CliError("a transcoder is a ReLU one (as SAELens's): give --l1 C with --hook-out")
    loaded = load_model(args.checkpoint, args.device)
    model = loaded.model
    in_hook = app_hook(model, args.hook)
    out_hook = app_hook(model, args.hook_out) if args.hook_out else None
    if args.l1 is None and args.k > args.d_sae:
        raise CliError(f"--k {args.k} is more than the SAE's {args.d_sae} features")
    windows_needed = max(1, args.cache_tokens // args.window)
    train_ids = read_windows(argparse.Namespace(text_file=args.text_file, window=args.window, tokens=None),
                             loaded.tokenizer, default_part="train").flatten()
    windows = random_windows(train_ids, args.window, windows_needed, args.seed)
    config = SAEConfig(architecture="standard" if args.l1 is not None else "topk", d_in=hook_width(model, args.hook),
                       d_sae=args.d_sae, hook_name=args.hook, model_name=loaded.config.name,
                       k=0 if args.l1 is not None else args.k, l1_coefficient=args.l1 or 0.0,
                       hook_name_out=args.hook_out, d_out=hook_width(model, args.hook_out) if args.hook_out else None,
                       context_size=args.window,
                       dataset=args.text_file.rsplit("/", 1)[-1] if args.text_file else "tinyshakespeare.txt")
    from core.features.fingerprint import weights_fingerprint

    config = dataclasses.replace(config, model_fingerprint=weights_fingerprint(model))
    hooks = [in_hook] + ([out_hook] if out_hook else [])
    with Progress("caching activations", len(windows), "window", quiet=args.quiet) as progress:
        cache = collect(model, windows, hooks, on_progress=lambda done, _total: progress.update(done))
    settings = SAETrainSettings(steps=args.steps, batch_tokens=args.batch, lr=args.lr, seed=args.seed,
                                l1_coefficient=args.l1 or 0.0)
    torch.manual_seed(args.seed)
    with Progress("sae train", args.steps, "step", quiet=args.quiet) as progress:
        result = train_sae(config, cache[in_hook], cache[out_hook] if out_hook else None, settings,
                           on_progress=lambda step, loss, dead: progress.update(
                               step, f"loss {loss:.4f} dead {dead:.1%}"))
    folder = save_sae(result.sae, args.out)
    final = result.losses[-1][1] if result.losses else float("nan")
    print(f"wrote {folder}: {config.architecture} SAE of {config.d_sae} features on {loaded.config.name} "
          f"{args.hook}; {result.steps_done} steps in {result.wall_time_s:.1f} s "
          f"({result.tokens_per_s:,.0f} tokens/s), "
          f"final loss {final:.4f} of the variance, {result.dead_fraction:.1%} features dead")
    return 0


def run_sae_list(args: argparse.Namespace) -> int:
    from core.features.library import bundled_saes

    rows = bundled_saes()
    if args.json:
        print_json({"saes": rows})
        return 0
    from core.cli.common import print_table

    print_table([[r["name"], r["model"], r["hook"], str(r["d_sae"]), r["path"]] for r in rows],
                ["name", "model", "hook", "d_sae", "path"], right_align={3})
    return 0


def run_sae_stats(args: argparse.Namespace) -> int:
    from core.features.sae_stats import sae_stats

    sae, loaded = _open_sae_and_model(args)
    windows = read_windows(args, loaded.tokenizer)
    stats = sae_stats(loaded.model, sae, windows)
    if args.json:
        print_json(stats.as_dict())
        return 0
    print(f"{args.sae} on {loaded.source}, {stats.tokens:,} tokens in windows of {windows.shape[1]}: "
          f"variance explained {stats.variance_explained:.4f}, L0 {stats.l0:.2f}, dead {stats.dead_fraction:.1%}, "
          f"CE recovered {stats.ce_recovered:.4f} (clean {stats.ce_clean:.4f}, spliced {stats.ce_spliced:.4f}, "
          f"zero {stats.ce_zero:.4f} nats)")
    return 0


def run_sae_top(args: argparse.Namespace) -> int:
    from core.display import display_token
    from core.features.sae import check_feature
    from core.features.sae_stats import feature_activations, top_contexts

    sae, loaded = _open_sae_and_model(args)
    check_feature(sae, args.feature)
    windows = read_windows(args, loaded.tokenizer)
    activations = feature_activations(loaded.model, sae, windows)
    contexts = top_contexts(activations, windows, args.feature, args.count)
    tokenizer = loaded.tokenizer
    if args.json:
        print_json({"feature": args.feature, "contexts": [
            {"window": c.window, "position": c.position, "activation": c.activation,
             "tokens": [tokenizer.token_text(i) for i in c.ids], "activations": list(c.activations),
             "marked": c.marked} for c in contexts]})
        return 0
    if not contexts:
        print(f"feature {args.feature} fires on none of the {windows.numel():,} tokens")
    for c in contexts:
        text = "".join(display_token(tokenizer.token_text(i)) if n != c.marked
                       else f"[[{display_token(tokenizer.token_text(i))}]]" for n, i in enumerate(c.ids))
        print(f"{c.activation:8.3f}  {text}")
    return 0
