"""The figures the reading prints for its causal-mask script, and how a run here is compared with them."""

from __future__ import annotations

from tests.float32 import assert_printed_close

# The figures the reading prints. Position 5 reads 3.357778 in the reading; its own script prints
# 3.357779 on some CPUs because it subtracts in float32 (the exact difference is 3.3577784...), and
# the last digit of every figure may move with the CPU's rounding, so they compare within float32 bounds.
READING_LINES = [
    "input shape  (2, 8, 64)",
    "output shape (2, 8, 64)",
    "parameters   49984",
    *[f"position {t}: max |change| = 0.000000" for t in range(5)],
    "position 5: max |change| = 3.357778",
    "position 6: max |change| = 0.268559",
    "position 7: max |change| = 0.215717",
    "no mask, positions 0-4 max |change| = 0.205075",
]
READING_SCALE = 3.36  # the largest figure: the block's outputs are of this size


def assert_matches_reading(lines: list[str]) -> None:
    """The reading's table: words and exact zeros as printed, the other figures within float32 rounding."""
    assert len(lines) == len(READING_LINES), lines
    for line, expected in zip(lines, READING_LINES):
        words, _, figure = expected.rpartition(" = ")
        if not words or figure == "0.000000":
            assert line == expected
        else:
            assert line.startswith(words + " = "), line
            assert_printed_close(line.removeprefix(words + " = "), figure, READING_SCALE)
