"""`generate --top-p`: bounded, seeded, and the same draws as core.training.generate."""

from __future__ import annotations

import pytest

from core.checkpoints import resolve_checkpoint
from core.cli import main
from core.training import generate
from tests.cli.helpers import run

PROMPT = "First Citizen:\n"


@pytest.mark.parametrize("value", ["0", "-0.5", "1.01", "nan", "inf", "half"])
def test_a_top_p_outside_zero_to_one_is_refused_with_exit_2(capsys, value):
    with pytest.raises(SystemExit) as exit_:
        main(["generate", "--checkpoint", "tiny-gpt", "--text", "a", "--top-p", value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert "argument --top-p: must be a number above 0 and at most 1, got " in last and len(last) < 200


def test_top_p_prints_what_generate_draws(capsys):
    code, out, err = run(capsys, "generate", "--checkpoint", "tiny-gpt", "--text", PROMPT, "--max-new", "30",
                         "--temperature", "1.0", "--top-p", "0.6", "--seed", "5")
    assert code == 0, err
    loaded = resolve_checkpoint("tiny-gpt")
    ids = loaded.tokenizer.encode(PROMPT)
    expected = generate(loaded.model, ids, 30, 1.0, None, 5, top_p=0.6)
    assert out == loaded.tokenizer.decode(expected) + "\n"


def test_a_tiny_top_p_is_greedy_and_top_p_one_cuts_nothing(capsys):
    base = ["generate", "--checkpoint", "tiny-gpt", "--text", PROMPT, "--max-new", "20", "--temperature", "1.0"]
    _, greedy, _ = run(capsys, *base[:-1], "0")
    _, nucleus, _ = run(capsys, *base, "--top-p", "1e-9")
    assert nucleus == greedy
    _, plain, _ = run(capsys, *base, "--seed", "2")
    _, whole, _ = run(capsys, *base, "--seed", "2", "--top-p", "1")
    assert whole == plain
