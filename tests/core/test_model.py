import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from core.hooks import capture, hook_names
from core.model import MASK_MODES, SequenceError, Transformer
from core.presets import PRESETS, get_preset
from tests.configs import small_configs


def _tokens(config, batch=2, seq=None, seed=0):
    generator = torch.Generator().manual_seed(seed)
    seq = seq or min(config.context_length, 7)
    return torch.randint(0, config.vocab_size, (batch, seq), generator=generator)


@given(small_configs(), st.integers(1, 3))
def test_every_config_builds_runs_and_keeps_shapes(config, batch):
    model = Transformer.from_seed(config, seed=3)
    tokens = _tokens(config, batch)
    with capture(model, ["hook_embed", "blocks.*.hook_resid_*", "blocks.*.attn.hook_q"]) as seen:
        logits = model(tokens)
    assert logits.shape == (batch, tokens.shape[1], config.vocab_size)
    assert torch.isfinite(logits).all()
    for name, tensor in seen.items():
        if name.endswith("hook_q"):
            assert tensor.shape == (batch, config.n_heads, tokens.shape[1], config.d_head)
        else:
            assert tensor.shape == (batch, tokens.shape[1], config.d_model)
    assert len([n for n in seen if n.endswith("hook_resid_post")]) == config.n_layers


@given(small_configs())
@settings(max_examples=20)
def test_same_config_and_seed_give_identical_weights(config):
    torch.manual_seed(123)  # the global RNG must not matter
    first = Transformer.from_seed(config, seed=7)
    torch.manual_seed(456)
    second = Transformer.from_seed(config, seed=7)
    other = Transformer.from_seed(config, seed=8)
    for (name, a), (_, b), (_, c) in zip(
        first.state_dict().items(), second.state_dict().items(), other.state_dict().items()
    ):
        assert torch.equal(a, b), name
    assert any(not torch.equal(a, c) for a, c in zip(first.state_dict().values(), other.state_dict().values()))


@given(small_configs())
@settings(max_examples=25)
def test_fused_and_explicit_attention_agree(config):
    """Observing attention weights switches to q @ k^T + softmax; the result must not change."""
    model = Transformer.from_seed(config, seed=1).double()
    tokens = _tokens(config)
    fused = model(tokens)
    with capture(model, ["blocks.*.attn.hook_pattern"]) as seen:
        explicit = model(tokens)
    torch.testing.assert_close(fused, explicit, rtol=1e-9, atol=1e-9)
    for name, weights in seen.items():
        torch.testing.assert_close(weights.sum(-1), torch.ones_like(weights.sum(-1)))


def test_capture_is_selective_and_removes_its_hooks():
    model = Transformer.from_seed(get_preset("tiny-gpt"), seed=0)
    tokens = _tokens(model.config)
    with capture(model, ["blocks.1.attn.hook_pattern"]) as seen:
        model(tokens)
    assert list(seen) == ["blocks.1.attn.hook_pattern"]
    assert seen["blocks.1.attn.hook_pattern"].shape == (2, 4, tokens.shape[1], tokens.shape[1])
    assert not any(m._forward_hooks for m in model.modules())
    with pytest.raises(KeyError):
        with capture(model, ["blocks.9.nothing"]):
            pass


def test_capture_removes_hooks_when_the_forward_fails():
    model = Transformer.from_seed(get_preset("tiny-gpt"), seed=0)
    with pytest.raises(SequenceError):
        with capture(model, ["blocks.*.hook_resid_post"]):
            model(torch.tensor([[999]]))
    assert not any(m._forward_hooks for m in model.modules())


def test_hook_points_are_named_for_every_layer():
    names = hook_names(Transformer.on_meta(get_preset("tiny-encoder-decoder")))
    assert "hook_embed" in names and "hook_encoder_out" in names and "hook_final" in names
    assert "blocks.1.hook_resid_cross" in names
    assert "encoder_blocks.0.attn.hook_pattern" in names


def test_tied_head_shares_the_embedding_matrix():
    tied = Transformer.from_seed(get_preset("tiny-gpt"), seed=0)
    assert tied.head.weight is tied.tok_emb.weight
    untied = Transformer.from_seed(get_preset("tiny-llama"), seed=0)
    assert untied.head.weight is not untied.tok_emb.weight


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        (torch.zeros(1, 300, dtype=torch.long), "context length"),
        (torch.tensor([[0, 65]]), "outside the vocabulary"),
        (torch.tensor([[-1]]), "outside the vocabulary"),
        (torch.zeros(1, 0, dtype=torch.long), "empty"),
        (torch.zeros(3, dtype=torch.long), "(batch, sequence)"),
        (torch.zeros(1, 3), "whole numbers"),
    ],
)
def test_bad_token_ids_are_refused_with_a_message(tokens, message):
    model = Transformer.from_seed(get_preset("tiny-gpt"), seed=0)
    with pytest.raises(SequenceError, match=message.replace("(", r"\(").replace(")", r"\)")):
        model(tokens)


def test_causal_decoder_keeps_the_past_bitwise():
    """The reading's claim on a whole model: an edit at t leaves logits before t bit-for-bit equal."""
    for name in ("tiny-gpt", "tiny-llama", "tiny-moe"):
        model = Transformer.from_seed(PRESETS[name], seed=0)
        tokens = _tokens(model.config, batch=1, seq=12)
        edited = tokens.clone()
        edited[0, 6] = (edited[0, 6] + 1) % model.config.vocab_size
        logits = model(torch.cat([tokens, edited]))
        assert torch.equal(logits[0, :6], logits[1, :6]), name
        assert not torch.equal(logits[0, 6:], logits[1, 6:]), name


def test_mask_modes_are_accepted():
    model = Transformer.from_seed(get_preset("tiny-gpt"), seed=0)
    tokens = _tokens(model.config)
    for mode in MASK_MODES:
        assert model(tokens, mask_mode=mode).shape[-1] == 65


def test_n_blocks_runs_a_prefix_of_the_stack():
    model = Transformer.from_seed(get_preset("tiny-gpt"), seed=0)
    tokens = _tokens(model.config)
    with capture(model, ["blocks.*.hook_resid_post"]) as seen:
        model(tokens, n_blocks=2)
    assert sorted(seen) == ["blocks.0.hook_resid_post", "blocks.1.hook_resid_post"]


def test_without_the_head_the_forward_returns_the_final_normed_state():
    for name in ("tiny-gpt", "tiny-encoder-decoder"):
        model = Transformer.from_seed(get_preset(name), 0)
        tokens = _tokens(model.config)
        with torch.inference_mode(), capture(model, ["hook_final"]) as seen:
            logits = model(tokens)
            hidden = model(tokens, head=False)
        assert hidden.shape == (*tokens.shape, model.config.d_model)
        assert torch.equal(hidden, seen["hook_final"])  # the second pass overwrote the first's capture
        with torch.inference_mode():
            assert torch.equal(model.head(hidden), logits)
            assert model(tokens, n_blocks=0, head=False).shape == hidden.shape


def test_residual_scaling_shrinks_output_projections():
    config = get_preset("tiny-gpt")
    plain = Transformer.from_seed(config, seed=0)
    scaled = Transformer.from_seed(config, seed=0, residual_scaling=True)
    ratio = (scaled.blocks[0].attn.out_proj.weight.std() / plain.blocks[0].attn.out_proj.weight.std()).item()
    assert ratio == pytest.approx(1 / (2 * config.n_layers) ** 0.5, rel=1e-5)
    assert torch.equal(scaled.blocks[0].attn.qkv.weight, plain.blocks[0].attn.qkv.weight)


def test_fast_path_is_used_unless_attention_weights_are_captured(monkeypatch):
    import torch.nn.functional as F

    calls = []
    fused = F.scaled_dot_product_attention

    def counting(*args, **kwargs):
        calls.append(1)
        return fused(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", counting)
    model = Transformer.from_seed(get_preset("tiny-gpt"), seed=0)
    tokens = _tokens(model.config)
    model(tokens)
    assert len(calls) == model.config.n_layers
    calls.clear()
    with capture(model, ["blocks.2.attn.hook_pattern"]) as seen:
        model(tokens)
    # Only the observed layer takes the explicit path, and only its map is held.
    assert len(calls) == model.config.n_layers - 1
    assert list(seen) == ["blocks.2.attn.hook_pattern"]
