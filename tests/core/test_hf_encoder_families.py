"""BERT, DistilBERT and Marian folders open with the logits transformers computes (tolerance 1e-4)."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from core.checkpoints import CheckpointError, resolve_checkpoint
from tests.encoder_folders import bert_folder, distilbert_folder, marian_folder, reference_model, roberta_folder
from tests.hf_folders import SAMPLE_TEXT

pytest.importorskip("transformers")

TOLERANCE = 1e-4  # float32 sums over a 32-64 wide model with weights of spread 0.3 round near 1e-6


def _masked_lm_logits(folder, ids):
    with torch.no_grad():
        expected = reference_model(folder, "masked")(input_ids=torch.tensor([ids])).logits[0]  # (T, V)
        ours = resolve_checkpoint(folder).model(torch.tensor([ids]))[0]  # (T, V)
    return expected, ours


def test_bert_text_and_logits_match_transformers(tmp_path):
    import transformers

    folder = bert_folder(tmp_path / "bert")
    loaded = resolve_checkpoint(folder)
    assert loaded.config.architecture == "encoder" and loaded.config.norm_placement == "post"
    expected_ids = transformers.AutoTokenizer.from_pretrained(str(folder))(SAMPLE_TEXT)["input_ids"]
    ids = loaded.tokenizer.encode(SAMPLE_TEXT)
    assert ids == expected_ids and ids[0] == 2 and ids[-1] == 3  # [CLS] ... [SEP], as transformers adds them
    expected, ours = _masked_lm_logits(folder, ids)
    assert expected.abs().max() > 1  # the spread weights make a real signal
    torch.testing.assert_close(ours, expected, atol=TOLERANCE, rtol=0)


def test_a_bert_converted_from_tensorflow_opens(tmp_path):
    """gamma/beta LayerNorm names, a stored copy of the tied decoder, the pooler and next-sentence head."""
    folder = bert_folder(tmp_path / "bert")
    tensors = load_file(str(folder / "model.safetensors"))
    renamed = {name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): t
               for name, t in tensors.items()}
    renamed["cls.predictions.decoder.weight"] = tensors["bert.embeddings.word_embeddings.weight"].clone()
    renamed["cls.predictions.decoder.bias"] = tensors["cls.predictions.bias"].clone()
    renamed["bert.pooler.dense.weight"] = torch.zeros(32, 32)
    renamed["cls.seq_relationship.weight"] = torch.zeros(2, 32)
    renamed["bert.embeddings.position_ids"] = torch.arange(64).unsqueeze(0)
    save_file(renamed, str(folder / "model.safetensors"))
    ids = [2, 17, 40, 99, 3]
    expected, ours = _masked_lm_logits(folder, ids)
    torch.testing.assert_close(ours, expected, atol=TOLERANCE, rtol=0)

    renamed["cls.predictions.decoder.weight"] += 1
    save_file(renamed, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match="cls.predictions.decoder.weight differs from the tensor it is tied to"):
        resolve_checkpoint(folder)


def test_bert_variants_the_lab_cannot_run_are_named(tmp_path):
    folder = bert_folder(tmp_path / "bert", position_embedding_type="relative_key")
    with pytest.raises(CheckpointError, match="position_embedding_type 'relative_key' is not supported"):
        resolve_checkpoint(folder)


def test_distilbert_logits_match_transformers(tmp_path):
    folder = distilbert_folder(tmp_path / "distilbert")
    expected, ours = _masked_lm_logits(folder, [2, 17, 40, 99, 150, 3])
    torch.testing.assert_close(ours, expected, atol=TOLERANCE, rtol=0)


def test_roberta_logits_match_transformers_with_its_positions_offset(tmp_path):
    folder = roberta_folder(tmp_path / "roberta")
    assert resolve_checkpoint(folder).config.context_length == 64  # 66 rows, the first two before position 0
    ids = [0, 17, 40, 99, 150, 33, 2]  # no padding token (1) inside
    expected, ours = _masked_lm_logits(folder, ids)
    torch.testing.assert_close(ours, expected, atol=TOLERANCE, rtol=0)
    long_ids = [0] + [5 + i % 190 for i in range(62)] + [2]  # 64 tokens: the last row of the table is used
    expected, ours = _masked_lm_logits(folder, long_ids)
    torch.testing.assert_close(ours, expected, atol=TOLERANCE, rtol=0)


@pytest.mark.parametrize("overrides", [{}, {"activation_function": "gelu", "scale_embedding": False}])
def test_marian_logits_match_transformers(tmp_path, overrides):
    folder = marian_folder(tmp_path / "marian", **overrides)
    loaded = resolve_checkpoint(folder)
    assert loaded.config.architecture == "encoder-decoder" and loaded.tokenizer is None
    source, target = [5, 17, 40, 99, 150, 0], [199, 12, 61, 7]  # target starts at decoder_start_token_id
    with torch.no_grad():
        reference = reference_model(folder, "seq2seq")
        expected = reference(input_ids=torch.tensor([source]), decoder_input_ids=torch.tensor([target])).logits[0]
        ours = loaded.model(torch.tensor([target]), source=torch.tensor([source]))[0]  # (T, V)
    assert expected.abs().max() > 1
    torch.testing.assert_close(ours, expected, atol=TOLERANCE, rtol=0)


def test_a_marian_upload_with_stored_tables_opens(tmp_path):
    """Older uploads store each tower's embed_tokens and embed_positions, and lm_head, beside model.shared."""
    folder = marian_folder(tmp_path / "marian")
    tensors = load_file(str(folder / "model.safetensors"))
    shared = tensors["model.shared.weight"]
    for tower in ("encoder", "decoder"):
        tensors[f"model.{tower}.embed_tokens.weight"] = shared.clone()
        tensors[f"model.{tower}.embed_positions.weight"] = torch.zeros(64, 32)
    tensors["lm_head.weight"] = shared.clone()
    save_file(tensors, str(folder / "model.safetensors"))
    loaded = resolve_checkpoint(folder)
    with torch.no_grad():
        expected = reference_model(marian_folder(tmp_path / "again"), "seq2seq")(
            input_ids=torch.tensor([[5, 6]]), decoder_input_ids=torch.tensor([[199, 3]])).logits[0]
        ours = loaded.model(torch.tensor([[199, 3]]), source=torch.tensor([[5, 6]]))[0]
    torch.testing.assert_close(ours, expected, atol=TOLERANCE, rtol=0)


def test_marian_towers_of_different_widths_are_refused(tmp_path):
    folder = marian_folder(tmp_path / "marian")
    config = json.loads((folder / "config.json").read_text())
    config["decoder_ffn_dim"] = 128
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="encoder_ffn_dim and decoder_ffn_dim differ"):
        resolve_checkpoint(folder)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"embed_norm": True}, "plain token embeddings"),
        ({"embed_scale": True}, "plain token embeddings"),
        ({"head_bias": True}, "a plain vocabulary head"),
        ({"head_transform": True}, "a plain vocabulary head"),
    ],
)
def test_export_refuses_what_gpt2_and_llama_do_not_have(tmp_path, fields, message):
    from core.config import ModelConfig
    from core.hf_export import save_hf_folder
    from core.model import Transformer

    model = Transformer.from_seed(ModelConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32, **fields).validated())
    with pytest.raises(CheckpointError, match=message):
        save_hf_folder(model, tmp_path / "saved")
    assert not (tmp_path / "saved").exists()


@pytest.mark.parametrize("repo_id", ["google-bert/bert-base-uncased", "Helsinki-NLP/opus-mt-en-de"])
def test_parameter_formula_counts_the_new_parts(repo_id):
    """Embedding norm, head transform and head bias are counted by core.params as the built model has them."""
    from core.hf_import import hf_to_model_config
    from core.model_library import find_catalogue
    from core.params import instantiated_parameter_count, parameter_breakdown

    config = hf_to_model_config(find_catalogue(repo_id).config, repo_id, repo_id)
    for variant in (config, config.replace(bias=False), config.replace(tie_embeddings=False)):
        assert parameter_breakdown(variant).total == instantiated_parameter_count(variant)


@pytest.mark.parametrize("positional", ["learned", "sinusoidal"])
def test_the_kv_cache_and_the_lens_use_the_new_embedding_and_head_parts(positional):
    """A decoder with a scaled, normed embedding and BERT's head: the cached decode equals the recompute,
    and the logit lens's last stage equals the model's own logits."""
    from core.config import ModelConfig
    from core.experiments import kv_cache
    from core.experiments.follow_token import follow_token
    from core.model import Transformer
    from tests.float32 import REORDER_ULPS, float32_tolerance

    config = ModelConfig(vocab_size=40, d_model=16, n_heads=2, d_ff=32, positional=positional, embed_scale=True,
                         embed_norm=True, sinusoidal_halves=positional == "sinusoidal", head_transform=True,
                         head_bias=True).validated()
    model = Transformer.from_seed(config, seed=3)
    with torch.no_grad():
        model.head.bias.normal_(generator=torch.Generator().manual_seed(0))  # zero as initialised
    tokens = [3, 9, 1, 30, 7, 12, 5, 22]
    proof = kv_cache.kv_cache_proof(model, tokens, decode_steps=4)
    assert proof.max_difference <= float32_tolerance(kv_cache.logits_scale(model, tokens), 4 * REORDER_ULPS)
    lens = follow_token(model, tokens, position=5, k=1)
    with torch.no_grad():
        expected = int(model(torch.tensor([tokens]))[0, 5].argmax())
    assert int(lens.top_ids[-1, 0]) == expected
