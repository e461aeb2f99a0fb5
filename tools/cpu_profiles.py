"""Other CPUs, as far as the numbers are concerned: the kernel paths, thread counts and locales they select.

A float32 figure differs between two CPUs because the sum behind it is taken in another order: PyTorch's
own kernels pick a SIMD width at start-up (AVX-512, AVX2 or none), MKL and oneDNN pick theirs from the
CPU they find, and the thread count splits each reduction. All three choices can be forced on this machine,
so a run under a profile sums the way a CPU of that kind does. An AMD EPYC (Zen 2 / Zen 3) has no AVX-512
and MKL gives it its AVX2 path; a CPU of before 2013 has no AVX at all. Under qemu's user-mode emulation
(`qemu-x86_64 -cpu EPYC-Rome`) the process even sees another vendor and model, at the price of speed.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CpuProfile:
    name: str
    summary: str
    environment: dict[str, str] = field(default_factory=dict)
    # The capability torch reports under the profile (torch.backends.cpu.get_cpu_capability()); None: the host's.
    capability: str | None = None
    # A command the Python process runs under (an emulator); its own child processes run natively.
    wrapper: tuple[str, ...] = ()


def _kernel_paths(aten: str, mkl: str, onednn: str) -> dict[str, str]:
    return {"ATEN_CPU_CAPABILITY": aten, "MKL_ENABLE_INSTRUCTIONS": mkl, "ONEDNN_MAX_CPU_ISA": onednn}


PROFILES: dict[str, CpuProfile] = {
    profile.name: profile
    for profile in (
        CpuProfile("host", "this machine as it is"),
        CpuProfile(
            "avx2-1-thread-de",
            "the AVX2 kernels an AMD EPYC (Zen 2/3) or pre-2017 Intel gets, one thread, German locale",
            {**_kernel_paths("avx2", "AVX2", "AVX2"), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
             "LC_ALL": "de_DE.UTF-8", "LANG": "de_DE.UTF-8"},
            capability="AVX2",
        ),
        CpuProfile(
            "no-avx-2-threads",
            "no vector extensions beyond SSE4 (a CPU of before 2013), two threads, a locale that is not installed",
            {**_kernel_paths("default", "SSE4_2", "SSE41"), "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2",
             "LC_ALL": "xx_XX.UTF-8", "LANG": "xx_XX.UTF-8"},
            capability="DEFAULT",
        ),
        CpuProfile(
            "emulated-epyc-rome",
            "an AMD EPYC Rome as qemu emulates it (vendor AuthenticAMD, AVX2, no AVX-512), one thread",
            {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
            capability="AVX2",
            wrapper=("qemu-x86_64", "-cpu", "EPYC-Rome"),
        ),
    )
}


def environment_for(profile: CpuProfile, base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (the current environment by default) with the profile's settings."""
    return {**(os.environ if base is None else base), **profile.environment}


def unavailable_reason(profile: CpuProfile) -> str | None:
    """Why this machine cannot run the profile, or None."""
    if profile.wrapper and shutil.which(profile.wrapper[0]) is None:
        return f"{profile.wrapper[0]} is not installed (Debian/Ubuntu: apt-get install qemu-user)"
    return None
