"""`shapes` prints the traced walk-through; bad sizes are one-line errors."""

from __future__ import annotations

import json

import pytest

from core.cli import main


def test_shapes_table(capsys):
    assert main(["shapes", "--preset", "gpt2-small", "--batch", "2", "--seq", "128"]) == 0
    out = capsys.readouterr().out
    assert "(2, 12, 128, 128)" in out
    assert "attention weights" in out
    assert "(2, 128, 3072)" in out
    assert "traced on meta" in out


def test_shapes_json(capsys):
    assert main(["shapes", "--preset", "tiny-gpt", "--batch", "1", "--seq", "16", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {row["name"]: row for row in data["rows"]}
    assert rows["attention weights"]["shape"] == [1, 4, 16, 16]
    assert rows["attention weights"]["bytes"] == 4 * 16 * 16 * 4
    assert data["attention_matrix_bytes"] == rows["attention weights"]["bytes"]


def test_shapes_with_a_changed_field(capsys):
    assert main(["shapes", "--preset", "tiny-gpt", "--set", "n_heads=8", "--seq", "8"]) == 0
    assert "(1, 8, 8, 16)" in capsys.readouterr().out


def test_too_long_a_sequence_is_one_line(capsys):
    assert main(["shapes", "--preset", "tiny-gpt", "--seq", "999"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "context length of 256" in err


def test_a_zero_batch_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:  # refused while parsing, before any work
        main(["shapes", "--batch", "0"])
    assert exit_.value.code == 2
    assert "argument --batch/-B: must be a whole number from 1 to 1,000,000, got '0'" in capsys.readouterr().err
