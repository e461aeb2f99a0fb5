"""Named configurations: the reading's toy block, the 2017 base model, real model shapes, and
small models fit for interactive use (the bundled trained models among them).

Each large preset is the real model's shape (vocabulary, width, depth, heads, FFN width,
normalisation, activation, positions, tying), so its parameter count is the real model's.
"""

from __future__ import annotations

from core.config import ModelConfig
from core.date_corpus import CHARACTERS as DATE_CHARACTERS
from core.going_deeper.recipe import bundled_configs as bundled_going_deeper_configs
from core.repeated_corpus import LETTERS

CHAR_VOCAB = 65  # distinct characters of the bundled Shakespeare corpus
BPE_VOCAB = 1536  # the bundled subword model's byte-level BPE: 256 bytes and 1,280 merges

_GPT2 = dict(
    vocab_size=50257,
    context_length=1024,
    norm="layernorm",
    norm_placement="pre",
    activation="gelu-tanh",  # GPT-2's gelu_new
    positional="learned",
    bias=True,
    tie_embeddings=True,
)
_LLAMA = dict(
    norm="rmsnorm",
    norm_placement="pre",
    activation="swiglu",
    positional="rope",
    bias=False,
    tie_embeddings=False,
)

_TINY_MOE = ModelConfig(  # top-2 of 4 experts: the bundled mixture of experts
    name="tiny-moe",
    vocab_size=CHAR_VOCAB,
    context_length=128,
    d_model=64,
    n_heads=4,
    n_kv_heads=2,
    n_layers=2,
    d_ff=128,
    n_experts=4,
    top_k=2,
    **_LLAMA,
)

PRESETS: dict[str, ModelConfig] = {
    preset.name: preset.validated()
    for preset in [
        # The reading's block: d_model 64, 4 heads, d_ff 256, pre-norm, GELU; 49,984 block parameters.
        ModelConfig(
            name="textbook-block",
            vocab_size=CHAR_VOCAB,
            context_length=8,
            d_model=64,
            n_heads=4,
            n_layers=1,
            d_ff=256,
            positional="none",
        ),
        # Vaswani et al. 2017, base: 6+6 post-norm layers, ReLU, sinusoids, shared 37k BPE vocabulary.
        ModelConfig(
            name="transformer-base",
            vocab_size=37000,
            context_length=512,
            d_model=512,
            n_heads=8,
            n_layers=6,
            d_ff=2048,
            norm_placement="post",
            activation="relu",
            positional="sinusoidal",
            architecture="encoder-decoder",
            final_norm=False,
        ),
        ModelConfig(name="gpt2-small", d_model=768, n_heads=12, n_layers=12, d_ff=3072, **_GPT2),
        ModelConfig(name="gpt2-medium", d_model=1024, n_heads=16, n_layers=24, d_ff=4096, **_GPT2),
        ModelConfig(name="gpt2-large", d_model=1280, n_heads=20, n_layers=36, d_ff=5120, **_GPT2),
        ModelConfig(name="gpt2-xl", d_model=1600, n_heads=25, n_layers=48, d_ff=6400, **_GPT2),
        ModelConfig(
            name="llama2-7b",
            vocab_size=32000,
            context_length=4096,
            d_model=4096,
            n_heads=32,
            n_layers=32,
            d_ff=11008,
            **_LLAMA,
        ),
        ModelConfig(
            name="llama3-8b",
            vocab_size=128256,
            context_length=8192,
            d_model=4096,
            n_heads=32,
            n_kv_heads=8,
            n_layers=32,
            d_ff=14336,
            rope_base=500000.0,
            **_LLAMA,
        ),
        ModelConfig(
            name="mixtral-8x7b",
            vocab_size=32000,
            context_length=32768,
            d_model=4096,
            n_heads=32,
            n_kv_heads=8,
            n_layers=32,
            d_ff=14336,
            n_experts=8,
            top_k=2,
            rope_base=1000000.0,
            **_LLAMA,
        ),
        # Small models for interactive use; the first two are the shapes of the bundled trained models.
        ModelConfig(
            name="tiny-gpt",
            vocab_size=CHAR_VOCAB,
            context_length=256,
            d_model=128,
            n_heads=4,
            n_layers=4,
            d_ff=512,
            norm="layernorm",
            activation="gelu",
            positional="learned",
            tie_embeddings=True,
        ),
        ModelConfig(
            name="tiny-llama",
            vocab_size=CHAR_VOCAB,
            context_length=256,
            d_model=128,
            n_heads=4,
            n_kv_heads=2,
            n_layers=4,
            d_ff=352,
            **_LLAMA,
        ),
        ModelConfig(  # two layers of attention, trained on repeated random letters: the bundled induction model
            name="tiny-induction",
            vocab_size=len(LETTERS) + 1,  # the letters and the space between sequences
            context_length=64,
            d_model=64,
            n_heads=4,
            n_layers=2,
            d_ff=256,
            norm="layernorm",
            activation="gelu",
            positional="learned",
            tie_embeddings=True,
        ),
        ModelConfig(  # tiny-induction without FFNs: the attention-only two-layer model of Olsson et al. (2022)
            name="tiny-induction-attn",
            vocab_size=len(LETTERS) + 1,
            context_length=64,
            d_model=64,
            n_heads=4,
            n_layers=2,
            d_ff=256,  # unused: attention-only blocks have no FFN
            norm="layernorm",
            activation="gelu",
            positional="learned",
            tie_embeddings=True,
            attention_only=True,
        ),
        ModelConfig(  # tiny-gpt over a 1,536-token byte-level BPE: the bundled subword model
            name="tiny-gpt-bpe",
            vocab_size=BPE_VOCAB,
            context_length=256,
            d_model=128,
            n_heads=4,
            n_layers=4,
            d_ff=512,
            norm="layernorm",
            activation="gelu",
            positional="learned",
            tie_embeddings=True,
        ),
        ModelConfig(  # a masked LM of the Shakespeare characters and the blank: the bundled encoder
            name="tiny-encoder",
            vocab_size=CHAR_VOCAB + 1,
            context_length=128,
            d_model=64,
            n_heads=4,
            n_layers=2,
            d_ff=256,
            positional="learned",
            attention="bidirectional",
            architecture="encoder",
        ),
        # Dates in words to ISO: the bundled encoder-decoder. RoPE rotates queries and keys within each tower,
        # so cross-attention matches content alone; with sinusoids added to the embeddings this size learned the
        # months but not to copy digits (0.69 nats a target character after 3,000 steps; RoPE: 0.0004 after
        # 1,000). One encoder layer keeps each source position about its own characters, so cross-attention
        # lands on the word it copies (mean share on the right word, best head: 0.86 with one layer, 0.34 with two).
        ModelConfig(
            name="tiny-encoder-decoder",
            vocab_size=len(DATE_CHARACTERS),
            context_length=64,
            d_model=64,
            n_heads=4,
            n_layers=2,
            n_encoder_layers=1,
            d_ff=256,
            positional="rope",
            architecture="encoder-decoder",
        ),
        _TINY_MOE,
        # tiny-moe with one dense FFN as wide as its active experts together, its yardstick: the MoE's active size
        # less its routers (d_model x n_experts weights a layer, 512 in all), which a dense FFN has no use for
        _TINY_MOE.replace(name="tiny-moe-dense", d_ff=_TINY_MOE.top_k * _TINY_MOE.d_ff, n_experts=0),
        # The going-deeper models: the ladder's rungs from 2017 to today and the context models (core.going_deeper)
        *bundled_going_deeper_configs(),
    ]
}

DEFAULT_PRESET = "tiny-gpt"


class UnknownPresetError(KeyError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"unknown preset {self.name!r}; choose one of: {', '.join(PRESETS)}"


def get_preset(name: str) -> ModelConfig:
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownPresetError(name) from None


def preset_names() -> list[str]:
    return list(PRESETS)
