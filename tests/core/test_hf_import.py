"""Hugging Face import: tiny random GPT-2 and Llama models give the same logits in this app's model.

The reference models come from `transformers` (a test-only dependency). Their weights are redrawn
with a larger spread than Hugging Face's N(0, 0.02) initialisation, so that a wrong permutation or
transpose moves the logits by far more than the 1e-4 tolerance.
"""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from core.checkpoints import CheckpointError, resolve_checkpoint
from core.hf_import import interleave_rope_rows, load_hf_folder

transformers = pytest.importorskip("transformers")

TOLERANCE = 1e-4


def _spread_weights(model: torch.nn.Module, seed: int = 0) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name or name.split(".")[-2].startswith("ln_"):
                param.copy_(1 + 0.1 * torch.randn(param.shape, generator=generator))
            else:
                param.copy_(0.3 * torch.randn(param.shape, generator=generator))


def _save(model, folder) -> None:
    model.save_pretrained(str(folder), safe_serialization=True)


def _compare(hf_model, folder, vocab_size: int, length: int = 24) -> None:
    ids = torch.randint(0, vocab_size, (2, length), generator=torch.Generator().manual_seed(5))  # (2, T)
    with torch.no_grad():
        expected = hf_model(ids).logits  # (2, T, V)
        loaded = resolve_checkpoint(folder)
        actual = loaded.model(ids)  # (2, T, V)
    assert actual.shape == expected.shape
    assert expected.abs().max() > 1.0  # logits large enough for the comparison to mean something
    torch.testing.assert_close(actual, expected, atol=TOLERANCE, rtol=0)


# ---- GPT-2 --------------------------------------------------------------------------------------


def _gpt2(folder, seed=0, **overrides):
    settings = {
        "vocab_size": 70,
        "n_positions": 32,
        "n_embd": 32,
        "n_layer": 2,
        "n_head": 4,
        "activation_function": "gelu",
        "bos_token_id": 0,
        "eos_token_id": 0,
    }
    settings.update(overrides)
    torch.manual_seed(seed)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**settings)).eval()
    _spread_weights(model, seed)
    model.tie_weights()
    _save(model, folder)
    return model


def test_gpt2_logits_match(tmp_path):
    model = _gpt2(tmp_path)
    _compare(model, tmp_path, 70)
    loaded = load_hf_folder(tmp_path)
    config = loaded.config
    assert (config.norm, config.positional, config.activation, config.tie_embeddings) == (
        "layernorm",
        "learned",
        "gelu",
        True,
    )
    assert (config.d_model, config.n_heads, config.n_layers, config.d_ff, config.context_length) == (32, 4, 2, 128, 32)
    assert loaded.model.head.weight is loaded.model.tok_emb.weight
    assert "gpt2" in loaded.source


def test_gpt2_with_n_inner_and_relu(tmp_path):
    model = _gpt2(tmp_path, n_inner=48, activation_function="relu")
    _compare(model, tmp_path, 70)


@pytest.mark.parametrize("activation", ["gelu_new", "gelu_pytorch_tanh"])
def test_gpt2_tanh_gelu_matches(tmp_path, activation):
    """GPT-2's own activation: the tanh approximation, imported as gelu-tanh rather than exact GELU."""
    model = _gpt2(tmp_path, activation_function=activation)
    _compare(model, tmp_path, 70)
    assert resolve_checkpoint(tmp_path).config.activation == "gelu-tanh"


def test_gpt2_unknown_activation_is_named(tmp_path):
    _gpt2(tmp_path)
    _rewrite_config(tmp_path, activation_function="swish")
    with pytest.raises(CheckpointError, match="activation_function 'swish' is not supported"):
        resolve_checkpoint(tmp_path)


def test_gpt2_without_transformer_prefix_and_with_mask_buffers(tmp_path):
    """The original OpenAI upload names tensors wte.weight, h.0..., and stores the causal mask."""
    model = _gpt2(tmp_path)
    tensors = load_file(str(tmp_path / "model.safetensors"))
    renamed = {name.removeprefix("transformer."): t for name, t in tensors.items()}
    renamed["h.0.attn.bias"] = torch.tril(torch.ones(1, 1, 32, 32))
    save_file(renamed, str(tmp_path / "model.safetensors"))
    _compare(model, tmp_path, 70)


# ---- Llama --------------------------------------------------------------------------------------


def _llama(folder, seed=0, **overrides):
    settings = {
        "vocab_size": 60,
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "max_position_embeddings": 64,
        "rms_norm_eps": 1e-5,
        "rope_theta": 1000.0,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "tie_word_embeddings": False,
    }
    settings.update(overrides)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**settings)).eval()
    _spread_weights(model, seed)
    if settings["tie_word_embeddings"]:
        model.tie_weights()
    _save(model, folder)
    return model


@pytest.mark.parametrize("kv_heads", [4, 2, 1], ids=["mha", "gqa", "mqa"])
def test_llama_logits_match(tmp_path, kv_heads):
    model = _llama(tmp_path, num_key_value_heads=kv_heads)
    _compare(model, tmp_path, 60, length=40)
    config = resolve_checkpoint(tmp_path).config
    assert (config.n_heads, config.kv_heads, config.rope_base, config.norm_eps) == (4, kv_heads, 1000.0, 1e-5)
    assert (config.norm, config.positional, config.activation, config.bias) == ("rmsnorm", "rope", "swiglu", False)


def test_llama_linear_rope_scaling_and_tied_head(tmp_path):
    model = _llama(
        tmp_path, num_key_value_heads=2, rope_scaling={"rope_type": "linear", "factor": 4.0}, tie_word_embeddings=True
    )
    _compare(model, tmp_path, 60, length=40)
    loaded = resolve_checkpoint(tmp_path)
    assert loaded.config.rope_scale == 4.0
    assert loaded.model.head.weight is loaded.model.tok_emb.weight


def test_llama_with_biases(tmp_path):
    model = _llama(tmp_path, num_key_value_heads=2, attention_bias=True, mlp_bias=True)
    _compare(model, tmp_path, 60)


def test_interleave_rope_rows_orders_each_head_as_pairs():
    rows = torch.arange(2 * 6).float().unsqueeze(1)  # (H*d, 1): two heads of d_head 6
    order = interleave_rope_rows(rows, n_heads=2, d_head=6).squeeze(1).long().tolist()
    assert order == [0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11]


def test_tokenizer_json_is_loaded(tmp_path):
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    _llama(tmp_path)
    tokenizer = Tokenizer(WordLevel({"<unk>": 0, "to": 1, "be": 2, "or": 3, "not": 4}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    loaded = resolve_checkpoint(tmp_path)
    assert loaded.tokenizer is not None
    assert loaded.tokenizer.encode("to be or not to be") == [1, 2, 3, 4, 1, 2]


# ---- refused folders ----------------------------------------------------------------------------


def _rewrite_config(folder, **changes):
    data = json.loads((folder / "config.json").read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    (folder / "config.json").write_text(json.dumps(data))


def test_unsupported_model_type(tmp_path):
    _llama(tmp_path)
    _rewrite_config(tmp_path, model_type="t5")
    with pytest.raises(CheckpointError, match="model_type 't5' is not supported"):
        resolve_checkpoint(tmp_path)


@pytest.mark.parametrize("rope_type", ["dynamic", "yarn", "llama3"])
def test_unsupported_rope_scaling(tmp_path, rope_type):
    _llama(tmp_path)
    _rewrite_config(tmp_path, rope_scaling={"rope_type": rope_type, "factor": 2.0}, rope_parameters=None)
    with pytest.raises(CheckpointError, match=f"RoPE scaling type '{rope_type}' is not supported"):
        resolve_checkpoint(tmp_path)


def test_pickle_only_folder_is_refused(tmp_path):
    _llama(tmp_path)
    (tmp_path / "model.safetensors").rename(tmp_path / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="safetensors only"):
        resolve_checkpoint(tmp_path)


def test_missing_tensor_is_named(tmp_path):
    _llama(tmp_path)
    tensors = load_file(str(tmp_path / "model.safetensors"))
    del tensors["model.layers.1.self_attn.k_proj.weight"]
    save_file(tensors, str(tmp_path / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"missing tensor model\.layers\.1\.self_attn\.k_proj\.weight"):
        resolve_checkpoint(tmp_path)


def test_config_and_weights_disagree(tmp_path):
    _llama(tmp_path, num_key_value_heads=2)
    _rewrite_config(tmp_path, num_key_value_heads=4)
    with pytest.raises(
        CheckpointError, match=r"k_proj\.weight has shape \[16, 32\] but config\.json implies \[32, 32\]"
    ):
        resolve_checkpoint(tmp_path)


def test_gpt2_config_and_weights_disagree(tmp_path):
    _gpt2(tmp_path)
    _rewrite_config(tmp_path, n_inner=64)
    with pytest.raises(
        CheckpointError, match=r"c_fc\.weight has shape \[32, 128\] but config\.json implies \[32, 64\]"
    ):
        resolve_checkpoint(tmp_path)


def test_unexpected_tensor_is_named(tmp_path):
    _gpt2(tmp_path)
    tensors = load_file(str(tmp_path / "model.safetensors"))
    tensors["transformer.h.0.adapter.weight"] = torch.zeros(2, 2)
    save_file(tensors, str(tmp_path / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"unexpected tensors h\.0\.adapter\.weight"):
        resolve_checkpoint(tmp_path)


def test_config_missing_a_size(tmp_path):
    _llama(tmp_path)
    _rewrite_config(tmp_path, hidden_size=None)
    with pytest.raises(CheckpointError, match="missing hidden_size"):
        resolve_checkpoint(tmp_path)


def test_config_that_does_not_fit_the_app(tmp_path):
    _llama(tmp_path)
    _rewrite_config(tmp_path, num_attention_heads=3, head_dim=None)
    with pytest.raises(CheckpointError, match="n_heads"):
        resolve_checkpoint(tmp_path)


# ---- Qwen2 --------------------------------------------------------------------------------------


def test_qwen2_imports_with_qkv_biases_only(tmp_path):
    from core.params import instantiated_parameter_count, parameter_breakdown
    from tests.hf_folders import qwen2_folder

    qwen2_folder(tmp_path, tie_word_embeddings=False)
    hf_model = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path)).eval()
    loaded = resolve_checkpoint(tmp_path)
    config = loaded.config
    assert (config.bias, config.qkv_bias, config.positional, config.activation) == (False, True, "rope", "swiglu")
    hf_count = sum(p.numel() for p in hf_model.parameters())
    assert parameter_breakdown(config).total == instantiated_parameter_count(config) == hf_count
    _compare(hf_model, tmp_path, config.vocab_size)


def test_qwen2_sliding_window_is_refused(tmp_path):
    from tests.hf_folders import qwen2_folder

    qwen2_folder(tmp_path)
    _rewrite_config(tmp_path, use_sliding_window=True, sliding_window=8)
    with pytest.raises(CheckpointError, match="use_sliding_window"):
        resolve_checkpoint(tmp_path)
