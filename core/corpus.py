"""A training corpus: a UTF-8 text file read whole and checked, and why a config cannot train on it.

Nothing here imports Qt; the Train panel and the command line read a corpus the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.config import ModelConfig
from core.tokenizers import CharTokenizer

BUNDLED_CORPUS = "tinyshakespeare.txt"
MIN_CORPUS_CHARS = 1000  # below this a validation split of a tenth holds too few windows to mean anything
MAX_CORPUS_BYTES = 200_000_000  # the corpus is held in memory twice (text and ids)
TRAIN_FRACTION = 0.9  # core.training keeps the first nine tenths for training, the rest for validation


class CorpusError(ValueError):
    """A text file that cannot serve as a training corpus."""


@dataclass(frozen=True)
class Corpus:
    name: str
    text: str
    vocab_size: int  # distinct characters: the vocabulary a character model of it needs


def read_corpus(path: str | Path) -> Corpus:
    """A UTF-8 text file as a corpus, or CorpusError saying why it cannot be one."""
    from core.json_files import JsonFileError, read_regular_file

    path = Path(path)
    try:
        text = read_regular_file(path, MAX_CORPUS_BYTES, "a corpus").decode("utf-8")
    except UnicodeDecodeError as error:
        raise CorpusError(f"{path.name} is not UTF-8 text (byte {error.start} cannot be decoded)") from None
    except JsonFileError as error:
        raise CorpusError(str(error)) from None
    if len(text) < MIN_CORPUS_CHARS:
        raise CorpusError(f"{path.name} has {len(text):,} characters; a corpus needs at least {MIN_CORPUS_CHARS:,}")
    return Corpus(path.name, text, CharTokenizer.from_text(text).vocab_size)


def bundled_corpus() -> Corpus:
    """The corpus the lab ships with (resources/tinyshakespeare.txt)."""
    from resources import resource_path

    return read_corpus(resource_path(BUNDLED_CORPUS))


def repeated_letters_corpus(seed: int = 0) -> Corpus:
    """Random letter sequences written twice (core.repeated_corpus), made from `seed`: the text induction heads
    form on (the bundled tiny-induction was trained on seed 0's)."""
    from core.repeated_corpus import LETTERS, NAME, repeated_letters

    return Corpus(f"{NAME} (seed {seed})", repeated_letters(seed=seed), len(LETTERS) + 1)


def vocabulary_problem(config: ModelConfig, corpus: Corpus | None) -> str:
    """Why `config` cannot be trained on `corpus` as a next-character model, or ""."""
    if config.architecture != "decoder" or not config.self_attention_causal:
        return (f"{config.name} is not a causal decoder; the trainer makes next-character models. "
                "Pick a decoder preset (tiny-gpt, tiny-llama) in the Model sidebar.")
    if corpus is not None and config.vocab_size != corpus.vocab_size:
        return (f"The config's vocab_size is {config.vocab_size:,} but {corpus.name} has {corpus.vocab_size} distinct "
                f"characters: set vocab_size to {corpus.vocab_size} in the Model sidebar to train on it.")
    return ""


def window_problem(corpus: Corpus, seq_len: int) -> str:
    """Why the corpus is too short for training windows of seq_len characters (plus a target), or ""."""
    needed = int((seq_len + 2) / TRAIN_FRACTION) + 1
    if len(corpus.text) < needed:
        return (f"{corpus.name} has {len(corpus.text):,} characters; windows of {seq_len} "
                f"need at least {needed:,}. Shorten the sequence length.")
    return ""


__all__ = [
    "BUNDLED_CORPUS",
    "MAX_CORPUS_BYTES",
    "MIN_CORPUS_CHARS",
    "Corpus",
    "CorpusError",
    "bundled_corpus",
    "read_corpus",
    "vocabulary_problem",
    "window_problem",
]
