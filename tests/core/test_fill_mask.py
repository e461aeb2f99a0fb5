"""Fill in the blank: the encoder's predictions against a forward pass written here and against transformers'
BertForMaskedLM, and the mirror of the causal-mask experiment measured bitwise."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core.checkpoints import load_bundled, resolve_checkpoint
from core.experiments.fill_mask import (
    DECODER_FILL,
    FillMaskError,
    blank_edit,
    decoder_tokens,
    encoder_problem,
    fill_mask,
    mask_id_of,
)
from core.objectives.masked_lm import MASK_CHAR
from tests import family_models

TEXT = "To be, or n_t to be, that is the question:"
BLANK = TEXT.index(MASK_CHAR)


def reference_encoder_logits(model, ids: list[int]) -> torch.Tensor:
    """The tiny-encoder's forward written out (pre-LayerNorm, learned positions, GELU, no mask, tied head), in
    float64 from the model's float32 weights: (T, V)."""
    p = {name: value.double() for name, value in model.state_dict().items()}
    c = model.config
    d, heads = c.d_model, c.n_heads
    t = len(ids)

    def norm(x, name):
        return F.layer_norm(x, (d,), p[name + ".weight"], p[name + ".bias"], c.norm_eps)

    x = p["tok_emb.weight"][ids] + p["pos_emb.weight"][:t]  # (T, D)
    for i in range(c.n_layers):
        b = f"blocks.{i}."
        qkv = norm(x, b + "norm1") @ p[b + "attn.qkv.weight"].T + p[b + "attn.qkv.bias"]  # (T, 3D)
        q, k, v = (part.reshape(t, heads, d // heads).transpose(0, 1) for part in qkv.split(d, dim=-1))  # (H, T, dh)
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // heads), dim=-1)  # (H, T, T): both sides
        z = (weights @ v).transpose(0, 1).reshape(t, d)  # (T, D)
        x = x + z @ p[b + "attn.out_proj.weight"].T + p[b + "attn.out_proj.bias"]
        hidden = F.gelu(norm(x, b + "norm2") @ p[b + "ffn.up.weight"].T + p[b + "ffn.up.bias"])  # (T, F)
        x = x + hidden @ p[b + "ffn.down.weight"].T + p[b + "ffn.down.bias"]
    return norm(x, "final_norm") @ p["tok_emb.weight"].T  # (T, V)


@pytest.fixture(scope="module")
def encoder():
    return family_models.encoder(seed=1)


@pytest.fixture(scope="module")
def decoder():
    return load_bundled("tiny-gpt")


def _ids(text: str) -> list[int]:
    return family_models.encoder_tokenizer().encode(text)


def test_predictions_are_the_softmax_of_an_encoder_written_out_here(encoder):
    tokenizer = family_models.encoder_tokenizer()
    text = TEXT.replace("question", "qu_stion")
    ids = _ids(text)
    mask_id = mask_id_of(tokenizer)
    assert mask_id == tokenizer.id_of(MASK_CHAR)
    result = fill_mask(encoder, ids, mask_id, top_k=7, tokenizer=tokenizer)
    assert result.blanks == (BLANK, text.index("qu_") + 2)
    expected = torch.softmax(reference_encoder_logits(encoder, ids), dim=-1)  # (T, V)
    for n, position in enumerate(result.blanks):
        top = expected[position].topk(7)
        assert result.top_ids[n].tolist() == top.indices.tolist()
        # float32 logits of magnitude ~1 through two blocks: a few 1e-7; probabilities move less than that.
        np.testing.assert_allclose(result.top_probabilities[n], top.values.numpy(), rtol=0, atol=1e-6)
        assert result.top_labels[n][0] == tokenizer.token_text(int(top.indices[0]))
    np.testing.assert_allclose(result.logits, reference_encoder_logits(encoder, ids)[list(result.blanks)].numpy(),
                               rtol=0, atol=1e-5)


def test_predictions_equal_transformers_bert_for_masked_lm(tmp_path):
    transformers = pytest.importorskip("transformers")
    from tests.encoder_folders import bert_folder

    folder = bert_folder(tmp_path / "bert")
    loaded = resolve_checkpoint(str(folder))
    mask_id = mask_id_of(loaded.tokenizer)
    assert mask_id == loaded.tokenizer.id_of("[MASK]")
    ids = [2, 17, 40, mask_id, 99, 150, mask_id, 3]
    result = fill_mask(loaded.model, ids, mask_id, top_k=5, tokenizer=loaded.tokenizer)
    reference = transformers.BertForMaskedLM.from_pretrained(str(folder)).eval()
    with torch.no_grad():
        logits = reference(input_ids=torch.tensor([ids])).logits[0].double()  # (T, V)
    assert result.blanks == (3, 6)
    for n, position in enumerate(result.blanks):
        top = torch.softmax(logits[position], dim=-1).topk(5)
        assert result.top_ids[n].tolist() == top.indices.tolist()
        np.testing.assert_allclose(result.top_probabilities[n], top.values.numpy(), rtol=0, atol=1e-5)


def test_an_edit_after_the_blank_moves_the_encoder_and_leaves_the_decoder_bitwise(encoder, decoder):
    tokenizer = family_models.encoder_tokenizer()
    mask_id = mask_id_of(tokenizer)
    before = _ids(TEXT)
    after = list(before)
    after[BLANK + 8] = tokenizer.id_of("Q")
    dec_before, dec_after = (decoder_tokens(ids, tokenizer, decoder.tokenizer, mask_id) for ids in (before, after))
    assert decoder.tokenizer.decode(dec_before) == TEXT.replace(MASK_CHAR, DECODER_FILL)
    result = blank_edit(encoder, before, after, BLANK, mask_id, 5, decoder.model, dec_before, dec_after, "tiny-gpt",
                        tokenizer, decoder.tokenizer)
    assert result.side == "after" and result.edited == (BLANK + 8,)
    # Measured here, with plain forward passes of each text alone.
    with torch.no_grad():
        enc = [encoder(torch.tensor([ids]))[0, BLANK] for ids in (before, after)]  # (V,) each
        dec = [decoder.model(torch.tensor([ids]))[0, BLANK - 1] for ids in (dec_before, dec_after)]  # (V,) each
    assert not torch.equal(*enc) and torch.equal(*dec)
    assert result.encoder.max_change == pytest.approx(float((enc[1].double() - enc[0].double()).abs().max()), abs=0)
    assert result.encoder.max_change > 0 and not result.encoder.exactly_unchanged
    assert result.decoder.exactly_unchanged and result.decoder.max_change == 0.0
    assert result.decoder.after.position == BLANK - 1
    assert "bitwise unchanged (torch.equal)" in result.verdict and "max |delta logit|" in result.verdict


def test_an_edit_before_the_blank_moves_both(encoder, decoder):
    tokenizer = family_models.encoder_tokenizer()
    mask_id = mask_id_of(tokenizer)
    before = _ids(TEXT)
    after = list(before)
    after[2] = tokenizer.id_of("X")
    dec_ids = [decoder_tokens(ids, tokenizer, decoder.tokenizer, mask_id) for ids in (before, after)]
    result = blank_edit(encoder, before, after, BLANK, mask_id, 5, decoder.model, *dec_ids, "tiny-gpt", tokenizer,
                        decoder.tokenizer)
    assert result.side == "before"
    assert not result.encoder.exactly_unchanged and not result.decoder.exactly_unchanged
    assert result.decoder.max_change > 0 and result.encoder.max_change > 0


def test_refusals_say_why(encoder, decoder):
    tokenizer = family_models.encoder_tokenizer()
    mask_id = mask_id_of(tokenizer)
    assert "cannot fill a blank from both sides" in encoder_problem(decoder.config)
    with pytest.raises(FillMaskError, match="load an encoder"):
        fill_mask(decoder.model, [1, 2, 3], 1)
    with pytest.raises(FillMaskError, match="no blank"):
        fill_mask(encoder, _ids("no blank here"), mask_id)
    before = _ids(TEXT)
    edited_blank = list(before)
    edited_blank[BLANK] = tokenizer.id_of("o")
    with pytest.raises(FillMaskError, match="not a blank in both texts"):
        blank_edit(encoder, before, edited_blank, BLANK, mask_id)
    with pytest.raises(FillMaskError, match="differ in length"):
        blank_edit(encoder, before, before[:-1], BLANK, mask_id)
    # The decoder has no '_': each blank is read as the fill character, and a foreign character is refused.
    assert mask_id_of(decoder.tokenizer) is None
    with pytest.raises(FillMaskError, match="cannot read this text"):
        decoder_tokens(_ids("wxq_"), tokenizer, family_models.date_tokenizer(), mask_id)


def test_a_blank_at_the_start_has_no_decoder_half(encoder, decoder):
    tokenizer = family_models.encoder_tokenizer()
    mask_id = mask_id_of(tokenizer)
    before = _ids("_ello there")
    after = list(before)
    after[5] = tokenizer.id_of("T")
    dec_ids = [decoder_tokens(ids, tokenizer, decoder.tokenizer, mask_id) for ids in (before, after)]
    result = blank_edit(encoder, before, after, 0, mask_id, 3, decoder.model, *dec_ids, "tiny-gpt")
    assert result.decoder is None and "first token" in result.decoder_note
    assert "No decoder half" in result.verdict
