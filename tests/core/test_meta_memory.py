"""The shape walk-through on the meta device is free at any length, whatever the positional encoding."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from core.positional import alibi_bias, sinusoidal_table

ROOT = Path(__file__).resolve().parents[2]
# Measured in a fresh process: the growth of its peak resident memory over the trace itself.
PEAK_SCRIPT = textwrap.dedent(
    """
    import resource, sys
    from core.experiments.shapes import trace_shapes
    from core.presets import get_preset

    config = get_preset("llama3-8b").replace(positional=sys.argv[1], context_length=32768)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    trace_shapes(config, batch=1, seq=32768)
    print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)  # KiB on Linux
    """
)
# A real (32, 32768, 32768) float32 ALiBi bias alone would be 128 GiB; a (32768, 4096) table 512 MiB.
ALLOWED_GROWTH = 256 * 2**20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss is in KiB on Linux")
@pytest.mark.parametrize("positional", ["alibi", "sinusoidal"])
def test_a_32k_token_trace_of_an_8b_model_takes_no_real_memory(positional):
    result = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, positional], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(result.stdout.strip()) < ALLOWED_GROWTH


def test_the_meta_bias_and_table_equal_the_cpu_ones_in_shape_and_the_cpu_values_are_unchanged():
    bias = alibi_bias(4, 6, causal=True, device="meta")
    assert bias.is_meta and bias.shape == (4, 6, 6)
    cpu = alibi_bias(4, 6, causal=True)
    slopes = torch.tensor([2.0 ** (-2 * (h + 1)) for h in range(4)])  # 2^(-8/4) to the power h + 1
    distance = (torch.arange(6).view(6, 1) - torch.arange(6).view(1, 6)).clamp(min=0).float()
    assert torch.equal(cpu, -slopes.view(4, 1, 1) * distance)
    open_bias = alibi_bias(2, 3, n_keys=5, causal=False)
    assert torch.equal(open_bias[0], -0.0625 * (torch.arange(3).view(3, 1) - torch.arange(5).view(1, 5)).abs().float())
    table = sinusoidal_table(7, 8, device="meta")
    assert table.is_meta and table.shape == (7, 8)
