"""The causal lab's experiments on an encoder and an encoder-decoder: what works is checked against a
computation written here (transformers' BERT patched by hand, the model's own logit), what does not is
refused in words."""

from __future__ import annotations

import pytest
import torch

from core.checkpoints import resolve_checkpoint
from core.experiments import ablation, attribution, kv_cache, next_token
from core.experiments.patching import PatchingError, activation_patch
from core.model import SequenceError, Transformer
from core.presets import get_preset
from tests.encoder_folders import bert_folder, marian_folder

CLEAN = [2, 17, 40, 4, 150, 33, 3]  # id 4 is BERT's [MASK]: the blank the metric is read at
CORRUPT = [2, 17, 90, 4, 150, 33, 3]
BLANK = 3


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    folder = bert_folder(tmp_path_factory.mktemp("bert") / "bert")
    return folder, resolve_checkpoint(folder).model


def _hf_patched_logit(folder, layer: int, column: int, answer: int) -> float:
    """transformers' BERT on the corrupted ids with the stream entering `layer` at `column` taken from the clean run."""
    import transformers

    hf = transformers.AutoModelForMaskedLM.from_pretrained(str(folder)).eval()
    with torch.no_grad():
        clean_states = hf(input_ids=torch.tensor([CLEAN]), output_hidden_states=True).hidden_states

        def patch(_module, args, kwargs):
            hidden = args[0].clone()
            hidden[:, column] = clean_states[layer][:, column]  # hidden_states[l] enters layer l
            return (hidden, *args[1:]), kwargs

        handle = hf.bert.encoder.layer[layer].register_forward_pre_hook(patch, with_kwargs=True)
        try:
            logits = hf(input_ids=torch.tensor([CORRUPT])).logits  # (1, T, V)
        finally:
            handle.remove()
    return float(logits[0, BLANK, answer])


def test_patching_an_encoder_reads_the_metric_at_its_blank_through_berts_head(bert):
    pytest.importorskip("transformers")
    folder, model = bert
    answer = 61
    result = activation_patch(model, CLEAN, CORRUPT, answer, None, position=BLANK)
    assert result.position == BLANK and result.changed_positions == (2,)
    for layer, column in ((0, 2), (1, 2), (1, 0), (1, 5)):
        expected = _hf_patched_logit(folder, layer, column, answer)
        assert result.values[layer, column] == pytest.approx(expected, abs=1e-4)
    assert all(result.patch_all_equal) and result.patch_none_equal
    # Patching the one changed position of the first stream restores the clean metric.
    assert result.values[0, 2] == pytest.approx(result.clean_metric, abs=1e-5)
    with pytest.raises(PatchingError, match="metric position 7 is outside the sequence"):
        activation_patch(model, CLEAN, CORRUPT, answer, None, position=7)


def test_patching_refuses_an_encoder_decoder(tmp_path):
    model = resolve_checkpoint(marian_folder(tmp_path / "marian")).model
    with pytest.raises(PatchingError, match="reads a second sequence through its encoder"):
        activation_patch(model, [1, 2, 3], [1, 5, 3], 4, None)


def test_attribution_splits_a_pre_norm_encoder_and_a_logit_bias():
    config = get_preset("tiny-encoder").replace(head_bias=True, name="encoder-with-bias")
    model = Transformer.from_seed(config, seed=1)
    with torch.no_grad():
        model.head.bias.normal_(generator=torch.Generator().manual_seed(3))  # zero as initialised: make it count
    tokens, position, answer, foil = [5, 9, 14, 3, 22, 7], 2, 17, 40
    split = attribution.direct_logit_attribution(model, tokens, answer, foil, position)
    with torch.no_grad():
        logits = model(torch.tensor([tokens]))[0, position].double()  # (V,)
    assert split.total == pytest.approx(float(logits[answer] - logits[foil]), abs=1e-6)
    assert split.agrees and abs(split.parts_sum - split.total) <= split.tolerance
    bias = next(part for part in split.components if part.kind == "head_bias")
    bias_table = model.head.bias.detach()
    assert bias.value == pytest.approx(float(bias_table[answer] - bias_table[foil]), abs=1e-6)
    # The lens of the whole stream is the model's own logit difference, bias included.
    assert split.lens[-1] == pytest.approx(split.total, abs=split.tolerance)


def test_attribution_refuses_berts_head_and_an_encoder_decoder_in_words(bert, tmp_path):
    _, model = bert
    reason = attribution.refusal(model)
    assert "head transform" in reason and "not linear in the stream" in reason and "post-norm" in reason
    with pytest.raises(attribution.AttributionError, match="not linear in the stream"):
        attribution.direct_logit_attribution(model, CLEAN, 5)
    pair = Transformer.from_seed(get_preset("tiny-encoder-decoder"), 0)
    assert "cross-attention read from the encoder" in attribution.refusal(pair)
    assert attribution.refusal(Transformer.from_seed(get_preset("tiny-encoder"), 0)) is None


def test_ablation_and_next_token_views_refuse_an_encoder_and_qualify_an_encoder_decoder():
    encoder = Transformer.from_seed(get_preset("tiny-encoder"), 0)
    pair = Transformer.from_seed(get_preset("tiny-encoder-decoder"), 0)
    with pytest.raises(ablation.AblationError, match="an encoder predicts no next token"):
        ablation.ablate(encoder, [1, 2, 3], heads=[(0, 0)])
    assert "reads a source" in ablation.refusal(pair)
    with pytest.raises(SequenceError, match="does not continue text"):
        next_token.next_token_predictions(encoder, [1, 2, 3], 1)
    predictions = next_token.next_token_predictions(pair, [1, 2, 3, 4], 1)
    assert "encoder read the whole text" in predictions.reads_later
    assert next_token.reads_later(get_preset("tiny-gpt"), None, 1) == ""
    assert "'none' mask lets position 1 read later tokens" in next_token.reads_later(get_preset("tiny-gpt"), "none", 1)
    assert "does not continue text" in next_token.continuation_refusal(encoder.config)
    assert "writes a target for a source" in next_token.continuation_refusal(pair.config)
    assert next_token.continuation_refusal(get_preset("tiny-moe")) == ""
    assert "cross-attention's keys and values of the source once" in kv_cache.cache_refusal(pair.config)
