"""Tokenizers behind one small protocol: characters, words, and any `tokenizer.json`.

The app shows tokens as chips, so besides encode/decode each tokenizer says what text a single id
stands for and which id a typed token is (raising UnknownTokenError with a usable message).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


class UnknownTokenError(ValueError):
    """Text that the tokenizer's vocabulary cannot represent."""


class TokenizerFileError(ValueError):
    """A tokenizer file that is missing, unreadable or not of a known kind."""


@runtime_checkable
class Tokenizer(Protocol):
    kind: str

    @property
    def vocab_size(self) -> int: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...

    def token_text(self, token_id: int) -> str: ...

    def id_of(self, token: str) -> int: ...

    def to_json(self) -> dict[str, Any]: ...


def _check_ids(ids: list[int], vocab_size: int) -> None:
    for token_id in ids:
        if not 0 <= int(token_id) < vocab_size:
            raise UnknownTokenError(f"token id {token_id} is outside the vocabulary (0..{vocab_size - 1})")


class CharTokenizer:
    """One token per character, ids in sorted character order (the nanoGPT Shakespeare scheme)."""

    kind = "char"

    def __init__(self, chars: list[str]) -> None:
        if not chars:
            raise TokenizerFileError("a character vocabulary needs at least one character")
        if any(not isinstance(c, str) or len(c) != 1 for c in chars):
            raise TokenizerFileError("every entry of a character vocabulary must be a single character")
        if len(set(chars)) != len(chars):
            raise TokenizerFileError("the character vocabulary lists a character twice")
        self.chars = list(chars)
        self._ids = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        return cls(sorted(set(text)))

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        ids = []
        for position, char in enumerate(text):
            if char not in self._ids:
                raise UnknownTokenError(
                    f"character {char!r} at position {position} is not in the model's {len(self.chars)}-character vocabulary"
                )
            ids.append(self._ids[char])
        return ids

    def decode(self, ids: list[int]) -> str:
        _check_ids(ids, self.vocab_size)
        return "".join(self.chars[int(i)] for i in ids)

    def token_text(self, token_id: int) -> str:
        _check_ids([token_id], self.vocab_size)
        return self.chars[int(token_id)]

    def id_of(self, token: str) -> int:
        if token not in self._ids:
            raise UnknownTokenError(f"{token!r} is not a token of this character vocabulary")
        return self._ids[token]

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "vocab": self.chars}


_WORD_PATTERN = re.compile(r"\w+|[^\w\s]")


class WordTokenizer:
    """Words and punctuation marks as tokens; decoding joins words with spaces."""

    kind = "word"
    UNKNOWN = "<unk>"

    def __init__(self, words: list[str]) -> None:
        if not words:
            raise TokenizerFileError("a word vocabulary needs at least one word")
        if any(not isinstance(w, str) or not w for w in words):
            raise TokenizerFileError("every entry of a word vocabulary must be non-empty text")
        if len(set(words)) != len(words):
            raise TokenizerFileError("the word vocabulary lists a word twice")
        self.words = list(words)
        self._ids = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def from_text(cls, text: str, max_words: int = 10000) -> WordTokenizer:
        counts = Counter(_WORD_PATTERN.findall(text))
        return cls([cls.UNKNOWN] + [w for w, _ in counts.most_common(max_words - 1)])

    @property
    def vocab_size(self) -> int:
        return len(self.words)

    def encode(self, text: str) -> list[int]:
        ids = []
        for word in _WORD_PATTERN.findall(text):
            if word in self._ids:
                ids.append(self._ids[word])
            elif self.UNKNOWN in self._ids:
                ids.append(self._ids[self.UNKNOWN])
            else:
                raise UnknownTokenError(f"word {word!r} is not in the vocabulary")
        return ids

    def decode(self, ids: list[int]) -> str:
        _check_ids(ids, self.vocab_size)
        return " ".join(self.words[int(i)] for i in ids)

    def token_text(self, token_id: int) -> str:
        _check_ids([token_id], self.vocab_size)
        return self.words[int(token_id)]

    def id_of(self, token: str) -> int:
        if token not in self._ids:
            raise UnknownTokenError(f"{token!r} is not a word of this vocabulary")
        return self._ids[token]

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "vocab": self.words}


class HuggingFaceTokenizer:
    """Any `tokenizer.json` (BPE, WordPiece, Unigram) through the `tokenizers` package."""

    kind = "tokenizer.json"

    def __init__(self, spec: dict[str, Any]) -> None:
        from tokenizers import Tokenizer as _HFTokenizer

        try:
            self._tokenizer = _HFTokenizer.from_str(json.dumps(spec))
        except Exception as error:  # the Rust side raises bare Exceptions with its own message
            raise TokenizerFileError(f"not a valid tokenizer.json: {error}") from None
        self._spec = spec

    @property
    def vocab_size(self) -> int:
        return self._tokenizer.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: list[int]) -> str:
        _check_ids(ids, self.vocab_size)
        return self._tokenizer.decode([int(i) for i in ids], skip_special_tokens=False)

    def token_text(self, token_id: int) -> str:
        _check_ids([token_id], self.vocab_size)
        piece = self._tokenizer.id_to_token(int(token_id))
        return piece if piece is not None else f"<{token_id}>"

    def id_of(self, token: str) -> int:
        token_id = self._tokenizer.token_to_id(token)
        if token_id is None:
            raise UnknownTokenError(f"{token!r} is not a token of this tokenizer")
        return token_id

    def to_json(self) -> dict[str, Any]:
        return self._spec


def tokenizer_from_json(data: Any) -> Tokenizer:
    """Rebuild a tokenizer from the JSON the app saves, or from a Hugging Face tokenizer.json."""
    if not isinstance(data, dict):
        raise TokenizerFileError("a tokenizer file must hold a JSON object")
    kind = data.get("kind")
    if kind == "char":
        return CharTokenizer(_vocab_list(data))
    if kind == "word":
        return WordTokenizer(_vocab_list(data))
    if "model" in data:
        return HuggingFaceTokenizer(data)
    raise TokenizerFileError("unknown tokenizer file: expected kind 'char' or 'word', or a Hugging Face tokenizer.json")


def _vocab_list(data: dict[str, Any]) -> list[str]:
    vocab = data.get("vocab")
    if not isinstance(vocab, list):
        raise TokenizerFileError("the tokenizer file has no 'vocab' list")
    return vocab


def load_tokenizer(path: str | Path) -> Tokenizer:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TokenizerFileError(f"no tokenizer file at {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise TokenizerFileError(f"cannot read {path}: {error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise TokenizerFileError(f"{path.name} is not valid JSON (line {error.lineno}: {error.msg})") from None
    except RecursionError:
        raise TokenizerFileError(f"{path.name} nests its JSON too deeply to be a tokenizer") from None
    return tokenizer_from_json(data)
