"""Positions experiments: the reading's RoPE and permutation scripts, and the claims behind the scrubber."""

import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from core.experiments.positions import (
    PositionsError,
    additive_score_grid,
    alibi_matrix,
    learned_position_table,
    locked_offset_trace,
    model_qk,
    permutation_equivariance,
    random_learned_table,
    rope_cos_sin,
    rope_norms,
    rope_score,
    rope_score_grid,
    rope_score_row,
    rotation_arrows,
    score_vs_offset,
    seeded_qk,
    sinusoidal_heatmap,
    sinusoid_rows,
    sinusoidal_pe_table,
    textbook_permutation_table,
    textbook_rope_table,
)
from core.hooks import capture
from core.model import Transformer
from core.positional import alibi_slopes, rope_angles, rope_rotate, sinusoidal_table, sinusoidal_wavelengths
from core.presets import get_preset


even_dims = st.integers(1, 32).map(lambda half: 2 * half)
bases = st.floats(2.0, 1e6)
scales = st.floats(0.25, 8.0)


# ---- the reading's scripts, verbatim, as oracles -----------------------------------------------------
def reading_rope_script():
    """The reading's numpy RoPE script, unchanged apart from returning instead of printing."""
    rng = np.random.RandomState(0)
    d = 8

    def rope(x, pos):
        i = np.arange(d // 2)
        theta = 10000.0 ** (-2.0 * i / d)
        ang = pos * theta
        cos, sin = np.cos(ang), np.sin(ang)
        x2 = x.reshape(d // 2, 2)
        out = np.empty_like(x2)
        out[:, 0] = x2[:, 0] * cos - x2[:, 1] * sin
        out[:, 1] = x2[:, 0] * sin + x2[:, 1] * cos
        return out.reshape(d)

    def sin_pe(pos):
        i = np.arange(d // 2)
        ang = pos * 10000.0 ** (-2.0 * i / d)
        pe = np.empty(d)
        pe[0::2] = np.sin(ang)
        pe[1::2] = np.cos(ang)
        return pe

    q = rng.randn(d)
    k = rng.randn(d)
    rope_scores = [rope(q, m) @ rope(k, n) for m, n in [(3, 1), (13, 11), (103, 101), (5, 1), (54, 50), (9, 1)]]
    additive = [(q + sin_pe(m)) @ (k + sin_pe(n)) for m, n in [(3, 1), (13, 11), (103, 101)]]
    return np.array(rope_scores), np.array(additive)


def reading_permutation_script():
    """The reading's permutation script, unchanged apart from returning instead of printing."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        d_model, T = 32, 6

        class SelfAttention(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.q = nn.Linear(d, d); self.k = nn.Linear(d, d); self.v = nn.Linear(d, d)  # noqa: E702

            def forward(self, x):
                s = self.q(x) @ self.k(x).transpose(-2, -1) / math.sqrt(x.shape[-1])
                return F.softmax(s, dim=-1) @ self.v(x)

        def sinusoidal_pe(T, d):
            pos = torch.arange(T, dtype=torch.float32).unsqueeze(1)
            i = torch.arange(0, d, 2, dtype=torch.float32)
            angles = pos / (10000 ** (i / d))
            pe = torch.zeros(T, d)
            pe[:, 0::2] = torch.sin(angles)
            pe[:, 1::2] = torch.cos(angles)
            return pe

        attn = SelfAttention(d_model)
        x = torch.randn(1, T, d_model)
        perm = torch.tensor([3, 1, 5, 0, 2, 4])
        with torch.no_grad():
            y = attn(x)
            y_perm = attn(x[:, perm, :])
            pe = sinusoidal_pe(T, d_model).unsqueeze(0)
            z = attn(x + pe)
            z_perm = attn(x[:, perm, :] + pe)
        return (
            (y_perm - y[:, perm, :]).abs().max().item(),
            (z_perm - z[:, perm, :]).abs().max().item(),
            sinusoidal_pe(T, d_model),
        )


def test_textbook_rope_table_prints_the_reading_figures():
    table = textbook_rope_table()
    printed = [f"{s:.10f}" for s in table.rope_scores]
    assert printed == ["5.9478093347"] * 3 + ["4.7051479015"] * 2 + ["5.6683275369"]
    assert [f"{s:.10f}" for s in table.additive_scores] == ["12.0287056485", "8.2543303859", "7.0843151351"]
    assert table.rope_queries.tolist() == [3, 13, 103, 5, 54, 9]
    assert table.rope_keys.tolist() == [1, 11, 101, 1, 50, 1]


def test_textbook_rope_table_matches_the_reading_script_to_rounding():
    rope_scores, additive = reading_rope_script()
    table = textbook_rope_table()
    np.testing.assert_allclose(table.rope_scores, rope_scores, rtol=0, atol=1e-12)
    np.testing.assert_allclose(table.additive_scores, additive, rtol=0, atol=1e-12)


def test_textbook_permutation_matches_the_reading_script_bitwise():
    no_pe, with_pe, pe = reading_permutation_script()
    table = textbook_permutation_table()
    assert table.no_pe_max_diff == no_pe
    assert table.with_pe_max_diff == with_pe
    assert np.array_equal(table.pe_values, pe[[0, 3], :6].numpy())


def test_textbook_permutation_figures_agree_with_the_printed_reading():
    table = textbook_permutation_table()
    # The reading printed 0.00000012 (float noise) and 0.14426041; float32 BLAS rounding on another
    # machine moves the 8th decimal of the second, so compare to a few float32 ulps of 0.144.
    assert table.no_pe_max_diff < 1e-6
    assert abs(table.with_pe_max_diff - 0.14426041) < 1e-6
    assert [f"{v:.4f}" for v in table.pe_values[0]] == ["0.0000", "1.0000", "0.0000", "1.0000", "0.0000", "1.0000"]
    assert [f"{v:.4f}" for v in table.pe_values[1]] == ["0.1411", "-0.9900", "0.9933", "-0.1160", "0.8126", "0.5828"]


def test_experiments_leave_the_global_random_generators_alone():
    torch_state = torch.get_rng_state()
    numpy_state = np.random.get_state()[1].copy()
    textbook_permutation_table()
    textbook_rope_table()
    permutation_equivariance()
    seeded_qk(3, 16)
    assert torch.equal(torch.get_rng_state(), torch_state)
    assert np.array_equal(np.random.get_state()[1], numpy_state)


# ---- RoPE: relative position only ----------------------------------------------------------------------
@given(
    d=even_dims,
    base=bases,
    scale=scales,
    seed=st.integers(0, 10_000),
    offset=st.integers(-40, 40),
    first=st.integers(0, 2000),
    second=st.integers(0, 2000),
)
def test_rope_score_depends_only_on_the_offset(d, base, scale, seed, offset, first, second):
    pair = seeded_qk(seed, d)
    a = rope_score(pair.q, pair.k, first + offset, first, base, scale)
    b = rope_score(pair.q, pair.k, second + offset, second, base, scale)
    assert abs(a - b) <= 1e-9


@given(d=even_dims, base=bases, scale=scales, seed=st.integers(0, 10_000), n=st.integers(2, 24))
def test_rope_grid_is_constant_along_diagonals_and_matches_single_scores(d, base, scale, seed, n):
    pair = seeded_qk(seed, d)
    positions = np.arange(n) * 7 + 3
    grid = rope_score_grid(pair.q, pair.k, positions, base, scale)
    assert grid.scores.shape == (n, n)
    for diagonal in range(-(n - 1), n):
        values = np.diagonal(grid.scores, diagonal)
        assert np.ptp(values) <= 1e-9
    i, j = n // 2, n - 1
    assert abs(grid.scores[i, j] - rope_score(pair.q, pair.k, positions[i], positions[j], base, scale)) <= 1e-12


@given(d=even_dims, base=bases, scale=scales, seed=st.integers(0, 10_000))
def test_rotation_preserves_the_norm(d, base, scale, seed):
    pair = seeded_qk(seed, d)
    result = rope_norms(pair.q, [0, 1, 5, 100, 12345], base, scale)
    assert result.original_norm == pytest.approx(np.linalg.norm(pair.q), abs=1e-12)
    np.testing.assert_allclose(result.norms, result.original_norm, rtol=1e-12)


@given(d=even_dims, base=bases, scale=scales)
def test_the_scrubbers_numpy_trigonometry_is_core_positionals_to_rounding(d, base, scale):
    positions = torch.arange(0, 3000, 13, dtype=torch.float64)
    for ours, core in zip(rope_cos_sin(positions, d, base, scale), rope_angles(positions, d, base, scale)):
        np.testing.assert_allclose(ours.numpy(), core.numpy(), rtol=0, atol=1e-15)
    rows = np.array([0, 1, 7, 120, 229])
    core_table = sinusoidal_table(230, d, base, dtype=torch.float64)[rows]
    np.testing.assert_allclose(sinusoid_rows(rows, d, base).numpy(), core_table.numpy(), rtol=0, atol=1e-15)
    pair = seeded_qk(2, d)
    q, k = torch.from_numpy(pair.q), torch.from_numpy(pair.k)
    direct = float(rope_rotate(q, 37.0, base, scale) @ rope_rotate(k, 5.0, base, scale))
    assert rope_score(pair.q, pair.k, 37, 5, base, scale) == pytest.approx(direct, abs=1e-12)


def test_rope_score_row_is_one_row_of_the_grid():
    pair = seeded_qk(0, 16)
    positions = np.arange(40)
    grid = rope_score_grid(pair.q, pair.k, positions)
    np.testing.assert_allclose(rope_score_row(pair.q, pair.k, 17, positions), grid.scores[17], atol=1e-12)


def test_additive_encodings_are_not_relative():
    pair = seeded_qk(0, 8)
    sinusoidal = additive_score_grid(pair.q, pair.k, sinusoidal_pe_table(32, 8), label="sinusoidal")
    learned = additive_score_grid(pair.q, pair.k, random_learned_table(32, 8, seed=1), label="learned")
    for grid in (sinusoidal, learned):
        assert np.ptp(np.diagonal(grid.scores, -2)) > 0.1
    # The grid reproduces the reading's additive contrast at (3, 1).
    assert f"{sinusoidal.scores[3, 1]:.10f}" == f"{textbook_rope_table().additive_scores[0]:.10f}"
    with pytest.raises(PositionsError):
        additive_score_grid(pair.q, pair.k, sinusoidal_pe_table(4, 6))
    with pytest.raises(PositionsError):
        additive_score_grid(pair.q, pair.k, sinusoidal_pe_table(4, 8), positions=[0, 9])


def test_score_vs_offset_puts_rope_on_one_curve_and_matches_single_scores():
    pair = seeded_qk(0, 8)
    near = score_vs_offset(pair.q, pair.k, query_position=20)
    far = score_vs_offset(pair.q, pair.k, query_position=200, offsets=near.offsets)
    np.testing.assert_allclose(near.rope, far.rope, atol=1e-9)
    assert near.offsets.tolist() == list(range(21))
    assert near.rope[2] == pytest.approx(rope_score(pair.q, pair.k, 20, 18), abs=1e-12)
    assert np.abs(near.sinusoidal - far.sinusoidal).max() > 0.1
    assert np.abs(near.learned - far.learned).max() > 0.1
    with pytest.raises(PositionsError):
        score_vs_offset(pair.q, pair.k, query_position=3, offsets=[4])


def test_locked_offset_trace_reproduces_the_reading_contrast():
    pair = seeded_qk(0, 8)
    trace = locked_offset_trace(pair.q, pair.k, offset=2, m_range=[3, 13, 103])
    textbook = textbook_rope_table()
    np.testing.assert_allclose(trace.rope, textbook.rope_scores[:3], atol=1e-12)
    np.testing.assert_allclose(trace.sinusoidal, textbook.additive_scores, atol=1e-12)
    assert trace.key_positions.tolist() == [1, 11, 101]
    with pytest.raises(PositionsError):
        locked_offset_trace(pair.q, pair.k, offset=5, m_range=range(0, 10))


@given(d=even_dims, base=bases, scale=scales, m=st.floats(0, 5000))
def test_rotation_arrows_turn_each_pair_by_its_angle(d, base, scale, m):
    pair = seeded_qk(1, d)
    arrows = rotation_arrows(pair.q, m, base, scale)
    assert arrows.original.shape == arrows.rotated.shape == (d // 2, 2)
    lengths = np.linalg.norm(arrows.original, axis=1)
    np.testing.assert_allclose(np.linalg.norm(arrows.rotated, axis=1), lengths, rtol=1e-12)
    np.testing.assert_allclose(arrows.angles, m * arrows.frequencies, rtol=1e-15)
    # Pair 0 turns one radian per (scaled) position: a wavelength of 2*pi*scale positions.
    assert arrows.wavelengths[0] == pytest.approx(2 * math.pi * scale)
    cos, sin = np.cos(arrows.angles), np.sin(arrows.angles)
    expected_x = arrows.original[:, 0] * cos - arrows.original[:, 1] * sin
    np.testing.assert_allclose(arrows.rotated[:, 0], expected_x, atol=1e-9)


def test_bad_vectors_and_settings_are_refused():
    with pytest.raises(PositionsError):
        seeded_qk(0, 7)
    with pytest.raises(PositionsError):
        rope_score(np.ones(7), np.ones(7), 1, 0)
    with pytest.raises(PositionsError):
        rope_score(np.ones(8), np.ones(6), 1, 0)
    with pytest.raises(PositionsError):
        rope_score_grid(np.ones(8), np.ones(8), [0, 1], base=1.0)
    with pytest.raises(PositionsError):
        rotation_arrows(np.ones(8), 3, scale=0.0)


# ---- q/k of a real RoPE model ---------------------------------------------------------------------------
def test_model_qk_recovers_the_content_vectors_and_the_models_score():
    config = get_preset("tiny-llama")  # grouped-query: 4 query heads share 2 key/value heads
    model = Transformer.from_seed(config, seed=3)
    tokens = torch.randint(0, config.vocab_size, (1, 12), generator=torch.Generator().manual_seed(0))
    layer, head, query_pos, key_pos = 1, 3, 9, 4
    pair = model_qk(model, tokens, layer, head, query_pos, key_pos)
    assert pair.base == config.rope_base and pair.scale == config.rope_scale

    # Recompute from the block's input: norm1 (pre-norm) then the fused qkv projection.
    block = model.blocks[layer]
    names = [f"blocks.{layer}.hook_resid_pre", f"blocks.{layer}.attn.hook_scores"]
    with torch.no_grad(), capture(model, names) as store:
        model(tokens)
        normed = block.norm1(store[f"blocks.{layer}.hook_resid_pre"])  # (1, T, D)
        d_head, kv_width = config.d_head, config.kv_heads * config.d_head
        q_all, k_all, _ = block.attn.qkv(normed).split((config.n_heads * d_head, kv_width, kv_width), dim=-1)
    kv_head = head // (config.n_heads // config.kv_heads)
    q_content = q_all[0, query_pos, head * d_head : (head + 1) * d_head].double().numpy()
    k_content = k_all[0, key_pos, kv_head * d_head : (kv_head + 1) * d_head].double().numpy()
    np.testing.assert_allclose(pair.q, q_content, atol=1e-6)
    np.testing.assert_allclose(pair.k, k_content, atol=1e-6)

    # Rotating the content vectors back reproduces the score the model computed.
    model_score = store[f"blocks.{layer}.attn.hook_scores"][0, head, query_pos, key_pos].item()
    ours = rope_score(pair.q, pair.k, query_pos, key_pos, pair.base, pair.scale) / math.sqrt(d_head)
    assert ours == pytest.approx(model_score, abs=1e-5)


def test_model_qk_refuses_models_without_rope_and_bad_indices():
    with pytest.raises(PositionsError):
        model_qk(Transformer.from_seed(get_preset("textbook-block")), torch.zeros(1, 4, dtype=torch.long), 0, 0, 1, 0)
    model = Transformer.from_seed(get_preset("tiny-llama"))
    tokens = torch.zeros(1, 4, dtype=torch.long)
    for layer, head, q_pos, k_pos in [(9, 0, 1, 0), (0, 4, 1, 0), (0, 0, 4, 0), (0, 0, 1, -1)]:
        with pytest.raises(PositionsError):
            model_qk(model, tokens, layer, head, q_pos, k_pos)


# ---- other encodings --------------------------------------------------------------------------------------
def test_sinusoidal_heatmap_is_the_core_table_with_wavelengths():
    heat = sinusoidal_heatmap(50, 16)
    np.testing.assert_allclose(heat.table, sinusoidal_table(50, 16, dtype=torch.float64).numpy())
    np.testing.assert_allclose(heat.wavelengths, sinusoidal_wavelengths(16).numpy())
    assert heat.wavelengths[0] == pytest.approx(2 * math.pi)
    assert len(heat.pair_labels) == 8 and heat.pair_labels[1] == "dims 2-3"


def test_learned_position_table_reads_the_model():
    model = Transformer.from_seed(get_preset("tiny-gpt"), seed=2)
    result = learned_position_table(model, max_similarity_rows=20)
    np.testing.assert_allclose(result.table, model.pos_emb.weight.detach().double().numpy())
    assert result.cosine_similarity.shape == (20, 20)
    np.testing.assert_allclose(np.diag(result.cosine_similarity), 1.0)
    with pytest.raises(PositionsError):
        learned_position_table(Transformer.from_seed(get_preset("tiny-llama")))


def test_alibi_matrix_penalises_distance_by_head_slope():
    result = alibi_matrix(8, 5, causal=True)
    np.testing.assert_allclose(result.slopes, alibi_slopes(8).numpy())
    assert result.bias.shape == (8, 5, 5)
    assert result.bias[0, 4, 1] == pytest.approx(-result.slopes[0] * 3)
    assert (result.bias[:, 1, 3] == 0).all()  # causal: keys ahead are masked elsewhere, not penalised here
    both_ways = alibi_matrix(8, 5, causal=False)
    assert both_ways.bias[2, 1, 3] == pytest.approx(-both_ways.slopes[2] * 2)


# ---- permutation equivariance ------------------------------------------------------------------------------
@given(seed=st.integers(0, 1000), T=st.integers(2, 10), data=st.data())
def test_attention_without_encoding_is_equivariant_and_every_encoding_breaks_it(seed, T, data):
    perm = data.draw(st.permutations(list(range(T))).filter(lambda p: list(p) != list(range(T))))
    result = permutation_equivariance(None, seed=seed, T=T, d_model=16, perm=perm, n_heads=2)
    by_name = dict(zip(result.encodings, result.max_diff))
    assert result.encodings == ("none", "sinusoidal", "learned", "rope")
    assert by_name["none"] < 1e-5
    for encoding in ("sinusoidal", "learned", "rope"):
        assert by_name[encoding] > 1e-3, encoding
    assert result.equivariant.tolist() == [True, False, False, False]
    # Positions the shuffle leaves in place with unchanged neighbours still move: attention mixes all of them.
    assert result.per_position.shape == (4, T)


def test_permutation_in_float64_is_exact_to_rounding_and_takes_a_config():
    config = get_preset("tiny-llama")
    result = permutation_equivariance(config, seed=0, T=6, perm=[3, 1, 5, 0, 2, 4], dtype=torch.float64)
    assert result.d_model == 128 and result.n_heads == 4
    assert result.max_diff[0] < 1e-13
    assert (result.max_diff[1:] > 1e-3).all()
    alibi = permutation_equivariance("alibi", T=6, n_heads=4)
    assert alibi.encodings == ("alibi",) and alibi.max_diff[0] > 1e-3
    assert alibi.permutation.tolist() == [3, 1, 5, 0, 2, 4]  # the reading's shuffle is the default at T = 6


def test_reversal_keeps_every_distance_so_bidirectional_alibi_cannot_see_it():
    reversed_order = list(range(8))[::-1]
    alibi = permutation_equivariance("alibi", T=8, n_heads=4, perm=reversed_order, dtype=torch.float64)
    assert alibi.max_diff[0] < 1e-12
    rope = permutation_equivariance("rope", T=8, n_heads=4, perm=reversed_order, dtype=torch.float64)
    assert rope.max_diff[0] > 1e-3  # RoPE scores depend on the signed offset, which reversal flips


def test_permutation_refuses_bad_requests():
    for kwargs in ({"perm": [0, 0, 1], "T": 3}, {"T": 1}, {"d_model": 30, "n_heads": 4}):
        with pytest.raises(PositionsError):
            permutation_equivariance(**kwargs)
    with pytest.raises(PositionsError):
        permutation_equivariance("wavelet")
