"""Induction scores and ablation on an imported `transformers` GPT-2, against plain forward hooks on it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core.checkpoints import load_bundled, resolve_checkpoint
from core.experiments.ablation import AblationError, ablate
from core.experiments.induction import InductionError, induction, repeated_tokens
from tests.core import hf_reference_hooks as reference

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    from tests import hf_folders

    folder = hf_folders.gpt2_folder(tmp_path_factory.mktemp("gpt2"))
    hf_model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager").eval()
    return hf_model, resolve_checkpoint(folder).model


def test_induction_scores_match_transformers_attention(gpt2):
    hf_model, lab_model = gpt2
    period = 12
    result = induction(lab_model, period=period, seed=4)
    ids = list(result.tokens)
    assert ids == repeated_tokens(lab_model.config.vocab_size, period, 4)
    assert ids[:period] == ids[period:] and result.repeat_start == period
    patterns = reference.attention_patterns(hf_model, ids)  # (L, H, 2N, 2N)
    expected_induction = np.array([[np.mean([float(patterns[l, h, q, q - period + 1]) for q in range(period, 2 * period)])
                                    for h in range(patterns.shape[1])] for l in range(patterns.shape[0])])
    expected_previous = np.array([[np.mean([float(patterns[l, h, q, q - 1]) for q in range(1, 2 * period)])
                                   for h in range(patterns.shape[1])] for l in range(patterns.shape[0])])
    assert np.allclose(result.induction_score, expected_induction, atol=1e-5)
    assert np.allclose(result.previous_token_score, expected_previous, atol=1e-5)
    with torch.no_grad():
        logits = hf_model(torch.tensor([ids])).logits[0]  # (2N, V)
    losses = F.cross_entropy(logits[:-1], torch.tensor(ids[1:]), reduction="none").double().numpy()
    assert np.allclose(result.loss_first, losses[: period - 1], atol=1e-4)
    assert np.allclose(result.loss_second, losses[period:], atol=1e-4)


def test_too_long_a_period_is_refused_in_words():
    model = load_bundled("tiny-gpt").model
    with pytest.raises(InductionError, match="context length"):
        induction(model, period=model.config.context_length)


def test_zero_ablating_a_head_matches_zeroing_its_columns_before_w_o(gpt2):
    hf_model, lab_model = gpt2
    ids = [11, 25, 37, 42, 58, 61, 70, 11, 25, 37]
    layer, head = 1, 2
    result = ablate(lab_model, ids, heads=[(layer, head)], mode="zero")
    d_head = hf_model.config.n_embd // hf_model.config.n_head

    def zero_head(_module, args):
        x = args[0].clone()
        x[:, :, head * d_head:(head + 1) * d_head] = 0
        return (x,)

    handle = hf_model.transformer.h[layer].attn.c_proj.register_forward_pre_hook(zero_head)
    try:
        with torch.no_grad():
            logits = hf_model(torch.tensor([ids])).logits[0]  # (T, V)
    finally:
        handle.remove()
    expected = F.cross_entropy(logits[:-1], torch.tensor(ids[1:]))
    assert result.loss_after == pytest.approx(float(expected), abs=1e-4)
    assert result.loss_after != result.loss_before
    top_after = torch.softmax(logits[-1].double(), dim=-1).topk(3)
    assert [token for token, _p in result.top_after[:3]] == top_after.indices.tolist()


def test_mean_ablating_an_ffn_keeps_its_mean_write():
    model = load_bundled("tiny-gpt").model
    ids = [5, 10, 20, 30, 40, 50, 12, 33]
    zero = ablate(model, ids, ffns=[0], mode="zero")
    mean = ablate(model, ids, ffns=[0], mode="mean")
    assert zero.loss_before == mean.loss_before
    assert zero.loss_after != mean.loss_after
    with pytest.raises(AblationError, match="no FFN in block 9"):
        ablate(model, ids, ffns=[9])


def test_ablation_unembeds_a_chunk_of_positions_at_a_time(monkeypatch):
    """Each run's losses come from LOSS_CHUNK positions of logits at a time (a whole sequence's logits at GPT-2's
    vocabulary and 1,024 tokens are 206 MB); the losses are those of the whole sequence's logits."""
    from core.experiments import ablation

    monkeypatch.setattr(ablation, "LOSS_CHUNK", 16)
    model = load_bundled("tiny-gpt").model
    ids = [(7 * i + 3) % model.config.vocab_size for i in range(50)]
    rows = []
    handle = model.head.register_forward_hook(lambda _m, args, _out: rows.append(args[0].shape[:-1].numel()))
    try:
        result = ablate(model, ids, heads=[(1, 2)], mode="zero", position=20)
    finally:
        handle.remove()
    assert max(rows) == 16 and sum(rows) == 2 * (len(ids) - 1 + 1)  # both runs: every loss row, and position 20
    tokens = torch.tensor([ids])  # (1, T)
    with torch.no_grad():
        logits = model(tokens)[0]  # (T, V)
    expected = F.cross_entropy(logits[:-1], tokens[0, 1:], reduction="none")  # (T - 1,)
    assert np.allclose(result.position_loss_before, expected.double().numpy(), atol=1e-5)
    top = torch.softmax(logits[20].double(), dim=-1).topk(3)
    assert [token for token, _p in result.top_before[:3]] == top.indices.tolist()
