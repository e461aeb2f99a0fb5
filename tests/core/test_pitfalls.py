"""Pitfalls you can train: the mask modes and per-block gradient norms of the trainer, and each pitfall's effect."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from core import training
from core.config import ModelConfig
from core.experiments.pitfall_setups import CI, PitfallError
from core.experiments.pitfalls import check_experiment, run_comparison, summary_rows, verdict
from core.model import Transformer
from core.tokenizers import CharTokenizer
from core.training import (
    TrainingError,
    TrainSettings,
    block_gradient_norms,
    random_windows,
    split_corpus,
    train,
    training_mask_mode,
)
from resources import resource_path

TINY = ModelConfig(name="pitfall-test", vocab_size=65, context_length=16, d_model=16, n_heads=2, n_layers=3, d_ff=32)


@pytest.fixture(scope="module")
def shakespeare() -> str:
    return resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def masks(shakespeare):
    return run_comparison("masks", shakespeare, CI["masks"])


@pytest.fixture(scope="module")
def warmup(shakespeare):
    return run_comparison("warmup", shakespeare, CI["warmup"])


# ---- the trainer's mask mode and gradient record ----------------------------------------------------
def test_the_mask_mode_reaches_the_training_forward_and_the_record(shakespeare):
    text = shakespeare[:5000]
    runs = {mode: train(TINY, text, steps=3, batch_size=2, seq_len=16, lr=1e-2, warmup_steps=1, mask_mode=mode)
            for mode in ("causal", "none")}
    # Same seed, same weights, same first batch: only the mask tells the first losses apart.
    assert runs["causal"].loss_history[0][1] != runs["none"].loss_history[0][1]
    metadata = runs["none"].metadata()
    assert metadata["settings"]["mask_mode"] == "none" and training_mask_mode(metadata) == "none"
    assert metadata["val_loss_mask"] == "causal"
    assert training_mask_mode({"settings": {"steps": 3}}) == "causal"  # a record made before the choice
    assert training_mask_mode(None) == "causal"


@pytest.mark.parametrize("mode", ["off-by-one", "future", ""])
def test_a_mask_that_cannot_train_is_refused_before_any_step(mode):
    with pytest.raises(TrainingError, match="a run trains with the mask causal, none, after-softmax"):
        TrainSettings(mask_mode=mode).validated()


def test_off_by_one_says_why():
    with pytest.raises(TrainingError, match="NaN"):
        TrainSettings(mask_mode="off-by-one").validated()


@pytest.mark.parametrize("value", [-1, 1.5, True])
def test_a_bad_gradient_record_interval_is_refused(value):
    with pytest.raises(TrainingError, match="grad_norm_every"):
        TrainSettings(grad_norm_every=value).validated()


def test_block_gradient_norms_are_the_unclipped_gradients_of_the_first_step(shakespeare):
    text = shakespeare[:5000]
    seed, batch, seq = 3, 4, 16
    result = train(TINY, text, steps=1, batch_size=batch, seq_len=seq, lr=1e-2, seed=seed, warmup_steps=1,
                   grad_norm_every=1, grad_clip=1e-3)
    (step, recorded), = result.grad_norms
    assert step == 1 and len(recorded) == TINY.n_layers
    # The same first step by hand: weights and batch come from the seed.
    tokenizer = CharTokenizer.from_text(text)
    train_ids, _ = split_corpus(torch.tensor(tokenizer.encode(text)))
    model = Transformer.from_seed(TINY.replace(vocab_size=tokenizer.vocab_size), seed=seed).train()
    inputs, targets = random_windows(train_ids, batch, seq, torch.Generator().manual_seed(seed))  # (B, T) each
    F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten()).backward()
    expected = block_gradient_norms(model)
    assert recorded == pytest.approx(expected, rel=1e-4)
    assert sum(n * n for n in expected) ** 0.5 > 1e-3  # so the record is from before the clip to 1e-3


def test_the_gradient_record_is_bounded_and_evenly_spaced(shakespeare, monkeypatch):
    monkeypatch.setattr(training, "MAX_GRAD_NORM_RECORDS", 8)
    seen = []
    result = train(TINY.replace(n_layers=1), shakespeare[:5000], steps=40, batch_size=1, seq_len=8, lr=1e-2,
                   warmup_steps=1, grad_norm_every=2, on_grad_norms=lambda step, norms: seen.append(step))
    steps = [step for step, _ in result.grad_norms]
    assert len(steps) <= 8 and steps[0] == 1 and steps[-1] > 30
    gaps = {b - a for a, b in zip(steps[1:], steps[2:])}
    assert len(gaps) == 1  # one interval after the first record
    assert seen[:3] == [1, 2, 4] and len(seen) > len(steps)  # the callback saw every record before thinning
    assert all(len(norms) == 1 and all(math.isfinite(n) and n > 0 for n in norms) for _, norms in result.grad_norms)


# ---- the comparisons ---------------------------------------------------------------------------------
def test_bad_comparisons_are_refused(shakespeare):
    with pytest.raises(PitfallError, match="experiment"):
        check_experiment("dropout", CI["masks"])
    with pytest.raises(PitfallError, match="steps"):
        check_experiment("masks", CI["masks"].with_overrides(steps=0))
    with pytest.raises(PitfallError, match="characters"):
        run_comparison("masks", shakespeare[:1000], CI["masks"])


def test_every_run_shares_the_seed_and_steps(masks):
    assert [run.key for run in masks.runs] == ["causal", "after-softmax", "none"]
    first_losses = [run.loss_history[0][1] for run in masks.runs]
    assert all(run.steps_done == CI["masks"].steps for run in masks.runs)
    # Same weights at step 1; the causal and after-softmax masks give the same attention to the past only
    # up to the lost future share, so the first losses differ but all sit near the uniform guess.
    assert all(abs(loss - masks.uniform_loss) < 0.3 for loss in first_losses)


@pytest.mark.parametrize("key", ["after-softmax", "none"])
def test_a_leaky_mask_trains_lower_and_generates_worse(masks, key):
    causal, leaky = masks.run("causal"), masks.run(key)
    assert leaky.final_train_loss < causal.final_train_loss  # the leak: it peeks at the token it predicts
    assert leaky.own_mask_val_loss < causal.causal_val_loss  # it peeks on held-out text too
    assert leaky.causal_val_loss > causal.causal_val_loss  # without the peek it is worse than the honest model
    assert causal.own_mask_val_loss == causal.causal_val_loss
    assert "not below" not in verdict(masks) and "no worse than" not in verdict(masks)


def test_the_summary_rows_hold_the_runs_numbers(masks):
    rows = summary_rows(masks)
    assert [row["run"] for row in rows] == ["causal", "after-softmax", "none"]
    assert rows[2]["held_out_causal"] == masks.run("none").causal_val_loss
    assert all(run.sample and len(run.sample) > 100 for run in masks.runs)


def test_post_norm_without_warmup_starves_its_first_block(warmup):
    pre, post, warm = (warmup.run(key) for key in ("pre", "post", "post-warmup"))
    # Step 1 comes before any update: the two post-norm runs start from the same weights and batch.
    assert post.grad_norms[0] == warm.grad_norms[0]
    # At the full learning rate from step 0 post-norm's first block loses its gradient within the first tenth
    # of the run: the last block's gradient is over ten times the first's. Warmed up, the first block still gets
    # the larger share over that tenth; pre-norm's blocks stay within a few times of each other.
    assert post.gradient_ratio("first") > 10
    assert warm.gradient_ratio("first") < 1
    assert 0.2 < pre.gradient_ratio("first") < 5
    assert pre.final_train_loss < post.final_train_loss  # and post-norm without warm-up trains slower
    assert all(math.isfinite(run.final_train_loss) for run in warmup.runs)
