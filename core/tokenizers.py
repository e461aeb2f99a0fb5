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

from core.quiet_stderr import quiet_native_stderr


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
    try:
        if len(ids) == 0 or (0 <= min(ids) and max(ids) < vocab_size):  # in C: a text of 10,000 ids costs no loop
            return
    except TypeError:  # ids of mixed kinds: each is read below
        pass
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


def byte_level_alphabet() -> dict[int, str]:
    """GPT-2's byte-to-character table: printable bytes stand for themselves, the rest move to U+0100 on.

    Byte-level BPE vocabularies are written in these characters, so a space is 'Ġ' (U+0120) and a
    newline 'Ċ' (U+010A).
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {byte: chr(byte) for byte in printable}
    shifted = 0
    for byte in range(256):
        if byte not in table:
            table[byte] = chr(256 + shifted)
            shifted += 1
    return table


_BYTE_TO_CHAR = byte_level_alphabet()
_CHAR_TO_BYTE = {char: byte for byte, char in _BYTE_TO_CHAR.items()}
_METASPACE = "▁"  # SentencePiece's visible space
_BYTE_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _component_types(spec: Any) -> set[str]:
    """Every "type" named in a pre_tokenizer or decoder spec, nested Sequences included."""
    if isinstance(spec, dict):
        found = {spec["type"]} if isinstance(spec.get("type"), str) else set()
        for value in spec.values():
            found |= _component_types(value)
        return found
    if isinstance(spec, list):
        return set().union(*(_component_types(item) for item in spec)) if spec else set()
    return set()


class _NativeFailure(Exception):
    """A `tokenizers` call failed: a bare Exception from Rust, or a panic (PanicException)."""


def _native(call: Any, *args: Any, **kwargs: Any) -> Any:
    """Call into `tokenizers`; every failure but Ctrl-C becomes a _NativeFailure with a one-line reason.

    A panic (a crafted regex that exhausts its retry limit, a corrupt charsmap) arrives as
    PanicException, a BaseException, so `except Exception` misses it; Rust's report of it on
    standard error is silenced, the message says it in one line.
    """
    try:
        with quiet_native_stderr():
            return call(*args, **kwargs)
    except (KeyboardInterrupt, SystemExit, GeneratorExit, UnicodeEncodeError):
        raise
    except BaseException as error:  # noqa: BLE001 - PanicException derives from BaseException
        lines = str(error).strip().splitlines() or [type(error).__name__]
        reason = lines[0] if len(lines[0]) <= 200 else lines[0][:197] + "..."
        raise _NativeFailure(reason) from None


class HuggingFaceTokenizer:
    """Any `tokenizer.json` (BPE, WordPiece, Unigram) through the `tokenizers` package.

    Text is encoded with the special tokens the tokenizer's post-processor adds (a Llama tokenizer's
    `<s>`), as `transformers` encodes it. A token's text is the bytes it stands for, read as UTF-8:
    byte-level pieces ('Ġto') become ' to', SentencePiece pieces ('▁to', '<0x0A>') likewise, and a
    byte that is only part of a character is kept as a lone surrogate (Python's surrogateescape), so
    core.display can show it as the byte it is.
    """

    kind = "tokenizer.json"

    def __init__(self, spec: dict[str, Any]) -> None:
        from tokenizers import Tokenizer as _HFTokenizer

        try:
            backend = _native(_HFTokenizer.from_str, json.dumps(spec))
        except _NativeFailure as error:
            raise TokenizerFileError(f"not a valid tokenizer.json: {error}") from None
        try:
            self._init(backend, spec)
        except _NativeFailure as error:  # the probe encodes of _special_affixes
            raise TokenizerFileError(f"not a usable tokenizer.json: {error}") from None

    @classmethod
    def from_backend(cls, backend: Any) -> HuggingFaceTokenizer:
        """Wrap a `tokenizers.Tokenizer` built in code (e.g. from vocab.json + merges.txt)."""
        tokenizer = cls.__new__(cls)
        tokenizer._init(backend, json.loads(backend.to_str()))
        return tokenizer

    def _init(self, backend: Any, spec: dict[str, Any]) -> None:
        self._tokenizer = backend
        self._spec = spec
        components = _component_types(spec.get("pre_tokenizer")) | _component_types(spec.get("decoder"))
        self.byte_level = "ByteLevel" in components
        self.metaspace = "Metaspace" in components or _METASPACE in json.dumps(spec.get("decoder"), ensure_ascii=False)
        model = spec.get("model") if isinstance(spec.get("model"), dict) else {}
        self.byte_fallback = bool(model.get("byte_fallback"))
        self._added = {
            entry["content"]
            for entry in spec.get("added_tokens") or []
            if isinstance(entry, dict) and isinstance(entry.get("content"), str)
        }
        self._prefix, self._suffix = self._special_affixes()
        # The vocabulary, read once: a chip label or a lookup per token is then a list or dict access, not a
        # call into the library (with standard error silenced around it) per token.
        vocab = _native(backend.get_vocab, with_added_tokens=True)
        self._ids_by_piece: dict[str, int] = dict(vocab)
        self._vocab_size = _native(backend.get_vocab_size, with_added_tokens=True)
        pieces: list[str | None] = [None] * self._vocab_size
        for piece, token_id in vocab.items():
            if 0 <= token_id < self._vocab_size:
                pieces[token_id] = piece
        self._pieces = pieces

    def _special_affixes(self) -> tuple[list[int], list[int]]:
        """The ids the post-processor puts before and after a text (e.g. [<s>] and [])."""
        for probe in ("a", "x", "0", " "):
            plain = list(_native(self._tokenizer.encode, probe, add_special_tokens=False).ids)
            full = list(_native(self._tokenizer.encode, probe, add_special_tokens=True).ids)
            if not plain:
                continue
            for start in range(len(full) - len(plain) + 1):
                if full[start : start + len(plain)] == plain:
                    return full[:start], full[start + len(plain) :]
        return [], []

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    @property
    def special_prefix(self) -> list[int]:
        return list(self._prefix)

    def encode(self, text: str) -> list[int]:
        try:
            return list(_native(self._tokenizer.encode, text, add_special_tokens=True).ids)
        except _NativeFailure as error:
            raise UnknownTokenError(f"the tokenizer cannot split this text ({error})") from None
        except UnicodeEncodeError as error:  # lone surrogates, e.g. undecodable bytes of a command line
            raise UnknownTokenError(f"the text holds {error.object[error.start:error.end]!r}, which is not a character") from None

    def decode(self, ids: list[int]) -> str:
        """The text of the ids; the special tokens the post-processor adds are left out, so the text re-encodes to ids."""
        _check_ids(ids, self.vocab_size)
        ids = [int(i) for i in ids]
        if self._prefix and ids[: len(self._prefix)] == self._prefix:
            ids = ids[len(self._prefix) :]
        if self._suffix and len(ids) >= len(self._suffix) and ids[len(ids) - len(self._suffix) :] == self._suffix:
            ids = ids[: len(ids) - len(self._suffix)]
        try:
            return _native(self._tokenizer.decode, ids, skip_special_tokens=False)
        except _NativeFailure as error:
            raise UnknownTokenError(f"the tokenizer cannot decode these ids ({error})") from None

    def piece(self, token_id: int) -> str:
        """The token as the vocabulary writes it ('Ġto', '▁to', '<s>')."""
        _check_ids([token_id], self.vocab_size)
        piece = self._pieces[int(token_id)]
        return piece if piece is not None else f"<{token_id}>"

    def token_bytes(self, token_id: int) -> bytes | None:
        """The bytes a token stands for, or None for an added (special) token, which stands for itself."""
        piece = self.piece(token_id)
        if piece in self._added:
            return None
        if self.byte_level and all(char in _CHAR_TO_BYTE for char in piece):
            return bytes(_CHAR_TO_BYTE[char] for char in piece)
        if self.byte_fallback and (match := _BYTE_FALLBACK.fullmatch(piece)):
            return bytes([int(match.group(1), 16)])
        if self.metaspace:
            piece = piece.replace(_METASPACE, " ")
        return piece.encode("utf-8")

    def token_text(self, token_id: int) -> str:
        data = self.token_bytes(token_id)
        if data is None:
            return self.piece(token_id)
        return data.decode("utf-8", errors="surrogateescape")

    def id_of(self, token: str) -> int:
        """The id of a piece as the vocabulary writes it, or of the text token_text gives for it."""
        token_id = self._lookup(token)
        if token_id is not None:
            return token_id
        try:
            data = token.encode("utf-8", errors="surrogateescape")
        except UnicodeEncodeError:
            data = None
        candidates = []
        if data is not None and self.byte_level:
            candidates.append("".join(_BYTE_TO_CHAR[b] for b in data))
        if data is not None and self.byte_fallback and len(data) == 1:
            candidates.append(f"<0x{data[0]:02X}>")
        if self.metaspace:
            candidates.append(token.replace(" ", _METASPACE))
        for candidate in candidates:
            token_id = self._lookup(candidate)
            if token_id is not None:
                return token_id
        raise UnknownTokenError(f"{token!r} is not a token of this tokenizer")

    def _lookup(self, piece: str) -> int | None:
        return self._ids_by_piece.get(piece)

    def to_json(self) -> dict[str, Any]:
        return self._spec


def train_byte_level_bpe(text: str, vocab_size: int) -> HuggingFaceTokenizer:
    """A GPT-2-style byte-level BPE learned from `text`: the 256 bytes, then merges up to vocab_size tokens.

    Deterministic: the `tokenizers` trainer breaks ties between equally frequent pairs by the pair itself.
    """
    from tokenizers import Tokenizer as _HFTokenizer
    from tokenizers import decoders, models, pre_tokenizers, trainers

    if not 256 < vocab_size <= 1 << 16:
        raise TokenizerFileError(f"a byte-level BPE needs between 257 and 65,536 tokens, got {vocab_size}")
    backend = _HFTokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    backend.train_from_iterator([text], trainer)
    return HuggingFaceTokenizer.from_backend(backend)


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


# ---- Hugging Face tokenizer folders ------------------------------------------------------------

TOKENIZER_JSON = "tokenizer.json"
VOCAB_JSON = "vocab.json"
MERGES_TXT = "merges.txt"
TOKENIZER_CONFIG = "tokenizer_config.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"
MAX_TOKENIZER_FILE_BYTES = 64 * 1024 * 1024  # Qwen2.5's tokenizer.json is 7 MB, Llama 3's 9 MB
SPECIAL_TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")
# What transformers' GPT2Tokenizer assumes when a vocab.json + merges.txt folder names no special tokens.
GPT2_DEFAULT_SPECIALS = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"}


def has_pretrained_tokenizer(folder: str | Path) -> bool:
    folder = Path(folder)
    return (folder / TOKENIZER_JSON).is_file() or ((folder / VOCAB_JSON).is_file() and (folder / MERGES_TXT).is_file())


def load_pretrained_tokenizer(folder: str | Path) -> HuggingFaceTokenizer | None:
    """The tokenizer of a Hugging Face model folder, as `transformers` builds it; None when there is none.

    Reads `tokenizer.json`, or GPT-2's older `vocab.json` + `merges.txt` (byte-level BPE), then
    applies `tokenizer_config.json` (and `special_tokens_map.json`): its special and added tokens.
    What is added around a text (a BOS token) is decided as transformers 5 decides it: by
    tokenizer.json's post-processor when there is a tokenizer.json, else by `add_bos_token` /
    `add_eos_token` in tokenizer_config.json (both false when absent, as for GPT-2).
    """
    from tokenizers import Tokenizer as _HFTokenizer

    folder = Path(folder)
    config = _read_json_object(folder / TOKENIZER_CONFIG, required=False)
    special_map = _read_json_object(folder / SPECIAL_TOKENS_MAP, required=False)
    defaults: dict[str, Any] = {}
    template_from_config = False
    if (folder / TOKENIZER_JSON).is_file():
        spec = _read_json_object(folder / TOKENIZER_JSON, required=True)
        if "model" not in spec:
            raise TokenizerFileError(f"{folder / TOKENIZER_JSON} is not a Hugging Face tokenizer.json (no 'model')")
        try:
            backend = _native(_HFTokenizer.from_str, json.dumps(spec))
        except _NativeFailure as error:
            raise TokenizerFileError(f"{folder / TOKENIZER_JSON} is not a valid tokenizer.json: {error}") from None
    elif (folder / VOCAB_JSON).is_file() and (folder / MERGES_TXT).is_file():
        backend = _byte_level_bpe(folder, add_prefix_space=config.get("add_prefix_space") is True)
        defaults = GPT2_DEFAULT_SPECIALS
        template_from_config = True
    else:
        return None
    _apply_tokenizer_config(backend, config, special_map, defaults, template_from_config, str(folder / TOKENIZER_CONFIG))
    try:
        return HuggingFaceTokenizer.from_backend(backend)
    except _NativeFailure as error:
        raise TokenizerFileError(f"{folder}: the tokenizer does not work: {error}") from None


def _read_json_object(path: Path, required: bool) -> dict[str, Any]:
    """A JSON object of a tokenizer folder: a regular file, its size, values and nesting bounded (core.json_files)."""
    from core.json_files import JsonFileError, read_json_document
    from core.limits import MAX_MODEL_JSON_CONTAINERS, MAX_MODEL_JSON_DIGITS, MAX_MODEL_JSON_VALUES

    if not path.exists() and not path.is_symlink():
        if required:
            raise TokenizerFileError(f"no tokenizer file at {path}")
        return {}
    try:
        data = read_json_document(path, MAX_TOKENIZER_FILE_BYTES, "a tokenizer file", max_containers=MAX_MODEL_JSON_CONTAINERS,
                                  max_values=MAX_MODEL_JSON_VALUES,
                                  max_integer_digits=MAX_MODEL_JSON_DIGITS)
    except JsonFileError as error:
        raise TokenizerFileError(f"{path.parent}/{error}" if str(error).startswith(path.name) else str(error)) from None
    if not isinstance(data, dict):
        raise TokenizerFileError(f"{path} must hold a JSON object")
    return data


def _byte_level_bpe(folder: Path, add_prefix_space: bool) -> Any:
    """GPT-2's tokenizer from vocab.json + merges.txt, assembled as transformers' GPT2Tokenizer does."""
    from tokenizers import Tokenizer as _HFTokenizer
    from tokenizers import decoders, models, pre_tokenizers

    vocab = _read_json_object(folder / VOCAB_JSON, required=True)
    if not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in vocab.items()):
        raise TokenizerFileError(f"{folder / VOCAB_JSON} must map token strings to integer ids")
    merges_path = folder / MERGES_TXT
    from core.json_files import JsonFileError, read_regular_file
    from core.text_files import decode_text, text_lines

    try:
        # A regular file only: stat gives a FIFO or a link to /dev/zero the size 0, and reading either never ends.
        lines = text_lines(decode_text(read_regular_file(merges_path, MAX_TOKENIZER_FILE_BYTES, "a merges file")))
    except JsonFileError as error:
        raise TokenizerFileError(str(error)) from None
    except UnicodeDecodeError:
        raise TokenizerFileError(f"{merges_path} is not UTF-8 text") from None
    merges = []
    for number, line in enumerate(lines, start=1):
        if not line.strip() or (number == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            raise TokenizerFileError(f"{merges_path} line {number}: a merge is two tokens separated by one space")
        merges.append((parts[0], parts[1]))
    try:
        model = models.BPE(
            vocab=vocab, merges=merges, dropout=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False
        )
    except Exception as error:  # e.g. a merge of tokens the vocabulary lacks
        raise TokenizerFileError(f"{folder}: vocab.json and merges.txt do not form a BPE tokenizer: {error}") from None
    backend = _HFTokenizer(model)
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    backend.decoder = decoders.ByteLevel()
    return backend


def _token_content(value: Any) -> str | None:
    """A special token as tokenizer_config.json writes it: a string or an AddedToken object."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def _apply_tokenizer_config(
    backend: Any,
    config: dict[str, Any],
    special_map: dict[str, Any],
    defaults: dict[str, Any],
    template_from_config: bool,
    where: str,
) -> None:
    from tokenizers import AddedToken, processors

    added = config.get("added_tokens_decoder")
    if isinstance(added, dict):
        tokens = []
        for _, entry in sorted(added.items(), key=lambda item: int(item[0]) if str(item[0]).isdigit() else 0):
            content = _token_content(entry)
            if content is None:
                raise TokenizerFileError(f"{where}: an added_tokens_decoder entry has no 'content'")
            tokens.append(
                AddedToken(
                    content,
                    single_word=bool(entry.get("single_word", False)),
                    lstrip=bool(entry.get("lstrip", False)),
                    rstrip=bool(entry.get("rstrip", False)),
                    normalized=bool(entry.get("normalized", False)),
                    special=bool(entry.get("special", True)),
                )
            )
        backend.add_tokens(tokens)
    specials: dict[str, str] = {}
    for key in SPECIAL_TOKEN_KEYS:
        for source in (config, special_map, defaults):
            if key in source:
                content = _token_content(source[key])
                if content is not None:
                    specials[key] = content
                break  # a key given as null means "no such token"
    missing = [content for content in dict.fromkeys(specials.values()) if content not in backend.get_vocab(True)]
    known = [content for content in dict.fromkeys(specials.values()) if content not in missing]
    for content in known + missing:  # special in text as well: "<|endoftext|>" is one token, not seven
        backend.add_special_tokens([AddedToken(content, special=True, normalized=False)])
    if template_from_config:
        affixes = []
        for key, flag in (("bos_token", "add_bos_token"), ("eos_token", "add_eos_token")):
            content = specials.get(key)
            token_id = backend.token_to_id(content) if content is not None else None
            affixes.append((content, token_id) if config.get(flag) is True and token_id is not None else None)
        bos, eos = affixes
        single = " ".join(
            part for part in (bos and f"{bos[0]}:0", "$A:0", eos and f"{eos[0]}:0") if part
        )
        pair = " ".join(
            part
            for part in (single, bos and f"{bos[0]}:1", "$B:1", eos and f"{eos[0]}:1")
            if part
        )
        backend.post_processor = processors.TemplateProcessing(
            single=single, pair=pair, special_tokens=[affix for affix in dict.fromkeys(affixes) if affix is not None]
        )


def load_tokenizer(path: str | Path) -> Tokenizer:
    """A tokenizer file: a regular file, its size, values and nesting bounded (core.json_files)."""
    from core.json_files import JsonFileError, read_json_document
    from core.limits import MAX_MODEL_JSON_CONTAINERS, MAX_MODEL_JSON_DIGITS, MAX_MODEL_JSON_VALUES

    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise TokenizerFileError(f"no tokenizer file at {path}")
    try:
        data = read_json_document(path, MAX_TOKENIZER_FILE_BYTES, "a tokenizer", max_containers=MAX_MODEL_JSON_CONTAINERS,
                                  max_values=MAX_MODEL_JSON_VALUES,
                                  max_integer_digits=MAX_MODEL_JSON_DIGITS)
    except JsonFileError as error:
        raise TokenizerFileError(str(error)) from None
    return tokenizer_from_json(data)
