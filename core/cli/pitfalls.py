"""`pitfalls`: train the reading's common pitfalls beside the fix, same seed and steps, and print what each run measured."""

from __future__ import annotations

import argparse
import math
import sys

from core.cli import CliError
from core.cli.bounds import seed, whole_number
from core.cli.common import print_json, print_table
from core.cli.progress import Progress, add_quiet_argument
from core.display import plural
from core.experiments.pitfall_setups import EXPERIMENT_TITLES, EXPERIMENTS, MAX_STEPS, SIZES, PitfallError, run_keys
from core.experiments.pitfalls import check_experiment, run_comparison, summary_rows, verdict


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "pitfalls",
        help="train a mask or norm pitfall beside the fix (same seed and steps) and compare the curves",
        description="masks: the same small decoder trained with the causal mask, the mask after the softmax and no "
        "mask; the held-out loss is scored under each run's own mask and under the causal mask (what generation "
        "meets). warmup: a deep stack pre-norm, post-norm without warm-up and post-norm with warm-up, each block's "
        "gradient norm recorded over the steps. Trains on the bundled Shakespeare, on the CPU.",
    )
    parser.add_argument("experiment", choices=EXPERIMENTS, help="masks or warmup")
    parser.add_argument("--steps", type=whole_number(1, MAX_STEPS), metavar="N", help="steps of each run (default: the size's)")
    parser.add_argument("--seed", type=seed(), default=0, help="seed shared by every run (default 0)")
    parser.add_argument(
        "--size", choices=tuple(SIZES), default="lecture", help="lecture: a few minutes in all; ci: seconds (default lecture)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON (with every run's loss and gradient-norm record)")
    add_quiet_argument(parser)
    parser.set_defaults(run=run_pitfalls)


def _number(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if math.isfinite(value) else "-"


def _ratio(value: float) -> str:
    return f"x{value:.3g}" if math.isfinite(value) else "-"


def run_pitfalls(args: argparse.Namespace) -> int:
    from resources import resource_path

    setup = SIZES[args.size][args.experiment].with_overrides(steps=args.steps, seed=args.seed)
    try:
        check_experiment(args.experiment, setup)
    except PitfallError as error:
        raise CliError(str(error)) from None
    text = resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")
    keys = run_keys(args.experiment)
    progress = Progress(args.experiment, len(keys) * setup.steps, "step", quiet=args.quiet)

    def on_step(key: str, step: int, loss: float) -> None:
        progress.update(keys.index(key) * setup.steps + step, f"{key} step {step}/{setup.steps}  loss {loss:.3f}")

    if not args.quiet:
        print(f"{args.experiment}: {EXPERIMENT_TITLES[args.experiment]}; {plural(setup.n_layers, 'block')} of d_model "
              f"{setup.d_model}, {setup.steps} steps of {setup.batch_size} x {setup.seq_len}, lr {setup.lr:g}, seed "
              f"{setup.seed}", file=sys.stderr)
    try:
        comparison = run_comparison(args.experiment, text, setup, on_step=None if args.quiet else on_step)
    except PitfallError as error:
        raise CliError(str(error)) from None
    finally:
        progress.close()
    rows = summary_rows(comparison)
    if args.json:
        print_json({
            "experiment": comparison.experiment,
            "setup": vars(comparison.setup),
            "uniform_loss": comparison.uniform_loss,
            "runs": [
                {**row, "loss_history": [list(p) for p in run.loss_history], "grad_norm_steps": list(run.grad_norm_steps),
                 "grad_norms": [list(n) for n in run.grad_norms], "sample": run.sample}
                for row, run in zip(rows, comparison.runs)
            ],
        })
        return 0
    print(f"{EXPERIMENT_TITLES[comparison.experiment]}: {setup.steps} steps, seed {setup.seed}, {plural(setup.n_layers, 'block')}, "
          f"lr {setup.lr:g}; uniform guess ln V = {comparison.uniform_loss:.3f}")
    header = ["run", "train loss, first", "train loss, last tenth", "max after first tenth", "held-out, own mask",
              "held-out, causal", "last/first block grad, first tenth", "last tenth"]
    table = [[row["label"], _number(row["first_train_loss"]), _number(row["final_train_loss"]),
              _number(row["max_train_loss_after_first_tenth"]), _number(row["held_out_own_mask"]),
              _number(row["held_out_causal"]), _ratio(row["gradient_ratio_first_tenth"]),
              _ratio(row["gradient_ratio_last_tenth"])] for row in rows]
    print_table(table, header, set(range(1, len(header))))
    print(verdict(comparison))
    for run in comparison.runs:
        print(f"{run.label} generates: {run.sample!r}")
    return 0
