"""Sessions: the lab's state (config, seed, text and tokens, selection, panel settings) as JSON.

Reading validates the whole file before anything is applied, so a corrupt or foreign file gives
one clear message and changes nothing. Writing is whole or not at all
(core.whole_file), so a crash mid-write never leaves a truncated session.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.config import ConfigError, ModelConfig
from core.json_files import JsonFileError, read_json_document
from core.limits import DEVICE_NAME, DEVICE_NAMES_HINT, MAX_SEED, MAX_TEXT_CHARS, settings_problem
from core.whole_file import write_text_whole


SESSION_FORMAT = "transformer-explorer-session"
SESSION_VERSION = 1
MAX_SESSION_BYTES = 4 * 1024 * 1024  # a session is a config, a bounded text and settings


class SessionError(Exception):
    """Why a session file cannot be opened or saved, in one line."""


@dataclass(frozen=True)
class Session:
    config: ModelConfig
    seed: int = 0
    text: str = ""
    tokens: tuple[int, ...] | None = None  # None: derive from the text
    device: str | None = None
    selected_layer: int = 0
    selected_head: int = 0
    panels: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": SESSION_FORMAT,
            "version": SESSION_VERSION,
            "config": self.config.to_dict(),
            "seed": self.seed,
            "text": self.text,
            "tokens": list(self.tokens) if self.tokens is not None else None,
            "device": self.device,
            "selected_layer": self.selected_layer,
            "selected_head": self.selected_head,
            "panels": self.panels,
        }


def _int(data: dict, key: str, default: int, low: int = 0, high: int | None = None) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"from {low} to {high:,}" if high is not None else f"of at least {low}"
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise SessionError(f"'{key}' must be a whole number {bound}, got {shown}")
    return value


def parse_session(data: Any) -> Session:
    """Validate JSON data as a session; raises SessionError naming the first problem."""
    if not isinstance(data, dict) or data.get("format") != SESSION_FORMAT:
        raise SessionError("this is not a Transformer Explorer session file")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise SessionError("the session has no version number")
    if version > SESSION_VERSION:
        raise SessionError(f"the session was written by a newer version (format {version}); this app reads format {SESSION_VERSION}")
    try:
        config = ModelConfig.from_dict(data.get("config"))
    except ConfigError as error:
        raise SessionError(f"the session's model config is invalid: {error.field}: {error.message}") from None
    seed = _int(data, "seed", 0, high=MAX_SEED)
    text = data.get("text", "")
    if not isinstance(text, str):
        raise SessionError("'text' must be a string")
    if len(text) > MAX_TEXT_CHARS:
        raise SessionError(f"'text' has {len(text):,} characters, more than the {MAX_TEXT_CHARS:,} the lab takes")
    tokens = data.get("tokens")
    if tokens is not None:
        if not isinstance(tokens, list) or any(isinstance(t, bool) or not isinstance(t, int) for t in tokens):
            raise SessionError("'tokens' must be a list of whole numbers")
        if len(tokens) > config.context_length:
            raise SessionError(f"{len(tokens):,} tokens exceed the model's context length of {config.context_length:,}")
        bad = [t for t in tokens if not 0 <= t < config.vocab_size]
        if bad:
            shown = str(bad[0]) if len(str(bad[0])) <= 40 else str(bad[0])[:37] + "..."
            raise SessionError(f"token id {shown} is outside the model's vocabulary (0..{config.vocab_size - 1})")
        tokens = tuple(tokens)
    device = data.get("device")
    if device is not None and (not isinstance(device, str) or not DEVICE_NAME.fullmatch(device)):
        raise SessionError(f"'device' must be one of {DEVICE_NAMES_HINT}")
    layer = _int(data, "selected_layer", 0)
    head = _int(data, "selected_head", 0)
    if layer >= config.n_layers:
        raise SessionError(f"selected layer {layer} does not exist in a {config.n_layers}-layer model")
    if head >= config.n_heads:
        raise SessionError(f"selected head {head} does not exist in a {config.n_heads}-head model")
    panels = data.get("panels", {})
    if not isinstance(panels, dict) or any(not isinstance(v, dict) for v in panels.values()):
        raise SessionError("'panels' must map panel names to settings objects")
    problem = settings_problem(panels, "panels")
    if problem:
        raise SessionError(problem)
    return Session(config, seed, text, tokens, device, layer, head, panels)


def read_session(path: str | Path) -> Session:
    """Read and validate a session file: a regular file, size, nesting and numbers bounded (core.json_files)."""
    try:
        data = read_json_document(path, MAX_SESSION_BYTES, "a session file")
    except JsonFileError as error:
        raise SessionError(str(error)) from None
    return parse_session(data)


def write_session(path: str | Path, session: Session) -> Path:
    """Write whole or not at all (core.whole_file)."""
    path = Path(path)
    try:
        text = json.dumps(session.to_json(), indent=2, ensure_ascii=False) + "\n"
    except (TypeError, ValueError) as error:  # a panel's settings that JSON cannot hold (an object, a set)
        raise SessionError(f"the session cannot be written as JSON: {error}") from None
    try:
        write_text_whole(path, text)
    except OSError as error:
        raise SessionError(f"cannot write {path}: {error.strerror or error}") from None
    return path


__all__ = ["Session", "SessionError", "parse_session", "read_session", "write_session", "SESSION_FORMAT", "SESSION_VERSION"]
