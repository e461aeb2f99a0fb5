"""LabState emits only real changes, and user edits can be undone."""

from __future__ import annotations

import pytest

from core.presets import get_preset
from core.tokenizers import CharTokenizer
from gui.state import LabState


@pytest.fixture
def state(qtbot):
    return LabState()


def record(state: LabState) -> list[str]:
    fields: list[str] = []
    state.changed.connect(fields.append)
    return fields


def test_setting_the_same_value_emits_nothing(state):
    fields = record(state)
    assert not state.set_seed(state.seed)
    assert not state.set_config(get_preset("tiny-gpt"))
    assert fields == []


def test_a_change_emits_its_field_once(state):
    fields = record(state)
    assert state.set_seed(7)
    assert fields == ["seed"]
    assert state.seed == 7


def test_text_is_tokenized_and_unknown_characters_are_reported(state):
    state.set_tokenizer(CharTokenizer.from_text("abc "))
    fields = record(state)
    state.set_text("ab ca")
    assert state.tokens == [1, 2, 0, 3, 1]
    assert fields == ["tokens", "text"]
    state.set_text("abz")
    assert state.tokens == [1, 2]
    assert "'z'" in state.text_problem


def test_edits_undo_and_redo(state):
    state.set_seed(3)
    state.set_config(get_preset("tiny-llama"))
    state.undo_stack.undo()
    assert state.config.name == "tiny-gpt"
    state.undo_stack.undo()
    assert state.seed == 0
    state.undo_stack.redo()
    assert state.seed == 3


def test_a_smaller_config_clamps_the_selection(state):
    state.set_selected_layer(3)
    state.set_selected_head(3)
    state.set_config(get_preset("tiny-moe"))  # 2 layers
    assert state.selected_layer == 1
    assert state.selected_head == 3


def test_app_fields_are_not_undoable(state):
    state.set_theme("dark")
    state.set_font_scale(1.5)
    assert state.undo_stack.count() == 0
    assert state.set_font_scale(99) and state.font_scale == 3.0


def test_one_text_tokens_set_directly_rewrite_the_text_and_undo_brings_both_back(state):
    """A token replaced in the strip changes the sidebar's text too; a new tokenizer then reads the edited text."""
    from gui.panels.generate.common import SetTokensCommand

    state.set_tokenizer(CharTokenizer.from_text("abcdeistz "))
    state.set_text("bites")
    fields = record(state)
    edited = list(state.tokens)
    edited[2] = state.tokenizer.encode("z")[0]
    state.undo_stack.push(SetTokensCommand(state, state.tokens, edited, "replace token 2"))
    assert state.text == "bizes" and fields == ["tokens", "text"]
    state.set_tokenizer(CharTokenizer.from_text("abcdeistz xy"))  # another preset's vocabulary
    assert state.tokenizer.decode(state.tokens) == "bizes"
    state.undo_stack.undo()  # the tokenizer is not undoable: this undoes the edit
    assert state.text == "bites" and state.tokenizer.decode(state.tokens) == "bites"


def test_undecodable_tokens_leave_the_text_and_say_nothing_false(state):
    state.set_tokenizer(CharTokenizer.from_text("ab"))
    state.set_text("ab")
    state.set_tokens([0, 1, 0])
    assert state.text == "aba" and state.text_problem == ""
