"""A user's text file as the lab reads it: UTF-8 with or without a byte-order mark, lines split on a newline
alone, and a symbolic link loop named as one.

Python's str.splitlines() also ends a line at \\r, \\x0b, \\x0c, \\x1c-\\x1e, \\x85, \\u2028 and \\u2029, which are
ordinary characters of a corpus (a target may hold one); a text file's line ends at "\\n" (or "\\r\\n"). An editor
on Windows may start a UTF-8 file with a byte-order mark, which is no character of the text. Path.exists() says
False for a link that leads back to itself, so a loop would read as a missing file.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

BYTE_ORDER_MARK = "\ufeff"


def decode_text(raw: bytes) -> str:
    """UTF-8 bytes as text, a leading byte-order mark dropped; UnicodeDecodeError for bytes that are not UTF-8."""
    return raw.decode("utf-8-sig")


def text_lines(text: str) -> list[str]:
    """The lines of a text split at "\\n" alone, a "\\r" before it dropped; a final newline ends the last line."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def is_link_loop(path: str | Path) -> bool:
    """Whether following the symbolic links of `path` never ends (a link that leads back to itself)."""
    try:
        os.stat(path)
    except OSError as error:
        return error.errno == errno.ELOOP or getattr(error, "winerror", None) == 1921  # Windows: cannot resolve
    except ValueError:  # a NUL in the path: no file at all
        return False
    return False


def link_loop_message(path: str | Path) -> str:
    return f"{path} is a symbolic link loop: its links lead back to themselves, so it names no file or folder"


__all__ = ["BYTE_ORDER_MARK", "decode_text", "is_link_loop", "link_loop_message", "text_lines"]
