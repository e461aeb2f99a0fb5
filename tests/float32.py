"""Tolerances for float32 figures that another CPU, BLAS or thread count may round differently.

A sum of float32 products depends on the order of its terms, and that order follows the SIMD width
and the thread split; the results then differ in their last bits. Figures the reading printed are
compared within these bounds; bitwise claims are tested against the reading's script run here.
"""

from __future__ import annotations

import numpy as np

# Units in the last place a reduction of a few dozen terms may move by when its order changes.
REORDER_ULPS = 16


def float32_tolerance(scale: float, ulps: int = REORDER_ULPS) -> float:
    """`ulps` float32 units in the last place at the magnitude `scale` of the values computed."""
    return ulps * float(np.spacing(np.float32(abs(scale))))


def printed_tolerance(printed: str) -> float:
    """Two figures each rounded to the decimals of `printed` differ by up to one unit of its last digit."""
    decimals = len(printed.partition(".")[2])
    return 10.0**-decimals


def assert_printed_close(shown: str, reading: str, scale: float) -> None:
    """`shown` agrees with the reading's printed figure to its printed digits plus float32 reordering at `scale`."""
    tolerance = printed_tolerance(reading) + float32_tolerance(scale)
    assert abs(float(shown) - float(reading)) <= tolerance, f"{shown} vs the reading's {reading} (within {tolerance:.2g})"
