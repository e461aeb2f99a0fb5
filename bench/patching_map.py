"""The resid_pre patching map of a GPT-2-small-shaped model at 20 tokens: the lab against the naive loop and
TransformerLens's own utility, side by side in one process on the same weights and inputs.

    python bench/patching_map.py [--runs N] [--json]

The weights are a random `transformers` GPT2LMHeadModel (GPT-2 small's shape) saved to a temporary
folder, imported into the lab through its checkpoint loader and booted in TransformerLens from the
same model object. Each run times, in turn: the lab's map alone (`checks=False`), the lab's map as
the view computes it (with the patch-all and patch-none forwards), the naive loop of one full
forward per cell, and `transformer_lens.patching.get_act_patch_resid_pre` (its clean cache
included). The values of all three are compared; the last line is PATCH_MAP and JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOKENS = 20
EDIT_POSITION = 9


def _transformer_lens(hf_model, folder: Path):
    try:
        from transformer_lens import patching
        from transformer_lens.model_bridge import TransformerBridge
    except ImportError:
        return None, None
    bridge = TransformerBridge.boot_transformers(str(folder), hf_model=hf_model, tokenizer=None)
    bridge.enable_compatibility_mode()
    return bridge, patching


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("TQDM_DISABLE", "1")  # TransformerLens's progress bar, 240 lines on stderr per map
    import numpy as np
    import torch
    import transformers

    from core.checkpoints import resolve_checkpoint
    from core.experiments.patching import activation_patch, naive_patch

    torch.manual_seed(0)
    hf_model = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_positions=1024)).eval()
    generator = torch.Generator().manual_seed(1)
    clean = torch.randint(0, hf_model.config.vocab_size, (TOKENS,), generator=generator).tolist()
    corrupt = list(clean)
    corrupt[EDIT_POSITION] = (clean[EDIT_POSITION] + 1) % hf_model.config.vocab_size
    answer, foil = 262, 318
    with tempfile.TemporaryDirectory() as folder:
        hf_model.save_pretrained(folder, safe_serialization=True)
        lab_model = resolve_checkpoint(Path(folder)).model
        bridge, tl_patching = _transformer_lens(hf_model, Path(folder))
    times: dict[str, list[float]] = {"lab_map": [], "lab_with_checks": [], "naive": [], "transformer_lens": []}
    values: dict[str, np.ndarray] = {}

    def tl_map():
        corrupt_t, clean_t = torch.tensor([corrupt]), torch.tensor([clean])

        def metric(logits):
            return logits[0, -1, answer] - logits[0, -1, foil]

        with torch.no_grad():
            _logits, cache = bridge.run_with_cache(clean_t)
            return tl_patching.get_act_patch_resid_pre(bridge, corrupt_t, cache, metric).double().numpy()

    jobs = {
        "lab_map": lambda: activation_patch(lab_model, clean, corrupt, answer, foil, "resid_pre", checks=False).values,
        "lab_with_checks": lambda: activation_patch(lab_model, clean, corrupt, answer, foil, "resid_pre").values,
        "naive": lambda: naive_patch(lab_model, clean, corrupt, answer, foil, "resid_pre"),
    }
    if bridge is not None:
        jobs["transformer_lens"] = tl_map
    for name, job in jobs.items():  # warm-up: first-call allocations and kernel choices
        values[name] = job()
    for run in range(args.runs):
        for name, job in jobs.items():
            started = time.perf_counter()
            job()
            times[name].append(1000 * (time.perf_counter() - started))
        print(f"run {run + 1}/{args.runs}: " + ", ".join(f"{n} {t[-1]:.0f} ms" for n, t in times.items() if t),
              file=sys.stderr, flush=True)
    reference = values["naive"]
    scale = float(np.abs(reference).max())
    report = {
        "tokens": TOKENS, "threads": torch.get_num_threads(), "runs": args.runs,
        "median_ms": {n: statistics.median(t) for n, t in times.items() if t},
        "max_abs_difference_from_naive": {n: float(np.abs(v - reference).max()) for n, v in values.items()},
        "value_scale": scale,
        "transformer_lens": bridge is not None,
    }
    if not args.json:
        for name, median in report["median_ms"].items():
            print(f"{name:18s} {median:9.0f} ms   max |difference| from the naive loop "
                  f"{report['max_abs_difference_from_naive'][name]:.2e}")
    print("PATCH_MAP " + json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
