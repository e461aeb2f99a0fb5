"""The bundled encoder, encoder-decoder and mixture of experts: each one's quality figure, recomputed here from its
weights and held-out data, and the bitwise properties that tell an encoder from a decoder."""

from __future__ import annotations

import json

import pytest
import torch

from core.checkpoints import load_bundled
from core.date_corpus import date_pairs
from core.objectives.masked_lm import MASK_CHAR, MaskedLmTask
from core.objectives.run import CHECK_PAIRS, CHECK_WINDOWS
from core.objectives.seq2seq import Seq2SeqTask
from core.presets import get_preset
from core.training import BUNDLED_RECIPES, evaluate_loss, split_corpus
from resources import resource_path

SHAKESPEARE = resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")


def record(name: str) -> dict:
    return json.loads(resource_path("models", name, "training.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def encoder():
    return load_bundled("tiny-encoder")


@pytest.fixture(scope="module")
def encoder_decoder():
    return load_bundled("tiny-encoder-decoder")


@pytest.mark.parametrize("name", ["tiny-encoder", "tiny-encoder-decoder", "tiny-moe", "tiny-moe-dense"])
def test_each_bundled_family_model_is_its_preset_trained_by_its_recipe(name):
    loaded = load_bundled(name)
    assert loaded.config == get_preset(name)  # so choosing the preset in the sidebar loads these weights
    settings = record(name)["settings"]
    for key, value in BUNDLED_RECIPES[name].items():
        assert settings[key] == value
    assert record(name)["steps_done"] == BUNDLED_RECIPES[name]["steps"]


def test_the_masked_lm_fills_held_out_blanks_far_better_than_character_frequencies(encoder):
    task = MaskedLmTask(SHAKESPEARE, encoder.tokenizer)
    seq_len = record("tiny-encoder")["settings"]["seq_len"]
    check = task.score(encoder.model, seq_len, max_windows=CHECK_WINDOWS)
    assert check.loss == pytest.approx(record("tiny-encoder")["check_loss"]["loss"], rel=1e-4)
    score = task.score(encoder.model, seq_len)
    assert score.scored > 15_000  # 15% of the held-out tenth (about 111,000 characters)
    assert score.accuracy >= 0.45 and score.unigram_accuracy < 0.2
    assert score.loss < score.unigram_loss - 1.0
    recorded = record("tiny-encoder")["quality"]
    assert score.accuracy == pytest.approx(recorded["accuracy"], abs=2 / score.scored)
    assert score.loss == pytest.approx(recorded["loss"], rel=1e-4)


def test_the_masked_only_accuracy_counts_the_blanked_positions_alone(encoder):
    task = MaskedLmTask(SHAKESPEARE, encoder.tokenizer)
    seq_len = record("tiny-encoder")["settings"]["seq_len"]
    held_out = task.held_out_masking(seq_len)
    # The recipe's three kinds of chosen position, disjoint: blanked (the input shows the mask), randomised, kept.
    assert bool((held_out.inputs[held_out.masked] == task.mask_id).all())
    assert not bool((held_out.masked & held_out.randomised).any())
    assert bool((held_out.chosen == (held_out.labels != -100)).all())
    right_blanked = right_chosen = 0
    with torch.no_grad():
        for window in range(len(held_out.inputs)):  # one window at a time, as a loop written here
            predicted = encoder.model(held_out.inputs[window : window + 1])[0].argmax(-1)  # (T,)
            hits = predicted == held_out.labels[window]  # (T,)
            right_blanked += int(hits[held_out.masked[window]].sum())
            right_chosen += int(hits[held_out.chosen[window]].sum())
    blanked, chosen = int(held_out.masked.sum()), int(held_out.chosen.sum())
    score = task.score(encoder.model, seq_len)
    assert (score.masked, score.scored) == (blanked, chosen)
    assert score.masked_accuracy == pytest.approx(right_blanked / blanked, abs=2 / blanked)
    assert score.accuracy == pytest.approx(right_chosen / chosen, abs=2 / chosen)
    # The kept positions show their answer in the input: counting them raises the share above the blanks' own.
    assert score.accuracy > score.masked_accuracy


def test_the_encoder_reads_both_sides_of_the_blank_and_the_decoder_only_the_left(encoder):
    text = "To be, or not to be: that is the q_estion"
    blank = text.index(MASK_CHAR)
    ids = torch.tensor([encoder.tokenizer.encode(text)])  # (1, T)
    after = ids.clone()
    after[0, blank + 3] = encoder.tokenizer.id_of("x")  # "q_esxion": a token after the blank
    with torch.no_grad():
        logits, edited = encoder.model(ids)[0, blank], encoder.model(after)[0, blank]  # (V,) each
    assert encoder.tokenizer.token_text(int(logits.argmax())) == "u"
    assert not torch.equal(logits, edited)
    decoder = load_bundled("tiny-gpt")
    plain = torch.tensor([decoder.tokenizer.encode(text.replace(MASK_CHAR, "u"))])  # (1, T)
    plain_after = plain.clone()
    plain_after[0, blank + 3] = decoder.tokenizer.id_of("x")
    with torch.no_grad():
        # The decoder predicts the blank's character at the position before it: the edit after it cannot reach there.
        assert torch.equal(decoder.model(plain)[0, : blank + 3], decoder.model(plain_after)[0, : blank + 3])


def test_the_encoder_decoder_rewrites_held_out_dates_exactly(encoder_decoder):
    task = Seq2SeqTask(date_pairs(seed=BUNDLED_RECIPES["tiny-encoder-decoder"]["seed"]), encoder_decoder.tokenizer)
    check = task.score(encoder_decoder.model, max_pairs=CHECK_PAIRS, examples=0)
    assert check.loss == pytest.approx(record("tiny-encoder-decoder")["check_loss"]["loss"], rel=1e-3, abs=1e-6)
    score = task.score(encoder_decoder.model)
    assert score.pairs == 4000
    assert score.exact_match >= 0.98
    assert score.exact_match == pytest.approx(record("tiny-encoder-decoder")["quality"]["exact_match"], abs=2 / 4000)


def test_the_mixture_of_experts_beats_the_dense_model_of_its_active_size():
    moe, dense = load_bundled("tiny-moe"), load_bundled("tiny-moe-dense")
    ids = torch.tensor(moe.tokenizer.encode(SHAKESPEARE))
    _, held_out = split_corpus(ids)
    moe_loss, dense_loss = evaluate_loss(moe.model, held_out), evaluate_loss(dense.model, held_out)
    assert moe_loss == pytest.approx(record("tiny-moe")["val_loss_nats_per_char"], rel=1e-4)
    assert dense_loss == pytest.approx(record("tiny-moe-dense")["val_loss_nats_per_char"], rel=1e-4)
    assert moe_loss < dense_loss
    load = record("tiny-moe")["expert_load"][-1][1]
    assert len(load) == 2 and all(len(row) == 4 and sum(row) == pytest.approx(1.0) for row in load)
    assert all(min(row) > 0.05 for row in load)  # the balance loss kept every expert in use


@pytest.mark.parametrize("source", ["Friday, 5 March 2021", "March 5, 2021", "5 March 2021"])
def test_the_cross_attention_lesson_reads_each_digit_from_its_word(encoder_decoder, source):
    """Lesson 15's claims on its own inputs: a digit's bright cell (head 0 of the second decoder block) sits in the
    word the digit comes from, whatever the spelling, and no bright cell falls on the weekday."""
    from core.hooks import capture
    from core.objectives.seq2seq import START

    tokenizer, model = encoder_decoder.tokenizer, encoder_decoder.model
    target = "2021-03-05"
    words = {"year": "2021", "month": "March", "day": "5"}
    spans = {kind: range(source.index(word), source.index(word) + len(word)) for kind, word in words.items()}
    comes_from = ["year"] * 4 + [None] + ["month"] * 2 + [None] + ["day"] * 2  # of each character of the target
    with torch.no_grad(), capture(model, ["blocks.1.cross_attn.hook_pattern"]) as seen:
        model(torch.tensor([tokenizer.encode(START + target)]), source=torch.tensor([tokenizer.encode(source)]))
    pattern = seen["blocks.1.cross_attn.hook_pattern"][0, 0]  # (T, S): row q reads q and writes target[q]
    bright = 0
    for row, kind in enumerate(comes_from):
        if kind is not None and float(pattern[row].max()) >= 0.5:
            bright += 1
            assert int(pattern[row].argmax()) in spans[kind], (row, target[row])
    assert bright >= 5  # most digits have one bright cell
    if source.startswith("Friday"):
        assert float(pattern[:, : len("Friday")].max()) < 0.15  # the dim rows spread thinly over every word
