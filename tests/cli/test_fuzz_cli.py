"""Fuzz the command line: random flags and values, drawn from each subcommand's own options and junk.

Whatever the arguments, a subcommand exits 0 or 2, never prints a traceback, and an error is one line.
Values are bounded so that a valid draw stays cheap (tiny presets, short sequences, few steps).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.cli import build_parser, main


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


SUBCOMMANDS = _subcommands()

SMALL_INTS = ["-1", "0", "1", "2", "3", "4", "x", "", "2.5", "1e3", "0x10", "٣"]
FLOATS = ["0", "-1", "0.5", "1", "2", "nan", "inf", "-inf", "1e-30", "abc", ""]
TEXTS = ["abc", "", "To be, or not", "€☃", "\n\t", "z" * 200, "--json", "a b c", "a_b", "Friday, 5 March 2021",
         "z" * 9_990 + "€☃名前"]
PAST_INT64 = ["9223372036854775808", "99999999999999999999"]
IDS = ["1,2,3", "0", "", "x", "-1", "1,,2", "99999", "1, 2", "64,0,1", "39,99999999999999999999",
       "1,9223372036854775808"]
EDITS = ["1=b", "0=a", "=", "x=y", "99=a", "-1=a", "1=\\n", "2=5", "1", "a=b=c"]
SETS = ["d_model=64", "n_heads=5", "n_layers=0", "junk", "=", "d_model=x", "vocab_size=-1", "norm=rmsnorm", "bias=maybe"]
JUNK = ["", "-", "--", "-x", "--no-such-flag", "💥", "a" * 500, "--json"]


def _presets(command: str) -> list[str]:
    cheap = ["tiny-gpt", "tiny-llama", "textbook-block", "tiny-moe", "nope", "", "GPT2-SMALL"]
    if command in ("params", "shapes", "budget", "presets"):  # counted on the meta device: any size is free
        return cheap + ["gpt2-xl", "mixtral-8x7b", "llama3-8b"]
    return cheap


def _value_strategy(command: str, dest: str, option: argparse.Action, tmp: dict[str, str]) -> st.SearchStrategy[str]:
    if option.choices:
        return st.sampled_from([*map(str, option.choices), "bogus", ""])
    by_name = {
        "preset": _presets(command),
        "compare": _presets(command),
        "config": [tmp["garbage_json"], tmp["not_a_file"], tmp["folder"], tmp["good_config"], tmp["binary"]],
        "checkpoint": ["tiny-gpt", "tiny-llama", "tiny-encoder", "tiny-encoder-decoder", "tiny-moe", "tiny-induction",
                       tmp["not_a_file"], tmp["folder"], tmp["garbage_json"], ""],
        "corpus": [tmp["binary"], tmp["not_a_file"], tmp["folder"], tmp["text"]],
        "text_file": [tmp["binary"], tmp["not_a_file"], tmp["folder"], tmp["text"]],
        "out": [tmp["out"], tmp["garbage_json"], tmp["folder"]],
        "set": SETS,
        "text": TEXTS, "clean": TEXTS, "corrupt": TEXTS, "source": TEXTS, "answer": TEXTS, "foil": TEXTS,
        "ids": IDS, "clean_ids": IDS, "corrupt_ids": IDS, "source_ids": IDS,
        "answer_id": SMALL_INTS + PAST_INT64, "foil_id": SMALL_INTS + PAST_INT64, "position": SMALL_INTS + PAST_INT64,
        "length": SMALL_INTS + ["33", "65", "129"] + PAST_INT64, "top": SMALL_INTS + PAST_INT64,
        "edit": EDITS,
        "perm": ["2,1,0", "0", "", "1,1", "x", "0,1,2,3,4,5,6,7", "-1,0"],
        "device": ["cpu", "cuda", "mps", "tpu", "", "cuda:7"],
        "steps": ["-1", "0", "1", "2", "x"],
        "max_new": ["-1", "0", "1", "5", "x"],
        "depth": SMALL_INTS,
        "threads": ["1", "0", "-2", "x"],
    }
    if dest in by_name:
        return st.sampled_from(by_name[dest]) | st.sampled_from(JUNK)
    if option.type is float:
        return st.sampled_from(FLOATS)
    return st.sampled_from(SMALL_INTS + JUNK)


def _argv_strategy(command: str, tmp: dict[str, str]) -> st.SearchStrategy[list[str]]:
    parser = SUBCOMMANDS[command]
    options = [a for a in parser._actions if a.option_strings and "--help" not in a.option_strings]

    @st.composite
    def build(draw) -> list[str]:
        argv = [command]
        for option in draw(st.lists(st.sampled_from(options), max_size=5) if options else st.just([])):
            flag = draw(st.sampled_from(option.option_strings))
            argv.append(flag)
            if option.nargs != 0:
                if draw(st.integers(0, 9)) == 0:
                    continue  # a flag missing its value
                argv.append(draw(_value_strategy(command, option.dest, option, tmp)))
        if draw(st.integers(0, 7)) == 0:
            argv.insert(draw(st.integers(1, len(argv))), draw(st.sampled_from(JUNK)))
        return argv

    return build()


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("fuzz-cli")
    (root / "garbage.json").write_text("{ not json", encoding="utf-8")
    (root / "binary.bin").write_bytes(b"\x89PNG\xff\xfe\x00" * 20)
    (root / "corpus.txt").write_text("hello world, to be or not to be\n" * 20, encoding="utf-8")
    (root / "good.json").write_text(json.dumps({"d_model": 32, "n_heads": 2, "n_layers": 1, "vocab_size": 65,
                                                "context_length": 32, "d_ff": 64}), encoding="utf-8")
    (root / "folder").mkdir()
    return {
        "garbage_json": str(root / "garbage.json"),
        "binary": str(root / "binary.bin"),
        "text": str(root / "corpus.txt"),
        "good_config": str(root / "good.json"),
        "folder": str(root / "folder"),
        "not_a_file": str(root / "missing" / "nothing.json"),
        "out": str(root / "out"),
    }


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse's own exits (usage errors, --help)
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_random_arguments_exit_0_or_2_with_one_line(command, files, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))  # the bug log of an unexpected error goes here, not to the user's home

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(argv=_argv_strategy(command, files))
    def check(argv: list[str]) -> None:
        code, _out, err = run_cli(argv)
        assert "Traceback" not in err, (argv, err)
        assert code in (0, 2), (argv, code, err)
        if code != 0:
            # A notice may come first ("CUDA is not available on this machine; using the CPU"); the error is one line.
            lines = [line for line in err.splitlines() if "error" in line]
            assert len(lines) == 1, (argv, err)

    check()


def test_no_subcommand_and_junk_at_the_top_level():
    for argv in (["--bogus"], ["no-such-command"], ["--json"], ["\x00"]):
        code, _out, err = run_cli(argv)
        assert code == 2 and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("argv", [["rope", "--config", "\x00"], ["shapes", "--config", "a" * 500]])
def test_a_path_with_a_nul_byte_is_a_one_line_error(argv, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _out, err = run_cli(argv)
    assert code == 2 and "Traceback" not in err


# The commands of the Causal lab and the Families panel, each with the model made for it, and hostile values: ids past
# int64, texts of 10,000 characters with characters no vocabulary has, numbers past every bound, another family's model.
_LONG = "To be or not " * 769 + "€☃名"  # 10,000 characters
NEW_HALF_ARGVS = [
    ["fill-mask", "--checkpoint", "tiny-encoder", "--ids", "39,99999999999999999999"],
    ["fill-mask", "--checkpoint", "tiny-encoder", "--ids", "1,-9223372036854775809"],
    ["fill-mask", "--checkpoint", "tiny-encoder", "--text", _LONG],
    ["fill-mask", "--checkpoint", "tiny-encoder", "--text", "q_estion", "--top", "99999999999999999999"],
    ["fill-mask", "--checkpoint", "tiny-gpt", "--text", "q_estion"],
    ["translate", "--checkpoint", "tiny-encoder-decoder", "--source-ids", "1,9223372036854775808"],
    ["translate", "--checkpoint", "tiny-encoder-decoder", "--source", _LONG],
    ["translate", "--checkpoint", "tiny-encoder-decoder", "--source", "5 März 2021"],
    ["translate", "--checkpoint", "tiny-encoder-decoder", "--source", "March 5, 2021", "--max-new",
     "99999999999999999999"],
    ["translate", "--checkpoint", "tiny-moe", "--source", "March 5, 2021"],
    ["route", "--checkpoint", "tiny-moe", "--ids", "9223372036854775808"],
    ["route", "--checkpoint", "tiny-moe", "--text", _LONG],
    ["route", "--checkpoint", "tiny-gpt", "--text", "To be"],
    ["patch", "--checkpoint", "tiny-gpt", "--clean-ids", "1,2,9223372036854775808", "--corrupt-ids", "1,2,3",
     "--answer", "o"],
    ["patch", "--checkpoint", "tiny-gpt", "--clean", "I say, Rome", "--corrupt", "I say, Xome", "--answer", "€"],
    ["patch", "--checkpoint", "tiny-gpt", "--clean", "I say, Rome", "--corrupt", "I say, Xome", "--answer-id",
     "99999999999999999999"],
    ["patch", "--checkpoint", "tiny-induction-attn", "--clean", "abc", "--corrupt", "abd", "--answer", "a",
     "--site", "mlp_out"],
    ["patch", "--checkpoint", "tiny-gpt", "--clean", _LONG, "--corrupt", _LONG, "--answer", "o"],
    ["patch", "--checkpoint", "tiny-encoder-decoder", "--clean", "March", "--corrupt", "Marcz", "--answer", "a"],
    ["attribute", "--checkpoint", "tiny-gpt", "--ids", "1,99999999999999999999", "--answer", "o"],
    ["attribute", "--checkpoint", "tiny-gpt", "--text", "I say, Rome", "--answer", "o", "--position",
     "99999999999999999999"],
    ["attribute", "--checkpoint", "tiny-moe", "--text", _LONG, "--answer", "o"],
    ["induction", "--checkpoint", "tiny-induction", "--length", "40"],
    ["induction", "--checkpoint", "tiny-induction", "--length", "99999999999999999999"],
    ["induction", "--checkpoint", "tiny-encoder-decoder", "--length", "20"],
]


@pytest.mark.parametrize("argv", NEW_HALF_ARGVS, ids=lambda argv: " ".join(a[:24] for a in argv)[:90])
def test_the_causal_and_family_commands_refuse_hostile_values_in_one_line(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _out, err = run_cli(argv)
    assert "Traceback" not in err and "unexpected error" not in err, (argv, err)
    assert code in (0, 2), (argv, code, err)
    if code == 2:
        assert len([line for line in err.splitlines() if "error" in line]) == 1, (argv, err)
