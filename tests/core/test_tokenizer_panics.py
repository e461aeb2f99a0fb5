"""A crafted tokenizer.json that makes the `tokenizers` library panic: one clear line, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.checkpoints import save_checkpoint
from core.model import Transformer
from core.presets import get_preset
from core.tokenizers import HuggingFaceTokenizer, TokenizerFileError, UnknownTokenError, tokenizer_from_json

ROOT = Path(__file__).resolve().parents[2]
VOCAB = {**{c: i for i, c in enumerate("ab !")}, "[UNK]": 4}
# Catastrophic backtracking: the regex library gives up ("retry-limit-in-match over") and the
# tokenizers library panics instead of returning an error.
BACKTRACKING = r"(\w+\s?)*$"
HOSTILE_TEXT = "a" * 40 + "!"


def crafted_spec(pattern: str = BACKTRACKING) -> dict:
    return {
        "version": "1.0",
        "model": {"type": "WordLevel", "vocab": VOCAB, "unk_token": "[UNK]"},
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
    }


def test_a_panicking_regex_is_an_unknown_token_error_in_one_line():
    tokenizer = HuggingFaceTokenizer(crafted_spec())
    assert tokenizer.encode("a") == [0]  # ordinary text still works
    with pytest.raises(UnknownTokenError) as caught:
        tokenizer.encode(HOSTILE_TEXT)
    message = str(caught.value)
    assert message.startswith("the tokenizer cannot split this text (") and "\n" not in message
    assert "retry-limit" in message
    assert tokenizer.encode("a") == [0]  # and the tokenizer keeps working after the panic


def test_a_panic_while_loading_is_a_tokenizer_file_error():
    spec = crafted_spec()
    spec["normalizer"] = {"type": "Precompiled", "precompiled_charsmap": "AAAA"}
    with pytest.raises(TokenizerFileError) as caught:
        tokenizer_from_json(spec)
    assert str(caught.value).startswith("not a valid tokenizer.json: ") and "\n" not in str(caught.value)


def test_an_invalid_regex_is_a_tokenizer_file_error():
    # The reason after the colon is tokenizers' own: "unmatched parenthesis" from 0.22 on, a serde message before.
    with pytest.raises(TokenizerFileError, match="not a valid tokenizer.json: ") as caught:
        tokenizer_from_json(crafted_spec("("))
    assert "\n" not in str(caught.value)


def test_the_command_line_prints_one_line_and_exits_2_without_rusts_report(tmp_path):
    config = get_preset("tiny-gpt").replace(vocab_size=8, context_length=64, d_model=8, n_heads=2, n_layers=1, d_ff=16)
    folder = save_checkpoint(Transformer.from_seed(config), tmp_path / "crafted", tokenizer=HuggingFaceTokenizer(crafted_spec()))
    result = subprocess.run(
        [sys.executable, "main.py", "logits", "--checkpoint", str(folder), "--text", HOSTILE_TEXT, "--out", str(tmp_path / "x.npy")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "RUST_BACKTRACE": "1"},
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "the tokenizer cannot split this text" in lines[0] and "panicked" not in result.stderr

