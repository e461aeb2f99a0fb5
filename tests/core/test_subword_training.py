"""Training over a byte-level BPE: the tokenizer comes from the training split, the loss is reported per character."""

from __future__ import annotations

import pytest
import torch

from core.config import ModelConfig
from core.tokenizers import HuggingFaceTokenizer, train_byte_level_bpe
from core.training import VALIDATION_FRACTION, TrainingError, evaluate_loss, train
from resources import resource_path

CORPUS = resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")[:60_000]
SMALL = ModelConfig(name="small-bpe", vocab_size=300, context_length=64, d_model=32, n_heads=2, n_layers=1, d_ff=64)


@pytest.fixture(scope="module")
def run():
    return train(SMALL, CORPUS, steps=6, batch_size=4, seq_len=32, lr=3e-3, seed=0, tokenizer="bpe", bpe_vocab=300,
                 eval_every=0)


def test_the_bpe_is_learned_from_the_training_split_only(run):
    split = int(len(CORPUS) * (1 - VALIDATION_FRACTION))
    assert isinstance(run.tokenizer, HuggingFaceTokenizer) and run.tokenizer.vocab_size == 300
    assert run.tokenizer.to_json() == train_byte_level_bpe(CORPUS[:split], 300).to_json()
    assert run.config.vocab_size == 300 and run.model.config.vocab_size == 300


def test_validation_loss_is_per_character_of_the_held_out_text(run):
    split = int(len(CORPUS) * (1 - VALIDATION_FRACTION))
    val_text = CORPUS[split:]
    val_ids = run.tokenizer.encode(val_text)
    assert run.tokenizer.decode(val_ids) == val_text  # the same characters a character model holds out
    per_token = evaluate_loss(run.model, torch.tensor(val_ids))
    predicted_characters = len(val_text) - len(run.tokenizer.decode(val_ids[:1]))
    assert run.val_loss_per_token == pytest.approx(per_token, rel=1e-6)
    assert run.final_val_loss == pytest.approx(per_token * (len(val_ids) - 1) / predicted_characters, rel=1e-6)
    assert run.val_characters_per_token > 1.2  # merges make tokens longer than one character
    record = run.metadata()
    assert record["val_loss_nats_per_char"] == run.final_val_loss
    assert record["val_loss_nats_per_token"] == run.val_loss_per_token
    assert record["settings"]["tokenizer"] == "bpe" and record["settings"]["bpe_vocab"] == 300


def test_the_bpe_is_deterministic():
    text = CORPUS[:20_000]
    assert train_byte_level_bpe(text, 400).to_json() == train_byte_level_bpe(text, 400).to_json()


@pytest.mark.parametrize(("options", "message"), [({"tokenizer": "words"}, "'char' or 'bpe'"),
                                                  ({"tokenizer": "bpe", "bpe_vocab": 100}, "between 257")])
def test_bad_tokenizer_settings_are_refused_before_work(options, message):
    with pytest.raises(TrainingError, match=message):
        train(SMALL, CORPUS, steps=1, batch_size=2, seq_len=16, **options)
