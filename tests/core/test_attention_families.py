"""Attention maps and the causal edit on an encoder (BERT) and an encoder-decoder (Marian), against transformers.

The three kinds of an encoder-decoder's attention come from the model's own hook points; each is
compared with the weights `transformers` returns for the same folder, and the edit measurement is
checked against two plain forward passes of the transformers model.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.checkpoints import resolve_checkpoint
from core.config import ConfigError
from core.experiments.attention_maps import attention_kinds, attention_maps
from core.experiments.causal_edit import causal_edit_diff
from core.model import Transformer
from core.presets import get_preset
from tests.encoder_folders import bert_folder, marian_folder

pytest.importorskip("transformers")

ATOL = 1e-5  # softmax weights in [0, 1], float32 sums of a 32-wide model in another order

SOURCE, TARGET = [12, 7, 55, 31, 9, 0], [199, 4, 88, 23, 61]


def _hf(folder, kind):
    import transformers

    auto = transformers.AutoModelForMaskedLM if kind == "masked" else transformers.AutoModelForSeq2SeqLM
    return auto.from_pretrained(str(folder), attn_implementation="eager").eval()


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    folder = marian_folder(tmp_path_factory.mktemp("marian") / "marian")
    hf = _hf(folder, "seq2seq")
    with torch.no_grad():
        out = hf(input_ids=torch.tensor([SOURCE]), decoder_input_ids=torch.tensor([TARGET]), output_attentions=True)
    return resolve_checkpoint(folder).model, out


@pytest.mark.parametrize("kind, reference, shape", [
    ("self", "decoder_attentions", (3, 4, 5, 5)),
    ("cross", "cross_attentions", (3, 4, 5, 6)),
    ("encoder", "encoder_attentions", (2, 4, 6, 6)),
])
def test_each_kind_of_an_encoder_decoders_attention_is_transformers_own(marian, kind, reference, shape):
    model, out = marian
    maps = attention_maps(model, TARGET, attention=kind, source=SOURCE)
    expected = np.stack([layer[0].numpy() for layer in getattr(out, reference)])  # (L, H, T, S)
    assert maps.weights.shape == expected.shape == shape
    np.testing.assert_allclose(maps.weights, expected, atol=ATOL, rtol=0)
    source, target = tuple(str(i) for i in SOURCE), tuple(str(i) for i in TARGET)
    query_labels, key_labels = {"self": (target, target), "cross": (target, source), "encoder": (source, source)}[kind]
    assert maps.query_labels == query_labels and maps.key_labels == key_labels
    tower = "encoder" if kind == "encoder" else "decoder"
    assert maps.layer_labels[0] == f"{tower} block 0"
    assert maps.mask_mode == ("causal" if kind == "self" else "none")
    assert {"self": "decoder self-attention", "cross": "cross-attention (decoder × source)",
            "encoder": "encoder self-attention (both ways)"}[kind] == maps.title


def test_the_decoder_keeps_its_causal_mask_while_its_cross_attention_is_read(marian):
    """Reading the cross-attention must not run the decoder unmasked: its later rows would then differ."""
    model, out = marian
    maps = attention_maps(model, TARGET, attention="cross", source=SOURCE, layer=2)
    np.testing.assert_allclose(maps.weights[0], out.cross_attentions[2][0].numpy(), atol=ATOL, rtol=0)


def test_berts_self_attention_reads_both_ways(tmp_path):
    folder = bert_folder(tmp_path / "bert")
    model = resolve_checkpoint(folder).model
    ids = [2, 17, 40, 99, 150, 33, 3]
    maps = attention_maps(model, ids)
    with torch.no_grad():
        out = _hf(folder, "masked")(input_ids=torch.tensor([ids]), output_attentions=True)
    expected = np.stack([layer[0].numpy() for layer in out.attentions])  # (L, H, T, T)
    np.testing.assert_allclose(maps.weights, expected, atol=ATOL, rtol=0)
    assert maps.mask_mode == "none" and maps.title == "self-attention (both ways)"
    assert (np.triu(maps.weights, 1) > 0).any()  # a query reads later tokens: no causal mask
    assert maps.layer_labels[0] == "block 0" and attention_kinds(model.config) == ("self",)


def test_kinds_a_model_lacks_are_refused():
    decoder = Transformer.from_seed(get_preset("tiny-gpt"), 0)
    with pytest.raises(ConfigError, match="only an encoder-decoder model has an encoder tower"):
        attention_maps(decoder, [1, 2, 3], attention="encoder")
    with pytest.raises(ConfigError, match="unknown attention"):
        attention_maps(decoder, [1, 2, 3], attention="sideways")
    pair = Transformer.from_seed(get_preset("tiny-encoder-decoder"), 0)
    with pytest.raises(ConfigError, match="always attends both ways"):
        attention_maps(pair, [1, 2, 3], attention="encoder", mask_mode="causal")
    assert attention_kinds(pair.config) == ("self", "cross", "encoder")


# ---- the edit measurement ---------------------------------------------------------------------------------
def _hf_rows(model, call) -> list[torch.Tensor]:
    with torch.no_grad():
        return [h[0] for h in call(model)]  # each (T, D)


def test_an_encoders_moving_past_is_called_expected_and_matches_transformers(tmp_path):
    folder = bert_folder(tmp_path / "bert")
    model = resolve_checkpoint(folder).model
    ids, position, new = [2, 17, 40, 99, 150, 33, 3], 4, 61
    result = causal_edit_diff(model, ids, position, new)
    hf = _hf(folder, "masked")
    edited = list(ids)
    edited[position] = new
    before = _hf_rows(hf, lambda m: m(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states)
    after = _hf_rows(hf, lambda m: m(input_ids=torch.tensor([edited]), output_hidden_states=True).hidden_states)
    expected = np.stack([(b - a).abs().amax(dim=-1).double().numpy() for a, b in zip(before, after)])  # (L+1, T)
    np.testing.assert_allclose(result.max_change, expected, rtol=1e-3, atol=1e-5)
    assert result.bidirectional and result.leaks_into_past and not result.past_exactly_unchanged
    assert (expected[1:, :position] > 0).all()  # every earlier position moves after the first block
    assert "expected for a bidirectional model" in result.note and "not a leak" in result.note
    assert "The past moves" not in result.note
    forced = causal_edit_diff(model, ids, position, new, mask_mode="causal")  # a causal mask forced on an encoder
    assert not forced.bidirectional and forced.past_exactly_unchanged


def test_an_encoder_decoders_edit_with_a_fixed_or_an_edited_source(tmp_path):
    folder = marian_folder(tmp_path / "marian")
    model = resolve_checkpoint(folder).model
    tokens, position, new = [15, 4, 88, 23, 61, 7], 3, 100
    fixed = causal_edit_diff(model, tokens, position, new)
    assert fixed.past_exactly_unchanged and not fixed.source_edited and not fixed.bidirectional
    assert "unedited source" in fixed.note
    moved = causal_edit_diff(model, tokens, position, new, edit_source=True)
    hf = _hf(folder, "seq2seq")
    edited = list(tokens)
    edited[position] = new

    def decoder_rows(ids):
        return lambda m: m(input_ids=torch.tensor([ids]), decoder_input_ids=torch.tensor([ids]),
                           output_hidden_states=True).decoder_hidden_states

    before, after = _hf_rows(hf, decoder_rows(tokens)), _hf_rows(hf, decoder_rows(edited))
    expected = np.stack([(b - a).abs().amax(dim=-1).double().numpy() for a, b in zip(before, after)])  # (L+1, T)
    np.testing.assert_allclose(moved.max_change, expected, rtol=1e-3, atol=1e-5)
    assert moved.source_edited and moved.leaks_into_past and not moved.bidirectional
    assert moved.exactly_unchanged[0, :position].all()  # the embedding row: no token before the edit changed
    assert (expected[1:, :position] > 0).all()  # from block 0 on, cross-attention carries the edit back
    assert "cross-attention reads the whole source" in moved.note and "Expected" in moved.note
