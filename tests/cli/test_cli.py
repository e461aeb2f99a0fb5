import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.cli import main
from core.presets import PRESETS
from tests.cli.helpers import run

ROOT = Path(__file__).resolve().parents[2]


def test_presets_table_lists_every_preset(capsys):
    code, out, _ = run(capsys, "presets")
    assert code == 0
    for name in PRESETS:
        assert name in out
    assert "124,439,808" in out


def test_presets_json_round_trips_configs(capsys):
    code, out, _ = run(capsys, "presets", "--json")
    data = json.loads(out)
    assert set(data) == set(PRESETS)
    assert data["llama3-8b"]["n_kv_heads"] == 8


def test_params_textbook_prints_the_reading_table(capsys):
    code, out, _ = run(capsys, "params", "--textbook")
    assert code == 0
    expected = [
        "token embeddings        38,597,376",
        "position embeddings        786,432",
        "one block: attention     2,362,368",
        "one block: FFN           4,722,432",
        "one block: LayerNorms        3,072",
        "one block total          7,087,872   x 12 layers = 85,054,464",
        "final LayerNorm              1,536",
        "TOTAL (tied head)      124,439,808",
        "TOTAL (untied head)    163,037,184",
        "FFN share of block params: 66.6%",
        "instantiated and counted (deduplicating tied weights): 124,439,808",
        "matches hand arithmetic: True",
    ]
    lines = out.splitlines()
    for line in expected:
        assert line in lines


def test_params_json_has_totals_and_groups(capsys):
    code, out, _ = run(capsys, "params", "--preset", "gpt2-small", "--untied", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["total"] == data["instantiated_total"] == 163_037_184
    assert data["groups"]["head"] == 50257 * 768
    assert sum(data["groups"].values()) == data["total"]


def test_params_of_mixtral_show_active_parameters(capsys):
    code, out, _ = run(capsys, "params", "--preset", "mixtral-8x7b")
    assert "46,702,792,704" in out and "12,879,925,248" in out and "agrees" in out


def test_params_with_field_overrides_and_config_file(capsys, tmp_path):
    code, out, _ = run(capsys, "params", "--preset", "gpt2-small", "--set", "n_layers=24", "--set", "d_model=1024",
                       "--set", "n_heads=16", "--set", "d_ff=4096", "--json")
    assert json.loads(out)["total"] == 354_823_168
    config_file = tmp_path / "model.json"
    config_file.write_text(json.dumps(PRESETS["textbook-block"].to_dict()))
    code, out, _ = run(capsys, "params", "--config", str(config_file), "--json")
    assert json.loads(out)["decoder_block"]["total"] == 49_984


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["params", "--preset", "gpt5"], "unknown preset 'gpt5'"),
        (["params", "--preset", "gpt2-small", "--set", "n_heads=7"], "n_heads: d_model 768 is not divisible"),
        (["params", "--preset", "gpt2-small", "--set", "colour=red"], "colour: unknown config field"),
        (["params", "--preset", "gpt2-small", "--set", "n_layers"], "--set expects FIELD=VALUE"),
        (["params", "--preset", "gpt2-small", "--set", "norm=batch"], "norm: 'batch' is not one of"),
        (["params"], "choose a model"),
        (["params", "--textbook", "--preset", "gpt2-small"], "leave out --preset"),
        (["params", "--config", "/nonexistent/model.json"], "{ENOENT}: /nonexistent/model.json"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, message):
    # The system words its errors in the language of the locale that Qt, once run, has set.
    message = message.replace("{ENOENT}", os.strerror(errno.ENOENT))
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_corrupt_config_file_exits_2(capsys, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{oops")
    code, _, err = run(capsys, "params", "--config", str(path))
    assert code == 2 and "not valid JSON" in err
    path.write_bytes(b"\xff\xfe\x81")
    code, _, err = run(capsys, "params", "--config", str(path))
    assert code == 2 and "not a text file" in err


def test_argparse_errors_are_one_line_with_exit_2(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["params", "--no-such-flag"])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "unrecognized arguments" in err


@given(st.lists(st.text(alphabet="abcdefgnorstu-=_0123456789.", max_size=12), max_size=5))
def test_fuzzed_arguments_never_show_a_traceback(argv):
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(["params", *argv])
        except SystemExit as exit_:
            code = exit_.code
    assert code in (0, 2)
    assert "Traceback" not in err.getvalue()


def test_main_py_runs_headless_commands():
    result = subprocess.run(
        [sys.executable, "main.py", "params", "--preset", "textbook-block", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["decoder_block"]["total"] == 49_984
    bad = subprocess.run([sys.executable, "main.py", "params", "--preset", "x"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_window_options_open_the_app_without_the_gui_word(capsys):
    import main as entry

    # --size is a window option: the window's own parser refuses a bad value (the CLI would call it unknown).
    assert entry.main(["--size", "big"]) == 2
    assert "WIDTHxHEIGHT" in capsys.readouterr().err


def test_a_module_that_fails_to_load_is_one_line_not_a_traceback(capsys, monkeypatch):
    import core.cli

    # A packaged copy that lost a file fails the same way: importing a subcommand's module raises.
    monkeypatch.setattr(core.cli, "COMMAND_MODULES", [*core.cli.COMMAND_MODULES, "core.cli.lost_in_packaging"])
    assert core.cli.main(["presets"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "installation is incomplete" in err and "lost_in_packaging" in err
