"""The bundled subword model: a tiny GPT over a 1,536-token byte-level BPE, as `train --preset tiny-gpt-bpe` makes it."""

from __future__ import annotations

import pytest
import torch

from core.checkpoints import resolve_checkpoint
from core.presets import get_preset
from core.tokenizers import HuggingFaceTokenizer, train_byte_level_bpe
from core.training import BUNDLED_RECIPES, CHECK_PREDICTIONS, VALIDATION_FRACTION, evaluate_loss
from resources import resource_path

NAME = "tiny-gpt-bpe"
CORPUS = resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")
SPLIT = int(len(CORPUS) * (1 - VALIDATION_FRACTION))

pytestmark = pytest.mark.skipif(not resource_path("models", NAME).is_dir(), reason="the subword model is not bundled")


@pytest.fixture(scope="module")
def loaded():
    return resolve_checkpoint(NAME)


def test_it_is_the_preset_with_the_bpe_the_recipe_learns(loaded):
    assert loaded.source == f"bundled {NAME}"
    assert loaded.config == get_preset(NAME)
    assert isinstance(loaded.tokenizer, HuggingFaceTokenizer) and loaded.tokenizer.vocab_size == 1536
    # The recipe's tokenizer, learned again from the training split, is the bundled one.
    assert loaded.tokenizer.to_json() == train_byte_level_bpe(CORPUS[:SPLIT], 1536).to_json()
    record = loaded.metadata
    assert record["preset"] == NAME and record["corpus"] == "tinyshakespeare.txt"
    assert record["settings"] == {**record["settings"], **BUNDLED_RECIPES[NAME]}


def test_weights_under_8_mb():
    weights = resource_path("models", NAME, "model.safetensors").stat().st_size
    assert weights < 8_000_000


def test_its_loss_per_character_as_recorded(loaded):
    record = loaded.metadata
    val_ids = torch.tensor(loaded.tokenizer.encode(CORPUS[SPLIT:]))  # (N,)
    # Re-score the first 16,384 validation predictions (the whole split takes several seconds).
    check = record["check_loss"]
    assert check["predictions"] == CHECK_PREDICTIONS
    assert evaluate_loss(loaded.model, val_ids[: CHECK_PREDICTIONS + 1]) == pytest.approx(check["loss"], abs=1e-3)
    predicted_characters = len(CORPUS) - SPLIT - len(loaded.tokenizer.decode(val_ids[:1].tolist()))
    assert record["val_characters_per_token"] == pytest.approx(predicted_characters / (len(val_ids) - 1), rel=1e-9)
    assert record["val_loss_nats_per_char"] == pytest.approx(
        record["val_loss_nats_per_token"] / record["val_characters_per_token"], rel=1e-9
    )
    assert record["val_loss_nats_per_char"] <= 1.9
