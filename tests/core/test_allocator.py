"""A fixed mmap threshold gives a freed activation's memory back to the system (core/allocator.py).

Each case runs in a fresh process: a 20 MiB block freed first raises glibc's dynamic threshold, as a
long sequence's logits do, then thirty 3 MiB blocks (a 1,024-token activation at GPT-2's width) are
made, a small block is made after them, and the thirty are freed.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.allocator import map_large_blocks

ROOT = Path(__file__).resolve().parents[2]
BLOCKS_BYTES = 30 * 3 * 2**20
RELEASE_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    from core.allocator import map_large_blocks

    def rss() -> int:
        with open("/proc/self/status") as status:
            return int(next(line for line in status if line.startswith("VmRSS:")).split()[1]) * 1024

    if sys.argv[1] == "fixed":
        assert map_large_blocks()
    warm = np.ones(20 * 2**20 // 8)  # a mapped block; freeing it raises the dynamic threshold to 20 MiB
    del warm
    blocks = [np.ones(3 * 2**20 // 8) for _ in range(30)]  # 90 MiB, pages touched
    pinned = np.ones(4096)  # a longer-lived block made after them
    held = rss()
    del blocks
    print(held - rss())
    """
)

glibc_linux = pytest.mark.skipif(not (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"),
                                 reason="the threshold is glibc's; RSS is read from /proc")


def _released(threshold: str) -> int:
    result = subprocess.run([sys.executable, "-c", RELEASE_SCRIPT, threshold], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return int(result.stdout.strip())


@glibc_linux
def test_freed_large_blocks_leave_the_process_with_the_threshold_fixed():
    assert _released("fixed") >= 0.9 * BLOCKS_BYTES
    # With glibc's dynamic threshold the same blocks stay resident in the heap, below the small one.
    assert _released("dynamic") < 0.5 * BLOCKS_BYTES


def test_the_setting_reports_whether_it_applied():
    applied = map_large_blocks()
    assert applied == (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc")
