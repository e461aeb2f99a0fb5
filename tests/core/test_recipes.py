"""The recipes: every bundled model's training.json records exactly its preset's recipe, and how a recipe reads."""

from __future__ import annotations

import hashlib
import json

import pytest

from core.date_corpus import date_pairs
from core.going_deeper.recipe import bundled_configs
from core.presets import PRESETS, get_preset
from core.recipes import BUNDLED_RECIPES, DATES, REPEATED_LETTERS, SHAKESPEARE, recipe_for, recipe_of
from core.repeated_corpus import repeated_letters
from core.training import TrainSettings
from resources import resource_path

# The going-deeper models train by their own recipe (core.going_deeper.recipe; tests/cli/test_going_deeper_cli.py).
BUNDLED = sorted(path.parent.name for path in resource_path("models").glob("*/training.json")
                 if path.parent.name not in {config.name for config in bundled_configs()})


def made_corpus(corpus: str, seed: int) -> str:
    """The text a recipe's corpus names, made here as the command line makes it."""
    if corpus == REPEATED_LETTERS:
        return repeated_letters(seed=seed)
    if corpus == DATES:
        return date_pairs(seed=seed)
    assert corpus == SHAKESPEARE
    return resource_path(SHAKESPEARE).read_text(encoding="utf-8")


def test_the_bundled_models_are_found():
    assert {"tiny-gpt", "tiny-llama", "tiny-gpt-bpe", "tiny-induction", "tiny-encoder", "tiny-encoder-decoder",
            "tiny-moe", "tiny-moe-dense"} <= set(BUNDLED)


@pytest.mark.parametrize("name", BUNDLED)
def test_every_bundled_models_training_record_is_its_presets_recipe(name):
    record = json.loads(resource_path("models", name, "training.json").read_text(encoding="utf-8"))
    assert record["preset"] == name
    recipe = recipe_for(get_preset(name))
    assert recipe is not None, f"{name} is bundled but its preset has no recipe"
    # Every recorded setting, the defaults the recipe leaves unnamed included (warm-up, betas, decay, ...).
    expected = TrainSettings(**recipe.settings).to_dict()
    recorded = record["settings"]
    assert set(recorded) <= set(expected)
    assert recorded == {key: expected[key] for key in recorded}
    assert record["steps_done"] == recipe.settings["steps"] and record["stopped_early"] is False
    assert record.get("start", "fresh") == "fresh" and record["threads"] == 1
    # The corpus: its name, and the very text, made from the recipe's seed.
    assert record["corpus"] == recipe.corpus
    text = made_corpus(recipe.corpus, recipe.settings["seed"])
    assert len(text) == record["corpus_characters"]
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == record["corpus_sha256"]


def test_a_recipe_that_is_not_shipped_trained_names_no_record():
    recipe = recipe_of("tiny-induction-attn")
    assert recipe is not None and recipe.record() is None
    assert "tiny-induction-attn" not in BUNDLED


def test_only_the_preset_itself_has_the_recipe():
    config = get_preset("tiny-induction")
    assert recipe_for(config).settings == BUNDLED_RECIPES["tiny-induction"]
    assert recipe_for(config.replace(d_model=32)) is None  # another model: the recipe does not reproduce it
    assert recipe_for(get_preset("gpt2-small")) is None
    assert set(BUNDLED_RECIPES) <= set(PRESETS)


def test_a_recipe_reads_as_one_line_from_its_table_and_its_record():
    attn = recipe_of("tiny-induction-attn")
    assert attn.summary() == ("3,000 steps, batch 32 x 64, lr 0.001, 50 warm-up steps, then cosine to 0.1 of it, "
                              "seed 0; corpus: repeated random letters")
    bpe = recipe_of("tiny-gpt-bpe")
    assert bpe.summary() == ("1,000 steps, batch 16 x 256, lr 0.003, 100 warm-up steps, then cosine to 0.1 of it, "
                             "seed 1337, a byte-level BPE of 1,536 tokens, bfloat16 matmuls; corpus: Tiny Shakespeare")
    assert recipe_of("tiny-induction").record()["wall_time_s"] > 0  # the time the Train view quotes


def test_the_models_guide_lists_every_recipe_as_the_table_has_it():
    from core.recipes import CORPUS_TITLES

    page = (resource_path().parent / "docs" / "models.md").read_text(encoding="utf-8")
    for name in BUNDLED_RECIPES:
        recipe = recipe_of(name)
        s = recipe.settings
        also = []
        if recipe.tokenizer == "bpe":
            also.append(f"a byte-level BPE of {s['bpe_vocab']:,} tokens")
        if s.get("bf16_autocast"):
            also.append("bfloat16 matmuls")
        row = (f"| `{name}` | {s['steps']:,} | {s['batch_size']} x {s['seq_len']} | {s['lr']:g} "
               f"| {recipe.warmup_steps} | {s['seed']} | {', '.join(also) or '-'} | {CORPUS_TITLES[recipe.corpus]} |")
        assert row in page, row
