"""Attention-only models (ModelConfig.attention_only): blocks with no FFN and no norm for it, and every part of
the lab that used to assume an FFN: parameters, the diagram, follow-one-token, shapes, the KV cache, saving,
Hugging Face export, attribution, patching and ablation.

The model is checked against a forward pass written here in float64 from its weights alone."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core.checkpoint_files import CheckpointError
from core.checkpoints import resolve_checkpoint
from core.config import ConfigError, ModelConfig
from core.diagram_layout import diagram_parts
from core.experiments import kv_cache
from core.experiments.ablation import AblationError, ablate
from core.experiments.attribution import direct_logit_attribution
from core.experiments.follow_token import follow_token
from core.experiments.patching import PatchingError, activation_patch
from core.experiments.shapes import trace_shapes
from core.hf_export import save_hf_folder
from core.hooks import capture
from core.model import Transformer
from core.model_saving import save_model
from core.params import instantiated_parameter_count, parameter_breakdown
from core.presets import get_preset
from tests.float32 import REORDER_ULPS, float32_tolerance

CONFIG = ModelConfig(name="attn-only", vocab_size=30, context_length=24, d_model=32, n_heads=4, n_layers=2, d_ff=64,
                     attention_only=True).validated()
IDS = [3, 14, 15, 9, 2, 6, 5, 25, 8, 9, 7, 9, 3, 2, 28, 4]


def reference_forward(model: Transformer, ids: list[int]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """(logits (T, V), attention weights (H, T, T) per layer) of a pre-LayerNorm, learned-position, attention-only
    model, in float64 from its state dict: x = x + attn(ln(x)) per block, nothing else."""
    c = model.config
    w = {name: t.detach().double() for name, t in model.state_dict().items()}
    seq, heads, d_head = len(ids), c.n_heads, c.d_head

    def ln(x, prefix):
        return F.layer_norm(x, (c.d_model,), w[prefix + ".weight"], w.get(prefix + ".bias"), c.norm_eps)

    x = w["tok_emb.weight"][ids] + w["pos_emb.weight"][:seq]  # (T, D)
    patterns = []
    for layer in range(c.n_layers):
        p = f"blocks.{layer}."
        qkv = ln(x, p + "norm1") @ w[p + "attn.qkv.weight"].T + w[p + "attn.qkv.bias"]  # (T, 3D)
        q, k, v = (t.reshape(seq, heads, d_head).transpose(0, 1) for t in qkv.split(c.d_model, dim=-1))  # (H, T, d)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)  # (H, T, T)
        scores = scores.masked_fill(torch.ones(seq, seq, dtype=torch.bool).triu(1), float("-inf"))
        weights = scores.softmax(dim=-1)  # (H, T, T)
        patterns.append(weights)
        z = (weights @ v).transpose(0, 1).reshape(seq, c.d_model)  # (T, D)
        x = x + z @ w[p + "attn.out_proj.weight"].T + w[p + "attn.out_proj.bias"]  # (T, D)
    return ln(x, "final_norm") @ w["tok_emb.weight"].T, patterns  # (T, V)


@pytest.fixture(scope="module")
def model() -> Transformer:
    return Transformer.from_seed(CONFIG, seed=5)


def test_the_option_round_trips_through_json_and_refuses_experts():
    assert ModelConfig.from_dict(json.loads(json.dumps(CONFIG.to_dict()))) == CONFIG
    with pytest.raises(ConfigError, match="true or false") as error:
        ModelConfig.from_dict({**CONFIG.to_dict(), "attention_only": 1})
    assert error.value.field == "attention_only"
    with pytest.raises(ConfigError, match="no experts") as error:
        CONFIG.replace(n_experts=4)
    assert error.value.field == "attention_only"


def test_a_block_has_no_ffn_and_writes_exactly_x_plus_attention(model):
    block = model.blocks[0]
    assert not hasattr(block, "ffn") and not hasattr(block, "norm2") and not hasattr(block, "hook_ffn_out")
    assert not any(".ffn." in name or ".norm2." in name for name, _ in model.named_parameters())
    names = [f"blocks.{i}.{hook}" for i in range(2) for hook in ("hook_resid_pre", "hook_attn_out", "hook_resid_post")]
    with torch.no_grad(), capture(model, names) as seen:
        model(torch.tensor([IDS]))
    for layer in range(2):
        hooks = ("hook_resid_pre", "hook_attn_out", "hook_resid_post")
        pre, attn, post = (seen[f"blocks.{layer}.{hook}"] for hook in hooks)
        assert torch.equal(post, pre + attn)  # the same float32 sum, bit for bit
    with pytest.raises(KeyError), capture(model, ["blocks.0.hook_ffn_out"]):
        pass


def test_logits_and_attention_equal_a_forward_written_from_the_weights(model):
    expected, patterns = reference_forward(model, IDS)
    names = [f"blocks.{i}.attn.hook_pattern" for i in range(2)]
    with torch.no_grad(), capture(model, names) as seen:
        logits = model(torch.tensor([IDS]))[0].double()  # (T, V)
    assert float((logits - expected).abs().max()) <= float32_tolerance(float(expected.abs().max()), 4 * REORDER_ULPS)
    for name, pattern in zip(names, patterns):
        assert float((seen[name][0].double() - pattern).abs().max()) <= 1e-5


@pytest.mark.parametrize("changes", [{}, {"norm": "rmsnorm", "bias": False, "activation": "swiglu"},
                                     {"architecture": "encoder-decoder"},
                                     {"norm_placement": "post", "tie_embeddings": False}])
def test_parameter_counts_agree_with_the_model(changes):
    config = CONFIG.replace(**changes)
    breakdown = parameter_breakdown(config)
    model = Transformer.from_seed(config, seed=0)
    assert breakdown.total == instantiated_parameter_count(config) == len(torch.nn.utils.parameters_to_vector(
        list({id(p): p for p in model.parameters()}.values())))
    assert breakdown.groups["ffn"] == 0 and breakdown.decoder_block.ffn == 0
    one_norm = sum(p.numel() for p in model.blocks[0].norm1.parameters())
    sublayers = 2 if config.architecture == "encoder-decoder" else 1
    assert breakdown.decoder_block.norms == sublayers * one_norm
    assert breakdown.decoder_block.total == sum(p.numel() for p in model.blocks[0].parameters())


@pytest.mark.parametrize("architecture", ["decoder", "encoder-decoder"])
@pytest.mark.parametrize("placement", ["pre", "post"])
def test_the_diagram_draws_no_ffn_and_one_residual_add_per_sublayer(architecture, placement):
    config = CONFIG.replace(architecture=architecture, norm_placement=placement)
    diagram = diagram_parts(config, seq_len=8)
    kinds = {part.kind for part in diagram.parts}
    assert not kinds & {"ffn", "ffn_gate", "ffn_up", "ffn_down", "experts", "router"}
    model = Transformer.on_meta(config)
    for part in diagram.of_kind("block", "decoder"):
        adds = [p for p in diagram.parts if p.kind == "add" and p.tower == "decoder" and p.layer == part.layer]
        norms = [p for p in diagram.parts if p.kind == "norm" and p.tower == "decoder" and p.layer == part.layer]
        assert len(adds) == len(norms) == (2 if architecture == "encoder-decoder" else 1)
        assert part.parameters == sum(p.numel() for p in model.blocks[part.layer].parameters())
        assert sum(n.parameters for n in norms) == sum(p.numel() for n in ("norm1", "norm_cross")
                                                       if hasattr(model.blocks[part.layer], n)
                                                       for p in getattr(model.blocks[part.layer], n).parameters())
        assert "no feed-forward network" in part.explanation


def test_follow_token_reads_one_stage_per_block(model):
    result = follow_token(model, IDS, position=5)
    assert result.stage_labels == ("embedding", "block 0: + attention", "block 1: + attention", "final norm")
    assert "ffn" not in result.stage_kinds
    with torch.no_grad(), capture(model, ["blocks.1.hook_resid_post"]) as seen:
        model(torch.tensor([IDS]))
    # The stage reads the stream after attention, which is the block's output: the norm, summed in float32.
    assert result.norms[2] == pytest.approx(float(seen["blocks.1.hook_resid_post"][0, 5].double().norm()), rel=1e-6)


def test_shapes_skip_the_ffn_rows():
    trace = trace_shapes(CONFIG, batch=2, seq=10)
    names = [row.name for row in trace.rows]
    assert not any("FFN" in name for name in names)
    assert names[names.index("residual after attention") + 1] == "block output"
    assert trace.row("block output").shape == (2, 10, 32) and "no FFN" in trace.row("block output").note


def test_kv_cache_decode_equals_the_recompute(model):
    proof = kv_cache.kv_cache_proof(model, IDS, decode_steps=8)
    tolerance = float32_tolerance(kv_cache.logits_scale(model, IDS), 4 * REORDER_ULPS)
    assert proof.max_difference <= tolerance and len(proof.steps) == 8


def test_saved_and_loaded_it_is_the_same_model_and_has_no_hugging_face_form(model, tmp_path):
    folder = save_model(model, tmp_path / "saved")
    loaded = resolve_checkpoint(str(folder))
    assert loaded.config == CONFIG and loaded.config.attention_only
    with torch.no_grad():
        assert torch.equal(loaded.model(torch.tensor([IDS])), model(torch.tensor([IDS])))
    target = tmp_path / "hf"
    with pytest.raises(CheckpointError, match="an FFN in every block"):
        save_hf_folder(model, target)
    assert not target.exists()  # refused before anything was written


def test_attribution_has_no_ffn_parts_and_they_sum_to_the_logit(model):
    for foil in (None, 4):
        result = direct_logit_attribution(model, IDS, answer=7, foil=foil, position=9)
        assert {part.kind for part in result.components} == {"embed", "pos_embed", "head", "attn_bias", "norm_bias"}
        expected, _ = reference_forward(model, IDS)
        assert result.total == pytest.approx(float(expected[9, 7] - (expected[9, foil] if foil is not None else 0)),
                                              abs=1e-5)
        scale = sum(abs(part.value) for part in result.components)
        assert abs(result.parts_sum - result.total) <= 64 * np.finfo(np.float32).eps * scale
        assert result.agrees


def test_patching_refuses_the_ffn_site_and_patches_the_others(model):
    corrupt = list(IDS)
    corrupt[4] = 11
    with pytest.raises(PatchingError, match="attention-only attn-only has no FFN.*no mlp_out"):
        activation_patch(model, IDS, corrupt, answer=7, site="mlp_out")
    for site in ("resid_pre", "attn_out", "head"):
        result = activation_patch(model, IDS, corrupt, answer=7, site=site)
        assert np.isfinite(result.values).all() and all(result.patch_all_equal) and result.patch_none_equal


def test_ablation_has_no_ffns_to_pick(model):
    with pytest.raises(AblationError, match="attention-only attn-only has no FFN in its blocks to ablate"):
        ablate(model, IDS, ffns=[0])
    result = ablate(model, IDS, heads=[(1, 2)])
    assert result.loss_after != result.loss_before


def test_the_preset_is_tiny_induction_without_ffns():
    attention_only, full = get_preset("tiny-induction-attn"), get_preset("tiny-induction")
    assert attention_only.attention_only and not full.attention_only
    assert attention_only.replace(attention_only=False, name="tiny-induction") == full
