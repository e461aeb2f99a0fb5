import dataclasses

import pytest

from core.config import ConfigError, ModelConfig, config_field_docs
from core.presets import PRESETS, UnknownPresetError, get_preset


@pytest.mark.parametrize(
    ("changes", "field", "hint"),
    [
        ({"d_model": 64, "n_heads": 5}, "n_heads", "not divisible"),
        ({"n_heads": 4, "n_kv_heads": 3}, "n_kv_heads", "not a multiple"),
        ({"d_model": 12, "n_heads": 4, "positional": "rope"}, "positional", "odd"),
        ({"d_model": 0}, "d_model", "positive"),
        ({"n_layers": -2}, "n_layers", "positive"),
        ({"vocab_size": 0}, "vocab_size", "positive"),
        ({"d_ff": 0}, "d_ff", "positive"),
        ({"context_length": 0}, "context_length", "positive"),
        ({"n_kv_heads": 0}, "n_kv_heads", "positive"),
        ({"n_experts": -1}, "n_experts", "0 (dense FFN)"),
        ({"n_experts": 4, "top_k": 5}, "top_k", "between 1 and n_experts"),
        ({"n_experts": 4, "top_k": 0}, "top_k", "between 1 and n_experts"),
        ({"rope_base": 1.0}, "rope_base", "greater than 1"),
        ({"rope_scale": 0.0}, "rope_scale", "positive"),
        ({"norm_eps": float("nan")}, "norm_eps", "positive finite"),
        ({"norm": "batchnorm"}, "norm", "not one of"),
        ({"activation": "tanh"}, "activation", "not one of"),
        ({"architecture": "encoder", "attention": "causal"}, "attention", "bidirectional"),
        ({"d_model": 1 << 21}, "d_model", "too large"),
        ({"name": "  "}, "name", "non-empty"),
    ],
)
def test_impossible_configs_name_the_field_and_the_fix(changes, field, hint):
    with pytest.raises(ConfigError) as caught:
        dataclasses.replace(ModelConfig(), **changes).validated()
    assert caught.value.field == field
    assert hint in caught.value.message
    assert str(caught.value).startswith(f"{field}: ")


def test_replace_validates():
    with pytest.raises(ConfigError):
        ModelConfig().replace(n_heads=3)
    assert ModelConfig().replace(n_layers=5).n_layers == 5


def test_round_trip_through_dict_for_every_preset():
    for config in PRESETS.values():
        assert ModelConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"d_model": "64"}, "d_model"),
        ({"d_model": 64.0}, "d_model"),
        ({"bias": 1}, "bias"),
        ({"n_layers": True}, "n_layers"),
        ({"rope_base": "big"}, "rope_base"),
        ({"norm": 3}, "norm"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_from_dict_rejects_wrong_types_and_unknown_fields(data, field):
    with pytest.raises(ConfigError) as caught:
        ModelConfig.from_dict(data)
    assert caught.value.field == field


def test_from_dict_rejects_non_objects():
    with pytest.raises(ConfigError):
        ModelConfig.from_dict(["d_model", 64])


def test_derived_sizes():
    config = get_preset("llama3-8b")
    assert config.kv_heads == 8 and config.d_head == 128
    base = get_preset("transformer-base")
    assert base.encoder_layers == 6 and base.decoder_layers == 6
    assert get_preset("tiny-encoder").decoder_layers == 0


def test_every_literal_field_lists_its_choices():
    assert ModelConfig.choices("positional") == ("none", "sinusoidal", "learned", "rope", "alibi")
    assert ModelConfig.choices("d_model") == ()


def test_field_docs_cover_every_field():
    docs = config_field_docs()
    assert set(docs) == set(ModelConfig.field_names())
    assert all(docs.values())


def test_unknown_preset_lists_the_choices():
    with pytest.raises(UnknownPresetError) as caught:
        get_preset("gpt5")
    assert "gpt2-small" in str(caught.value)


def test_required_presets_exist():
    required = {
        "textbook-block", "transformer-base", "gpt2-small", "gpt2-medium", "gpt2-large", "gpt2-xl",
        "llama2-7b", "llama3-8b", "mixtral-8x7b",
    }
    assert required <= set(PRESETS)
