"""`rope` and `permutation`: the reading's tables in the reading's format, and one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.cli import main
from core.experiments.positions import textbook_permutation_table
from tests.cli.helpers import run
from tests.float32 import assert_printed_close, float32_tolerance

ROOT = Path(__file__).resolve().parents[2]

READING_ROPE_OUTPUT = """\
score q.k with RoPE applied, at various (query pos m, key pos n):
  m =   3, n =   1  (m - n = 2):  score = 5.9478093347
  m =  13, n =  11  (m - n = 2):  score = 5.9478093347
  m = 103, n = 101  (m - n = 2):  score = 5.9478093347
  m =   5, n =   1  (m - n = 4):  score = 4.7051479015
  m =  54, n =  50  (m - n = 4):  score = 4.7051479015
  m =   9, n =   1  (m - n = 8):  score = 5.6683275369

score (q + PE[m]).(k + PE[n]) with additive sinusoidal encodings:
  m =   3, n =   1  (m - n = 2):  score = 12.0287056485
  m =  13, n =  11  (m - n = 2):  score = 8.2543303859
  m = 103, n = 101  (m - n = 2):  score = 7.0843151351
"""


def test_rope_textbook_prints_the_reading_output_exactly(capsys):
    code, out, err = run(capsys, "rope", "--textbook")
    assert code == 0 and err == ""
    assert out == READING_ROPE_OUTPUT


def test_rope_textbook_json(capsys):
    code, out, _ = run(capsys, "rope", "--textbook", "--json")
    data = json.loads(out)
    printed = [f"{row['score']:.10f}" for row in data["additive_sinusoidal"]]
    assert printed == ["12.0287056485", "8.2543303859", "7.0843151351"]
    assert len(data["q"]) == 8


def test_permutation_textbook_prints_the_reading_format(capsys):
    code, out, _ = run(capsys, "permutation", "--textbook")
    assert code == 0
    lines = out.splitlines()
    no_pe_prefix = "no PE:  max |attn(shuffled x) - shuffle(attn(x))| = "
    prefix = "with PE: max |attn(shuffled x+PE) - shuffle(attn(x+PE))| = "
    assert lines[0].startswith(no_pe_prefix) and lines[1].startswith(prefix)
    # The digits are the reading's script's on this machine (the core tests run it and compare bitwise)...
    table = textbook_permutation_table()
    assert lines[0].removeprefix(no_pe_prefix) == f"{table.no_pe_max_diff:.8f}"
    assert lines[1].removeprefix(prefix) == f"{table.with_pe_max_diff:.8f}"
    # ...and agree with the reading's 0.00000012 (float noise: a few ulps of outputs of size 1, or 0)
    # and 0.14426041 within float32 rounding; the last digits follow the CPU and the thread count.
    assert 0 <= float(lines[0].removeprefix(no_pe_prefix)) <= float32_tolerance(1.0)
    assert_printed_close(lines[1].removeprefix(prefix), "0.14426041", 1.0)
    assert lines[2] == ""
    assert lines[3] == "PE row 0, first 6 dims: ['0.0000', '1.0000', '0.0000', '1.0000', '0.0000', '1.0000']"
    assert lines[4] == "PE row 3, first 6 dims: ['0.1411', '-0.9900', '0.9933', '-0.1160', '0.8126', '0.5828']"


def test_rope_with_a_preset_uses_its_head_width_and_base(capsys):
    code, out, _ = run(capsys, "rope", "--preset", "llama3-8b", "--offset", "4", "--json")
    data = json.loads(out)
    assert data["d"] == 128 and data["base"] == 500000.0
    assert {row["m"] - row["n"] for row in data["rope"]} == {4}
    assert data["rope_spread"] < 1e-9 < 1e-3 < data["additive_spread"]
    assert max(data["norms"]["norms"]) - min(data["norms"]["norms"]) < 1e-9


def test_rope_free_probe_text(capsys):
    code, out, _ = run(capsys, "rope", "--d", "16", "--base", "500", "--scale", "2", "--offset", "3")
    assert code == 0
    assert "RoPE base 500, scale 2" in out
    assert "(m - n = 3)" in out and "rotations are orthogonal" in out


def test_permutation_for_a_preset(capsys):
    code, out, _ = run(capsys, "permutation", "--preset", "tiny-llama", "--json")
    data = json.loads(out)
    assert data["d_model"] == 128 and data["permutation"] == [3, 1, 5, 0, 2, 4]
    assert data["equivariant"] == {"none": True, "sinusoidal": False, "learned": False, "rope": False}
    code, out, _ = run(capsys, "permutation", "--perm", "2,0,1", "--seed", "4")
    assert code == 0 and "order invisible (float noise)" in out and "shuffle [2, 0, 1]" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["rope", "--d", "7"],
        ["rope", "--textbook", "--preset", "gpt2-small"],
        ["rope", "--preset", "no-such-model"],
        ["rope", "--preset", "gpt2-small", "--d", "8"],
        ["rope", "--scale", "0"],
        ["rope", "--base", "1"],
        ["rope", "--offset", "-1"],
        ["rope", "--d", "eight"],
        ["permutation", "--perm", "0,0,1"],
        ["permutation", "--perm", "a,b"],
        ["permutation", "--T", "1"],
        ["permutation", "--textbook", "--perm", "1,0"],
        ["permutation", "--preset", "gpt2-small", "--set", "n_heads=5"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv):
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own type errors
        code = exit_.code
    _, err = capsys.readouterr()
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_main_entry_point_runs_rope_textbook():
    result = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "rope", "--textbook"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == READING_ROPE_OUTPUT
