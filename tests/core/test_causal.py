"""The causal-mask experiments: the reading's table, edit diffs for every config and mask mode,
mask grids, attention maps, the head-split check and next-token predictions."""

import json
import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import example, given, settings
from hypothesis import strategies as st

import core.experiments.attention_maps as attention_maps_module
from core.config import ConfigError, ModelConfig
from core.experiments.attention_maps import attention_maps
from core.experiments.causal_edit import block_edit_diff, causal_edit_diff, random_block_edit_diff, residual_run
from core.experiments.common import token_labels
from core.experiments.head_split import head_split_check
from core.experiments.mask_grids import MASK_GRID_KINDS, mask_grid
from core.experiments.next_token import next_token_predictions
from core.experiments.textbook_table import textbook_causal_table
from core.model import MASK_MODES, Block, SequenceError, Transformer
from core.presets import get_preset
from tests.float32 import assert_printed_close
from tests.reading_figures import READING_SCALE, assert_matches_reading
from core.tokenizers import CharTokenizer

# ---- the reading's script, verbatim except for the function wrapper ------------------------------------

# tiny-encoder-decoder's shape over the Shakespeare characters and two encoder layers: the ids these tests edit
# (the bundled model of the preset reads the 44 characters of dates through one encoder layer).
SHAKESPEARE_PAIR = get_preset("tiny-encoder-decoder").replace(vocab_size=65, n_encoder_layers=None)


class _ReadingAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, causal=True):
        B, T, D = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)

        def split(t):
            return t.view(B, T, self.n_heads, self.d_head).transpose(1, 2)

        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if causal:
            mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
            scores = scores.masked_fill(mask, float("-inf"))
        attn = F.softmax(scores, dim=-1)
        out = attn @ v
        out = out.transpose(1, 2).contiguous().view(B, T, D)
        return self.proj(out)


class _ReadingBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = _ReadingAttention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, x, causal=True):
        x = x + self.attn(self.ln1(x), causal=causal)
        x = x + self.ffn(self.ln2(x))
        return x


def _run_reading_script():
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(0)
        B, T, d_model, n_heads, d_ff = 2, 8, 64, 4, 256
        block = _ReadingBlock(d_model, n_heads, d_ff)
        x = torch.randn(B, T, d_model)
        y = block(x)
        x2 = x.clone()
        x2[:, 5, :] = torch.randn(B, d_model)
        y2 = block(x2)
        diff = (y2 - y).abs().amax(dim=(0, 2))
        y_nc, y2_nc = block(x, causal=False), block(x2, causal=False)
        diff_nc = (y2_nc - y_nc).abs().amax(dim=(0, 2))
    return diff, diff_nc


def test_textbook_table_prints_the_readings_figures():
    assert_matches_reading(textbook_causal_table().lines())


def test_textbook_table_prints_what_the_readings_script_prints_here():
    diff, diff_nc = _run_reading_script()
    printed = [f"position {t}: max |change| = {float(v):.6f}" for t, v in enumerate(diff)]
    printed.append(f"no mask, positions 0-4 max |change| = {float(diff_nc[:5].max()):.6f}")
    assert textbook_causal_table().lines()[3:] == printed


def test_textbook_table_is_bitwise_the_readings_script():
    table = textbook_causal_table()
    diff, diff_nc = _run_reading_script()
    assert table.max_change.tolist() == diff.double().tolist()
    assert table.max_change_no_mask.tolist() == diff_nc.double().tolist()
    assert table.exactly_unchanged.tolist() == [True] * 5 + [False] * 3
    assert_printed_close(f"{table.max_change_exact[5]:.6f}", "3.357778", READING_SCALE)  # the reading's figure
    assert table.n_parameters == 49_984


def test_textbook_table_leaves_the_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    textbook_causal_table()
    head_split_check(0)
    random_block_edit_diff()
    assert torch.equal(torch.rand(3), expected)


# ---- random configs -------------------------------------------------------------------------------------
@st.composite
def configs(draw):
    d_model = draw(st.sampled_from([8, 16]))
    n_heads = draw(st.sampled_from([1, 2, 4]))
    n_kv_heads = draw(st.sampled_from([h for h in (1, 2, 4) if n_heads % h == 0] + [None]))
    n_experts = draw(st.sampled_from([0, 0, 2, 3]))
    architecture = draw(st.sampled_from(["decoder", "decoder", "encoder", "encoder-decoder"]))
    return ModelConfig(
        name="hypothesis",
        vocab_size=13,
        context_length=12,
        d_model=d_model,
        n_heads=n_heads,
        n_kv_heads=n_kv_heads,
        n_layers=draw(st.integers(1, 6)),
        n_encoder_layers=draw(st.sampled_from([None, 1])) if architecture == "encoder-decoder" else None,
        d_ff=draw(st.sampled_from([8, 24])),
        norm=draw(st.sampled_from(["layernorm", "rmsnorm"])),
        norm_placement=draw(st.sampled_from(["pre", "post"])),
        activation=draw(st.sampled_from(["relu", "gelu", "gelu-tanh", "swiglu"])),
        positional=draw(st.sampled_from(["none", "sinusoidal", "learned", "rope", "alibi"])),
        attention="bidirectional" if architecture == "encoder" else "causal",
        architecture=architecture,
        bias=draw(st.booleans()),
        tie_embeddings=draw(st.booleans()),
        n_experts=n_experts,
        top_k=draw(st.integers(1, n_experts)) if n_experts else 2,
        final_norm=draw(st.booleans()),
    ).validated()


@st.composite
def edits(draw):
    config = draw(configs())
    n_tokens = draw(st.integers(2, config.context_length))
    tokens = draw(st.lists(st.integers(0, config.vocab_size - 1), min_size=n_tokens, max_size=n_tokens))
    position = draw(st.integers(1, n_tokens - 1))
    new_token = draw(st.integers(0, config.vocab_size - 1).filter(lambda t: t != tokens[position]))
    return config, tokens, position, new_token, draw(st.integers(0, 3))


def _lively(model: Transformer, seed: int) -> Transformer:
    """Weights at PyTorch's fan-in scale instead of GPT-2's 0.02: with 0.02 a post-norm stack's first
    scores are ~1e-6 and a leak through the softmax denominator can vanish below float32 resolution,
    so the pitfall tests would measure the init, not the mask."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() >= 2:
                param.copy_(torch.randn(param.shape, generator=generator) / math.sqrt(param.shape[-1]))
    return model


DEEP_MOE_CASE = (
    ModelConfig(
        name="deep", vocab_size=13, context_length=12, d_model=16, n_heads=4, n_kv_heads=2, n_layers=6, d_ff=8,
        norm="rmsnorm", norm_placement="post", activation="swiglu", positional="alibi",
        architecture="encoder-decoder", n_experts=3, top_k=2,
    ).validated(),
    [1, 2, 3, 4, 5, 6, 7, 8],
    3,
    12,
    1,
)


@settings(max_examples=24)
@given(edits())
@example(DEEP_MOE_CASE)
def test_causal_mask_keeps_every_earlier_position_bitwise_unchanged(case):
    config, tokens, position, new_token, seed = case
    for model in (Transformer.from_seed(config, seed), _lively(Transformer.from_seed(config, seed), seed)):
        result = causal_edit_diff(model, tokens, position, new_token, mask_mode="causal")
        assert result.max_change.shape == (len(model.blocks) + 1, len(tokens))
        assert result.exactly_unchanged[:, :position].all()
        assert (result.max_change[:, :position] == 0).all()
        assert result.logits_exactly_unchanged[:position].all()
        assert not result.leaks_into_past and result.past_exactly_unchanged and result.first_leaking_layer is None
        assert not result.exactly_unchanged[0, position]  # the edit itself is visible in the embedding
        assert not result.nan_entries.any()


@settings(max_examples=20)
@given(edits(), st.sampled_from(["none", "after-softmax"]))
@example(DEEP_MOE_CASE, "after-softmax")
def test_no_mask_and_masking_after_the_softmax_move_the_past(case, mode):
    config, tokens, position, new_token, seed = case
    model = _lively(Transformer.from_seed(config, seed), seed)
    result = causal_edit_diff(model, tokens, position, new_token, mask_mode=mode)
    assert result.exactly_unchanged[0, :position].all()  # embeddings of the past are not touched...
    assert result.past_moved_by_layer[1]  # ...but the first block already carries the edit backwards
    assert result.leaks_into_past and result.first_leaking_layer == 1
    assert not result.past_exactly_unchanged
    assert (result.max_change[1:, :position] > 0).any()


@settings(max_examples=16)
@given(edits())
@example(DEEP_MOE_CASE)
def test_off_by_one_hides_the_edit_from_the_past_but_token_0_turns_nan(case):
    config, tokens, position, new_token, seed = case
    model = _lively(Transformer.from_seed(config, seed), seed)
    result = causal_edit_diff(model, tokens, position, new_token, mask_mode="off-by-one")
    # Query p sees keys < p only, so no past position can read position t: where defined, the past is
    # bitwise unchanged; token 0 sees no key at all and is NaN from the first block on.
    past = result.exactly_unchanged[:, :position] | result.nan_entries[:, :position]
    assert past.all()
    assert not result.leaks_into_past
    assert result.nan_entries[1, 0]
    assert result.exactly_unchanged[1, 1:position].all()
    if result.n_layers >= 2:  # NaN values of token 0 poison every query that can see it
        assert result.nan_entries[2:].all()
    assert "NaN" in result.note


def test_causal_past_is_exact_over_a_full_context_and_at_kernel_block_edges():
    model = Transformer.from_seed(get_preset("tiny-llama"), 1)
    tokens = [(7 * i) % 65 for i in range(256)]
    for position in (32, 33, 255):
        result = causal_edit_diff(model, tokens, position, (tokens[position] + 1) % 65)
        assert result.past_exactly_unchanged and result.logits_exactly_unchanged[:position].all(), position
        assert not result.exactly_unchanged[1:, position:].any()


def test_model_default_masks_encoder_moves_everything_decoder_keeps_past():
    tokens, position, new_token = [3, 1, 4, 1, 5, 9, 2, 6], 4, 7
    encoder = causal_edit_diff(Transformer.from_seed(get_preset("tiny-encoder"), 0), tokens, position, new_token)
    assert encoder.mask_mode == "none" and encoder.leaks_into_past
    assert (~encoder.exactly_unchanged[1:]).all()
    for name in ("tiny-gpt", "tiny-llama", "tiny-moe", "tiny-encoder-decoder"):
        decoder = causal_edit_diff(Transformer.from_seed(SHAKESPEARE_PAIR if name == "tiny-encoder-decoder" else get_preset(name), 0), tokens, position, new_token)
        assert decoder.mask_mode == "causal" and decoder.past_exactly_unchanged, name


def test_encoder_decoder_rows_are_the_decoder_with_a_fixed_source_unless_the_source_is_edited():
    model = Transformer.from_seed(SHAKESPEARE_PAIR, 0)
    tokens = [5, 6, 7, 8, 9, 10]
    fixed = causal_edit_diff(model, tokens, 3, 1)
    assert fixed.past_exactly_unchanged and "decoder tower" in fixed.note
    moved = causal_edit_diff(model, tokens, 3, 1, edit_source=True)
    assert moved.leaks_into_past and moved.past_moved_by_layer[1]
    other_source = causal_edit_diff(model, tokens, 3, 1, source=[1, 2])
    assert other_source.past_exactly_unchanged


def test_n_blocks_and_labels():
    tokenizer = CharTokenizer.from_text("abc de")
    model = Transformer.from_seed(get_preset("tiny-gpt").replace(vocab_size=tokenizer.vocab_size), 1)
    ids = tokenizer.encode("ab cd")
    result = causal_edit_diff(model, ids, 2, tokenizer.id_of("e"), n_blocks=2, tokenizer_or_labels=tokenizer)
    assert result.layer_labels == ("embedding", "block 0", "block 1")
    assert result.token_labels == ("a", "b", "␣", "c", "d")
    assert result.edited_token_labels[2] == "e"
    assert result.max_change.dtype == np.float64 and result.exactly_unchanged.dtype == bool
    same = causal_edit_diff(model, ids, 2, ids[2])
    assert same.exactly_unchanged.all() and same.logits_exactly_unchanged.all()


def test_result_dict_is_strict_json_even_with_nan():
    model = Transformer.from_seed(get_preset("tiny-gpt"), 0)
    result = causal_edit_diff(model, [1, 2, 3, 4], 2, 9, mask_mode="off-by-one")
    text = json.dumps(result.to_dict(), allow_nan=False)
    data = json.loads(text)
    assert data["max_change"][1][0] is None and data["nan_entries"][1][0] is True


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(position=4, new_token=1), "outside the sequence"),
        (dict(position=-1, new_token=1), "outside the sequence"),
        (dict(position=1, new_token=65), "outside the vocabulary"),
        (dict(position=1, new_token=1, n_blocks=9), "n_blocks"),
        (dict(position=1, new_token=1, mask_mode="sideways"), "unknown mask mode"),
    ],
)
def test_bad_edits_raise_sequence_error(kwargs, message):
    model = Transformer.from_seed(get_preset("tiny-gpt"), 0)
    with pytest.raises(SequenceError, match=message):
        causal_edit_diff(model, [1, 2, 3, 4], **kwargs)


def test_too_long_sequence_raises_sequence_error():
    learned = Transformer.from_seed(get_preset("tiny-gpt"), 0)  # a learned table: its 256 rows and no more
    with pytest.raises(SequenceError, match="context length of 256 \\(its learned position table has 256 rows\\)"):
        causal_edit_diff(learned, [1] * 257, 3, 1)
    unplaced = Transformer.from_seed(get_preset("textbook-block"), 0)  # no positions: past its 8, up to the bound
    assert causal_edit_diff(unplaced, [1] * 9, 3, 2) is not None
    with pytest.raises(SequenceError, match="1,024 the app accepts for none positions"):
        causal_edit_diff(unplaced, [1] * 1025, 3, 1)


# ---- kept runs: only the edited sequence runs -------------------------------------------------------------
# A kept-run diff and a fresh one run each sequence as a batch of one through the same kernels, so
# they agree bitwise, max changes included: nothing about them is left to a tolerance.

KEPT_RUN_CASES = {
    "decoder, learned positions": (get_preset("tiny-gpt"), {}),
    "decoder, RoPE": (get_preset("tiny-llama"), {}),
    "decoder, ALiBi": (get_preset("tiny-gpt").replace(positional="alibi"), {}),
    "decoder, two of four blocks": (get_preset("tiny-gpt"), {"n_blocks": 2}),
    "mixture of experts": (get_preset("tiny-moe"), {}),
    "encoder": (get_preset("tiny-encoder"), {}),
    "encoder-decoder, fixed source": (SHAKESPEARE_PAIR, {}),
    "encoder-decoder, other source": (SHAKESPEARE_PAIR, {"source": [3, 1, 4, 1, 5]}),
    "encoder-decoder, edited source": (SHAKESPEARE_PAIR, {"edit_source": True}),
}
KEPT_RUN_TOKENS = [(7 * i + 3) % 65 for i in range(40)]  # crosses the 32-token block edge of the fused kernel
KEPT_RUN_EDIT = (33, 5)


def _kept_run_reference(model, kwargs, mode, with_logits=True):
    source = kwargs.get("source")
    return residual_run(model, KEPT_RUN_TOKENS, mode, kwargs.get("n_blocks"), source, with_logits=with_logits)


@pytest.mark.parametrize("mode", MASK_MODES)
@pytest.mark.parametrize("case", list(KEPT_RUN_CASES))
def test_a_kept_run_diff_is_the_fresh_diff_bit_for_bit(case, mode):
    config, kwargs = KEPT_RUN_CASES[case]
    model = _lively(Transformer.from_seed(config, 0), 0)
    position, new_token = KEPT_RUN_EDIT
    fresh = causal_edit_diff(model, KEPT_RUN_TOKENS, position, new_token, mask_mode=mode, **kwargs)
    reference = _kept_run_reference(model, kwargs, mode)
    kept = causal_edit_diff(model, KEPT_RUN_TOKENS, position, new_token, mask_mode=mode, reference=reference, **kwargs)
    assert kept.reference_reused and kept.original_run is reference
    assert not fresh.reference_reused and fresh.original_run is not reference
    for name in ("max_change", "exactly_unchanged", "nan_entries", "logits_change", "logits_exactly_unchanged",
                 "past_moved_by_layer"):
        assert np.array_equal(getattr(kept, name), getattr(fresh, name), equal_nan=True), name
    for name in ("leaks_into_past", "past_exactly_unchanged", "first_leaking_layer", "mask_mode", "layer_labels"):
        assert getattr(kept, name) == getattr(fresh, name), name
    assert (kept.max_change[~kept.nan_entries] > 0).any()  # the edit moved something: the comparison saw it
    if mode == "causal" and not kwargs.get("edit_source") and config.self_attention_causal:
        assert kept.past_exactly_unchanged
        assert (kept.max_change[:, :position] == 0).all() and kept.logits_exactly_unchanged[:position].all()


def test_the_causal_past_is_bitwise_unchanged_in_a_kept_run_at_the_default_init():
    for name in ("tiny-gpt", "tiny-llama", "tiny-moe", "tiny-encoder-decoder"):
        model = Transformer.from_seed(SHAKESPEARE_PAIR if name == "tiny-encoder-decoder" else get_preset(name), 1)
        reference = residual_run(model, KEPT_RUN_TOKENS, with_logits=True)
        for position in (1, 32, 39):
            kept = causal_edit_diff(model, KEPT_RUN_TOKENS, position, 64, reference=reference)
            assert kept.reference_reused and kept.past_exactly_unchanged, (name, position)
            assert not kept.exactly_unchanged[0, position]


def test_a_kept_run_diff_runs_only_the_edited_sequence():
    model = Transformer.from_seed(get_preset("tiny-gpt"), 0)
    reference = residual_run(model, KEPT_RUN_TOKENS)
    batches = []
    handle = model.register_forward_pre_hook(lambda _module, args: batches.append(tuple(args[0].shape)))
    try:
        kept = causal_edit_diff(model, KEPT_RUN_TOKENS, 10, 2, reference=reference, with_logits=False)
    finally:
        handle.remove()
    assert kept.reference_reused
    assert batches == [(1, len(KEPT_RUN_TOKENS))]


def test_without_logits_the_run_stops_at_the_final_norm_and_the_streams_agree():
    model = _lively(Transformer.from_seed(get_preset("tiny-llama"), 0), 0)
    with_head = causal_edit_diff(model, KEPT_RUN_TOKENS, 20, 4, mask_mode="none")
    bare = causal_edit_diff(model, KEPT_RUN_TOKENS, 20, 4, mask_mode="none", with_logits=False)
    assert bare.logits_change is None and bare.logits_exactly_unchanged is None
    assert np.array_equal(bare.max_change, with_head.max_change)
    assert np.array_equal(bare.exactly_unchanged, with_head.exactly_unchanged)
    reference = residual_run(model, KEPT_RUN_TOKENS, "none")
    assert reference.logits is None and not reference.with_logits
    kept = causal_edit_diff(model, KEPT_RUN_TOKENS, 20, 4, mask_mode="none", reference=reference, with_logits=False)
    assert kept.reference_reused and kept.edited_run.logits is None and kept.logits_change is None
    assert json.loads(json.dumps(kept.to_dict(), allow_nan=False))["logits_change"] is None


def test_the_edited_run_is_the_next_edits_reference():
    model = Transformer.from_seed(get_preset("tiny-gpt"), 0)
    reference = residual_run(model, KEPT_RUN_TOKENS, with_logits=True)
    first = causal_edit_diff(model, KEPT_RUN_TOKENS, 10, 2, reference=reference)
    edited_tokens = list(first.edited_run.ids)
    assert edited_tokens[10] == 2 and first.edited_run.mask_mode == "causal"
    second = causal_edit_diff(model, edited_tokens, 20, 3, reference=first.edited_run)
    own = residual_run(model, edited_tokens, with_logits=True)
    fresh = causal_edit_diff(model, edited_tokens, 20, 3, reference=own)
    assert second.reference_reused
    assert np.array_equal(second.max_change, fresh.max_change)  # same runs, same kernels: bitwise
    assert np.array_equal(second.logits_change, fresh.logits_change)
    assert len(first.edited_run.streams) == len(model.blocks) + 1
    assert all(s.shape == (1, len(KEPT_RUN_TOKENS), model.config.d_model) for s in first.edited_run.streams)


def _run_then_step_the_weights(model, _twin):
    reference = residual_run(model, KEPT_RUN_TOKENS, with_logits=True)
    with torch.no_grad():
        model.blocks[0].ffn.down.weight.add_(1.0)  # what a training step does: same tensors, new values
    return reference


# Each builds a reference that must not stand for KEPT_RUN_TOKENS on `model` as it is now. The twin has
# the same config and seed, so bit-identical weights: only its identity differs.
MISMATCHED_REFERENCES = {
    "other ids": lambda model, _twin: residual_run(model, KEPT_RUN_TOKENS[:-1] + [0], with_logits=True),
    "other mask": lambda model, _twin: residual_run(model, KEPT_RUN_TOKENS, "none", with_logits=True),
    "other depth": lambda model, _twin: residual_run(model, KEPT_RUN_TOKENS, n_blocks=2, with_logits=True),
    "no logits kept": lambda model, _twin: residual_run(model, KEPT_RUN_TOKENS),
    "another model object": lambda _model, twin: residual_run(twin, KEPT_RUN_TOKENS, with_logits=True),
    "weights stepped in place": _run_then_step_the_weights,
}


@pytest.mark.parametrize("mismatch", list(MISMATCHED_REFERENCES))
def test_a_mismatched_reference_is_never_compared(mismatch):
    model = Transformer.from_seed(get_preset("tiny-gpt"), 0)
    twin = Transformer.from_seed(get_preset("tiny-gpt"), 0)
    reference = MISMATCHED_REFERENCES[mismatch](model, twin)
    kept = causal_edit_diff(model, KEPT_RUN_TOKENS, 33, 5, reference=reference)
    assert not kept.reference_reused and kept.original_run is not reference
    own = residual_run(model, KEPT_RUN_TOKENS, with_logits=True)
    fresh = causal_edit_diff(model, KEPT_RUN_TOKENS, 33, 5, reference=own)
    assert fresh.reference_reused
    assert np.array_equal(kept.max_change, fresh.max_change) and np.array_equal(kept.logits_change, fresh.logits_change)
    assert kept.past_exactly_unchanged


def test_a_reference_from_another_thread_count_or_kernel_path_is_never_compared():
    model = Transformer.from_seed(get_preset("tiny-gpt"), 0)
    reference = residual_run(model, KEPT_RUN_TOKENS, with_logits=True)
    threads = torch.get_num_threads()
    torch.set_num_threads(threads + 1)
    try:
        assert not causal_edit_diff(model, KEPT_RUN_TOKENS, 33, 5, reference=reference).reference_reused
    finally:
        torch.set_num_threads(threads)
    # A hook left on an attention pattern sends that layer down the explicit path, not the fused kernel.
    handle = model.blocks[0].attn.hook_pattern.register_forward_hook(lambda *_: None)
    try:
        assert not causal_edit_diff(model, KEPT_RUN_TOKENS, 33, 5, reference=reference).reference_reused
    finally:
        handle.remove()
    assert causal_edit_diff(model, KEPT_RUN_TOKENS, 33, 5, reference=reference).reference_reused


def test_a_mismatched_encoder_source_is_never_compared():
    model = Transformer.from_seed(SHAKESPEARE_PAIR, 0)
    reference = residual_run(model, KEPT_RUN_TOKENS, source=[1, 2, 3], with_logits=True)
    assert reference.source_ids == (1, 2, 3)
    assert not causal_edit_diff(model, KEPT_RUN_TOKENS, 5, 1, reference=reference).reference_reused
    assert causal_edit_diff(model, KEPT_RUN_TOKENS, 5, 1, source=[1, 2, 3], reference=reference).reference_reused
    # An edited source changes what the edited run's encoder reads, never what the reference read.
    own = residual_run(model, KEPT_RUN_TOKENS, with_logits=True)
    moved = causal_edit_diff(model, KEPT_RUN_TOKENS, 5, 1, edit_source=True, reference=own)
    assert moved.reference_reused and moved.edited_run.source_ids == moved.edited_run.ids
    assert moved.leaks_into_past


def test_a_residual_run_does_not_keep_its_model_alive():
    import gc

    model = Transformer.from_seed(get_preset("tiny-encoder"), 0)
    run = residual_run(model, [1, 2, 3])
    assert run.model is model and run.mask_mode == "none" and run.n_blocks == len(model.blocks)
    del model
    gc.collect()
    assert run.model is None


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n_blocks=9), "n_blocks"),
        (dict(mask_mode="sideways"), "unknown mask mode"),
        (dict(ids=[]), "empty"),
        (dict(ids=[1, 99]), "outside the vocabulary"),
        (dict(ids=list(range(60)) * 5), "context length"),
    ],
)
def test_bad_residual_runs_raise_sequence_error(kwargs, message):
    model = Transformer.from_seed(get_preset("tiny-gpt"), 0)
    with pytest.raises(SequenceError, match=message):
        residual_run(model, **{"ids": [1, 2, 3], **kwargs})


# ---- bare blocks ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MASK_MODES)
def test_bare_textbook_blocks_under_every_mask(mode):
    result = random_block_edit_diff(mask_mode=mode, n_blocks=3)
    assert result.layer_labels == ("input", "block 0", "block 1", "block 2")
    assert result.logits_change is None
    past = slice(0, result.edit_position)
    if mode == "causal":
        assert result.exactly_unchanged[:, past].all() and not result.leaks_into_past
    elif mode == "off-by-one":
        assert not result.leaks_into_past and result.nan_entries[1, 0]
        assert (result.exactly_unchanged | result.nan_entries)[:, past].all()
    else:
        assert result.leaks_into_past and result.first_leaking_layer == 1


def test_block_edit_diff_matches_separate_runs_of_the_textbook_block():
    table = textbook_causal_table()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        block = Block(get_preset("textbook-block")).eval()
        x = torch.randn(2, 8, 64)
        new = torch.randn(2, 64)
    first = block_edit_diff(block, x[0], 5, new[0])
    assert first.exactly_unchanged[1, :5].all()
    assert first.max_change[1, 5] <= table.max_change_exact[5]
    with pytest.raises(SequenceError):
        block_edit_diff(block, x, 5, new[0])


# ---- mask grids -----------------------------------------------------------------------------------------
def test_mask_grids_of_every_mode():
    config = get_preset("tiny-gpt")
    lower = np.tril(np.ones((5, 5), dtype=bool))
    causal_grid = mask_grid(config, 5)
    assert causal_grid.mask_mode == "causal" and (causal_grid.visible == lower).all()
    assert (causal_grid.in_denominator == lower).all() and not causal_grid.empty_rows.any()
    off = mask_grid(config, 5, mask_mode="off-by-one")
    assert (off.visible == np.tril(lower, -1)).all() and off.empty_rows.tolist() == [True] + [False] * 4
    after = mask_grid(config, 5, mask_mode="after-softmax")
    assert (after.visible == lower).all() and after.in_denominator.all()
    none = mask_grid(config, 5, mask_mode="none")
    assert none.visible.all() and none.title == "self-attention, no mask"
    assert causal_grid.query_labels == tuple("01234")


def test_mask_grids_of_encoders_and_cross_attention():
    encoder = mask_grid(get_preset("tiny-encoder"), 4, "encoder-self")
    assert encoder.visible.all() and encoder.mask_mode == "none"
    seq2seq = SHAKESPEARE_PAIR
    assert mask_grid(seq2seq, 4, "encoder-self").visible.all()
    assert (mask_grid(seq2seq, 4, "decoder-self").visible == np.tril(np.ones((4, 4), dtype=bool))).all()
    cross = mask_grid(seq2seq, 3, "cross", n_source=6, key_labels=list("abcdef"))
    assert cross.visible.shape == (3, 6) and cross.visible.all() and cross.key_labels == tuple("abcdef")
    for config, kind in [(get_preset("tiny-gpt"), "cross"), (get_preset("tiny-gpt"), "encoder-self"),
                         (get_preset("tiny-encoder"), "decoder-self")]:
        with pytest.raises(ConfigError):
            mask_grid(config, 4, kind)
    with pytest.raises(ConfigError):
        mask_grid(seq2seq, 4, "encoder-self", mask_mode="causal")
    with pytest.raises(ValueError):
        mask_grid(seq2seq, 4, "sideways")
    assert set(MASK_GRID_KINDS) == {"decoder-self", "encoder-self", "cross"}


def test_mask_grid_is_the_mask_the_model_applies():
    model = Transformer.from_seed(get_preset("tiny-gpt"), 0)
    tokens = [1, 2, 3, 4, 5, 6]
    for mode in ("causal", "none", "after-softmax"):
        maps = attention_maps(model, tokens, layer=0, mask_mode=mode)
        grid = mask_grid(model.config, len(tokens), mask_mode=mode)
        assert ((maps.weights[0] > 0) == grid.visible).all(), mode


# ---- attention maps -------------------------------------------------------------------------------------
def test_attention_maps_capture_only_the_requested_layers(monkeypatch):
    model = Transformer.from_seed(get_preset("tiny-gpt"), 0)
    asked = []
    real_capture = attention_maps_module.capture

    def spy(module, patterns, **kwargs):
        asked.append(list(patterns))
        return real_capture(module, patterns, **kwargs)

    monkeypatch.setattr(attention_maps_module, "capture", spy)
    one = attention_maps(model, [1, 2, 3, 4, 5], layer=2)
    assert asked == [["blocks.2.attn.hook_pattern"]]
    assert one.weights.shape == (1, 4, 5, 5) and one.layers == (2,)
    every = attention_maps(model, [1, 2, 3, 4, 5])
    assert every.weights.shape == (4, 4, 5, 5) and every.layer_labels[0] == "block 0"
    # Not bitwise: unobserved layers 0-1 took the fused kernel in the first run, the explicit one here.
    assert np.allclose(every.weights[2], one.weights[0], atol=1e-6)
    assert np.allclose(every.weights.sum(-1), 1.0, atol=1e-6)
    assert (np.triu(every.weights, 1) == 0).all()
    assert not any(point._forward_hooks for point in model.modules())
    with pytest.raises(SequenceError):
        attention_maps(model, [1, 2, 3], layer=4)


def test_cross_attention_maps_of_an_encoder_decoder():
    model = Transformer.from_seed(SHAKESPEARE_PAIR, 0)
    maps = attention_maps(model, [1, 2, 3], attention="cross", source=[4, 5, 6, 7, 8])
    assert maps.weights.shape == (2, 4, 3, 5) and len(maps.key_labels) == 5
    assert (maps.weights > 0).all()
    off = attention_maps(model, [1, 2, 3], mask_mode="off-by-one")
    assert off.has_nan


# ---- head split --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_head_zero_equals_a_lone_head_and_the_wrong_view_scrambles_it(seed):
    check = head_split_check(seed)
    assert check.correct_difference <= 1e-6
    assert check.wrong_difference > 0.1
    assert check.single_head_weights.shape == check.wrong_reshape_weights.shape == (8, 8)
    assert np.allclose(check.single_head_weights, check.multi_head_weights, atol=1e-6)
    assert check.d_head == 16


def test_head_split_check_other_shapes():
    check = head_split_check(5, d_model=48, n_heads=6, T=10, causal=False)
    assert check.correct_difference <= 1e-6 < 0.05 < check.wrong_difference
    with pytest.raises(ConfigError):
        head_split_check(0, d_model=10, n_heads=4)


# ---- next-token predictions ------------------------------------------------------------------------------
def test_next_token_predictions():
    tokenizer = CharTokenizer.from_text("abcdefgh ")
    model = Transformer.from_seed(get_preset("tiny-gpt").replace(vocab_size=tokenizer.vocab_size), 2)
    ids = tokenizer.encode("abc def")
    top = next_token_predictions(model, ids, 3, tokenizer, k=4)
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0, 3].double()
    expected = torch.softmax(logits, -1).topk(4)
    assert top.ids.tolist() == expected.indices.tolist()
    assert np.allclose(top.probabilities, expected.values.numpy())
    assert list(top.labels) == [tokenizer.token_text(i).replace(" ", "␣") for i in top.ids]
    assert top.context_labels == ("a", "b", "c", "␣")
    # A causal model's prediction at 3 cannot depend on what follows.
    other = next_token_predictions(model, ids[:4] + tokenizer.encode("hhh"), 3, tokenizer, k=4)
    assert other.ids.tolist() == top.ids.tolist() and np.array_equal(other.probabilities, top.probabilities)
    cold = next_token_predictions(model, ids, 3, tokenizer, k=4, temperature=0.1)
    assert cold.probabilities[0] > top.probabilities[0]
    everything = next_token_predictions(model, ids, 3, [f"t{i}" for i in range(tokenizer.vocab_size)], k=100)
    assert len(everything.ids) == tokenizer.vocab_size and math.isclose(everything.probabilities.sum(), 1.0)
    assert everything.labels[0] == f"t{everything.ids[0]}"
    for bad in (dict(temperature=0.0), dict(k=0), dict(position=7)):
        with pytest.raises(SequenceError):
            next_token_predictions(model, ids, **{"position": 3, **bad})


def test_an_id_beyond_the_tokenizer_is_labelled_by_its_number():
    from core.tokenizers import CharTokenizer

    tokenizer = CharTokenizer.from_text("ab")
    assert token_labels([0, 1, 5], tokenizer) == ("a", "b", "#5")
