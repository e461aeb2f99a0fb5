"""How the lab writes numbers and tokens for people. Torch-free, so the GUI thread may import it."""

from __future__ import annotations

TOKEN_GLYPHS = {" ": "␣", "\n": "⏎", "\t": "⇥", "\r": "␍"}  # characters a chip could not otherwise show


def display_token(text: str) -> str:
    """A token's text made visible on a chip: spaces and control characters get a glyph."""
    if text in TOKEN_GLYPHS:
        return TOKEN_GLYPHS[text]
    if text == "":
        return "∅"
    return "".join(TOKEN_GLYPHS.get(c, c if c.isprintable() else f"\\x{ord(c):02x}") for c in text)


def format_bytes(n: float) -> str:
    """Binary prefixes, as memory is sized: 14.0 GiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def format_flops(n: float) -> str:
    """Decimal prefixes, as FLOP counts are quoted: 746.6 MFLOP."""
    for divisor, prefix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= divisor:
            return f"{n / divisor:.1f} {prefix}FLOP"
    return f"{n:.0f} FLOP"
