"""The reading's figures and the bitwise claims hold on other kernel paths, not only on this CPU's.

Each profile forces the SIMD paths of another kind of CPU (`tools/cpu_profiles.py`) and runs the reading's
tests in a child process. The child first prints the capability torch chose, so that a profile which did not
take effect is skipped with the reason instead of passing as the host.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tools.cpu_profiles import PROFILES, environment_for

ROOT = Path(__file__).resolve().parents[2]
TESTS = ["tests/core/test_reading_mode.py", "tests/core/test_causal.py::test_causal_mask_keeps_every_earlier_position_bitwise_unchanged"]
NATIVE_PROFILES = ["avx2-1-thread-de", "no-avx-2-threads"]

CHILD = """
import json, sys, torch
from core.experiments.reading import causal_printout
print("figures", json.dumps({"capability": torch.backends.cpu.get_cpu_capability(),
                             "values": [line.value for line in causal_printout().lines if line.value is not None]}))
sys.stdout.flush()
import pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]]))
"""


def host_values() -> list[float]:
    from core.experiments.reading import causal_printout

    return [line.value for line in causal_printout().lines if line.value is not None]


@pytest.mark.parametrize("name", NATIVE_PROFILES)
def test_the_readings_tests_pass_on_another_kernel_path(name):
    profile = PROFILES[name]
    result = subprocess.run([sys.executable, "-c", CHILD, *TESTS], cwd=ROOT, env=environment_for(profile),
                            capture_output=True, text=True, timeout=600, check=False)
    line = next((line for line in result.stdout.splitlines() if line.startswith("figures ")), None)
    assert line is not None, result.stdout[-2000:] + result.stderr[-2000:]
    shown = json.loads(line.removeprefix("figures "))
    if shown["capability"] != profile.capability:
        pytest.skip(f"this CPU runs {shown['capability']} kernels, not {profile.capability}: the profile is the host")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    # The exact zeros of the past are exact on every path; the other figures may move in their last bits.
    assert [value == 0.0 for value in shown["values"]] == [value == 0.0 for value in host_values()]
