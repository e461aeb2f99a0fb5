"""The machine's fp32 limit and GPT-2 small's forward against it, beside the peers, in one process.

    .venv/bin/python bench/gemm_peak.py [--threads N] [--repeats 5] [--tokens 256] [--json]

- peak: the best fp32 GEMM rate of the paths the lab can take (the default BLAS path, `torch.mm`,
  and oneDNN's linear where torch has it), 2048 x 2048 x 2048, interleaved repetitions, median;
- the lab's bare forward of GPT-2 small's shape (random weights, B=1, T=--tokens, logits included)
  with the kernel path the app chooses on this machine (core.kernels, `auto`), and with each path;
- the peers on the same shape and thread count: Hugging Face `transformers` GPT-2 (random weights,
  no download) forward of the two sequences (B=2) with output_hidden_states=True, what the lab's edit
  diff must at least compute; TransformerLens `run_with_cache` (B=2) when it is installed.
The thread count defaults to the app's compute worker's (one less than the CPUs), where edits run.
The last line is `GEMM_PEAK {json}` for `python -m bench`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PEAK_SIDE = 2048


def interleaved_medians(runs: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Seconds per call of each function: one warm-up, then `repeats` rounds taking each in turn; medians."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(repeats + 1):
        for name, run in runs.items():
            began = time.perf_counter()
            run()
            if round_:
                times[name].append(time.perf_counter() - began)
    return {name: statistics.median(values) for name, values in times.items()}


def gemm_rates(repeats: int) -> dict[str, float]:
    """GFLOP/s of a 2048^3 fp32 product on each path the lab can take."""
    import torch

    from core import kernels

    a = torch.randn(PEAK_SIDE, PEAK_SIDE)  # (M, K)
    b = torch.randn(PEAK_SIDE, PEAK_SIDE)  # (N, K), as a linear layer's weight
    b_t = b.t().contiguous()  # (K, N)
    runs: dict[str, Callable[[], object]] = {"default": lambda: torch.mm(a, b_t)}  # (M, N)
    if kernels.onednn_status()[0]:
        runs["onednn"] = lambda: kernels.onednn_linear(a, b, None)  # (M, N)
    with torch.inference_mode():
        seconds = interleaved_medians(runs, repeats)
    return {name: 2 * PEAK_SIDE**3 / s / 1e9 for name, s in seconds.items()}


def forward_flops(config, tokens: int) -> float:
    """Matmul FLOPs of one sequence: every weight once per token (the tied head is the token table;
    position rows are a lookup), plus q k^T and weights @ v over the full (T, T) map."""
    from core.params import parameter_breakdown

    groups = parameter_breakdown(config).groups
    matmul_params = sum(groups.values()) - groups.get("position_embeddings", 0)
    return 2 * matmul_params * tokens + 4 * config.n_layers * tokens * tokens * config.d_model


def lab_forward_seconds(tokens: int, repeats: int) -> tuple[dict[str, float], str]:
    """Seconds of the lab's forward (B=1) on each kernel path, and the path the app chooses here."""
    import torch

    from core import kernels
    from core.model import Transformer
    from core.presets import get_preset

    config = get_preset("gpt2-small")
    model = Transformer.from_seed(config, seed=0)
    ids = torch.randint(0, config.vocab_size, (1, tokens), generator=torch.Generator().manual_seed(0))  # (1, T)
    chosen = kernels.choose_kernels("auto")  # as the app does: measured once per machine, then cached
    paths = ["default"] + (["onednn"] if kernels.onednn_status()[0] else [])

    def on(path: str) -> Callable[[], object]:
        def run():
            kernels.set_choice(kernels.KernelChoice(path, path, "bench"))
            return model(ids)  # (1, T, V)
        return run

    with torch.inference_mode():
        seconds = interleaved_medians({path: on(path) for path in paths}, repeats)
    kernels.set_choice(chosen)
    return seconds, chosen.path


def transformers_seconds(tokens: int, repeats: int) -> float | None:
    """`transformers` GPT-2 (SDPA), random weights: a forward of two sequences with every hidden state."""
    try:
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError:
        return None
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config()).eval()
    ids = torch.randint(0, 50257, (2, tokens), generator=torch.Generator().manual_seed(0))  # (2, T)
    with torch.inference_mode():
        return interleaved_medians({"hf": lambda: model(ids, output_hidden_states=True)}, repeats)["hf"]


def transformer_lens_seconds(tokens: int, repeats: int) -> float | None:
    """TransformerLens `run_with_cache` of the two sequences on GPT-2 small's shape, when it is installed."""
    try:
        import torch
        from transformer_lens import HookedTransformer, HookedTransformerConfig
    except ImportError:
        return None
    config = HookedTransformerConfig(n_layers=12, d_model=768, n_ctx=1024, d_head=64, n_heads=12, d_mlp=3072,
                                     d_vocab=50257, act_fn="gelu_new", normalization_type="LN", seed=0)
    model = HookedTransformer(config).eval()
    ids = torch.randint(0, 50257, (2, tokens), generator=torch.Generator().manual_seed(0))  # (2, T)
    with torch.inference_mode():
        return interleaved_medians({"tl": lambda: model.run_with_cache(ids)}, repeats)["tl"]


def measure(threads: int, tokens: int, repeats: int) -> dict:
    import torch

    from core.presets import get_preset

    torch.set_num_threads(threads)
    rates = gemm_rates(repeats)
    forwards, chosen = lab_forward_seconds(tokens, repeats)
    flops = forward_flops(get_preset("gpt2-small"), tokens)
    return {
        "threads": torch.get_num_threads(),
        "tokens": tokens,
        "gemm_gflops": rates,
        "peak_gflops": max(rates.values()),
        "peak_path": max(rates, key=rates.get),
        "chosen_path": chosen,
        "forward_ms": {path: s * 1000 for path, s in forwards.items()},
        "forward_gflops": flops / forwards[chosen] / 1e9,
        "transformers_two_hidden_ms": _ms(transformers_seconds(tokens, repeats)),
        "transformer_lens_two_cache_ms": _ms(transformer_lens_seconds(tokens, repeats)),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=max(1, (os.cpu_count() or 2) - 1),
                        help="torch threads (default: the app's compute worker's, one less than the CPUs)")
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print only the JSON line")
    args = parser.parse_args(argv)
    if not (1 <= args.threads <= 1024 and 1 <= args.tokens <= 1024 and 1 <= args.repeats <= 100):
        print("--threads 1..1024, --tokens 1..1024 and --repeats 1..100", file=sys.stderr)
        return 2
    data = measure(args.threads, args.tokens, args.repeats)
    if not args.json:
        rates = ", ".join(f"{path} {rate:.1f}" for path, rate in data["gemm_gflops"].items())
        print(f"{data['threads']} thread(s), load average {data['load_average']:.1f}")
        print(f"  fp32 GEMM {PEAK_SIDE}^3, GFLOP/s:            {rates}; peak {data['peak_gflops']:.1f} ({data['peak_path']})")
        forwards = ", ".join(f"{path} {ms:.0f} ms" for path, ms in data["forward_ms"].items())
        print(f"  lab bare forward, gpt2-small T={args.tokens}:   {forwards}; the app's path here: {data['chosen_path']}")
        print(f"  lab bare forward / peak:                {data['forward_gflops']:.1f} GFLOP/s = "
              f"{data['forward_gflops'] / data['peak_gflops']:.2f}x")
        for label, key in (("transformers, B=2, hidden states", "transformers_two_hidden_ms"),
                           ("TransformerLens run_with_cache, B=2", "transformer_lens_two_cache_ms")):
            value = data[key]
            print(f"  {label + ':':<40}{'not installed' if value is None else f'{value:.0f} ms'}")
    print("GEMM_PEAK " + json.dumps(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
