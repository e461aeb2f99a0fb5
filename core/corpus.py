"""A training corpus: a UTF-8 text file read whole and checked, and why a config cannot train on it.

Nothing here imports Qt; the Train panel and the command line read a corpus the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.config import ModelConfig
from core.limits import character_vocabulary_problem
from core.text_files import decode_text
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
        text = decode_text(read_regular_file(path, MAX_CORPUS_BYTES, "a corpus"))
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


def dates_corpus(seed: int = 0) -> Corpus:
    """Dates in words and their ISO form, one tab-separated pair a line (core.date_corpus), made from `seed`: the
    task the bundled tiny-encoder-decoder was trained on (seed 0's)."""
    from core.date_corpus import NAME, date_pairs

    text = date_pairs(seed=seed)
    return Corpus(f"{NAME} (seed {seed})", text, len(set(text)))


def vocabulary_problem(config: ModelConfig, corpus: Corpus | None) -> str:
    """Why `config` cannot be trained on `corpus` by its objective (core.training.objective_of), or ""."""
    from core.objectives.masked_lm import MASK_CHAR
    from core.objectives.pairs import START
    from core.training import TrainingError, objective_of

    try:
        objective = objective_of(config)
    except TrainingError as error:
        return f"{config.name}: {error}."
    if corpus is None:
        return ""
    needed = corpus.vocab_size
    too_many = character_vocabulary_problem(corpus.name, needed, blank=objective == "masked-lm")
    if too_many:
        return f"{too_many}. Pick another corpus."
    if objective == "masked-lm":
        if MASK_CHAR in corpus.text:
            return (f"{corpus.name} contains {MASK_CHAR!r}, the blank a masked model fills; an encoder cannot train on "
                    "it. Pick another corpus.")
        needed += 1  # the blank
    if objective == "seq2seq" and START not in corpus.text:
        return (f"{config.name} is an encoder-decoder: it trains on pairs, one source<TAB>target a line, and "
                f"{corpus.name} has no tab. Pick the dates corpus or a file of pairs.")
    if config.vocab_size != needed:
        what = {"masked-lm": " and the blank", "seq2seq": ""}.get(objective, "")
        return (f"The config's vocab_size is {config.vocab_size:,} but {corpus.name} has {corpus.vocab_size} distinct "
                f"characters{what}: set vocab_size to {needed} in the Model sidebar to train on it.")
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
    "dates_corpus",
    "read_corpus",
    "vocabulary_problem",
    "window_problem",
]
