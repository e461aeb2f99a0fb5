"""The memory estimate follows the attention path the model takes, measured against the real peak.

Each case runs one no-grad forward pass in a fresh process and reads the growth of its peak
resident memory; the estimate (less the weights, allocated before) must cover it without
charging much more: maps the fused kernel never builds would be counted tens of times over.
The process maps its large blocks as the window and the CLI do (core/allocator.py): with glibc's
dynamic threshold the same pass peaked anywhere from 26 to 69 MB, by where the heap's holes fell.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core import kernels
from core.device import estimate_memory, linear_weight_values
from core.model import Linear, Transformer
from core.presets import get_preset

ROOT = Path(__file__).resolve().parents[2]
PEAK_SCRIPT = textwrap.dedent(
    """
    import sys
    import torch
    torch.set_num_threads(1)
    from core.allocator import map_large_blocks
    map_large_blocks()
    from core.hooks import capture
    from core.model import Transformer
    from core.presets import get_preset

    def peak_rss() -> int:
        # VmHWM belongs to this program's memory map, new at exec; ru_maxrss would carry over the larger
        # peak of the process that started it (a test runner of a gigabyte or more).
        with open("/proc/self/status") as status:
            line = next(line for line in status if line.startswith("VmHWM:"))
        return int(line.split()[1]) * 1024

    mode, positional, seq, layers = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    config = get_preset("tiny-gpt").replace(context_length=seq, positional=positional, n_layers=2)
    model = Transformer.from_seed(config, seed=0)
    tokens = torch.randint(0, config.vocab_size, (2, seq))  # (B, T)
    with torch.inference_mode():
        model(tokens[:, :8])  # kernels and allocator warmed up on a short pass
    before = peak_rss()
    with torch.inference_mode():
        if layers:
            hooks = [f"blocks.{i}.attn.hook_pattern" for i in range(layers)]
            # As causal.attention_maps does: each layer's maps copied out as they are made.
            held = []
            with capture(model, hooks, on_output=lambda name, output: held.append(output.float().cpu().numpy())):
                model(tokens, mask_mode=mode)
        else:
            model(tokens, mask_mode=mode)
    print(peak_rss() - before)
    """
)

# A reduced-precision run: the first product of each linear layer rounds its weight and keeps the copy.
ROUNDED_PEAK_SCRIPT = PEAK_SCRIPT.split("mode, positional")[0] + textwrap.dedent(
    """
    from core import kernels

    precision, seq, d, layers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    config = get_preset("tiny-gpt").replace(context_length=seq, d_model=d, d_ff=4 * d, n_layers=layers, n_heads=8)
    model = Transformer.from_seed(config, seed=0)
    tokens = torch.randint(0, config.vocab_size, (2, seq))  # (B, T)
    with torch.inference_mode():
        model(tokens[:, :8])  # kernels and allocator warmed up on a short fp32 pass: no copies yet
    kernels.set_precision(kernels.check_precision(precision, "cpu"))
    before = peak_rss()
    with torch.inference_mode():
        model(tokens)
    print(peak_rss() - before)
    """
)


def _peak_growth(mode: str, positional: str, seq: int, layers: int) -> int:
    result = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, mode, positional, str(seq), str(layers)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return int(result.stdout.strip())


@pytest.mark.slow  # five fresh processes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak from /proc/self/status")
@pytest.mark.parametrize(
    ("mode", "positional", "seq", "layers"),
    [
        ("causal", "learned", 8192, 0),  # the fused kernel: no (T, T) map at all
        ("causal", "alibi", 2048, 0),  # a float bias sends the kernel to full maps
        ("after-softmax", "learned", 2048, 0),  # explicit path, three maps at once
        ("off-by-one", "learned", 2048, 0),  # explicit path, two maps at once
        ("causal", "learned", 2048, 2),  # every layer's weights captured and stacked, as the Tokens panel does
    ],
)
def test_the_estimate_covers_the_measured_peak_without_overcharging(mode, positional, seq, layers):
    config = get_preset("tiny-gpt").replace(context_length=seq, positional=positional, n_layers=2)
    estimate = estimate_memory(config, batch=2, seq=seq, mask_mode=mode, captured_attention_layers=layers)
    measured = _peak_growth(mode, positional, seq, layers)
    transient = estimate.total - estimate.weights
    assert 0.9 * measured <= transient <= 2.0 * measured + 64 * 2**20, (transient, measured)


def test_a_long_fused_run_is_not_charged_for_maps_it_never_builds():
    config = get_preset("tiny-gpt").replace(context_length=20_480)
    estimate = estimate_memory(config, batch=2, seq=20_480)
    assert estimate.attention_maps == 0 and estimate.total < 600 * 2**20
    explicit = estimate_memory(config, batch=2, seq=20_480, mask_mode="after-softmax")
    assert explicit.attention_maps == 3 * 2 * config.n_heads * 20_480**2 * 4


# A model whose linear weights (3 blocks at d = 768: 41 MiB in bf16) outweigh one short pass's activations.
ROUNDED_CASE = {"seq": 128, "d": 768, "layers": 3}


def _rounded_config():
    return get_preset("tiny-gpt").replace(context_length=ROUNDED_CASE["seq"], d_model=ROUNDED_CASE["d"],
                                          d_ff=4 * ROUNDED_CASE["d"], n_layers=ROUNDED_CASE["layers"], n_heads=8)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak from /proc/self/status")
@pytest.mark.skipif(not kernels.cpu_has_native_bf16(), reason="bf16 runs only on a CPU with native bf16")
def test_a_bf16_run_is_charged_for_its_rounded_weight_copy():
    config = _rounded_config()
    seq = ROUNDED_CASE["seq"]
    result = subprocess.run([sys.executable, "-c", ROUNDED_PEAK_SCRIPT, "bf16", str(seq), str(ROUNDED_CASE["d"]),
                             str(ROUNDED_CASE["layers"])], cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    measured = int(result.stdout.strip())
    estimate = estimate_memory(config, batch=2, seq=seq, precision="bf16")
    assert estimate.weight_copies == 2 * linear_weight_values(config)
    transient = estimate.total - estimate.weights
    assert 0.9 * measured <= transient <= 2.0 * measured + 64 * 2**20, (transient, measured)
    # Without the copy the same estimate falls short of what the run took.
    uncounted = estimate_memory(config, batch=2, seq=seq, precision="fp32")
    assert uncounted.weight_copies == 0 and uncounted.total - uncounted.weights < 0.9 * measured, (uncounted, measured)


@pytest.mark.parametrize("preset", ["tiny-gpt", "tiny-llama", "tiny-moe", "tiny-encoder-decoder", "gpt2-small", "mixtral-8x7b"])
def test_the_rounded_weights_are_every_linear_layers_matrix(preset):
    config = get_preset(preset)
    config = config.replace(n_layers=min(config.n_layers, 2))  # the count scales with the blocks; two show it
    model = Transformer.on_meta(config)
    matrices = {id(module.weight): module.weight.numel() for module in model.modules() if isinstance(module, Linear)}
    assert linear_weight_values(config) == sum(matrices.values())


def test_the_estimate_follows_the_process_precision():
    config = get_preset("tiny-gpt")
    before = kernels.current_precision()
    try:
        kernels.set_precision(kernels.Precision("bf16", "cpu"))
        assert estimate_memory(config, batch=1, seq=64) == estimate_memory(config, batch=1, seq=64, precision="bf16")
        kernels.set_precision(kernels.Precision("fp32", "cpu"))
        assert estimate_memory(config, batch=1, seq=64).weight_copies == 0
    finally:
        kernels.set_precision(before)
