"""Random-weight stand-ins for the bundled tiny-encoder, tiny-encoder-decoder and tiny-moe, with their tokenizers.

Each is its preset's shape built from a seed, over the characters the bundled model reads: the Shakespeare
characters plus the mask character for the encoder, the characters of dates in words and ISO form plus START
and END for the encoder-decoder, the Shakespeare characters for the mixture of experts.
"""

from __future__ import annotations

import functools
from pathlib import Path

from core.checkpoints import save_checkpoint
from core.model import Transformer
from core.objectives.masked_lm import MASK_CHAR
from core.objectives.seq2seq import END, START
from core.presets import get_preset
from core.tokenizers import CharTokenizer
from resources import resource_path

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")


@functools.cache
def shakespeare_tokenizer() -> CharTokenizer:
    return CharTokenizer.from_text(resource_path("tinyshakespeare.txt").read_text(encoding="utf-8"))


@functools.cache
def encoder_tokenizer() -> CharTokenizer:
    return CharTokenizer(sorted(set(shakespeare_tokenizer().chars) | {MASK_CHAR}))


@functools.cache
def date_tokenizer() -> CharTokenizer:
    return CharTokenizer(sorted(set("".join(MONTHS)) | set("0123456789 ,-") | {START, END}))


def encoder(seed: int = 0, **changes) -> Transformer:
    config = get_preset("tiny-encoder").replace(**{"vocab_size": encoder_tokenizer().vocab_size, **changes})
    return Transformer.from_seed(config, seed)


def encoder_decoder(seed: int = 0, **changes) -> Transformer:
    config = get_preset("tiny-encoder-decoder").replace(**{"vocab_size": date_tokenizer().vocab_size, **changes})
    return Transformer.from_seed(config, seed)


def moe(seed: int = 0, **changes) -> Transformer:
    config = get_preset("tiny-moe").replace(**{"vocab_size": shakespeare_tokenizer().vocab_size, **changes})
    return Transformer.from_seed(config, seed)


def folder(model: Transformer, tokenizer, path: Path) -> Path:
    """The model as one of the lab's checkpoint folders (what `--checkpoint` opens)."""
    return save_checkpoint(model, path, tokenizer=tokenizer)
