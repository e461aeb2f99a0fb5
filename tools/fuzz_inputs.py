"""Hostile inputs for the fuzz run: session and lesson files, checkpoint folders and command lines.

Every maker takes a seeded random.Random and a folder to write in and returns (label, path or argv):
the label says what was done, short enough for the summary table, so a finding can be replayed.
Documents start from a valid one (a session the window wrote, a bundled lesson, a checkpoint the lab
saved) and are damaged at one to three places, or replaced as a whole file by one of the kinds a
careless or hostile user hands over: a FIFO, a symlink to /dev/zero, a folder, a truncated or binary
file, nesting and integers past the bounds, and files of exactly or just over the size limits.
"""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.json_files import MAX_DEPTH, MAX_INTEGER_DIGITS
from core.limits import MAX_LESSON_STEPS, MAX_PROSE_CHARS, MAX_SEED, MAX_TEXT_CHARS, MAX_TITLE_CHARS

MAX_DOCUMENT_CHARS = 8 * 2**20  # a mutated document stays under this much JSON (twice the largest file limit it meets)
RICH_TEXT = "<b>bold</b><img src='file:///etc/hostname'><a href='x'>link</a>"
HUGE_TABLE = "<table>" + "<tr><td>cell</td></tr>" * 2000 + "</table>"
ODD_TEXT = "\u202eevil\u200b\ufeff\u0000tab\tnewline\n\U0001f4a5 \u0301\u0301\u0301"


def hostile_value(rng: random.Random) -> Any:
    """A value no field expects, or one at or just past a bound of core.limits."""
    makers: list[Callable[[], Any]] = [
        lambda: None, lambda: True, lambda: False, lambda: 0, lambda: -1, lambda: 1, lambda: 2,
        lambda: MAX_SEED, lambda: MAX_SEED + 1, lambda: 2**53 + 1, lambda: 10 ** (MAX_INTEGER_DIGITS - 1),
        lambda: -(10 ** (MAX_INTEGER_DIGITS - 1)), lambda: 1e308, lambda: -1e308, lambda: 5e-324, lambda: 0.5, lambda: 3.0000001,
        lambda: 1_000_000, lambda: 65_536, lambda: 4097,
        lambda: "", lambda: " ", lambda: "x", lambda: RICH_TEXT, lambda: HUGE_TABLE, lambda: ODD_TEXT, lambda: "\ud800",
        lambda: "a" * MAX_TITLE_CHARS, lambda: "a" * (MAX_TITLE_CHARS + 1), lambda: "To be " * (MAX_TEXT_CHARS // 6),
        lambda: "z" * MAX_TEXT_CHARS, lambda: "z" * (MAX_TEXT_CHARS + 1), lambda: "w " * (MAX_PROSE_CHARS // 2),
        lambda: "{{verdict}}" * 1500, lambda: "{{" * 5000, lambda: "\n" * 5000,
        lambda: [], lambda: {}, lambda: [0] * 1000, lambda: list(range(100_000)), lambda: ["x"] * 50,
        lambda: nested(MAX_DEPTH - 4), lambda: {"a": [1, {"b": None}]}, lambda: [[]] * 20_000,
    ]
    return rng.choice(makers)()


def nested(depth: int) -> Any:
    value: Any = 0
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def mutate(document: Any, rng: random.Random, extra_keys: list[str] = ()) -> tuple[Any, str]:
    """`document` with one to three of its places replaced, removed, multiplied or joined by unknown keys."""
    document = copy.deepcopy(document)
    done = []
    actions = [rng.choice(("replace", "replace", "replace", "remove", "repeat", "add")) for _ in range(rng.randint(1, 3))]
    # Repeats last: a list repeated holds one object many times, and a change to it after would multiply.
    for action in sorted(actions, key=lambda name: name == "repeat"):
        places = list(_places(document))
        if not places:
            break
        parent, key, path = rng.choice(places)
        if action == "replace":
            parent[key] = hostile_value(rng)
        elif action == "remove" and isinstance(parent, dict):
            del parent[key]
        elif action == "repeat" and isinstance(parent[key], list) and parent[key]:
            # Repeated up to a few MiB of JSON: past the files' size limits, short of what takes the maker long.
            size = len(json.dumps(parent[key]))
            factors = [f for f in (2, 50, MAX_LESSON_STEPS + 1, 1000) if size * f <= MAX_DOCUMENT_CHARS] or [1]
            parent[key] = parent[key] * rng.choice(factors)
        elif isinstance(parent, dict):
            name = rng.choice([*extra_keys, "unknown", "__proto__", "format", RICH_TEXT])
            parent[name] = hostile_value(rng)
            path = f"{path}+{name[:12]}"
        else:
            parent[key] = hostile_value(rng)
        done.append(f"{action} {path}")
    return document, "; ".join(done)


def _places(document: Any, path: str = "", limit: int = 400):
    """(container, key, printable path) for places in `document`, at most `limit` of them, 60 per container."""
    stack = [(document, path)]
    found = 0
    while stack:
        value, where = stack.pop()
        keys = list(value)[:60] if isinstance(value, dict) else range(min(60, len(value))) if isinstance(value, list) else ()
        for key in keys:
            found += 1
            if found > limit:
                return
            yield value, key, f"{where}.{key}"[:40]
            if isinstance(value[key], (dict, list)):
                stack.append((value[key], f"{where}.{key}"))


# ---- whole files ----------------------------------------------------------------------------------


def write_whole_file(path: Path, document: Any, rng: random.Random, max_bytes: int) -> str:
    """Write `document` at `path` as one of many kinds of file; returns what kind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    text = json.dumps(document, ensure_ascii=rng.random() < 0.5)
    encoded = text.encode("utf-8", errors="surrogatepass")  # a lone surrogate written raw: not UTF-8 any more
    kind = rng.choice(FILE_KINDS)
    if kind == "json":
        path.write_bytes(encoded)
    elif kind == "truncated":
        path.write_bytes(encoded[: rng.randint(0, max(0, len(encoded) - 1))])
    elif kind == "flipped bytes":
        raw = bytearray(encoded)
        for _ in range(rng.randint(1, 8)):
            if raw:
                raw[rng.randrange(len(raw))] = rng.randrange(256)
        path.write_bytes(bytes(raw))
    elif kind == "utf-16":
        path.write_bytes(text.encode("utf-16", errors="surrogatepass"))
    elif kind == "bom":
        path.write_bytes("\ufeff".encode() + encoded)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "random bytes":
        path.write_bytes(rng.randbytes(rng.choice((1, 100, 10_000))))
    elif kind == "nested at the bound":
        path.write_text(json.dumps(nested(MAX_DEPTH)), encoding="utf-8")
    elif kind == "nested past the bound":
        path.write_text(json.dumps(nested(MAX_DEPTH + 1)), encoding="utf-8")
    elif kind == "nested 100,000 deep":
        path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    elif kind == "wide at the size limit":
        count = (max_bytes - 2) // 3
        path.write_text("[" + ",".join(["[]"] * count) + "]", encoding="utf-8")
    elif kind == "objects at the size limit":
        count = (max_bytes - 2) // 3
        path.write_text("[" + ",".join(["{}"] * count) + "]", encoding="utf-8")
    elif kind == "string at the size limit":
        path.write_text(json.dumps("x" * (max_bytes - 2)), encoding="utf-8")
    elif kind == "padded to the size limit":
        path.write_bytes(encoded + b" " * max(0, max_bytes - len(encoded)))
    elif kind == "one byte over the size limit":
        path.write_bytes(encoded + b" " * max(0, max_bytes + 1 - len(encoded)))
    elif kind == "sparse 10 GB":
        with path.open("wb") as handle:
            handle.truncate(10 * 2**30)
    elif kind == "integer of 5,000 digits":
        path.write_text('{"seed": ' + "9" * 5000 + "}", encoding="utf-8")
    elif kind == "NaN and Infinity":
        path.write_bytes(encoded.replace(b"0", b"NaN", 1).replace(b"1", b"Infinity", 1))
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "symlink to /dev/null":
        path.symlink_to("/dev/null")
    elif kind == "symlink loop":
        path.symlink_to(path.name)
    elif kind == "dangling symlink":
        path.symlink_to(path.parent / "nowhere" / "nothing.json")
    elif kind == "folder":
        path.mkdir()
    elif kind == "unreadable":
        path.write_bytes(encoded)
        path.chmod(0)
    return kind


FILE_KINDS = (
    *["json"] * 12,
    "truncated", "flipped bytes", "utf-16", "bom", "empty", "random bytes", "nested at the bound", "nested past the bound",
    "nested 100,000 deep", "wide at the size limit", "objects at the size limit", "string at the size limit",
    "padded to the size limit", "one byte over the size limit", "sparse 10 GB", "integer of 5,000 digits", "NaN and Infinity",
    "fifo", "symlink to /dev/zero", "symlink to /dev/null", "symlink loop", "dangling symlink", "folder", "unreadable",
)
ODD_NAMES = ("case.json", "évil <b>name</b>.json", "new\nline.json", "x" * 200 + ".json", "-starts-with-dash.json", " .json")


def odd_name(rng: random.Random, default: str) -> str:
    return default if rng.random() < 0.7 else rng.choice(ODD_NAMES)


# ---- safetensors ----------------------------------------------------------------------------------


def damage_safetensors(path: Path, rng: random.Random) -> str:
    """Replace the weights file with a hostile one: a header that lies, a truncated body, not a file at all."""
    raw = path.read_bytes()
    try:
        (header_length,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8 : 8 + header_length])
        if not isinstance(header, dict) or not [name for name in header if name != "__metadata__"]:
            raise ValueError("no tensors")
    except (struct.error, ValueError):  # damaged already: damaged again as a whole
        path.write_bytes(rng.randbytes(100))
        return "model.safetensors: random bytes"
    body = raw[8 + header_length :]
    kind = rng.choice(SAFETENSORS_KINDS)
    names = [name for name in header if name != "__metadata__"]
    name = rng.choice(names)
    if kind == "header length past the end":
        raw = struct.pack("<Q", rng.choice((len(raw), 2**40, 2**64 - 1))) + raw[8:]
    elif kind == "header length 0":
        raw = struct.pack("<Q", 0) + raw[8:]
    elif kind == "truncated body":
        raw = raw[: 8 + header_length + rng.randrange(max(1, len(body)))]
    elif kind == "truncated header":
        raw = raw[: rng.randrange(1, 8 + header_length)]
    elif kind in ("huge shape", "offsets past the end", "odd dtype", "negative shape", "overlapping offsets", "hostile metadata",
                  "huge declared tensor in a sparse file"):
        entry = header[name]
        if kind == "huge shape":
            entry["shape"] = rng.choice(([2**31, 2**31], [2**40], [10**6, 10**6], [0], [1] * 64))
        elif kind == "offsets past the end":
            entry["data_offsets"] = [0, len(body) + rng.choice((1, 2**40))]
        elif kind == "odd dtype":
            entry["dtype"] = rng.choice(("F8_E4M3", "F8_E5M2", "I64", "BOOL", "U8", "F64", "C64", "nope", ""))
        elif kind == "negative shape":
            entry["shape"] = [-1] + entry["shape"][1:]
        elif kind == "overlapping offsets":
            entry["data_offsets"] = [0, entry["data_offsets"][1]]
        elif kind == "hostile metadata":
            header["__metadata__"] = {"format": RICH_TEXT, "x" * 1000: HUGE_TABLE}
        else:
            # A tensor of 4 GiB that the file really holds (as a hole): the config needs another shape.
            elements = 2**30
            entry.update(dtype="F32", shape=[2**15, 2**15], data_offsets=[0, 4 * elements])
            for other in names:
                if other != name:
                    header.pop(other)
            body = b""
        text = json.dumps(header).encode("utf-8")
        raw = struct.pack("<Q", len(text)) + text + body
        if kind == "huge declared tensor in a sparse file":
            path.write_bytes(raw)
            with path.open("r+b") as handle:
                handle.truncate(len(raw) + 4 * 2**30)
            return f"model.safetensors: {kind}"
    elif kind == "header not JSON":
        text = b"{not json" + b" " * max(0, header_length - 9)
        raw = raw[:8] + text[:header_length] + body
    elif kind == "random bytes":
        raw = rng.randbytes(rng.choice((0, 7, 8, 100, 10_000)))
    elif kind == "fifo":
        path.unlink()
        os.mkfifo(path)
        return f"model.safetensors: {kind}"
    elif kind == "symlink to /dev/zero":
        path.unlink()
        path.symlink_to("/dev/zero")
        return f"model.safetensors: {kind}"
    elif kind == "folder":
        path.unlink()
        path.mkdir()
        return f"model.safetensors: {kind}"
    elif kind == "missing":
        path.unlink()
        return f"model.safetensors: {kind}"
    path.write_bytes(raw)
    return f"model.safetensors: {kind}"


SAFETENSORS_KINDS = (
    "header length past the end", "header length 0", "truncated body", "truncated header", "huge shape", "offsets past the end",
    "odd dtype", "negative shape", "overlapping offsets", "hostile metadata", "huge declared tensor in a sparse file",
    "header not JSON", "random bytes", "fifo", "symlink to /dev/zero", "folder", "missing",
)


__all__ = ["FILE_KINDS", "SAFETENSORS_KINDS", "damage_safetensors", "hostile_value", "mutate", "nested", "odd_name",
           "write_whole_file"]
