"""`main.py train --preset NAME` trains the preset's recipe by default; each flag replaces one setting of it."""

from __future__ import annotations

import pytest

from core.checkpoints import resolve_checkpoint
from core.cli import main
from core.recipes import BUNDLED_RECIPES, REPEATED_LETTERS


def test_train_takes_the_presets_recipe_and_a_flag_replaces_only_its_own_setting(tmp_path):
    out = tmp_path / "attn"
    assert main(["train", "--preset", "tiny-induction-attn", "--out", str(out), "--steps", "3", "--batch", "2",
                 "--quiet"]) == 0
    record = resolve_checkpoint(out).metadata
    settings = record["settings"]
    assert (settings["steps"], settings["batch_size"]) == (3, 2)  # the flags
    recipe = BUNDLED_RECIPES["tiny-induction-attn"]
    for key in ("seq_len", "lr", "seed", "warmup_steps"):  # the recipe, 1e-3 and 50 warm-up steps among them
        assert settings[key] == recipe[key]
    assert record["corpus"] == REPEATED_LETTERS and record["threads"] == 1


def test_the_help_names_every_preset_with_a_recipe(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")  # argparse may break a name at its hyphen
    for name in BUNDLED_RECIPES:
        assert name in text
    assert "each flag replaces that one setting" in text
