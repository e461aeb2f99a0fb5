"""A saved session's lab state, read for exporting one of its views: the model config, seed, text and the view's
panel settings. The window's session reader (gui.session) validates the same format; this reads only what an export
uses, with the same bounds."""

from __future__ import annotations

from pathlib import Path

from core.config import ConfigError, ModelConfig
from core.handouts.collect import ViewRequest
from core.json_files import JsonFileError, read_json_document
from core.limits import MAX_SEED, MAX_TEXT_CHARS, settings_problem

SESSION_FORMAT = "transformer-explorer-session"
MAX_SESSION_BYTES = 4 * 1024 * 1024


class SessionFileError(ValueError):
    """A session file an export cannot use, in one line."""


def session_view(path: str | Path, panel: str) -> ViewRequest:
    """The request exporting `panel` as the session at `path` left it."""
    try:
        data = read_json_document(path, MAX_SESSION_BYTES, "a session file")
    except JsonFileError as error:
        raise SessionFileError(str(error)) from None
    if not isinstance(data, dict) or data.get("format") != SESSION_FORMAT:
        raise SessionFileError(f"{path} is not a Transformer Explorer session file")
    try:
        config = ModelConfig.from_dict(data.get("config"))
    except ConfigError as error:
        raise SessionFileError(f"the session's model config is invalid: {error}") from None
    seed, text = data.get("seed", 0), data.get("text", "")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise SessionFileError(f"the session's 'seed' must be a whole number from 0 to {MAX_SEED:,}")
    if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS:
        raise SessionFileError(f"the session's 'text' must be a string of at most {MAX_TEXT_CHARS:,} characters")
    panels = data.get("panels", {})
    settings = panels.get(panel, {}) if isinstance(panels, dict) else None
    if not isinstance(settings, dict):
        raise SessionFileError(f"the session's settings of the {panel} panel must be an object")
    problem = settings_problem(settings, f"the session's {panel} settings")
    if problem:
        raise SessionFileError(problem)
    return ViewRequest(panel, config, seed, text or " ", settings)


__all__ = ["SessionFileError", "session_view"]
