"""`head`: the worked head printed as a table with the verdict; bad choices exit 2 with one line."""

import json

import numpy as np
import pytest

from core.checkpoints import load_bundled
from core.experiments.worked_head import worked_head
from tests.cli.helpers import run

TEXT = "To be, or not to be"


def test_the_table_is_the_worked_head_of_the_bundled_model(capsys):
    code, out, err = run(capsys, "head", "--checkpoint", "tiny-llama", "--text", TEXT, "--layer", "3", "--head", "2",
                         "--all-keys")
    assert code == 0 and err == ""
    loaded = load_bundled("tiny-llama")
    expected = worked_head(loaded.model, loaded.tokenizer.encode(TEXT), 3, 2, tokenizer_or_labels=loaded.tokenizer)
    lines = out.splitlines()
    assert lines[0].startswith("bundled tiny-llama: block 3, head 2, query 18 'e' (causal mask), d_head 32")
    assert lines[1] == "this head reads kv head 1, shared by query heads 2, 3"
    rows = [line.split() for line in lines if line[:3].strip().isdigit()]
    assert len(rows) == len(TEXT)
    weights = np.array([float(row[-1]) for row in rows])
    np.testing.assert_allclose(weights, expected.weights, rtol=1e-5)
    assert f"verdict: hand result {expected.verdict.split(' to ')[0]}" in out
    assert "equal to the model's head output to" in out


def test_top_keys_by_default_and_a_left_out_step_flips_the_verdict(capsys):
    code, out, _ = run(capsys, "head", "--preset", "tiny-gpt", "--set", "positional=alibi", "--text", "hello there",
                       "--omit", "scale", "--top", "4")
    assert code == 0  # a step left out is meant to miss: not a failure of the command
    assert "(4 of 11 keys, those of largest weight; --all-keys prints every key)" in out
    assert "alibi" in out.splitlines()[2] and " -0 " not in out
    assert "verdict: hand result NOT the model's head output" in out and "scale left out" in out


def test_json_holds_every_step(capsys):
    code, out, _ = run(capsys, "head", "--text", "abcabc", "--query", "2", "--mask", "off-by-one", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["equal"] and data["query"] == 2 and data["mask_mode"] == "off-by-one"
    assert data["visible"] == [True, True, False, False, False, False]
    assert data["scores"][2:] == ["-inf"] * 4 and sum(data["weights"]) == pytest.approx(1.0)


def test_json_holds_the_keys_values_and_rotation_of_a_rope_model(capsys):
    """Every array of the worked head: k and v per key (T, d), the rotated k, the angles (T, d/2), checked by hand."""
    import numpy as np

    code, out, _ = run(capsys, "head", "--checkpoint", "tiny-llama", "--text", "To be", "--query", "3", "--json")
    assert code == 0
    data = json.loads(out)
    k_before, k, v = (np.array(data[name]) for name in ("k_before_rope", "k", "v"))
    angles = np.array(data["rope_angles"])
    tokens, d = len(data["tokens"]), data["d_head"]
    assert k_before.shape == k.shape == v.shape == (tokens, d) and angles.shape == (tokens, d // 2)
    # Rotating k_before by the angles gives k, in whichever pairing the model uses (half-split or interleaved).
    cos, sin = np.cos(angles), np.sin(angles)  # (T, d/2) each
    first, second = k_before[:, : d // 2], k_before[:, d // 2:]
    half_split = np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=1)  # (T, d)
    even, odd = k_before[:, 0::2], k_before[:, 1::2]
    interleaved = np.stack([even * cos - odd * sin, odd * cos + even * sin], axis=-1).reshape(tokens, d)  # (T, d)
    tolerance = 1e-5 * max(1.0, float(np.abs(k_before).max()))
    assert np.allclose(half_split, k, atol=tolerance) or np.allclose(interleaved, k, atol=tolerance)
    scaled = np.array(data["q"]) @ k.T * data["scale"]  # (T,) the scores before the mask, from the printed arrays
    visible = np.array(data["visible"])
    assert np.allclose(scaled[visible], np.array(data["scaled"])[visible], rtol=1e-5, atol=1e-5)
    assert [check["step"] for check in data["step_checks"]] and all(
        check["max_difference"] <= check["tolerance"] for check in data["step_checks"])


@pytest.mark.parametrize(("argv", "message"), [
    (["--checkpoint", "tiny-gpt", "--layer", "9"], "block 9 is out of range: this model has blocks 0 to 3"),
    (["--head", "4"], "head 4 is out of range: each block has heads 0 to 3"),
    (["--query", "3"], "query 3 is out of range: the sequence has tokens 0 to 2"),
    (["--omit", "rope"], "this model uses learned positions: it has no rope step"),
    (["--layer", "-1"], "--layer"),
    (["--top", "0"], "--top"),
])
def test_bad_choices_exit_2_with_one_line(capsys, argv, message):
    try:
        code, out, err = run(capsys, "head", "--text", "abc", *argv)
    except SystemExit as refused:  # argparse's own bounds exit from inside parse_args
        code, (out, err) = refused.code, capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err
