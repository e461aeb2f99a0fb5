import pytest
from hypothesis import given

from core.model import Transformer, count_parameters
from core.params import instantiated_parameter_count, parameter_breakdown
from core.presets import PRESETS, get_preset
from tests.configs import small_configs


def test_reading_block_has_49984_parameters():
    block = parameter_breakdown(get_preset("textbook-block")).decoder_block
    assert block.total == 49_984
    assert (block.attention, block.ffn, block.norms) == (64 * 192 + 192 + 64 * 64 + 64, 64 * 256 + 256 + 256 * 64 + 64, 256)


def test_reading_gpt2_small_figures():
    tied = parameter_breakdown(get_preset("gpt2-small"))
    untied = parameter_breakdown(get_preset("gpt2-small").replace(tie_embeddings=False))
    assert tied.total == 124_439_808
    assert untied.total == 163_037_184
    assert tied.groups["token_embeddings"] == 38_597_376
    assert tied.groups["position_embeddings"] == 786_432
    block = tied.decoder_block
    assert (block.attention, block.ffn, block.norms, block.total) == (2_362_368, 4_722_432, 3_072, 7_087_872)
    assert f"{block.ffn_share:.1%}" == "66.6%"
    assert tied.tied_saving == untied.total - tied.total


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_formula_equals_meta_instantiation(name):
    config = PRESETS[name]
    assert parameter_breakdown(config).total == instantiated_parameter_count(config)


def test_real_model_totals():
    # Published sizes of the real models whose shapes the presets copy.
    assert parameter_breakdown(get_preset("llama2-7b")).total == 6_738_415_616
    assert parameter_breakdown(get_preset("llama3-8b")).total == 8_030_261_248
    mixtral = parameter_breakdown(get_preset("mixtral-8x7b"))
    assert mixtral.total == 46_702_792_704
    assert mixtral.active == 12_879_925_248


def test_meta_instantiation_allocates_nothing():
    model = Transformer.on_meta(get_preset("mixtral-8x7b"))
    assert all(p.device.type == "meta" for p in model.parameters())


@given(small_configs())
def test_formula_equals_instantiation_for_drawn_configs(config):
    breakdown = parameter_breakdown(config)
    assert breakdown.total == count_parameters(Transformer.on_meta(config))
    assert sum(breakdown.groups.values()) == breakdown.total
    assert breakdown.active <= breakdown.total


def test_groups_of_an_untied_moe_model():
    config = get_preset("tiny-moe")
    b = parameter_breakdown(config)
    assert b.groups["head"] == config.vocab_size * config.d_model
    assert b.groups["router"] == config.n_layers * config.d_model * config.n_experts
    idle = (config.n_experts - config.top_k) * b.decoder_block.expert * config.n_layers
    assert b.active == b.total - idle
