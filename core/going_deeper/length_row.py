"""One input length's score, as `extrapolate` makes it and the Stretching view and `extrapolate --json` show it.

Kept apart from the scoring (which needs torch) so that the window can read rows without importing it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LengthRow:
    length: int
    nats_per_char: float | None  # None where refused
    nats_per_char_beyond: float | None  # None where no prediction lies past the trained length, or refused
    windows: int
    refused: str = ""

    def to_dict(self) -> dict:
        row = {"length": self.length, "nats_per_char": self.nats_per_char,
               "nats_per_char_beyond": self.nats_per_char_beyond, "windows": self.windows}
        if self.refused:
            row["refused"] = self.refused
        return row


__all__ = ["LengthRow"]
