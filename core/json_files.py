"""Reading a JSON document a user chose (a session, a lesson) with every size bounded.

Only a regular file is read (a FIFO would block and /dev/zero never ends), at most `max_bytes`
of it; integers longer than MAX_INTEGER_DIGITS and containers nested deeper than MAX_DEPTH are
refused, so no document can make the parser, or what runs on its result, take unbounded time.
Each problem is a JsonFileError in one English sentence naming the file.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

MAX_INTEGER_DIGITS = 30  # far above any seed or count the lab stores; Python refuses 4,300 with a ValueError
MAX_DEPTH = 32  # sessions and lessons nest a few levels; a panel's settings a few more


class JsonFileError(ValueError):
    """Why a JSON file cannot be read, in one line."""


def read_json_document(path: str | Path, max_bytes: int, what: str) -> Any:
    """The decoded JSON of the regular file `path`; `what` names the kind of file in messages ("a session file")."""
    path = Path(path)
    raw = _read_regular_file(path, max_bytes, what)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise JsonFileError(f"{path.name} is not a text file (not UTF-8), so it is not {what}") from None
    try:
        data = json.loads(text, parse_int=_bounded_int, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise JsonFileError(f"{path.name} is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})") from None
    except (ValueError, RecursionError) as error:  # _bounded_int, _no_constant, or "[[[[..." past the parser's stack
        reason = str(error) if isinstance(error, ValueError) else f"it nests deeper than {MAX_DEPTH} levels"
        raise JsonFileError(f"{path.name} cannot be {what}: {reason}") from None
    depth = nesting_depth(data)
    if depth > MAX_DEPTH:
        raise JsonFileError(f"{path.name} cannot be {what}: it nests {depth} levels deep, more than {MAX_DEPTH} levels")
    return data


def read_regular_file(path: str | Path, max_bytes: int, what: str) -> bytes:
    """The bytes of a regular file of at most max_bytes; JsonFileError says why not (a FIFO, a device, too big)."""
    return _read_regular_file(Path(path), max_bytes, what)


def _read_regular_file(path: Path, max_bytes: int, what: str) -> bytes:
    # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise JsonFileError(f"{path} does not exist") from None
    except IsADirectoryError:
        raise JsonFileError(f"{path} is a folder, not {what}") from None
    except PermissionError:
        raise JsonFileError(f"cannot read {path}: no permission to read it") from None
    except OSError as error:
        raise JsonFileError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        info = os.fstat(descriptor)
        if stat.S_ISDIR(info.st_mode):
            raise JsonFileError(f"{path} is a folder, not {what}")
        if not stat.S_ISREG(info.st_mode):
            raise JsonFileError(f"{path} is not a regular file (a device, pipe or socket), so it is not {what}")
        if info.st_size > max_bytes:
            raise JsonFileError(f"{path.name} is {info.st_size:,} bytes, more than the {max_bytes:,} of {what}")
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            raw = handle.read(max_bytes + 1)  # a file that grows while read is still bounded
    except OSError as error:
        raise JsonFileError(f"cannot read {path}: {error.strerror or error}") from None
    finally:
        os.close(descriptor)
    if len(raw) > max_bytes:
        raise JsonFileError(f"{path.name} is more than the {max_bytes:,} bytes of {what}")
    return raw


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise ValueError(f"it holds an integer of {len(digits.lstrip('-')):,} digits (at most {MAX_INTEGER_DIGITS})")
    return int(digits)


def _no_constant(name: str) -> Any:
    raise ValueError(f"it holds {name}, which is not a JSON number")


def nesting_depth(data: Any) -> int:
    """How many lists and objects deep `data` goes (a scalar is 0), without recursion."""
    deepest = 0
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


__all__ = ["JsonFileError", "MAX_DEPTH", "MAX_INTEGER_DIGITS", "nesting_depth", "read_json_document"]
