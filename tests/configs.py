"""Hypothesis strategies shared by the tests: small but complete ModelConfigs."""

from __future__ import annotations

from hypothesis import strategies as st

from core.config import ModelConfig


@st.composite
def small_configs(draw, max_layers: int = 3, architectures=("decoder", "encoder", "encoder-decoder")) -> ModelConfig:
    """Any combination of the config's options, at sizes a CPU test runs in milliseconds."""
    n_heads = draw(st.sampled_from([1, 2, 4]))
    d_head = draw(st.sampled_from([2, 4, 8]))
    n_kv_heads = draw(st.sampled_from([None] + [h for h in (1, 2, 4) if n_heads % h == 0]))
    architecture = draw(st.sampled_from(architectures))
    attention = "bidirectional" if architecture == "encoder" else draw(st.sampled_from(["causal", "bidirectional"]))
    n_experts = draw(st.sampled_from([0, 0, 2, 3]))
    attention_only = not n_experts and draw(st.sampled_from([False, False, True]))
    return ModelConfig(
        name="drawn",
        vocab_size=draw(st.integers(5, 40)),
        context_length=draw(st.integers(8, 24)),
        d_model=n_heads * d_head,
        n_heads=n_heads,
        n_kv_heads=n_kv_heads,
        n_layers=draw(st.integers(1, max_layers)),
        n_encoder_layers=draw(st.sampled_from([None, 1, 2])) if architecture == "encoder-decoder" else None,
        d_ff=draw(st.sampled_from([4, 8, 16])),
        norm=draw(st.sampled_from(ModelConfig.choices("norm"))),
        norm_placement=draw(st.sampled_from(ModelConfig.choices("norm_placement"))),
        activation=draw(st.sampled_from(ModelConfig.choices("activation"))),
        positional=draw(st.sampled_from(ModelConfig.choices("positional"))),
        rope_base=draw(st.sampled_from([100.0, 10000.0])),
        rope_scale=draw(st.sampled_from([1.0, 4.0])),
        attention=attention,
        architecture=architecture,
        bias=draw(st.booleans()),
        tie_embeddings=draw(st.booleans()),
        n_experts=n_experts,
        top_k=draw(st.integers(1, n_experts)) if n_experts else 2,
        final_norm=draw(st.booleans()),
        attention_only=attention_only,
    ).validated()
