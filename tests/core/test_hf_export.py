"""Saving as a Hugging Face folder: transformers loads it with the same logits, and so does the app."""

from __future__ import annotations

import json

import pytest
import torch

from core.checkpoints import CheckpointError, load_bundled, resolve_checkpoint
from core.config import ModelConfig
from core.hf_export import deinterleave_rope_rows, hf_model_type, save_hf_folder, tokenizer_json_of
from core.hf_import import interleave_rope_rows
from core.model import Transformer
from core.tokenizers import CharTokenizer, WordTokenizer
from resources import resource_path

transformers = pytest.importorskip("transformers")

TOLERANCE = 1e-4
CORPUS = resource_path("tinyshakespeare.txt").read_text(encoding="utf-8")


def _random_model(**fields) -> Transformer:
    settings = {"vocab_size": 50, "context_length": 32, "d_model": 32, "n_heads": 4, "n_layers": 2, "d_ff": 48}
    settings.update(fields)
    config = ModelConfig(name="exported", **settings).validated()
    torch.manual_seed(0)
    model = Transformer(config).eval()
    with torch.no_grad():  # a wide spread, so that a wrong transpose or permutation shows far above 1e-4
        for name, param in model.named_parameters():
            param.copy_(1 + 0.1 * torch.randn_like(param) if "norm" in name else 0.3 * torch.randn_like(param))
    return model


def _assert_transformers_agrees(model: Transformer, folder) -> None:
    ids = torch.randint(0, model.config.vocab_size, (2, 20), generator=torch.Generator().manual_seed(1))  # (2, T)
    reference = transformers.AutoModelForCausalLM.from_pretrained(str(folder)).eval()
    with torch.no_grad():
        expected = model(ids)  # (2, T, V)
        assert expected.abs().max() > 1.0
        torch.testing.assert_close(reference(ids).logits, expected, atol=TOLERANCE, rtol=0)
        torch.testing.assert_close(resolve_checkpoint(folder).model(ids), expected, atol=TOLERANCE, rtol=0)


@pytest.mark.parametrize(
    "fields",
    [
        {"activation": "gelu-tanh"},
        {"activation": "relu", "tie_embeddings": False},
        {"norm": "rmsnorm", "positional": "rope", "activation": "swiglu", "bias": False, "n_kv_heads": 2,
         "tie_embeddings": False},
        {"norm": "rmsnorm", "positional": "rope", "activation": "swiglu", "bias": True, "rope_scale": 2.0,
         "rope_base": 500.0},
        {"norm": "rmsnorm", "positional": "rope", "activation": "swiglu", "bias": False, "qkv_bias": True,
         "n_kv_heads": 1},
    ],
    ids=["gpt2", "gpt2-untied", "llama-gqa", "llama-bias-linear-rope", "qwen2"],
)
def test_transformers_loads_the_saved_folder_with_the_same_logits(tmp_path, fields):
    model = _random_model(**fields)
    folder = save_hf_folder(model, tmp_path / "saved")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert config["model_type"] == hf_model_type(model.config)
    _assert_transformers_agrees(model, folder)


@pytest.mark.parametrize("name", ["tiny-gpt", "tiny-llama"])
def test_bundled_models_saved_for_transformers_keep_tokenizer_name_and_record(tmp_path, name):
    from tokenizers import Tokenizer

    loaded = load_bundled(name)
    folder = save_hf_folder(loaded.model, tmp_path / name, tokenizer=loaded.tokenizer, metadata=loaded.metadata)
    _assert_transformers_agrees(loaded.model, folder)
    text = CORPUS[:5000]
    assert Tokenizer.from_file(str(folder / "tokenizer.json")).encode(text).ids == loaded.tokenizer.encode(text)
    assert transformers.AutoTokenizer.from_pretrained(str(folder))(text)["input_ids"] == loaded.tokenizer.encode(text)
    again = resolve_checkpoint(folder)
    assert again.config == loaded.config  # the name too, from the lab's record
    assert again.metadata["val_loss_nats_per_char"] == loaded.metadata["val_loss_nats_per_char"]


def test_word_tokenizer_json_encodes_identically():
    from tokenizers import Tokenizer

    words = WordTokenizer.from_text(CORPUS[:20000], max_words=300)
    backend = Tokenizer.from_str(json.dumps(tokenizer_json_of(words)))
    text = CORPUS[20000:23000]
    assert backend.encode(text).ids == words.encode(text)
    assert backend.decode(words.encode("To be, or not")) == words.decode(words.encode("To be, or not"))


def test_char_tokenizer_json_decodes_without_spaces():
    from tokenizers import Tokenizer

    chars = CharTokenizer.from_text(CORPUS)
    backend = Tokenizer.from_str(json.dumps(tokenizer_json_of(chars)))
    assert backend.decode(chars.encode("To be,\nor not")) == "To be,\nor not"


def test_rope_rows_round_trip():
    weight = torch.arange(4 * 8 * 3, dtype=torch.float32).reshape(4 * 8, 3)  # (H*d, D)
    assert torch.equal(deinterleave_rope_rows(interleave_rope_rows(weight, 4, 8), 4, 8), weight)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"norm_placement": "post"}, "pre-norm"),
        ({"n_experts": 2}, "no experts"),
        ({"positional": "sinusoidal"}, "learned positions"),
        ({"n_kv_heads": 2}, "one key/value head per query head"),
        ({"architecture": "encoder", "attention": "bidirectional"}, "causal decoder"),
    ],
)
def test_models_without_a_hugging_face_equivalent_are_refused_before_writing(tmp_path, fields, message):
    model = _random_model(**fields)
    with pytest.raises(CheckpointError, match=message):
        save_hf_folder(model, tmp_path / "saved")
    assert not (tmp_path / "saved").exists()
