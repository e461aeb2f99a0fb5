"""Reading a JSON document a user chose (a session, a lesson) with every size bounded.

Only a regular file is read (a FIFO would block and /dev/zero never ends), at most `max_bytes`
of it; integers longer than MAX_INTEGER_DIGITS and containers nested deeper than MAX_DEPTH are
refused, so no document can make the parser, or what runs on its result, take unbounded time.
A document holds at most `max_containers` lists and objects (counted as the brackets that open them,
strings included, before the parse), and the parse runs with the garbage collector paused (a document
of a million empty lists otherwise spends most of its parse in collections), so a file at the size
limit is read in a fraction of a second.
A large file read off the main thread (a window's file reader or compute worker) is parsed in a child
process: a parse is one C call that holds the interpreter, and the main thread (the window's) would wait
for it; waiting for a child releases the interpreter, and what comes back is the compact document (a
file padded to its size limit comes back as its few kilobytes of content). Every file the app reads
holds a JSON object, and each reader refuses any other kind with its own message: a large document of
another kind (a string or a list at the size limit) comes back from the child as an empty value of the
same kind, which its reader refuses as it would the whole, without the window's thread building it.
Each problem is a JsonFileError in one English sentence naming the file.
"""

from __future__ import annotations

import gc
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_INTEGER_DIGITS = 30  # far above any seed or count the lab stores; Python refuses 4,300 with a ValueError
MAX_DEPTH = 32  # sessions and lessons nest a few levels; a panel's settings a few more
MAX_CONTAINERS = 100_000  # a lesson of 200 steps has a few thousand lists and objects, a session a few hundred
CHILD_PARSE_BYTES = 256 * 1024  # parsed in a few milliseconds: starting a child would cost more than it saves
CHILD_TIMEOUT_S = 120.0  # a file at the largest limit parses in about a second; longer is a broken child
_PROJECT_ROOT = str(Path(__file__).resolve().parents[1])


class JsonFileError(ValueError):
    """Why a JSON file cannot be read, in one line."""


def read_json_document(path: str | Path, max_bytes: int, what: str, max_containers: int = MAX_CONTAINERS,
                       max_values: int | None = None, max_integer_digits: int = MAX_INTEGER_DIGITS) -> Any:
    """The decoded JSON of the regular file `path`; `what` names the kind of file in messages ("a session file").

    `max_values` bounds the values (counted as commas, strings included): a file of millions of short
    strings costs some 50 bytes of memory per byte of its own, which a size limit alone does not bound.
    """
    path = Path(path)
    if _parse_in_child(path):
        return _read_in_child(path, max_bytes, what, max_containers, max_values, max_integer_digits)
    raw = _read_regular_file(path, max_bytes, what)
    brackets = raw.count(b"[") + raw.count(b"{")
    if brackets > max_containers:
        raise JsonFileError(f"{path.name} cannot be {what}: it has {brackets:,} '[' and '{{', more than the "
                            f"{max_containers:,} lists and objects it may hold")
    commas = raw.count(b",") if max_values is not None else 0
    if max_values is not None and commas >= max_values:
        raise JsonFileError(f"{path.name} cannot be {what}: it has {commas:,} commas, more than the {max_values:,} values "
                            "it may hold")
    try:
        text = raw.decode("utf-8-sig")  # an editor's byte-order mark is no part of the document
    except UnicodeDecodeError:
        raise JsonFileError(f"{path.name} is not a text file (not UTF-8), so it is not {what}") from None
    collecting = gc.isenabled()
    gc.disable()  # the parse makes only new objects, none of them garbage; collections would find nothing
    try:
        data = json.loads(text, parse_int=_bounded_int(max_integer_digits), parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise JsonFileError(f"{path.name} is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})") from None
    except (ValueError, RecursionError) as error:  # _bounded_int, _no_constant, or "[[[[..." past the parser's stack
        reason = str(error) if isinstance(error, ValueError) else f"it nests deeper than {MAX_DEPTH} levels"
        raise JsonFileError(f"{path.name} cannot be {what}: {reason}") from None
    finally:
        if collecting:
            gc.enable()
    depth = nesting_depth(data)
    if depth > MAX_DEPTH:
        raise JsonFileError(f"{path.name} cannot be {what}: it nests {depth} levels deep, more than {MAX_DEPTH} levels")
    return data


def _parse_in_child(path: Path) -> bool:
    if threading.current_thread() is threading.main_thread() or getattr(sys, "frozen", False):
        return False  # the main thread waits for its own parse anyway; a frozen app has no interpreter to start
    try:
        info = os.stat(path)
    except OSError:
        return False  # the in-process read words the error
    return stat.S_ISREG(info.st_mode) and info.st_size > CHILD_PARSE_BYTES


def _read_in_child(path: Path, max_bytes: int, what: str, max_containers: int, max_values: int | None,
                   max_integer_digits: int) -> Any:
    request = json.dumps([str(path), max_bytes, what, max_containers, max_values, max_integer_digits])
    code = f"import sys; sys.path.insert(0, {_PROJECT_ROOT!r}); from core.json_files import _child_main; _child_main()"
    try:
        done = subprocess.run([sys.executable, "-I", "-S", "-c", code], input=request.encode("utf-8"),
                              capture_output=True, timeout=CHILD_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as error:
        raise JsonFileError(f"{path.name} could not be read as {what}: the reading process failed ({error})") from None
    try:
        reply = json.loads(done.stdout)
    except ValueError:
        reply = None
    if done.returncode != 0 or not isinstance(reply, dict):
        raise JsonFileError(f"{path.name} could not be read as {what}: the reading process ended with code "
                            f"{done.returncode} (out of memory?)")
    if "error" in reply:
        raise JsonFileError(str(reply["error"]))
    return reply["data"]


def _child_main() -> None:
    """The child process: read the file the request on stdin names; write {"data": ...} or {"error": ...}."""
    path, max_bytes, what, max_containers, max_values, max_integer_digits = json.loads(sys.stdin.buffer.read())
    try:
        data = read_json_document(path, max_bytes, what, max_containers, max_values, max_integer_digits)
        reply: dict[str, Any] = {"data": data if type(data) is dict else type(data)()}
    except JsonFileError as error:
        reply = {"error": str(error)}
    # ASCII: a lone surrogate the document escaped travels escaped, so the reply is always valid UTF-8.
    sys.stdout.buffer.write(json.dumps(reply, separators=(",", ":"), allow_nan=False).encode("ascii"))


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


def _bounded_int(limit: int) -> Callable[[str], int]:
    def parse(digits: str) -> int:
        if len(digits.lstrip("-")) > limit:
            raise ValueError(f"it holds an integer of {len(digits.lstrip('-')):,} digits (at most {limit})")
        return int(digits)

    return parse


def _no_constant(name: str) -> Any:
    raise ValueError(f"it holds {name}, which is not a JSON number")


def nesting_depth(data: Any) -> int:
    """How many lists and objects deep `data` goes (a scalar is 0), level by level, without recursion."""
    level = [data] if type(data) in (dict, list) else []
    depth = 0
    while level:
        depth += 1
        below: list[Any] = []
        for value in level:
            below += [child for child in (value.values() if type(value) is dict else value) if type(child) in _CONTAINERS]
        level = below
    return depth


_CONTAINERS = (dict, list)  # what json.loads makes; exact types, so that the walk stays a C-speed filter


__all__ = ["JsonFileError", "MAX_CONTAINERS", "MAX_DEPTH", "MAX_INTEGER_DIGITS", "nesting_depth", "read_json_document",
           "read_regular_file"]
