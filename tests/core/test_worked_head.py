"""One head worked by hand: equal to the model's own head output for every positional encoding, GQA and MQA,
every mask mode and a bundled checkpoint; unequal the moment one step is left out."""

import dataclasses

import numpy as np
import pytest
import torch

from core.checkpoints import load_bundled
from core.choices import MASK_MODES, POSITIONAL_ENCODINGS
from core.experiments.worked_head import REORDER_FACTOR, WorkedHeadError, worked_head
from core.model import SequenceError, Transformer
from core.positional import alibi_slopes
from core.presets import get_preset

N_TOKENS = 12
IDS = [(7 * i + 3) % 40 for i in range(N_TOKENS)]


def small_model(positional: str = "learned", n_kv_heads: int | None = None, dtype=torch.float32, **fields):
    config = dataclasses.replace(get_preset("tiny-gpt"), name="small", d_model=32, n_heads=4, n_layers=2, d_ff=64,
                                 positional=positional, n_kv_heads=n_kv_heads, **fields).validated()
    return Transformer.from_seed(config, seed=3, dtype=dtype)


@pytest.mark.parametrize("positional", POSITIONAL_ENCODINGS)
@pytest.mark.parametrize("n_kv_heads", [None, 2, 1], ids=["multi-head", "grouped-query", "multi-query"])
@pytest.mark.parametrize("mask_mode", MASK_MODES)
def test_the_hand_result_equals_the_models_head_output(positional, n_kv_heads, mask_mode):
    model = small_model(positional, n_kv_heads)
    for query in (1, 6, N_TOKENS - 1):
        worked = worked_head(model, IDS, layer=1, head=3, query=query, mask_mode=mask_mode)
        assert worked.equal, worked.verdict
        assert worked.verdict.startswith("equal to the model's head output to ")
        # The tolerance is float32 rounding, not a loose bar: a few hundred ulps of the output at most.
        assert worked.tolerance >= REORDER_FACTOR * worked.rounding
        assert worked.tolerance < 1e-4 * max(1.0, float(np.abs(worked.hand_output).max()))
        if np.isnan(worked.hand_output).any():  # off-by-one: the first token's NaN, on both sides
            assert np.isnan(worked.model_output).all() and "both NaN" in worked.verdict
            continue
        assert worked.rounding > 0
        # The hand path's own q, k and v are the model's (hook_q / hook_k / hook_v after any rotation).
        for step, difference, tolerance in worked.step_checks:
            assert difference <= tolerance, step


def test_the_softmax_weights_are_a_distribution_over_what_the_mask_leaves():
    model = small_model("rope")
    causal = worked_head(model, IDS, 0, 1, query=5, mask_mode="causal")
    assert causal.visible.tolist() == [True] * 6 + [False] * (N_TOKENS - 6)
    assert np.isneginf(causal.scores[6:]).all() and (causal.weights[6:] == 0).all()
    assert causal.weights.sum() == pytest.approx(1.0, abs=1e-12)
    after = worked_head(model, IDS, 0, 1, query=5, mask_mode="after-softmax")
    # The pitfall: the future shaped the denominator, so what is left sums to less than 1.
    assert after.zeroed_after_softmax[6:].all() and after.weights[:6].sum() < 1 - 1e-6
    assert after.equal, after.verdict
    np.testing.assert_allclose(causal.dots / np.sqrt(causal.d_head), causal.scaled, rtol=1e-12)


def test_a_query_that_sees_no_key_is_nan_on_both_sides():
    worked = worked_head(small_model(), IDS, 0, 0, query=0, mask_mode="off-by-one")
    assert worked.sees_no_key and np.isnan(worked.weights).all()
    assert np.isnan(worked.hand_output).all() and np.isnan(worked.model_output).all()
    assert worked.equal and "this query sees no key" in worked.verdict


@pytest.mark.parametrize(("positional", "step", "query"), [
    ("learned", "scale", N_TOKENS - 1),
    ("learned", "mask", 4),
    ("rope", "rope", N_TOKENS - 1),
    ("alibi", "alibi", N_TOKENS - 1),
])
def test_leaving_out_one_step_flips_the_verdict(positional, step, query):
    model = small_model(positional)
    kept = worked_head(model, IDS, 1, 2, query=query)
    broken = worked_head(model, IDS, 1, 2, query=query, omit=[step])
    assert kept.equal and not broken.equal
    assert broken.max_difference > 100 * broken.tolerance
    assert broken.verdict.startswith("NOT the model's head output") and "left out" in broken.verdict


def test_the_mask_hides_nothing_from_the_last_token():
    """Leaving the causal mask out for the last query changes nothing: it sees every key anyway."""
    model = small_model()
    worked = worked_head(model, IDS, 1, 0, query=None, omit=["mask"])
    assert worked.query == N_TOKENS - 1 and worked.equal, worked.verdict


def test_grouped_query_heads_share_their_key_value_head():
    model = small_model("rope", n_kv_heads=2)
    worked = worked_head(model, IDS, 0, 3, query=7)
    assert (worked.kv_head, worked.shared_heads) == (1, (2, 3))
    sibling = worked_head(model, IDS, 0, 2, query=7)
    np.testing.assert_array_equal(worked.k, sibling.k)
    np.testing.assert_array_equal(worked.v, sibling.v)
    assert not np.array_equal(worked.q, sibling.q)
    assert worked_head(small_model(n_kv_heads=1), IDS, 0, 2).shared_heads == (0, 1, 2, 3)


def test_rope_rotates_each_pair_by_its_angle_and_keeps_its_length():
    worked = worked_head(small_model("rope"), IDS, 0, 0, query=9)
    before, after = worked.q_before.reshape(-1, 2), worked.q.reshape(-1, 2)
    np.testing.assert_allclose(np.hypot(*before.T), np.hypot(*after.T), rtol=1e-6)
    turned = np.arctan2(after[:, 1], after[:, 0]) - np.arctan2(before[:, 1], before[:, 0])
    np.testing.assert_allclose(np.angle(np.exp(1j * (turned - worked.rope_angles[9]))), 0.0, atol=1e-5)
    assert worked.rope_angles[0].tolist() == [0.0] * (worked.d_head // 2)


def test_alibi_penalises_each_key_by_its_distance():
    worked = worked_head(small_model("alibi"), IDS, 0, 2, query=8)
    slope = float(alibi_slopes(4)[2])
    assert worked.alibi_slope == slope
    np.testing.assert_allclose(worked.alibi_penalty[:9], -slope * (8 - np.arange(9)), rtol=1e-12)
    np.testing.assert_allclose(worked.scores[:9], worked.scaled[:9] + worked.alibi_penalty[:9], rtol=1e-12)


@pytest.mark.parametrize("name", ["tiny-gpt", "tiny-llama"])
def test_a_bundled_checkpoint_is_worked_by_hand(name):
    loaded = load_bundled(name)
    ids = loaded.tokenizer.encode("To be, or not to be, that is the question")
    model = loaded.model
    worked = worked_head(model, ids, len(model.blocks) - 1, model.config.n_heads - 1,
                         tokenizer_or_labels=loaded.tokenizer)
    assert worked.equal, worked.verdict
    assert worked.labels[:2] == ("T", "o")
    assert not worked_head(model, ids, 0, 0, omit=["scale"]).equal


def test_other_dtypes_are_held_to_their_own_rounding():
    wide = worked_head(small_model("rope", dtype=torch.float64), IDS, 1, 1, 10)
    assert wide.equal and wide.dtype == "float64" and wide.tolerance < 1e-12
    narrow = worked_head(small_model("rope", dtype=torch.bfloat16), IDS, 1, 1, 10)
    assert narrow.equal and narrow.dtype == "bfloat16"


@pytest.mark.parametrize(("arguments", "message"), [
    ({"layer": 2, "head": 0}, "block 2 is out of range: this model has blocks 0 to 1"),
    ({"layer": 0, "head": 4}, "head 4 is out of range: each block has heads 0 to 3"),
    ({"layer": 0, "head": 0, "query": N_TOKENS},
     f"query {N_TOKENS} is out of range: the sequence has tokens 0 to {N_TOKENS - 1}"),
    ({"layer": 0, "head": 0, "query": -1}, "query -1 is out of range"),
    ({"layer": 0, "head": 0, "omit": ["rope"]}, "this model uses learned positions: it has no rope step"),
    ({"layer": 0, "head": 0, "omit": ["softmax"]}, "unknown step 'softmax'"),
    ({"layer": 0, "head": 0, "mask_mode": "sideways"}, "unknown mask mode 'sideways'"),
])
def test_bad_choices_are_refused_with_a_message(arguments, message):
    with pytest.raises(WorkedHeadError, match=message.replace("(", r"\(")):
        worked_head(small_model(), IDS, **arguments)


def test_bad_token_ids_are_the_models_own_message():
    with pytest.raises(SequenceError, match="outside the vocabulary"):
        worked_head(small_model(), [0, 999], 0, 0)


def test_reduced_precision_matmuls_are_held_to_their_rounding(monkeypatch):
    """--precision bf16 rounds the linear layers' inputs and weights: the hand path's rounding pass does too."""
    import core.kernels as kernels

    model = small_model("rope", n_kv_heads=2)
    full = worked_head(model, IDS, 1, 1, 9)
    monkeypatch.setattr(kernels, "_low_dtype", lambda x: torch.bfloat16 if x.dtype == torch.float32 else None)
    reduced = worked_head(model, IDS, 1, 1, 9)
    assert reduced.dtype == "float32 with bfloat16 matmuls"
    assert reduced.equal, reduced.verdict
    assert reduced.max_difference > 100 * full.max_difference  # the model really ran in bf16
    # A coarser tolerance: small slips (this random model's RoPE or scale) now hide in bf16's rounding,
    # a forgotten mask still does not.
    assert not worked_head(model, IDS, 1, 1, 4, omit=["mask"]).equal
