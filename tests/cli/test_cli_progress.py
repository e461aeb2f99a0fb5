"""Long commands show progress on stderr (lines in a log, nothing with --quiet) and `evaluate` reports nats and
bits per character beside nats per token."""

from __future__ import annotations

import io
import json
import math
import re

import pytest
import torch
import torch.nn.functional as F

from core.checkpoints import resolve_checkpoint
from core.cli import main
from core.cli.progress import INTERVAL_VARIABLE, Progress
from resources import resource_path

PROGRESS_LINE = re.compile(r"^evaluate: ([\d,]+)/([\d,]+) tok \(\d+%\)  [\d,]+ tok/s  ETA \S+$")


@pytest.fixture(scope="module")
def shakespeare() -> str:
    return resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")


def test_a_large_evaluate_prints_progress_lines_in_a_log_and_none_when_quiet(tmp_path, shakespeare, capsys, monkeypatch):
    context = resolve_checkpoint("tiny-gpt", device=torch.device("cpu")).config.context_length
    text = shakespeare[: context * 32 * 4 + 57]  # four full batches of windows and a ragged fifth
    path = tmp_path / "long.txt"
    path.write_text(text, encoding="utf-8")
    argv = ["evaluate", "--checkpoint", "tiny-gpt", "--text-file", str(path), "--device", "cpu"]
    monkeypatch.setenv(INTERVAL_VARIABLE, "0")  # a line at every batch: the test needs no long text

    assert main(argv) == 0
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.startswith("evaluate:")]
    assert len(lines) >= 5 and all(PROGRESS_LINE.match(line) for line in lines), err
    done = [int(PROGRESS_LINE.match(line)[1].replace(",", "")) for line in lines]
    assert done == sorted(done) and done[-1] == len(text) - 1
    assert "\r" not in err and "\x1b" not in err

    assert main([*argv, "--quiet"]) == 0
    quiet_out, quiet_err = capsys.readouterr()
    assert quiet_err == "" and quiet_out == out  # the final line is the same with or without progress

    assert main([*argv, "--json"]) == 0
    json_out, _ = capsys.readouterr()
    assert json.loads(json_out)["tokens"] == len(text)


def test_progress_lines_are_spaced_by_the_interval(tmp_path, shakespeare, capsys, monkeypatch):
    path = tmp_path / "t.txt"
    path.write_text(shakespeare[:20_000], encoding="utf-8")
    monkeypatch.setenv(INTERVAL_VARIABLE, "3600")
    assert main(["evaluate", "--checkpoint", "tiny-gpt", "--text-file", str(path), "--device", "cpu"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("evaluate:")]
    assert len(lines) == 1  # nothing for an hour but the last


def reference_total_nats(model, ids: list[int]) -> tuple[float, int]:
    """Sum of next-token losses over windows of the context length chained by one token, one window at a time."""
    context = model.config.context_length
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(ids) - 1, context):
            window = torch.tensor(ids[start : start + context + 1]).unsqueeze(0)  # (1, t+1)
            logits = model(window[:, :-1])  # (1, t, V)
            total += float(F.cross_entropy(logits[0].double(), window[0, 1:], reduction="sum"))
            count += window.shape[1] - 1
    return total, count


@pytest.mark.parametrize("name", ["tiny-gpt", "tiny-gpt-bpe"])
def test_evaluate_reports_nats_and_bits_per_character(name, tmp_path, shakespeare, capsys):
    text = shakespeare[1000:4000]
    path = tmp_path / "t.txt"
    path.write_text(text, encoding="utf-8")
    assert main(["evaluate", "--checkpoint", name, "--text-file", str(path), "--device", "cpu", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    loaded = resolve_checkpoint(name, device=torch.device("cpu"))
    ids = loaded.tokenizer.encode(text)
    total, predictions = reference_total_nats(loaded.model.eval(), ids)
    first_token_chars = len(loaded.tokenizer.decode(ids[:1]))
    characters = len(text) - first_token_chars  # the first token's characters are predicted by nothing
    assert data["characters_predicted"] == characters
    # float32 sums of a few thousand terms: relative error far below 1e-4
    assert data["loss_nats_per_token"] == pytest.approx(total / predictions, rel=1e-4)
    assert data["loss_nats_per_character"] == pytest.approx(total / characters, rel=1e-4)
    assert data["loss_bits_per_character"] == pytest.approx(total / characters / math.log(2), rel=1e-4)
    if name == "tiny-gpt":  # one token per character
        assert data["loss_nats_per_character"] == pytest.approx(data["loss_nats_per_token"], rel=1e-6)
    else:
        assert len(ids) < len(text) / 1.5  # the BPE merges characters, so the two figures differ
        assert data["loss_nats_per_character"] < data["loss_nats_per_token"] / 1.5

    assert main(["evaluate", "--checkpoint", name, "--text-file", str(path), "--device", "cpu", "--quiet"]) == 0
    line = capsys.readouterr().out
    assert f"{data['loss_nats_per_character']:.4f} nats/char" in line
    assert f"{data['loss_bits_per_character']:.4f} bits/char" in line


def test_generate_logits_and_export_show_progress_unless_quiet(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(INTERVAL_VARIABLE, "0")
    commands = [
        ["generate", "--checkpoint", "tiny-gpt", "--text", "ROMEO:", "--max-new", "5", "--device", "cpu"],
        ["logits", "--checkpoint", "tiny-gpt", "--text", "ROMEO:", "--out", str(tmp_path / "l.npy"), "--device", "cpu"],
        ["export", "--checkpoint", "tiny-gpt", "--out", str(tmp_path / "hf"), "--device", "cpu"],
    ]
    for argv in commands:
        assert main(argv) == 0
        out, err = capsys.readouterr()
        assert any(line.startswith(f"{argv[0]}: ") and "(100%)" in line for line in err.splitlines()), (argv[0], err)
        assert main([*argv, "--quiet"]) == 0
        quiet_out, quiet_err = capsys.readouterr()
        assert quiet_err == ""
        assert quiet_out == out or argv[0] == "export"  # export names its (same) folder: equal up to nothing


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_a_bar_with_rate_and_estimate_redrawn_in_place():
    terminal = Terminal()
    with Progress("evaluate", 10_000, "tok", stream=terminal) as progress:
        assert progress.bar is not None
        progress.bar.mininterval = 0  # draw every update
        for done in range(1_000, 10_001, 1_000):
            progress.update(done)
    text = terminal.getvalue()
    assert "\r" in text and text.endswith("\n")  # redrawn in place, left on a fresh line
    last = text.rstrip("\n").split("\r")[-1]
    assert "10.0k/10.0k" in last and "tok/s" in last and "<00:00" in last


def test_quiet_progress_writes_nothing_even_on_a_terminal():
    terminal = Terminal()
    with Progress("evaluate", 10, "tok", stream=terminal, quiet=True) as progress:
        for done in range(11):
            progress.update(done)
    assert terminal.getvalue() == ""
