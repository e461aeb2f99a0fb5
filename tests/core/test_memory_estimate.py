"""The memory estimate follows the attention path the model takes, measured against the real peak.

Each case runs one no-grad forward pass in a fresh process and reads the growth of its peak
resident memory; the estimate (less the weights, allocated before) must cover it without
charging much more: maps the fused kernel never builds would be counted tens of times over.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.device import estimate_memory
from core.presets import get_preset

ROOT = Path(__file__).resolve().parents[2]
PEAK_SCRIPT = textwrap.dedent(
    """
    import sys
    import torch
    torch.set_num_threads(1)
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
