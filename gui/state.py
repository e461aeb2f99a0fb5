"""LabState: the one evented model of the app. Panels read it and set it; they never talk to each other.

Every field has a property, a setter and a signal of its own, `<field>_changed` (e.g. `tokens_changed`),
emitted only when the value really changed; views subscribe to the fields their inputs read
(`state.signal("tokens")`), so nobody switches on a field name. `changed(field)` is emitted after the
field's own signal, for observers of every change (lessons, logging). Edits a user makes (config, seed, text, device, selection) go through the undo stack, so
Edit > Undo reverts them; fields the app itself sets (model, torch_ready, theme, font scale) do not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from core.config import ModelConfig
from core.presets import DEFAULT_PRESET, get_preset

DEFAULT_TEXT = "To be, or not to be, that is the question:"

# Fields whose edits are recorded on the undo stack.
UNDOABLE_FIELDS = ("config", "seed", "text", "device", "selected_layer", "selected_head")
FIELDS = (
    "config",
    "seed",
    "text",
    "tokens",
    "tokenizer",
    "device",
    "selected_layer",
    "selected_head",
    "model",
    "torch_ready",
    "theme",
    "font_scale",
    "token_edit",
)


@dataclass(frozen=True)
class TokenEdit:
    """One edit of the token sequence: `before` became the current tokens by `kind` at `position`."""

    kind: str  # "replace", "insert" or "delete"
    position: int
    before: tuple[int, ...]


class _SetFieldCommand(QUndoCommand):
    def __init__(self, state: LabState, field: str, old: Any, new: Any, text: str) -> None:
        super().__init__(text)
        self._state, self._field, self._old, self._new = state, field, old, new

    def redo(self) -> None:
        self._state._assign(self._field, self._new)

    def undo(self) -> None:
        self._state._assign(self._field, self._old)


class LabState(QObject):
    """Config, seed, text and tokens, device, selection, the loaded model, theme and font scale."""

    changed = Signal(str)  # the name of the field that changed (after its own signal below)
    config_changed = Signal()
    seed_changed = Signal()
    text_changed = Signal()
    tokens_changed = Signal()
    tokenizer_changed = Signal()
    device_changed = Signal()
    selected_layer_changed = Signal()
    selected_head_changed = Signal()
    model_changed = Signal()
    torch_ready_changed = Signal()
    theme_changed = Signal()
    font_scale_changed = Signal()
    token_edit_changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.undo_stack = QUndoStack(self)
        self.text_problem = ""  # why the text did not encode cleanly (skipped characters), or ""
        self._next_token_edit: TokenEdit | None = None  # the edit set_tokens is applying
        self._values: dict[str, Any] = {
            "config": get_preset(DEFAULT_PRESET),
            "seed": 0,
            "text": DEFAULT_TEXT,
            "tokens": [],
            "tokenizer": None,
            "device": "cpu",
            "selected_layer": 0,
            "selected_head": 0,
            "model": None,
            "torch_ready": False,
            "theme": "light",
            "font_scale": 1.0,
            "token_edit": None,
        }

    def signal(self, field: str):
        """The `<field>_changed` signal of one field."""
        if field not in self._values:
            raise KeyError(f"LabState has no field {field!r}")
        return getattr(self, f"{field}_changed")

    def _emit(self, field: str) -> None:
        getattr(self, f"{field}_changed").emit()
        self.changed.emit(field)

    # ---- generic access ------------------------------------------------------------------------
    def get(self, field: str) -> Any:
        return self._values[field]

    def set(self, field: str, value: Any, undoable: bool | None = None) -> bool:
        """Set a field; returns whether it changed. Undoable fields go through the undo stack."""
        if field not in self._values:
            raise KeyError(f"LabState has no field {field!r}")
        value = self._normalised(field, value)
        old = self._values[field]
        if _same(old, value):
            return False
        if undoable is None:
            undoable = field in UNDOABLE_FIELDS
        if undoable:
            self.undo_stack.push(_SetFieldCommand(self, field, old, value, f"change {field.replace('_', ' ')}"))
        else:
            self._assign(field, value)
        return True

    def _assign(self, field: str, value: Any) -> None:
        if _same(self._values[field], value):
            return
        self._values[field] = value
        text_followed = False
        if field == "tokens":
            self._values["token_edit"] = self._next_token_edit
            text_followed = self._text_follows_tokens()
        if field == "text":
            self._retokenize()
        elif field == "tokenizer":
            self._retokenize()
        elif field == "config":
            self._clamp_selection(value)
        elif field == "model" and value is not None:
            self._clamp_selection(value.config)  # a model adopted before its config (a folder, a run) is the one shown
        self._emit(field)
        if text_followed:
            self._emit("text")

    def _text_follows_tokens(self) -> bool:
        """One text: tokens set directly (an edit in the strip, a sampled token, an undo) rewrite the text to
        what they decode to, so the sidebar, the strip and a later re-tokenisation all read the same sequence."""
        tokenizer = self._values["tokenizer"]
        if tokenizer is None:
            return False
        try:
            text = tokenizer.decode(list(self._values["tokens"]))
        except Exception:  # each tokenizer has its own unknown-id error; the text then stays as typed
            return False
        if text == self._values["text"]:
            return False
        self._values["text"] = text
        self.text_problem = ""
        return True

    def _normalised(self, field: str, value: Any) -> Any:
        if field == "config":
            if not isinstance(value, ModelConfig):
                raise TypeError("config must be a ModelConfig")
            return value.validated()
        if field in ("seed", "selected_layer", "selected_head"):
            return int(value)
        if field == "tokens":
            return [int(t) for t in value]
        if field == "font_scale":
            return round(min(3.0, max(0.5, float(value))), 2)
        return value

    def _retokenize(self) -> None:
        tokenizer = self._values["tokenizer"]
        if tokenizer is None:
            return
        text = self._values["text"]
        try:
            tokens = tokenizer.encode(text)
            self.text_problem = ""
        except Exception as error:  # each tokenizer has its own unknown-token error
            self.text_problem = str(error)
            if getattr(tokenizer, "kind", "") != "char":
                return
            tokens = tokenizer.encode("".join(ch for ch in text if _encodable(tokenizer, ch)))
        if tokens != self._values["tokens"]:
            self._values["tokens"] = tokens
            self._values["token_edit"] = None  # a retyped text is no single edit
            self._emit("tokens")

    def _clamp_selection(self, config: ModelConfig) -> None:
        """The selected layer and head exist in `config`: each view that shows the selection draws the same head."""
        for field, limit in (("selected_layer", config.n_layers), ("selected_head", config.n_heads)):
            if self._values[field] >= limit:
                self._values[field] = limit - 1
                self._emit(field)

    # ---- typed properties ----------------------------------------------------------------------
    @property
    def config(self) -> ModelConfig:
        return self._values["config"]

    def set_config(self, config: ModelConfig) -> bool:
        return self.set("config", config)

    @property
    def seed(self) -> int:
        return self._values["seed"]

    def set_seed(self, seed: int) -> bool:
        return self.set("seed", seed)

    @property
    def text(self) -> str:
        return self._values["text"]

    def set_text(self, text: str) -> bool:
        """Set the input text; `tokens` follows through the tokenizer (characters it lacks are skipped)."""
        return self.set("text", text)

    @property
    def tokens(self) -> list[int]:
        return list(self._values["tokens"])

    def set_tokens(self, tokens: list[int], edit: TokenEdit | None = None) -> bool:
        """Set token ids directly (the text follows: it becomes their decoding); `edit` says which edit made them."""
        self._next_token_edit = edit
        try:
            return self.set("tokens", tokens, undoable=False)
        finally:
            self._next_token_edit = None

    @property
    def token_edit(self) -> TokenEdit | None:
        """The edit that made the current tokens (None after a new text, a session or a tokenizer change)."""
        return self._values["token_edit"]

    @property
    def tokenizer(self) -> Any:
        return self._values["tokenizer"]

    def set_tokenizer(self, tokenizer: Any) -> bool:
        return self.set("tokenizer", tokenizer, undoable=False)

    @property
    def device(self) -> str:
        return self._values["device"]

    def set_device(self, device: str) -> bool:
        return self.set("device", device)

    @property
    def selected_layer(self) -> int:
        return self._values["selected_layer"]

    def set_selected_layer(self, layer: int) -> bool:
        return self.set("selected_layer", layer)

    @property
    def selected_head(self) -> int:
        return self._values["selected_head"]

    def set_selected_head(self, head: int) -> bool:
        return self.set("selected_head", head)

    @property
    def model(self) -> Any:
        """The current torch model (eval mode, on `device`), or None until the loader has built it."""
        return self._values["model"]

    def set_model(self, model: Any) -> bool:
        return self.set("model", model, undoable=False)

    @property
    def torch_ready(self) -> bool:
        return self._values["torch_ready"]

    def set_torch_ready(self, ready: bool) -> bool:
        return self.set("torch_ready", bool(ready), undoable=False)

    @property
    def theme(self) -> str:
        return self._values["theme"]

    def set_theme(self, theme: str) -> bool:
        return self.set("theme", theme, undoable=False)

    @property
    def font_scale(self) -> float:
        return self._values["font_scale"]

    def set_font_scale(self, scale: float) -> bool:
        return self.set("font_scale", scale, undoable=False)


def _same(a: Any, b: Any) -> bool:
    # Models and tokenizers compare by identity: a new object is a new model even if equal.
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (int, float, str, bool, list, tuple, ModelConfig)) or a is None:
        return a == b
    return False


def _encodable(tokenizer: Any, char: str) -> bool:
    try:
        tokenizer.id_of(char)
    except Exception:  # each tokenizer has its own unknown-token error
        return False
    return True


__all__ = ["LabState", "TokenEdit", "FIELDS", "UNDOABLE_FIELDS", "DEFAULT_TEXT"]
