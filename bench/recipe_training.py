"""The full recipes of the induction presets, trained as a student would, against their documented headline.

    .venv/bin/python bench/recipe_training.py [--preset tiny-induction-attn,tiny-induction] [--no-defaults]

For each preset: `main.py train --preset NAME` with no other setting (its recipe, one thread, the corpus made
from the seed), then the headline of docs/models.md recomputed on the saved model: the best layer-1 induction
score on 20 random tokens written twice (seed 0, `main.py induction`'s figure) and the mean loss of the first and
the second repeat. The documented figure is the bundled model's own, recomputed from its weights, where the
preset is shipped trained (tiny-induction); tiny-induction-attn is not, so its figure is the one docs/models.md
quotes. Unless --no-defaults, the same preset is also trained with the Train view's default settings (500
steps, batch 16, lr 0.003, on the repeated letters) through the view's own training job, for the contrast the
recipe exists for. Prints one line per run and `meets: yes/no` (the recipe's score within TOLERANCE of the
documented one). Takes about 2.5 minutes on one idle core.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PRESETS = ("tiny-induction-attn", "tiny-induction")
DOCUMENTED = {"tiny-induction-attn": 0.874}  # docs/models.md: "best L1H1 0.874" (the run there, not shipped)
TOLERANCE = 0.15  # another CPU or torch version trains another model; its head still copies about as well
TRAIN_VIEW_DEFAULTS = {"steps": 500, "batch_size": 16, "seq_len": 128, "lr": 3e-3, "seed": 0}  # gui/panels/train.py


def headline(model) -> tuple[float, str, float, float]:
    """(best layer-1 induction score, its head, first-repeat loss, second-repeat loss) at 20 tokens, seed 0."""
    from core.experiments.induction import induction

    found = induction(model, period=20, seed=0)
    layer1 = found.induction_score[1]  # (H,)
    head = int(layer1.argmax())
    return float(layer1[head]), f"L1H{head}", float(found.loss_first.mean()), float(found.loss_second.mean())


def documented(preset: str) -> tuple[float, str]:
    from core.checkpoints import resolve_checkpoint
    from core.recipes import recipe_of

    if recipe_of(preset).record() is not None:
        score, head, _, _ = headline(resolve_checkpoint(preset).model)
        return score, f"the bundled {preset}'s {head}"
    return DOCUMENTED[preset], "docs/models.md"


def run_recipe(preset: str, folder: Path) -> tuple[float, str, float, float, float]:
    from core.checkpoints import resolve_checkpoint
    from core.cli import main as cli_main

    started = time.perf_counter()
    if cli_main(["train", "--preset", preset, "--out", str(folder), "--quiet"]) != 0:
        raise SystemExit(f"main.py train --preset {preset} failed")
    seconds = time.perf_counter() - started
    return (*headline(resolve_checkpoint(folder).model), seconds)


def run_train_view_defaults(preset: str) -> tuple[float, str, float, float, float]:
    """The Train view's job with its default fields, on the repeated letters (the corpus the preset needs)."""
    import torch

    from core.corpus import repeated_letters_corpus
    from core.presets import get_preset
    from core.training_job import TrainingControl, TrainRequest, run_training

    class Token:
        def report(self, fraction: float, text: str = "") -> None: ...

        def partial(self, value) -> None: ...

        def let_others_run(self, wait_s: float = 0.0) -> None: ...

    config = get_preset(preset)
    settings = dict(TRAIN_VIEW_DEFAULTS, seq_len=min(TRAIN_VIEW_DEFAULTS["seq_len"], config.context_length))
    request = TrainRequest(config, repeated_letters_corpus(settings["seed"]), settings["steps"], settings["batch_size"],
                           settings["seq_len"], settings["lr"], settings["seed"], "cpu", 0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    started = time.perf_counter()
    try:
        outcome = run_training(request, TrainingControl(), Token())
    finally:
        torch.set_num_threads(threads)
    return (*headline(outcome.loaded.model), time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default=",".join(PRESETS), help="comma-separated presets (default: %(default)s)")
    parser.add_argument("--no-defaults", action="store_true", help="skip the runs with the Train view's defaults")
    args = parser.parse_args()
    presets = [name.strip() for name in args.preset.split(",") if name.strip()]
    unknown = [name for name in presets if name not in PRESETS]
    if unknown:
        parser.error(f"--preset takes {', '.join(PRESETS)}, got {', '.join(unknown)}")
    from core.recipes import recipe_of

    meets = True
    with tempfile.TemporaryDirectory() as scratch:
        for preset in presets:
            target, where = documented(preset)
            score, head, first, second, seconds = run_recipe(preset, Path(scratch) / preset)
            ok = abs(score - target) <= TOLERANCE
            meets &= ok
            print(f"{preset} recipe ({recipe_of(preset).summary()}): best layer-1 induction score {score:.3f} "
                  f"({head}), documented {target:.3f} ({where}); loss first repeat {first:.3f}, second {second:.3f}; "
                  f"{seconds:.0f} s on 1 thread; within {TOLERANCE}: {'yes' if ok else 'no'}", flush=True)
            if not args.no_defaults:
                score, head, first, second, seconds = run_train_view_defaults(preset)
                print(f"{preset} with the Train view's defaults ({TRAIN_VIEW_DEFAULTS['steps']} steps, batch "
                      f"{TRAIN_VIEW_DEFAULTS['batch_size']}, lr {TRAIN_VIEW_DEFAULTS['lr']:g}, seed 0; repeated "
                      f"letters): best layer-1 induction score {score:.3f} ({head}); loss first repeat {first:.3f}, "
                      f"second {second:.3f}; {seconds:.0f} s", flush=True)
    print(f"meets: {'yes' if meets else 'no'}")
    return 0 if meets else 1


if __name__ == "__main__":
    sys.exit(main())
