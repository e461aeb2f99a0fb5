"""The trainer: falling loss, seeded reproducibility, schedule, stopping, evaluation and sampling."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from core.config import ModelConfig
from core.model import Transformer
from core.training import (
    TrainingError,
    TrainSettings,
    evaluate_loss,
    generate,
    learning_rate,
    random_windows,
    split_corpus,
    train,
)
from resources import resource_path

TINY = ModelConfig(name="trainer-test", vocab_size=65, context_length=32, d_model=32, n_heads=2, n_layers=1, d_ff=64)
TINY_LLAMA = TINY.replace(
    norm="rmsnorm", activation="swiglu", positional="rope", bias=False, tie_embeddings=False, n_kv_heads=1
)


@pytest.fixture(scope="module")
def corpus() -> str:
    return resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")[:30000]


def _run(corpus, config=TINY, steps=60, seed=0, **kwargs):
    return train(config, corpus, steps=steps, batch_size=8, seq_len=32, lr=1e-2, seed=seed, warmup_steps=5, **kwargs)


@pytest.mark.parametrize("config", [TINY, TINY_LLAMA], ids=["gpt", "llama"])
def test_loss_falls(corpus, config):
    result = _run(corpus, config)
    losses = [loss for _, loss in result.loss_history]
    assert len(losses) == 60 and result.steps_done == 60
    assert losses[0] == pytest.approx(math.log(config.vocab_size), abs=0.3)  # a uniform guess at the start
    assert sum(losses[-10:]) / 10 < losses[0] - 0.9
    assert result.final_val_loss < losses[0] - 0.7
    assert not result.model.training
    assert result.tokenizer.vocab_size == result.config.vocab_size


def test_same_seed_same_run_other_seed_other_run(corpus):
    first, second, other = (_run(corpus, steps=15, seed=s) for s in (4, 4, 5))
    assert first.loss_history == second.loss_history
    assert all(torch.equal(a, b) for a, b in zip(first.model.state_dict().values(), second.model.state_dict().values()))
    assert first.loss_history != other.loss_history


def test_progress_callback_and_validation_estimates(corpus):
    calls = []
    samples = []
    result = _run(
        corpus,
        steps=12,
        on_progress=lambda *args: calls.append(args),
        eval_every=5,
        sample_every=6,
        on_sample=lambda step, text: samples.append((step, text)),
    )
    assert [c[0] for c in calls] == list(range(1, 13))
    assert all(c[2] > 0 and c[3] >= 0 for c in calls)  # tokens/s and ETA
    assert calls[-1][3] == 0
    assert [c[0] for c in calls if c[4] is not None] == [5, 10]
    assert [step for step, _ in result.val_history] == [5, 10, 12]
    assert result.val_history[-1][1] == result.final_val_loss
    assert [step for step, _ in samples] == [6, 12] and all(len(text) == 201 for _, text in samples)


def test_should_stop_ends_the_run_early(corpus):
    finished_steps: list[int] = []
    result = _run(
        corpus,
        steps=50,
        should_stop=lambda: len(finished_steps) >= 3,
        on_progress=lambda step, *rest: finished_steps.append(step),
    )
    assert result.stopped and result.steps_done == 3
    assert math.isfinite(result.final_val_loss)


def test_metadata_is_json_ready(corpus):
    import json

    result = _run(corpus, steps=3)
    data = json.loads(json.dumps(result.metadata()))
    assert data["settings"]["steps"] == 3 and data["steps_done"] == 3
    assert data["val_loss_nats_per_char"] == result.final_val_loss


def test_vocabulary_follows_the_corpus():
    result = train(TINY, "abcabcabd " * 40, steps=2, batch_size=2, seq_len=8, seed=0)
    assert result.config.vocab_size == 5
    assert result.model.tok_emb.weight.shape[0] == 5


def test_learning_rate_schedule():
    settings = TrainSettings(steps=100, lr=1.0, warmup_steps=10, min_lr_ratio=0.1)
    assert learning_rate(0, settings) == pytest.approx(0.1)
    assert learning_rate(9, settings) == pytest.approx(1.0)
    assert learning_rate(10, settings) == pytest.approx(1.0)
    assert learning_rate(55, settings) == pytest.approx(0.55)
    assert learning_rate(100, settings) == pytest.approx(0.1)
    rates = [learning_rate(s, settings) for s in range(10, 101)]
    assert all(a >= b for a, b in itertools.pairwise(rates))


def test_split_holds_out_the_last_tenth():
    train_ids, val_ids = split_corpus(torch.arange(1000))
    assert len(train_ids) == 900 and val_ids[0] == 900 and val_ids[-1] == 999


def test_random_windows_are_shifted_pairs():
    ids = torch.arange(100)
    inputs, targets = random_windows(ids, 4, 10, torch.Generator().manual_seed(0))
    assert inputs.shape == targets.shape == (4, 10)
    assert torch.equal(targets, inputs + 1)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"steps": 0}, "steps must be a positive"),
        ({"seq_len": 64}, "exceeds the model's context length 32"),
        ({"lr": -1.0}, "learning rate must be a positive"),
    ],
)
def test_bad_settings(corpus, kwargs, message):
    settings = {"steps": 2, "batch_size": 2, "seq_len": 16, "lr": 1e-3, "seed": 0} | kwargs
    with pytest.raises(TrainingError, match=message):
        train(TINY, corpus, **settings)


def test_corpus_too_short():
    with pytest.raises(TrainingError, match="the corpus has 12 characters"):
        train(TINY, "to be or not", steps=2, batch_size=2, seq_len=16)


def test_a_decoder_without_its_causal_mask_is_refused(corpus):
    """An encoder trains as a masked LM (tests/core/test_objective_training.py); a decoder that sees the token it
    predicts learns nothing."""
    with pytest.raises(TrainingError, match="causal"):
        train(TINY.replace(attention="bidirectional"), corpus, steps=1, batch_size=2, seq_len=8)


# ---- evaluate_loss ----------------------------------------------------------------------------


def _reference_loss(model, ids, window):
    """Each window of `window` + 1 ids predicts its last `window` ids; windows share one id."""
    total, count = 0.0, 0
    for start in range(0, len(ids) - 1, window):
        chunk = ids[start : start + window + 1].unsqueeze(0)  # (1, t+1)
        logits = model(chunk[:, :-1])  # (1, t, V)
        total += float(F.cross_entropy(logits[0], chunk[0, 1:], reduction="sum"))
        count += chunk.shape[1] - 1
    return total / count, count


@pytest.mark.parametrize("length", [2, 33, 100, 129])
def test_evaluate_loss_scores_every_prediction_once(length):
    model = Transformer.from_seed(TINY, seed=1)
    ids = torch.randint(0, 65, (length,), generator=torch.Generator().manual_seed(length))
    with torch.no_grad():
        expected, count = _reference_loss(model, ids, 32)
    assert count == length - 1
    assert evaluate_loss(model, ids, batch_size=2) == pytest.approx(expected, rel=1e-5)


def test_evaluate_loss_of_an_untrained_model_is_near_log_vocab():
    model = Transformer.from_seed(TINY, seed=1)
    ids = torch.randint(0, 65, (500,), generator=torch.Generator().manual_seed(0))
    assert evaluate_loss(model, ids) == pytest.approx(math.log(65), abs=0.05)


def test_evaluate_loss_needs_two_tokens():
    with pytest.raises(TrainingError, match="at least two tokens"):
        evaluate_loss(Transformer.from_seed(TINY), [3])


# ---- generate ---------------------------------------------------------------------------------


def test_generate_is_seeded_and_runs_past_the_context():
    model = Transformer.from_seed(TINY, seed=2)
    prompt = [1, 2, 3]
    first = generate(model, prompt, max_new=50, temperature=1.0, top_k=5, seed=7)
    assert len(first) == 53 and first[:3] == prompt  # 53 > context length 32: the window slides
    assert generate(model, prompt, max_new=50, temperature=1.0, top_k=5, seed=7) == first
    assert generate(model, prompt, max_new=50, temperature=1.0, top_k=5, seed=8) != first


def test_greedy_generation_follows_the_argmax():
    model = Transformer.from_seed(TINY, seed=2)
    out = generate(model, [5], max_new=3, temperature=0)
    with torch.no_grad():
        for position in range(1, 4):
            logits = model(torch.tensor([out[:position]]))[0, -1]  # (V,)
            assert out[position] == int(logits.argmax())


def test_top_1_equals_greedy():
    model = Transformer.from_seed(TINY, seed=2)
    assert generate(model, [5, 6], 10, temperature=1.5, top_k=1, seed=3) == generate(model, [5, 6], 10, temperature=0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"ids": []}, "prompt of at least one token"),
        ({"max_new": -1}, "max_new must be zero or more"),
        ({"temperature": -0.5}, "temperature must be zero or a positive"),
        ({"top_k": 0}, "top_k must be at least 1"),
    ],
)
def test_generate_rejects_bad_settings(kwargs, message):
    arguments = {"ids": [1], "max_new": 2, "temperature": 1.0, "top_k": None} | kwargs
    with pytest.raises(TrainingError, match=message):
        generate(Transformer.from_seed(TINY), **arguments)
