"""Follow one token through an encoder (BERT), an encoder-decoder (Marian) and a mixture of experts.

The stages, the head transform, the attention each stage read and the experts a router chose are
checked against `transformers`' own hidden states and attention weights, or against the router
applied by hand to the stream.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.checkpoints import resolve_checkpoint
from core.experiments.follow_token import READS, follow_token, stage_plan
from core.hooks import capture
from core.model import SequenceError, Transformer
from core.presets import get_preset
from tests.encoder_folders import bert_folder, marian_folder

pytest.importorskip("transformers")

# The spread test weights make vectors of length ~10-100; transformers sums in another order (float32).
RTOL = 1e-4


def _hf(folder, kind):
    import transformers

    auto = transformers.AutoModelForMaskedLM if kind == "masked" else transformers.AutoModelForSeq2SeqLM
    return auto.from_pretrained(str(folder), attn_implementation="eager").eval()


def _top_reads(weights: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(R,) positions and weights of the largest head-mean weights of one query row (H, S)."""
    mean = weights.double().mean(dim=0)  # (S,)
    best = mean.topk(min(READS, mean.shape[0]))
    return best.indices.numpy(), best.values.numpy()


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    folder = bert_folder(tmp_path_factory.mktemp("bert") / "bert")
    return folder, resolve_checkpoint(folder)


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    folder = marian_folder(tmp_path_factory.mktemp("marian") / "marian")
    return folder, resolve_checkpoint(folder)


def test_an_encoder_is_followed_to_its_own_position_through_berts_head_transform(bert):
    folder, loaded = bert
    ids = [2, 17, 40, 99, 150, 33, 3]
    position = 3
    result = follow_token(loaded.model, ids, position, k=4)
    hf = _hf(folder, "masked")
    with torch.no_grad():
        out = hf(input_ids=torch.tensor([ids]), output_hidden_states=True, output_attentions=True)
        transformed = hf.cls.predictions.transform(out.hidden_states[-1])[0, position]  # (D,)
    # BERT: post-norm, no final norm; each layer's output is the stage after its FFN (and norm).
    assert result.predicts == "here" and result.architecture == "encoder"
    assert result.target_label == result.token_label == "99"
    kinds = result.stage_kinds
    assert kinds[-1] == "head-transform" and "final-norm" not in kinds
    ffn_rows = [row for row, kind in enumerate(kinds) if kind == "ffn"]
    expected_norms = [float(out.hidden_states[layer + 1][0, position].double().norm()) for layer in range(2)]
    np.testing.assert_allclose(result.norms[ffn_rows], expected_norms, rtol=RTOL)
    np.testing.assert_allclose(result.norms[0], float(out.hidden_states[0][0, position].double().norm()), rtol=RTOL)
    np.testing.assert_allclose(result.norms[-1], float(transformed.double().norm()), rtol=RTOL)
    np.testing.assert_allclose(result.update_norms[-1],
                               float((transformed.double() - out.hidden_states[-1][0, position].double()).norm()),
                               rtol=RTOL)
    # The last two stages read the same logits: the last block's vector through the transform, and the transformed one.
    probabilities = torch.softmax(out.logits[0, position].double(), dim=-1)
    top = probabilities.topk(4)
    for row in (-2, -1):
        np.testing.assert_allclose(result.top_probs[row], top.values.numpy(), rtol=RTOL)
        assert result.top_ids[row][0] == int(top.indices[0])
    # Self-attention reads both ways: the keys of largest mean weight, later positions included.
    for layer, row in enumerate(row for row, kind in enumerate(kinds) if kind == "attention"):
        positions, weights = _top_reads(out.attentions[layer][0, :, position])
        np.testing.assert_array_equal(result.read_positions[row], positions)
        np.testing.assert_allclose(result.read_weights[row], weights, rtol=RTOL)
    assert np.isnan(result.read_weights[ffn_rows]).all() and (result.read_positions[ffn_rows] == -1).all()


def test_a_decoder_token_of_an_encoder_decoder_shows_the_source_it_read(marian):
    folder, loaded = marian
    source, target = [12, 7, 55, 31, 9, 0], [199, 4, 88, 23, 61]
    position = 2
    result = follow_token(loaded.model, target, position, k=3, source=source)
    hf = _hf(folder, "seq2seq")
    with torch.no_grad():
        out = hf(input_ids=torch.tensor([source]), decoder_input_ids=torch.tensor([target]),
                 output_hidden_states=True, output_attentions=True)
    assert result.predicts == "next" and result.tower == "decoder" and result.target_label == "23"
    assert result.source_labels == tuple(str(i) for i in source)
    kinds = result.stage_kinds
    assert kinds.count("cross-attention") == 3 and kinds.count("attention") == 3
    cross_rows = [row for row, kind in enumerate(kinds) if kind == "cross-attention"]
    for layer, row in enumerate(cross_rows):
        positions, weights = _top_reads(out.cross_attentions[layer][0, :, position])  # (H, S) decoder x source
        np.testing.assert_array_equal(result.read_positions[row], positions)
        np.testing.assert_allclose(result.read_weights[row], weights, rtol=RTOL)
        assert result.read_labels[row] == tuple(str(source[p]) for p in positions)
    # A decoder query reads no later target position through its causal self-attention.
    self_rows = [row for row, kind in enumerate(kinds) if kind == "attention"]
    for layer, row in enumerate(self_rows):
        weights = out.decoder_attentions[layer][0, :, position]  # (H, T)
        assert float(weights[:, position + 1:].abs().max()) == 0.0
        assert all(p <= position for p in result.read_positions[row] if p >= 0)
    ffn_rows = [row for row, kind in enumerate(kinds) if kind == "ffn"]
    expected = [float(out.decoder_hidden_states[layer + 1][0, position].double().norm()) for layer in range(3)]
    np.testing.assert_allclose(result.norms[ffn_rows], expected, rtol=RTOL)
    top = torch.softmax(out.logits[0, position].double(), dim=-1).topk(3)
    np.testing.assert_allclose(result.top_probs[-1], top.values.numpy(), rtol=RTOL)


def test_a_source_token_is_followed_through_the_encoder_without_a_lens(marian):
    folder, loaded = marian
    source, target = [12, 7, 55, 31, 9, 0], [199, 4, 88]
    position = 4
    result = follow_token(loaded.model, target, position, k=3, tower="encoder", source=source)
    hf = _hf(folder, "seq2seq")
    with torch.no_grad():
        out = hf(input_ids=torch.tensor([source]), decoder_input_ids=torch.tensor([target]),
                 output_hidden_states=True, output_attentions=True)
    assert result.tower == "encoder" and result.predicts == "" and not result.has_lens
    assert result.token_label == "9" and result.sequence_labels == tuple(str(i) for i in source)
    assert result.stage_hooks[0] == "hook_encoder_embed"
    assert all(hook.startswith("encoder_blocks.") for hook in result.stage_hooks[1:])
    ffn_rows = [row for row, kind in enumerate(result.stage_kinds) if kind == "ffn"]
    expected = [float(out.encoder_hidden_states[layer + 1][0, position].double().norm()) for layer in range(2)]
    np.testing.assert_allclose(result.norms[ffn_rows], expected, rtol=RTOL)
    for layer, row in enumerate(row for row, kind in enumerate(result.stage_kinds) if kind == "attention"):
        positions, weights = _top_reads(out.encoder_attentions[layer][0, :, position])
        np.testing.assert_array_equal(result.read_positions[row], positions)
        np.testing.assert_allclose(result.read_weights[row], weights, rtol=RTOL)


def test_a_mixture_names_the_experts_its_router_chose_and_their_weights():
    config = get_preset("tiny-moe")
    model = Transformer.from_seed(config, seed=4)
    tokens = [3, 14, 15, 9, 26, 5, 35, 8]
    position = 5
    result = follow_token(model, tokens, position, k=2)
    # The router by hand on the stream each FFN read: the top-k logits, their softmax.
    expected = []
    with torch.no_grad(), capture(model, [f"blocks.{i}.hook_resid_mid" for i in range(config.n_layers)]) as seen:
        model(torch.tensor([tokens]))
        for index, block in enumerate(model.blocks):
            normed = block.norm2(seen[f"blocks.{index}.hook_resid_mid"][0, position])  # (D,) pre-norm: what the FFN reads
            logits = normed.double() @ block.ffn.router.weight.double().T  # (E,)
            chosen = logits.topk(config.top_k)
            expected.append((chosen.indices.numpy(), torch.softmax(chosen.values, dim=-1).numpy()))
    ffn_rows = [row for row, kind in enumerate(result.stage_kinds) if kind == "ffn"]
    assert len(ffn_rows) == config.n_layers
    for (ids, weights), row in zip(expected, ffn_rows):
        np.testing.assert_array_equal(result.expert_ids[row], ids)
        np.testing.assert_allclose(result.expert_weights[row], weights, rtol=1e-5)
        assert abs(result.expert_weights[row].sum() - 1.0) <= config.top_k * np.finfo(np.float32).eps
    other = [row for row in range(result.n_stages) if row not in ffn_rows]
    assert (result.expert_ids[other] == -1).all() and result.experts(other[0]) == []
    assert result.stage_labels[ffn_rows[0]] == "block 0: + experts"


def test_an_encoder_tower_is_refused_for_a_single_stack():
    model = Transformer.from_seed(get_preset("tiny-encoder"), seed=0)
    with pytest.raises(SequenceError, match="only an encoder-decoder model has an encoder tower"):
        follow_token(model, [1, 2, 3], 1, tower="encoder")
    with pytest.raises(SequenceError, match="unknown tower"):
        stage_plan(model, "middle")
    result = follow_token(model, [1, 2, 3, 4], 3)
    assert result.predicts == "here" and result.target_label == result.token_label and result.next_token_label is None
