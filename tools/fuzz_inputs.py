"""Hostile inputs for the fuzz run: session and lesson files, checkpoint folders and command lines.

Every maker takes a seeded random.Random and a folder to write in and returns (label, path or argv):
the label says what was done, short enough for the summary table, so a finding can be replayed.
Documents start from a valid one (a session the window wrote, a bundled lesson, a checkpoint the lab
saved) and are damaged at one to three places, or replaced as a whole file by one of the kinds a
careless or hostile user hands over: a FIFO, a symlink to /dev/zero, a folder, a truncated or binary
file, nesting and integers past the bounds, and files of exactly or just over the size limits.

The Causal lab and the Families panel get makers of their own (`new_half_*`): valid JSON whose values aim
at what those views must refuse, so that the views compute and refuse instead of the loader refusing the
file: heads and layers a model lacks, periods past the context, a patching site the model has no FFN for,
blanks out of range, many blanks or none, characters no tokenizer knows, ids past int64, texts of 10,000
characters, and models of every family in front of every view (a router view on a decoder, cross-attention
on an encoder). `new_half_argv` does the same for the commands those views share their code with.
"""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
import string
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.json_files import MAX_DEPTH, MAX_INTEGER_DIGITS
from core.lesson_parts import CAUSAL_LAB_SUB_TABS, FAMILIES_SUB_TABS, PANEL_PARTS
from core.limits import MAX_LESSON_STEPS, MAX_PROSE_CHARS, MAX_SEED, MAX_TEXT_CHARS, MAX_TITLE_CHARS, settings_problem

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


# ---- the Causal lab and the Families panel ---------------------------------------------------------

NEW_HALF_TABS: dict[str, tuple[str, ...]] = {"Causal lab": CAUSAL_LAB_SUB_TABS, "Families": FAMILIES_SUB_TABS}
# The trained models of every family, and presets that lack what a view needs (no FFN, no experts, random weights).
FAMILY_PRESETS = ("tiny-gpt", "tiny-induction", "tiny-encoder", "tiny-encoder-decoder", "tiny-moe")
ODD_PRESETS = ("tiny-induction-attn", "tiny-moe-dense", "tiny-gpt-bpe", "textbook-block")
# The model each view is made for; the case draws it half of the time and another family's model (a router view on
# a decoder, cross-attention on an encoder) or an odd preset the rest.
VIEW_PRESETS = {"Attribution": "tiny-gpt", "Patching": "tiny-gpt", "Ablation": "tiny-induction",
                "Induction": "tiny-induction", "Fill in the blank": "tiny-encoder",
                "Cross-attention": "tiny-encoder-decoder", "Router": "tiny-moe"}
PAST_INT64 = 2**63  # one past the largest int64: numpy and torch overflow on it
UNKNOWN_CHARACTERS = "Zürich € ☃ 名前 \U0001f4a5 \u0000 \u202e"  # in no bundled model's vocabulary
ALL_HEADS = ",".join(f"L{layer}H{head}" for layer in range(4) for head in range(4))
HEAD_SPECS = ("", "L0H0", "L1H0", "L1H3", "L0H0,L1H1", ALL_HEADS, "L3H3", "L9H9", "L0H99", "L99H0", "L", "H0", "L-1H0",
              "l1h0", "L1 H0", "L0H0;L0H0", "L99999999999999999999H0", "L0H0," * 2000, RICH_TEXT, UNKNOWN_CHARACTERS)
FFN_SPECS = ("", "0", "1", "0,1", "0,0", "3", "9", "L0", "-1", "x", "99999999999999999999", "0," * 2000)
TOKEN_TEXTS = ("o", "e", "_", " ", "\n", "", "ab", "€", "\u0000", RICH_TEXT, "a" * 1000, "END", "[MASK]")
SOURCES = ("Friday, 5 March 2021", "March 5, 2021", "5th of March 1850", "2021-03-05", "", " ", "\t", "Friday" * 20,
           UNKNOWN_CHARACTERS, RICH_TEXT)


def _letters(rng: random.Random, count: int, alphabet: str = string.ascii_letters) -> str:
    return "".join(rng.choice(alphabet) for _ in range(count))


def new_half_text(rng: random.Random) -> tuple[str, str]:
    """(label, text) for the lab's strip: blanks many or none, a context's length and one past, unknown characters."""
    repeat = _letters(rng, rng.choice((5, 20, 33)))
    makers: dict[str, Callable[[], str]] = {
        "a line of the play": lambda: "ROMEO:\nBut soft, what light through yonder window breaks?",
        "one blank": lambda: "To be, or not to be: that is the q_estion",
        "blanks only": lambda: "_" * rng.choice((1, 2, 63, 64, 65, 127, 128, 129, 300)),
        "many blanks": lambda: "a_" * rng.choice((10, 64, 200)),
        "no blank": lambda: "To be, or not to be",
        "one character": lambda: rng.choice("a_ \n"),
        "a date": lambda: rng.choice(SOURCES[:4]),
        "repeated letters": lambda: repeat + repeat,
        "unknown characters": lambda: UNKNOWN_CHARACTERS,
        "at a context's length": lambda: _letters(rng, rng.choice((31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256,
                                                                   257))),
        "10,000 characters": lambda: _letters(rng, MAX_TEXT_CHARS, string.ascii_letters + " _"),
        "10,000 characters, unknown ones among them":
            lambda: _letters(rng, MAX_TEXT_CHARS - 12) + UNKNOWN_CHARACTERS[:12],
        "rich text": lambda: RICH_TEXT,
    }
    label = rng.choice(sorted(makers))
    return label, makers[label]()[:MAX_TEXT_CHARS]


def new_half_ids(rng: random.Random, length: int = 20) -> list[int]:
    """Token ids: none, past any vocabulary, past int32 and int64, negative, 10,000 of them, or plausible ones."""
    makers: list[Callable[[], list[int]]] = [
        lambda: [], lambda: [0], lambda: [rng.randrange(44) for _ in range(max(1, length))],
        lambda: [rng.randrange(44) for _ in range(max(1, length + rng.choice((-1, 1, 50))))],
        lambda: [rng.choice((43, 44, 53, 65, 66, 1535, 1536, 50_257))] * max(1, length),
        lambda: [1] * (length - 1) + [2**31], lambda: [1] * (length - 1) + [PAST_INT64],
        lambda: [10**20] * max(1, length),
        lambda: [-1] * max(1, length), lambda: [1] * MAX_TEXT_CHARS,
    ]
    return rng.choice(makers)()


def _setting(rng: random.Random, values: list[Any], hostile: float = 0.1) -> Any:
    """One of `values`, or now and then a value of no expected type."""
    return hostile_value(rng) if rng.random() < hostile else rng.choice(values)


def new_half_settings(rng: random.Random, panel: str, tab: str, text_length: int = 20) -> dict[str, Any]:
    """Panel settings for the Causal lab or the Families panel, turned to `tab`, values at and past their bounds."""
    if panel == "Causal lab":
        values: dict[str, list[Any]] = {
            "answer": list(TOKEN_TEXTS), "foil": list(TOKEN_TEXTS),
            "corrupt": [new_half_ids(rng, text_length) for _ in range(3)],
            "site": ["resid_pre", "attn_out", "mlp_out", "head", "mlp_out", "nope", ""],
            "metric_position": [-2, -1, 0, 1, text_length - 1, text_length, 32, 64, 256, MAX_TEXT_CHARS,
                                MAX_TEXT_CHARS + 1, 2**31, PAST_INT64],
            "heads": list(HEAD_SPECS), "ffns": list(FFN_SPECS), "ablation": ["zero", "mean", "resample", ""],
            "period": [0, 1, 2, 3, 20, 31, 32, 33, 40, 63, 64, 65, 128, 129, 512, 513, 2**31, PAST_INT64],
            "seed": [0, 1, MAX_SEED, MAX_SEED + 1, -1],
        }
    else:
        values = {
            "blank": [-1, 0, 1, 2, 3, 10, 64, 65, 200, MAX_TEXT_CHARS, MAX_TEXT_CHARS + 1, 2**31, PAST_INT64],
            "top_k": [-1, 0, 1, 5, 20, 21, 1000, 2**31],
            "source": [*SOURCES, _letters(rng, MAX_TEXT_CHARS), _letters(rng, MAX_TEXT_CHARS + 1),
                       "Friday, 5 March 2021 " * 500],
            "steps": [-1, 0, 1, 11, 32, 63, 64, 65, 1000, 2**31, PAST_INT64],
            "cross_layer": [-1, 0, 1, 2, 5, 1023, 1024, 2**31],
            "cross_head": [-2, -1, 0, 1, 3, 4, 99, 1023, 1024, 2**31],
            "router_layer": [-1, 0, 1, 2, 3, 1023, 1024, 2**31],
        }
    keys = sorted(values)
    chosen = rng.sample(keys, rng.randint(1, len(keys)))
    settings = {key: _setting(rng, values[key]) for key in chosen}
    settings["tab"] = tab if rng.random() < 0.95 else rng.choice(["", "Nope", tab.lower(), 1])
    return settings


def within_lesson_bounds(panel: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The settings a lesson file may give (the declared kinds and bounds of core.lesson_parts), others dropped:
    values a lesson's check passes but the view must still refuse (a head the model lacks, a period past its
    context)."""
    declared = PANEL_PARTS[panel].settings
    return {key: value for key, value in settings.items()
            if key in declared and not declared[key].problem(value) and not settings_problem({key: value}, key)}


def within_file_bounds(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings a session or lesson file can hand a panel at all (core.limits.settings_problem), others dropped."""
    return {key: value for key, value in settings.items() if not settings_problem({key: value}, key)}


def new_half_state(rng: random.Random, tab: str, first: bool = True) -> tuple[str, dict[str, Any]]:
    """(label, a lesson step's "state"): the model made for `tab` or a mismatched one, a hostile text, an edit."""
    state: dict[str, Any] = {}
    label = []
    if first or rng.random() < 0.4:
        roll = rng.random()
        preset = (VIEW_PRESETS[tab] if roll < 0.5 else rng.choice(FAMILY_PRESETS) if roll < 0.85
                  else rng.choice(ODD_PRESETS))
        state["preset"] = preset
        state["seed"] = rng.choice((0, 0, 1, MAX_SEED))
        label.append(preset)
        if rng.random() < 0.1:  # the bundled weights no longer fit: random ones, with a smaller context
            state["config"] = {"context_length": rng.choice((8, 16, 33))}
            label.append(f"context {state['config']['context_length']}")
    if first or rng.random() < 0.6:
        text_label, state["text"] = new_half_text(rng)
        label.append(text_label)
        if not state["text"]:
            state["text"] = "a"
    if rng.random() < 0.3:
        length = len(state.get("text", "x" * 20))
        state["edit"] = {"position": rng.choice((0, 1, length - 1, length, 10_000 - 1)) if length else 0,
                         "token": rng.choice(("a", "_", "e", "€", "\u0000", "ab", "☃", " "))}
        label.append(f"edit {state['edit']['position']}={state['edit']['token']!r}")
    return ", ".join(label), state


# The commands that share their code with those views (ablation has none: the GUI's Ablation view alone runs it).
NEW_HALF_COMMANDS = {"patch": "tiny-gpt", "attribute": "tiny-gpt", "induction": "tiny-induction",
                     "fill-mask": "tiny-encoder", "translate": "tiny-encoder-decoder", "route": "tiny-moe"}
PAST_INT64_IDS = ("39,99999999999999999999", str(PAST_INT64), f"1,2,3,{PAST_INT64}", f"{-PAST_INT64 - 1},1")
ID_LISTS = (*PAST_INT64_IDS, f"1,{PAST_INT64 - 1}", f"1,{2**31}", "-1", "", ",", "1,,2", "0x10", "1e3", "١",
            ",".join(["1"] * MAX_TEXT_CHARS), "9" * 5000, "1, 2")
WHOLE_NUMBERS = ("-1", "0", "1", "2", "5", "20", "32", "33", "63", "64", "65", "256", "1000", "10000", str(2**31),
                 str(PAST_INT64), "99999999999999999999", "-99999999999999999999", "x", "", "1.5", "nan")


def new_half_argv(rng: random.Random, checkpoints: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """(label, argv) for patch, attribute, induction, fill-mask, translate or route: the model made for the command or
    another family's, texts of 10,000 characters, unknown tokens, ids past int64, numbers past every bound."""
    command = rng.choice(sorted(NEW_HALF_COMMANDS))
    roll = rng.random()
    checkpoint = (NEW_HALF_COMMANDS[command] if roll < 0.6 else rng.choice(FAMILY_PRESETS) if roll < 0.9
                  else rng.choice(("tiny-moe-dense", "tiny-gpt-bpe", "tiny-induction-attn", "nope", "", *checkpoints)))
    device = "cpu" if rng.random() < 0.95 else rng.choice(("cuda", "mps", "x"))
    argv = [command, "--checkpoint", checkpoint, "--device", device]
    if rng.random() < 0.5:
        argv.append("--json")

    def text() -> str:
        return new_half_text(rng)[1] if rng.random() < 0.8 else rng.choice((*TOKEN_TEXTS, *SOURCES))

    def ids() -> str:
        return rng.choice(ID_LISTS) if rng.random() < 0.6 else ",".join(map(str, new_half_ids(rng)))

    def either(text_flag: str, ids_flag: str, make_text: Callable[[], str] = text) -> None:
        roll = rng.random()
        if roll < 0.55:
            argv.extend((text_flag, make_text()))
        elif roll < 0.95:
            argv.extend((ids_flag, ids()))
        else:  # both, or neither
            argv.extend((text_flag, make_text(), ids_flag, ids()) if rng.random() < 0.5 else ())

    def maybe(flag: str, values: tuple[str, ...] | list[str], chance: float = 0.5) -> None:
        if rng.random() < chance:
            argv.extend((flag, rng.choice(values)))

    if command == "patch":
        either("--clean", "--clean-ids")
        either("--corrupt", "--corrupt-ids")
        maybe("--site", ["resid_pre", "attn_out", "mlp_out", "head", "nope"])
        maybe("--position", WHOLE_NUMBERS, 0.3)
    if command in ("patch", "attribute"):
        if command == "attribute":
            either("--text", "--ids")
            maybe("--position", WHOLE_NUMBERS, 0.3)
        # One of the two is required: without it argparse refuses every case before the model is read.
        if rng.random() < 0.95:
            argv.extend(("--answer", rng.choice(TOKEN_TEXTS)) if rng.random() < 0.6
                        else ("--answer-id", rng.choice(WHOLE_NUMBERS)))
        maybe("--foil", TOKEN_TEXTS, 0.3)
        maybe("--foil-id", WHOLE_NUMBERS, 0.2)
    elif command == "induction":
        maybe("--length", WHOLE_NUMBERS, 0.8)
        maybe("--seed", WHOLE_NUMBERS, 0.3)
    elif command in ("fill-mask", "route"):
        either("--text", "--ids")
        if command == "fill-mask":
            maybe("--top", WHOLE_NUMBERS, 0.4)
    elif command == "translate":
        either("--source", "--source-ids", lambda: rng.choice(SOURCES) if rng.random() < 0.6 else new_half_text(rng)[1])
        maybe("--max-new", WHOLE_NUMBERS, 0.4)
        maybe("--top", WHOLE_NUMBERS, 0.3)
    shown = " ".join(a if len(a) < 40 else f"{a[:30]}...({len(a):,} chars)" for a in argv)
    return f"view-cli {shown}", argv


__all__ = ["FAMILY_PRESETS", "FILE_KINDS", "NEW_HALF_COMMANDS", "NEW_HALF_TABS", "PAST_INT64", "SAFETENSORS_KINDS",
           "VIEW_PRESETS", "damage_safetensors", "hostile_value", "mutate", "nested", "new_half_argv",
           "new_half_ids", "new_half_settings", "new_half_state", "new_half_text", "odd_name", "within_file_bounds",
           "within_lesson_bounds", "write_whole_file"]
