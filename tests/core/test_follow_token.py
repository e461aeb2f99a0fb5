"""Follow one token through: every stage's numbers equal a hand-written loop over the blocks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core.config import ModelConfig
from core.experiments.follow_token import follow_token, stage_plan
from core.model import SequenceError, Transformer

TOKENS = [3, 1, 4, 1, 5, 9, 2, 6]


def _config(placement: str, **changes) -> ModelConfig:
    values = dict(name="follow", vocab_size=16, context_length=16, d_model=16, n_heads=2, n_layers=3, d_ff=32,
                  norm_placement=placement, final_norm=placement == "pre")
    values.update(changes)
    return ModelConfig(**values).validated()


def _manual_stages(model: Transformer, tokens: list[int], position: int) -> list[torch.Tensor]:
    """The residual vector at `position` after each sublayer, computed by calling the modules directly."""
    config = model.config
    batch = torch.tensor([tokens])  # (1, T)
    seq = batch.shape[1]
    mode = "causal" if config.self_attention_causal else "none"
    with torch.no_grad():
        memory = model.encode(batch) if config.architecture == "encoder-decoder" else None  # (1, T, D)
        x = model.embed(batch)  # (1, T, D)
        rope, score_bias = model._positional_inputs(seq, batch.device, x.dtype, causal=mode != "none")
        stages = [x[0, position]]

        def sublayer(x, norm, fn):
            if config.norm_placement == "pre":
                return x + fn(norm(x))  # (1, T, D)
            return norm(x + fn(x))  # (1, T, D)

        for block in model.blocks:
            x = sublayer(x, block.norm1, lambda h: block.attn(h, mask_mode=mode, rope=rope, score_bias=score_bias))
            stages.append(x[0, position])
            if hasattr(block, "cross_attn"):
                x = sublayer(x, block.norm_cross, lambda h: block.cross_attn(h, memory=memory, mask_mode="none"))
                stages.append(x[0, position])
            x = sublayer(x, block.norm2, block.ffn)
            stages.append(x[0, position])
        if config.final_norm:
            stages.append(model.final_norm(x)[0, position])
    return stages


@pytest.mark.parametrize(
    "config",
    [
        _config("pre"),
        _config("post"),
        _config("pre", positional="rope", activation="swiglu", norm="rmsnorm", bias=False, n_experts=3, top_k=2),
        _config("post", architecture="encoder-decoder", positional="sinusoidal", n_encoder_layers=2),
        _config("pre", architecture="encoder", attention="bidirectional", positional="alibi", tie_embeddings=False),
    ],
    ids=["pre", "post", "pre-rope-moe", "post-encoder-decoder", "encoder-alibi"],
)
def test_every_stage_equals_a_direct_loop_over_the_blocks(config):
    model = Transformer.from_seed(config, seed=1)
    position = 5
    result = follow_token(model, TOKENS, position, k=5)
    stages = _manual_stages(model, TOKENS, position)

    assert result.n_stages == len(stages) == len(stage_plan(model))
    expected_norms = np.array([float(v.double().norm()) for v in stages])
    np.testing.assert_allclose(result.norms, expected_norms, rtol=1e-5)
    previous = [torch.zeros_like(stages[0])] + stages[:-1]
    expected_updates = np.array([float((v.double() - p.double()).norm()) for v, p in zip(stages, previous)])
    np.testing.assert_allclose(result.update_norms, expected_updates, rtol=1e-5, atol=1e-6)

    with torch.no_grad():
        for index, vector in enumerate(stages):
            is_final = config.final_norm and index == len(stages) - 1
            lens = vector if is_final or not config.final_norm else model.final_norm(vector)
            probabilities = F.softmax(model.head(lens).double(), dim=-1)  # (V,)
            top = probabilities.topk(5)
            np.testing.assert_allclose(result.top_probs[index], top.values.numpy(), rtol=1e-5)
            # Ties aside, the ranking is the direct one.
            assert set(result.top_ids[index][:1]) == set(top.indices.numpy()[:1])
    assert result.top_probs.shape == (len(stages), 5)
    assert np.all(np.diff(result.top_probs, axis=1) <= 0)


def test_the_last_stage_is_the_models_own_prediction():
    model = Transformer.from_seed(_config("pre"), seed=2)
    result = follow_token(model, TOKENS, 2, k=3)
    with torch.no_grad():
        logits = model(torch.tensor([TOKENS]))[0, 2]  # (V,)
    top = F.softmax(logits.double(), dim=-1).topk(3)
    np.testing.assert_array_equal(result.top_ids[-1], top.indices.numpy())
    np.testing.assert_allclose(result.top_probs[-1], top.values.numpy(), rtol=1e-6)


def test_labels_and_stage_names():
    model = Transformer.from_seed(_config("post"), seed=0)
    labels = [chr(ord("a") + i) for i in range(16)]
    result = follow_token(model, TOKENS, 1, labels, k=2)
    assert result.token_label == "b" and result.next_token_label == "e"
    assert result.sequence_labels[0] == "d"
    assert result.stage_labels[0] == "embedding"
    assert result.stage_labels[1] == "block 0: + attention, norm"  # post-norm: the norm is part of the stage
    assert result.stage_kinds.count("ffn") == 3 and "final-norm" not in result.stage_kinds
    assert list(result.stage_layers) == [-1, 0, 0, 1, 1, 2, 2]
    assert follow_token(model, TOKENS, len(TOKENS) - 1, labels).next_token_label is None


@pytest.mark.parametrize("position", [-1, len(TOKENS)])
def test_positions_outside_the_sequence_are_refused(position):
    model = Transformer.from_seed(_config("pre"), seed=0)
    with pytest.raises(SequenceError, match="outside the sequence"):
        follow_token(model, TOKENS, position)
    with pytest.raises(SequenceError, match="empty"):
        follow_token(model, [], 0)


def test_the_bundled_model_moves_the_prediction_towards_the_text():
    """On the trained tiny-gpt the final stage predicts better than the raw embedding (a sanity check, not a claim of the app)."""
    from core.checkpoints import load_bundled

    bundled = load_bundled("tiny-gpt")
    tokens = bundled.tokenizer.encode("To be, or not to be, that is the question")
    position = tokens.index(bundled.tokenizer.encode("q")[0])
    result = follow_token(bundled.model, tokens, position, bundled.tokenizer)
    assert result.token_label == "q" and result.next_token_label == "u"
    assert result.top_labels[-1][0] == "u"
    assert result.norms.shape == (1 + 2 * 4 + 1,)
