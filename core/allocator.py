"""Where the process's large tensors get their memory, so that freeing one gives it back to the system.

glibc's malloc serves a block of at least M_MMAP_THRESHOLD bytes with its own mapping, unmapped on
free. The threshold is dynamic: each freed mapped block raises it to that block's size, up to
32 MiB, so after a few long sequences the blocks of one (T, d) or (T, d_ff) activation (3 to
12 MiB at GPT-2's widths and 1,024 tokens) come from the heap instead. A heap keeps its freed holes
resident until everything above them is freed too, and a job's activations, freed among a view's
longer-lived results and a growing KV cache, leave such holes: the window's peak grew by 300 MB
that held no tensor. A fixed threshold keeps every large block in its own mapping. The cost is a
fresh mapping per large block (page faults, a few per cent of a long forward pass); blocks below
the threshold (a short sequence's activations, every Python object) are served as before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

LARGE_BLOCK_BYTES = 1 << 20  # 1 MiB: a short sequence stays on the heap (64 tokens x 768 floats: 192 KiB)
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number (malloc.h)


def map_large_blocks(threshold: int = LARGE_BLOCK_BYTES) -> bool:
    """Fix glibc's mmap threshold at `threshold` bytes; False where the C library is not glibc (macOS, Windows, musl)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # no C library by that name, or one without mallopt (musl)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(_M_MMAP_THRESHOLD, threshold) == 1


__all__ = ["LARGE_BLOCK_BYTES", "map_large_blocks"]
