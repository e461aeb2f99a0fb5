"""`python -m bench` smoke test: the module imports and its table formatter lays out figures (no benchmark runs)."""

from __future__ import annotations

import importlib


def test_the_bench_table_shows_median_spread_target_and_verdict():
    bench = importlib.import_module("bench.__main__")
    figures = [
        bench.Figure("time to visible window", "s", [0.8, 0.9, 1.4], "<= 1.0 s", lambda v: v <= 1.0, "import torch 0.600 s"),
        bench.Figure("RoPE drag redraws, slider", "/s", [20.0, 25.0], ">= 30/s", lambda v: v >= 30.0),
        bench.Figure("peak RSS", "GB", [], "< 2 GB", lambda v: v < 2.0, error="probe failed"),
    ]
    table = bench.format_table(figures)
    lines = table.splitlines()
    assert lines[0].split()[:2] == ["figure", "median"]
    assert len(lines) == 2 + len(figures)
    assert "0.900 s" in lines[2] and "0.800 s - 1.400 s, n=3" in lines[2] and "pass" in lines[2]
    assert "import torch 0.600 s" in lines[2]
    assert "22.5 /s" in lines[3] and "MISS" in lines[3]
    assert "probe failed" in lines[4] and "error" in lines[4]
    assert figures[1].to_json()["median"] == 22.5 and figures[2].to_json()["verdict"] == "error"


def test_a_peer_that_is_not_installed_is_skipped_not_failed_and_the_edit_is_measured_against_the_peer():
    bench = importlib.import_module("bench.__main__")
    edit = bench.Figure("edit-to-result", "ms", [480.0, 500.0, 520.0])
    peer = bench.Figure("transformers", "ms", [1000.0, 1250.0, 1040.0])
    ratio = bench.edit_against_peer(edit, peer)
    assert ratio.values == [0.48, 0.4, 0.5] and ratio.verdict == "pass" and "transformers 1040 ms" in ratio.beside
    slow = bench.edit_against_peer(bench.Figure("edit-to-result", "ms", [1500.0]), bench.Figure("transformers", "ms", [1000.0]))
    assert slow.verdict == "MISS"
    missing = bench.Figure("TransformerLens", "ms", skipped="TransformerLens is not installed")
    assert missing.verdict == "skipped" and "not installed" in bench.format_table([missing])
    assert bench.edit_against_peer(edit, missing).verdict == "skipped"
    assert bench.edit_against_peer(bench.Figure("edit", "ms"), peer).verdict == "error"
