"""`causal`: the reading's table, edit diffs printed per position and layer, and one-line errors."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.cli import main
from core.cli.causal import format_change
from core.experiments.textbook_table import textbook_causal_table
from tests.cli.helpers import run
from tests.reading_figures import assert_matches_reading

ROOT = Path(__file__).resolve().parents[2]

def test_textbook_prints_the_readings_table(capsys):
    code, out, err = run(capsys, "causal", "--textbook")
    assert code == 0 and err == ""
    assert out.splitlines() == textbook_causal_table().lines()  # the reading's script, run here
    assert_matches_reading(out.splitlines())  # the reading's printed figures, within float32 rounding


def test_main_py_causal_textbook():
    result = subprocess.run(
        [sys.executable, "main.py", "causal", "--textbook"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert_matches_reading(result.stdout.splitlines())  # another thread count may move a last digit


def test_textbook_json(capsys):
    code, out, _ = run(capsys, "causal", "--textbook", "--json")
    data = json.loads(out)
    assert code == 0 and data["parameters"] == 49_984 and data["exactly_unchanged"] == [True] * 5 + [False] * 3


def _table_rows(out: str) -> list[list[str]]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("---")) + 1
    rows = []
    for line in lines[start:]:
        if not line[:3].strip().isdigit():
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def test_text_edit_marks_the_past_exact(capsys):
    code, out, err = run(capsys, "causal", "--preset", "tiny-gpt", "--text", "To be or not", "--edit", "5=x")
    assert code == 0, err
    rows = _table_rows(out)
    assert len(rows) == 12
    header = next(line for line in out.splitlines() if line.startswith("pos"))
    assert re.split(r"\s{2,}", header.strip()) == ["pos", "token", "embedding", "block 0", "block 1", "block 2", "block 3", "logits"]
    for row in rows[:5]:
        assert row[2:8] == ["0 (exact)"] * 6 and row[-1] == "past"
    assert rows[5][1] == "␣->x" and rows[5][-1] == "<- edit"
    assert all(float(cell) > 0 for cell in rows[5][2:8])
    assert "positions 0-4 (before the edit): bitwise unchanged in every layer" in out


def test_after_softmax_leak_prints_tiny_changes_as_numbers_never_as_zero(capsys):
    code, out, _ = run(
        capsys, "causal", "--preset", "tiny-encoder-decoder", "--text", "To be or not", "--edit", "5=y",
        "--mask", "after-softmax",
    )
    assert code == 0
    rows = _table_rows(out)
    cells = [cell for row in rows for cell in row[2:-1] if cell not in ("past", "<- edit")]
    numbers = [float(cell) for cell in cells if cell != "0 (exact)"]
    assert numbers and all(value > 0 for value in numbers)
    assert min(numbers) < 1e-4  # the leak into the past is ~1e-5 here: shown as such, not rounded to zero
    assert "MOVED" in out


def test_format_change():
    assert format_change(3.1e-08, False, False) == "3.1e-08"
    assert format_change(0.0, True, False) == "0 (exact)"
    assert format_change(float("nan"), False, True) == "nan"
    assert format_change(0.26855868, False, False) == "0.269"


def test_off_by_one_prints_nan(capsys):
    code, out, _ = run(capsys, "causal", "--preset", "tiny-llama", "--text", "To be", "--edit", "3=q", "--mask", "off-by-one", "--layers", "2")
    assert code == 0
    rows = _table_rows(out)
    assert rows[0][3] == "nan" and rows[1][3] == "0 (exact)"
    assert "unchanged wherever defined" in out and "NaN" in out


def test_ids_with_another_vocabulary_and_json(capsys):
    code, out, err = run(
        capsys, "causal", "--preset", "tiny-gpt", "--set", "vocab_size=100", "--ids", "1,2,3,4,5", "--edit", "3=99",
        "--seed", "3", "--layers", "2", "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["edited_tokens"] == [1, 2, 3, 99, 5] and data["mask_mode"] == "causal"
    assert data["layer_labels"] == ["embedding", "block 0", "block 1"]
    assert all(all(row[:3]) for row in data["exactly_unchanged"])
    assert data["leaks_into_past"] is False


def test_encoder_default_moves_the_past(capsys):
    code, out, _ = run(capsys, "causal", "--preset", "tiny-encoder", "--text", "abcdef", "--edit", "3=z", "--json")
    data = json.loads(out)
    assert code == 0 and data["mask_mode"] == "none" and data["leaks_into_past"] is True


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--text", "To be", "--edit", "9=x"], "outside the sequence"),
        (["--text", "To be", "--edit", "2=€"], "not a token"),
        (["--text", "To be€", "--edit", "2=x"], "not in the model"),
        # A learned table of 8 rows refuses 12 tokens (with no positions, textbook-block itself takes them)
        (["--preset", "textbook-block", "--set", "positional=learned", "--text", "To be or not", "--edit", "2=x"],
         r"context length of 8 \(its learned position table has 8 rows\)"),
        (["--preset", "tiny-gpt", "--set", "vocab_size=100", "--text", "abc", "--edit", "1=x"], "--ids"),
        (["--ids", "1,x,3", "--edit", "1=2"], "whole numbers"),
        (["--ids", "1,2,3", "--edit", "1=b"], "an id"),
        (["--ids", "1,2,3", "--edit", "1=70"], "outside the vocabulary"),
        (["--text", "To be", "--edit", "2x"], "POS=TOKEN"),
        (["--text", "To be", "--edit", "a=x"], "whole number"),
        (["--text", "To be"], "--edit"),
        (["--edit", "1=x"], "--text"),
        (["--text", "To be", "--edit", "1=x", "--layers", "9"], "only 4 blocks"),
        (["--textbook", "--preset", "tiny-gpt"], "--textbook"),
        (["--checkpoint", "/no/such/folder", "--text", "ab", "--edit", "1=x"], "checkpoint|folder|available"),
        (["--checkpoint", "x", "--preset", "tiny-gpt", "--text", "ab", "--edit", "1=x"], "--checkpoint"),
        (["--preset", "nope", "--text", "ab", "--edit", "1=x"], "unknown preset"),
        (["--text", "ab", "--edit", "1=x", "--mask", "sideways"], "invalid choice"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, message):
    try:
        code = main(["causal", *argv])
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    out, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert re.search(message, err), err


def test_checkpoint_folder(capsys, tmp_path):
    checkpoints = pytest.importorskip("core.checkpoints")
    from core.model import Transformer
    from core.presets import get_preset

    model = Transformer.from_seed(get_preset("tiny-gpt").replace(vocab_size=20, n_layers=2), 4)
    folder = checkpoints.save_checkpoint(model, tmp_path / "ckpt")
    code, out, err = run(capsys, "causal", "--checkpoint", str(folder), "--ids", "1,2,3,4", "--edit", "2=19", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["past_exactly_unchanged"] is True and len(data["layer_labels"]) == 3
