"""How the lab writes numbers and tokens for people. Torch-free, so the GUI thread may import it."""

from __future__ import annotations

import math

TOKEN_GLYPHS = {" ": "␣", "\n": "⏎", "\t": "⇥", "\r": "␍"}  # characters a chip could not otherwise show


def display_token(text: str) -> str:
    """A token's text made visible on a chip: spaces and control characters get a glyph.

    A token that holds only part of a multi-byte character (byte-level BPE splits 'é' into two
    tokens) carries those bytes as lone surrogates (see core.tokenizers); each is shown as its byte,
    '\\xc3', rather than as a replacement character that would hide which byte it is.
    """
    if text in TOKEN_GLYPHS:
        return TOKEN_GLYPHS[text]
    if text == "":
        return "∅"
    return "".join(_visible(c) for c in text)


def _visible(char: str) -> str:
    if char in TOKEN_GLYPHS:
        return TOKEN_GLYPHS[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: a byte that is not a whole UTF-8 character
        return f"\\x{code - 0xDC00:02x}"
    if char.isprintable():
        return char
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


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


def short_count(n: float, decimals: int = 1) -> str:
    """124,439,808 -> '124.4M' at one decimal; counts under a thousand are written out."""
    for divisor, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= divisor:
            return f"{n / divisor:.{decimals}f}{suffix}"
    return f"{n:,.0f}"


def short_counts_apart(*counts: int) -> list[str]:
    """Short forms of counts that differ, with as many decimals as it takes to tell them apart on the page
    (gpt2-xl's 1,557,611,200 tied and 1,637,988,800 untied are both '1.6B' at one decimal)."""
    for decimals in range(1, 4):
        shown = [short_count(n, decimals) for n in counts]
        if len(set(shown)) == len(set(counts)):
            return shown
    return [f"{n:,}" for n in counts]


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """'1 block', '12 blocks': the count with its noun in the right number."""
    return f"{count:,} {noun if count == 1 else (plural_form or noun + 's')}"


def format_change(value: float, exact: bool) -> str:
    """A max |change| as a student should read it: exact zeros say so, tiny leaks keep their digits."""
    if exact:
        return "0 (exact)"
    if math.isnan(value):
        return "NaN"
    if value == 0.0:
        return "0 (not bitwise equal)"
    if abs(value) < 1e-3:
        return f"{value:.1e}"
    return f"{value:.4g}"


def format_share(share: float) -> str:
    """A share of a total as a percentage; a nonzero share too small to print says so rather than showing 0.0%."""
    if share == 0:
        return "0%"
    if share < 0.001:
        return "<0.1%"
    return f"{share:.1%}"
