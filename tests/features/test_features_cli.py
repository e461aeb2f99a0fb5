"""`sae` and `lens`: the JSON the commands print, and bad input refused in one line with exit 2."""

from __future__ import annotations

import json

import pytest

from core.features.sae import save_sae
from tests.cli.helpers import run
from tests.features.small import small_sae

BUNDLED = "tiny-gpt-resid-post-2"


def test_sae_list_and_lens_list_name_the_bundled_ones(capsys):
    code, out, _ = run(capsys, "sae", "list", "--json")
    assert code == 0
    saes = json.loads(out)["saes"]
    assert {"name": BUNDLED, "model": "tiny-gpt", "hook": "blocks.2.hook_resid_post", "d_sae": 512} == {
        k: v for k, v in saes[0].items() if k != "path"}
    code, out, _ = run(capsys, "lens", "list", "--json")
    assert code == 0
    assert {row["model"] for row in json.loads(out)["lenses"]} >= {"tiny-gpt", "tiny-llama"}


def test_sae_stats_and_top_print_their_figures(capsys):
    code, out, err = run(capsys, "sae", "stats", "--sae", BUNDLED, "--part", "held-out", "--tokens", "256", "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert set(stats) >= {"variance_explained", "l0", "dead_fraction", "ce_recovered"} and stats["tokens"] == 256
    assert stats["l0"] <= 16  # TopK with k = 16
    code, out, err = run(capsys, "sae", "top", "--sae", BUNDLED, "--feature", "3", "--tokens", "512", "--count", "3",
                         "--json")
    assert code == 0, err
    contexts = json.loads(out)["contexts"]
    assert [c["activation"] for c in contexts] == sorted((c["activation"] for c in contexts), reverse=True)
    assert all(c["activations"][c["marked"]] == c["activation"] for c in contexts)


def test_lens_report_gives_one_kl_per_block(capsys):
    code, out, err = run(capsys, "lens", "--checkpoint", "tiny-gpt", "--tokens", "256", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert len(report["logit_lens_kl"]) == len(report["tuned_lens_kl"]) == 4


def _refused(capsys, *argv) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    return err


def test_bad_input_is_refused_in_one_line(capsys, tmp_path):
    assert "unknown hook 'blocks.9.hook_resid_post': this model has blocks 0..3" in _refused(
        capsys, "sae", "train", "--checkpoint", "tiny-gpt", "--hook", "blocks.9.hook_resid_post", "--out",
        str(tmp_path / "x"))
    assert "unknown hook 'blocks.1.hook_nothing'" in _refused(
        capsys, "sae", "train", "--checkpoint", "tiny-gpt", "--hook", "blocks.1.hook_nothing", "--out",
        str(tmp_path / "x"))
    assert "was trained on 'tiny-gpt', not 'tiny-llama'" in _refused(
        capsys, "sae", "stats", "--sae", BUNDLED, "--checkpoint", "tiny-llama", "--tokens", "256")
    save_sae(small_sae(), tmp_path / "narrow")  # reads 16 numbers at blocks.1.hook_resid_post
    assert "reads 16 numbers at blocks.1.hook_resid_post, but tiny-gpt has 128 there" in _refused(
        capsys, "sae", "stats", "--sae", str(tmp_path / "narrow"), "--checkpoint", "tiny-gpt")
    assert "feature 512 is out of range: this SAE has features 0..511" in _refused(
        capsys, "sae", "top", "--sae", BUNDLED, "--feature", "512")
    assert "is a lens for tiny-gpt" in _refused(
        capsys, "lens", "--checkpoint", "tiny-llama", "--lens", "tiny-gpt", "--tokens", "256")


@pytest.mark.parametrize("name", ["cfg.json", "sae_weights.safetensors"])
def test_a_damaged_sae_folder_is_refused_in_one_line(capsys, tmp_path, name):
    save_sae(small_sae(), tmp_path / "sae")
    (tmp_path / "sae" / name).write_bytes(b"\x00garbage")
    _refused(capsys, "sae", "stats", "--sae", str(tmp_path / "sae"), "--checkpoint", "tiny-gpt")


def test_the_app_never_imports_sae_lens():
    """SAELens is a test dependency: no module of core/ or gui/ imports it (the AST of each file, lazy imports too)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found = []
    for path in [*root.joinpath("core").rglob("*.py"), *root.joinpath("gui").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        if "sae_lens" not in text:  # most files: no need to parse
            continue
        for node in ast.walk(ast.parse(text)):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.relative_to(root)}: {name}" for name in names if name.split(".")[0] == "sae_lens"]
    assert found == []
