"""Every numeric option has a range, refused while parsing (before any work) in one line naming it."""

from __future__ import annotations

import argparse
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.cli import build_parser, main
from core.limits import MAX_SEED


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_no_numeric_option_is_unbounded():
    unbounded = [
        f"{name} {action.option_strings[0]}"
        for name, sub in _subcommands().items()
        for action in sub._actions
        if action.type in (int, float)
    ]
    assert unbounded == []


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["rope", "--d", "1000000000"], "argument --d: must be a whole number from 2 to 1,024, got '1000000000'"),
        (["rope", "--offset", "100000000"], "argument --offset: must be a whole number from 0 to 10,000, got '100000000'"),
        (["rope", "--base", "inf"], "argument --base: must be a number from 1 to 1e+12, got 'inf'"),
        (["rope", "--scale", "nan"], "argument --scale: must be a number from 0 to 1e+06, got 'nan'"),
        (["generate", "--checkpoint", "tiny-gpt", "--text", "a", "--max-new", "1000000000"],
         "argument --max-new: must be a whole number from 1 to 10,000, got '1000000000'"),
        (["generate", "--checkpoint", "tiny-gpt", "--text", "a", "--seed", str(2**31)],
         f"argument --seed: must be a whole number from 0 to {MAX_SEED:,}, got '2147483648'"),
        (["train", "--preset", "tiny-gpt", "--out", "x", "--batch", "1000000"],
         "argument --batch: must be a whole number from 1 to 4,096, got '1000000'"),
        (["train", "--preset", "tiny-gpt", "--out", "x", "--lr", "1e400"], "argument --lr: must be a number from 1e-09 to 10"),
        (["causal", "--seed", "9" * 5000], "argument --seed: must be a whole number from 0 to 2,147,483,647, got '99999"),
        (["shapes", "--seq", "99999999999"], "argument --seq/-T: must be a whole number from 1 to 10,000,000"),
        (["norms", "--batch", "-3"], "argument --batch: must be a whole number from 1 to 1,024, got '-3'"),
        (["permutation", "--T", "1e9"], "argument --T: must be a whole number from 1 to 4,096, got '1e9'"),
    ],
)
def test_an_option_out_of_range_is_one_line_and_exit_2(capsys, argv, expected):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and len(err) < 300, err
    assert expected in err and "Traceback" not in err


def test_the_bounds_themselves_are_accepted(capsys):
    assert main(["rope", "--d", "1024", "--offset", "10000", "--json"]) == 0
    assert main(["permutation", "--seed", str(MAX_SEED), "--json"]) == 0


@pytest.mark.parametrize("command", [["causal"], ["generate", "--checkpoint", "tiny-gpt"], ["logits", "--checkpoint", "tiny-gpt", "--out", "x.npy"]])
def test_a_text_over_the_bound_is_refused_before_tokenizing(capsys, command):
    from core.limits import MAX_TEXT_CHARS

    with pytest.raises(SystemExit) as exit_:
        main([*command, "--text", "a" * 1_000_000])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --text: must be at most {MAX_TEXT_CHARS:,} characters, got 1,000,000" in err and len(err) < 300


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_as_a_text_file_is_refused_without_waiting(capsys, tmp_path):
    import os

    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    assert main(["evaluate", "--checkpoint", "tiny-gpt", "--text-file", str(fifo)]) == 2
    assert "is not a regular file; give a text file" in capsys.readouterr().err


def _numeric_options() -> list[tuple[str, str, argparse.Action]]:
    return [
        (name, action.option_strings[0], action)
        for name, sub in _subcommands().items()
        for action in sub._actions
        if action.option_strings and getattr(action.type, "__name__", "") in ("whole number", "number")
    ]


@given(value=st.one_of(st.integers(min_value=-(10**40), max_value=10**40).map(str), st.floats().map(repr),
                       st.text(max_size=40)),
       index=st.integers(min_value=0, max_value=10_000))  # fmt: skip
def test_any_value_of_any_numeric_option_parses_in_range_or_is_refused_in_one_line(value, index):
    options = _numeric_options()
    _name, option, action = options[index % len(options)]
    try:
        parsed = action.type(value)
    except argparse.ArgumentTypeError as error:
        message = str(error)
        assert "\n" not in message and message.startswith("must be a") and len(message) < 120
    else:
        low, high = action.type.bounds
        assert math.isfinite(parsed) and low <= parsed <= high, (option, value, parsed)


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_as_a_config_file_is_refused_without_waiting(capsys, tmp_path):
    import os

    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    assert main(["params", "--config", str(fifo)]) == 2
    assert "is not a regular file; give a JSON file of config fields" in capsys.readouterr().err


_PAST_INT64 = "99999999999999999999"  # 2**66 and more: no int64 tensor holds it


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["fill-mask", "--checkpoint", "tiny-encoder", "--ids", f"39,{_PAST_INT64}"], "--ids"),
        (["fill-mask", "--checkpoint", "tiny-encoder", "--ids", f"39,-{_PAST_INT64}"], "--ids"),
        (["translate", "--checkpoint", "tiny-encoder-decoder", "--source-ids", f"5,{_PAST_INT64}"], "--source-ids"),
        (["route", "--checkpoint", "tiny-moe", "--ids", _PAST_INT64], "--ids"),
        (["patch", "--checkpoint", "tiny-gpt", "--clean-ids", "1,2", "--corrupt-ids", f"1,{_PAST_INT64}",
          "--answer-id", "3"], "--corrupt-ids"),
        (["patch", "--checkpoint", "tiny-gpt", "--clean-ids", f"{_PAST_INT64},2", "--corrupt-ids", "1,2",
          "--answer-id", "3"], "--clean-ids"),
        (["patch", "--checkpoint", "tiny-gpt", "--clean-ids", "1,2", "--corrupt-ids", "1,3",
          "--answer-id", "3", "--foil-id", _PAST_INT64], "--foil-id"),
        (["attribute", "--checkpoint", "tiny-gpt", "--ids", f"{_PAST_INT64},1", "--answer-id", "2"], "--ids"),
        (["attribute", "--checkpoint", "tiny-gpt", "--ids", "3,1", "--answer-id", _PAST_INT64], "--answer-id"),
        (["logits", "--checkpoint", "tiny-gpt", "--ids", _PAST_INT64, "--out", "x.npy"], "--ids"),
        (["logits", "--checkpoint", "tiny-encoder-decoder", "--source-ids", _PAST_INT64, "--ids", "1",
          "--out", "x.npy"], "--source-ids"),
        (["causal", "--checkpoint", "tiny-gpt", "--ids", f"1,{_PAST_INT64}", "--edit", "0=2"], "--ids"),
        (["head", "--checkpoint", "tiny-gpt", "--ids", f"1,{_PAST_INT64}"], "--ids"),
    ],
)
def test_an_id_past_int64_is_refused_in_one_line_naming_the_option_and_the_bound(capsys, argv, option):
    from core.limits import MAX_TOKEN_ID

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert f"argument {option}:" in err and f"from 0 to {MAX_TOKEN_ID:,}" in err, err


def test_an_edit_id_past_int64_is_refused_in_one_line(capsys):
    from core.limits import MAX_TOKEN_ID

    assert main(["causal", "--checkpoint", "tiny-gpt", "--ids", "1,2", "--edit", f"0={_PAST_INT64}"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--edit" in err and f"from 0 to {MAX_TOKEN_ID:,}" in err, err


def test_the_token_id_bound_is_the_largest_vocabulary_a_config_holds():
    from core import config
    from core.limits import MAX_TOKEN_ID

    config.validate(config.ModelConfig(vocab_size=MAX_TOKEN_ID + 1))
    with pytest.raises(config.ConfigError):
        config.validate(config.ModelConfig(vocab_size=MAX_TOKEN_ID + 2))


@given(value=st.lists(st.one_of(st.integers(min_value=-(10**40), max_value=10**40).map(str), st.text(max_size=12)),
                      max_size=6).map(",".join))
def test_any_id_list_parses_in_range_or_is_refused_in_one_line(value):
    from core.cli.bounds import token_ids
    from core.limits import MAX_TOKEN_ID

    try:
        parsed = token_ids()(value)
    except argparse.ArgumentTypeError as error:
        assert "\n" not in str(error) and len(str(error)) < 120
    else:
        assert parsed and all(0 <= i <= MAX_TOKEN_ID for i in parsed)
