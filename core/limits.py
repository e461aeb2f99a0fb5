"""Bounds on what a user can hand the lab (a session, a lesson, a command-line option), in one place.

Each bound sits far above real use and well below what would freeze the window or exhaust memory;
messages quote the bound, so the user knows what to change.
"""

from __future__ import annotations

import math
import re
from typing import Any

MAX_SEED = 2**31 - 1  # the window's seed boxes are 32-bit; torch and numpy take any of these
# A token id typed or read from a file: below core.config's largest vocab_size (1 << 22; Gemma 3 has 262,144
# tokens). A larger one is no token of any model, and past int64 it would overflow the id tensor.
MAX_TOKEN_ID = (1 << 22) - 1
# Distinct characters of a corpus a character model trains on: each is an embedding row and a column of every
# step's (batch, sequence, vocabulary) logits. At this bound the bundled recipes' runs stay under 1 GB (tiny-gpt's
# 16 x 256 windows: 0.98 GB peak); a text of 80,000 distinct characters would need some 1.3 GB per logits tensor.
# A Chinese novel uses some 4,000 to 6,000.
MAX_CHARACTER_VOCAB = 8192
MAX_TEXT_CHARS = 10_000  # the text the panels tokenize and draw as chips (a few model contexts of prose)
MAX_TITLE_CHARS = 200  # a lesson's or a step's title: one line in a menu or a heading
MAX_PROSE_CHARS = 20_000  # a lesson step's text, question or reveal
MAX_LESSON_STEPS = 200
# A model folder's JSON files (tokenizer.json, config.json, a shard index). Gemma 3's tokenizer.json holds
# some 262,000 pieces with their scores, Llama 3's 280,000 merges: far below these. At these bounds a
# hostile file of empty objects or one-letter strings still parses in well under 1 GiB.
MAX_MODEL_JSON_CONTAINERS = 2_000_000
MAX_MODEL_JSON_VALUES = 8_000_000
MAX_MODEL_JSON_DIGITS = 100  # transformers writes model_max_length as int(1e30), 31 digits
MAX_SETTING_INT = 2**31 - 1  # a panel's setting lands in a 32-bit spin box or slider
MAX_SETTING_ITEMS = 10_000  # a list among a panel's settings (a permutation, a selection)
MAX_WINDOW_SIDE = 8192  # --size: an 8K screen; a larger window makes Qt allocate (or crash on) a huge backing store
# A device name as core.device reads it, checkable before torch is imported (the window opens first).
DEVICE_NAME = re.compile(r"\s*(auto|cpu|mps|cuda(:\d{1,2})?)\s*", re.IGNORECASE)
DEVICE_NAMES_HINT = "cpu, cuda, cuda:N, mps or auto"



def settings_problem(settings: Any, where: str) -> str:
    """Why a panel's settings from a file cannot be handed to the panel ("" when they can).

    Whatever the keys, values stay within what widgets hold: numbers within 32-bit whole numbers (a panel
    may round a number into a spin box),
    strings of at most MAX_TEXT_CHARS, lists of at most MAX_SETTING_ITEMS (the file bounds the nesting).
    """
    stack = [(settings, where)]
    while stack:
        value, at = stack.pop()
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int) and not -MAX_SETTING_INT - 1 <= value <= MAX_SETTING_INT:
            return f"{at}: {str(value)[:40]} is beyond the whole numbers a setting holds (at most {MAX_SETTING_INT:,})"
        if isinstance(value, float) and not (math.isfinite(value) and abs(value) <= MAX_SETTING_INT):
            return f"{at}: {value:g} is beyond the numbers a setting holds (at most {MAX_SETTING_INT:,} either way)"
        if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
            return f"{at}: a text of {len(value):,} characters, more than the {MAX_TEXT_CHARS:,} a setting holds"
        if isinstance(value, (list, dict)) and len(value) > MAX_SETTING_ITEMS:
            return f"{at}: {len(value):,} items, more than the {MAX_SETTING_ITEMS:,} a setting holds"
        if isinstance(value, dict):
            stack.extend((child, f"{at}.{str(key)[:40]}") for key, child in value.items())
        elif isinstance(value, list):
            stack.extend((child, f"{at}[{index}]") for index, child in enumerate(value))
    return ""


def character_vocabulary_problem(name: str, distinct: int, blank: bool = False) -> str:
    """Why a character model cannot train on a text of `distinct` characters (and a masked model's blank), or ""."""
    tokens = distinct + blank
    if tokens <= MAX_CHARACTER_VOCAB:
        return ""
    with_blank = f" ({tokens:,} tokens with the blank)" if blank else ""
    return (f"{name} has {distinct:,} distinct characters{with_blank}; a character model trains on at most "
            f"{MAX_CHARACTER_VOCAB:,} tokens (each is an embedding row and a column of every step's logits)")


__all__ = ["DEVICE_NAME", "DEVICE_NAMES_HINT", "MAX_MODEL_JSON_CONTAINERS", "MAX_MODEL_JSON_DIGITS",
           "MAX_MODEL_JSON_VALUES", "MAX_WINDOW_SIDE", "MAX_LESSON_STEPS", "MAX_PROSE_CHARS", "MAX_SEED", "MAX_SETTING_INT", "MAX_SETTING_ITEMS",
           "MAX_CHARACTER_VOCAB", "MAX_TEXT_CHARS", "MAX_TITLE_CHARS", "MAX_TOKEN_ID",
           "character_vocabulary_problem", "settings_problem"]
