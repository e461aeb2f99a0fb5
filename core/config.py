"""ModelConfig: every architectural choice of the lab's Transformer as one frozen dataclass.

Every variant the app can show is a field here, not a subclass of the model: the GUI edits these
fields, the CLI prints them, sessions store them as JSON.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal, get_args

Norm = Literal["layernorm", "rmsnorm"]
NormPlacement = Literal["pre", "post"]
Activation = Literal["relu", "gelu", "gelu-tanh", "swiglu", "silu"]
Positional = Literal["none", "sinusoidal", "learned", "rope", "alibi"]
AttentionKind = Literal["causal", "bidirectional"]
Architecture = Literal["decoder", "encoder", "encoder-decoder"]


class ConfigError(ValueError):
    """An impossible configuration: names the offending field and how to fix it."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.message = message


@dataclass(frozen=True)
class ModelConfig:
    name: str = "custom"  # shown in the title bar and status bar; not part of the architecture
    vocab_size: int = 65  # number of distinct token ids the embedding table holds
    context_length: int = 256  # the length it was trained at; a learned position table has this many rows
    d_model: int = 64  # width of the residual stream
    n_heads: int = 4  # query heads per attention layer; d_head = d_model / n_heads
    n_kv_heads: int | None = None  # key/value heads (grouped-query attention); None means n_heads
    n_layers: int = 2  # blocks in the decoder-only / encoder-only stack, or in each tower
    n_encoder_layers: int | None = None  # encoder tower depth of an encoder-decoder; None means n_layers
    d_ff: int = 256  # hidden width of the feed-forward network (per expert for mixture-of-experts)
    norm: Norm = "layernorm"  # LayerNorm (centre + scale) or RMSNorm (scale only)
    norm_placement: NormPlacement = "pre"  # pre: x + f(norm(x)); post: norm(x + f(x)) as in 2017
    norm_eps: float = 1e-5  # added to the variance before the square root
    activation: Activation = "gelu"  # FFN non-linearity (gelu-tanh is GPT-2's approximation); swiglu adds a gate matrix
    positional: Positional = "learned"  # how order enters: added table, rotated q/k, or score bias
    rope_base: float = 10000.0  # RoPE: wavelengths grow geometrically from 2*pi to base*2*pi
    rope_scale: float = 1.0  # RoPE position interpolation: positions are divided by this factor
    attention: AttentionKind = "causal"  # self-attention of a decoder: causal mask or none
    architecture: Architecture = "decoder"  # decoder-only, encoder-only, or two towers with cross-attention
    attention_only: bool = False  # blocks without an FFN or its norm: the attention-only models of the induction papers
    bias: bool = True  # bias vectors on linear layers and LayerNorm shifts
    qkv_bias: bool = False  # biases on the query, key and value projections even when bias is off (Qwen2)
    tie_embeddings: bool = True  # the output head reuses the token embedding matrix
    n_experts: int = 0  # mixture-of-experts FFN: experts per block; 0 means one dense FFN
    top_k: int = 2  # mixture-of-experts: experts each token is routed to
    final_norm: bool = True  # a norm before the head (pre-norm stacks need it; 2017 post-norm has none)
    embed_scale: bool = False  # token embeddings times sqrt(d_model) before positions are added (2017, Marian)
    embed_norm: bool = False  # a norm over embeddings plus positions before the first block (BERT)
    sinusoidal_halves: bool = False  # sinusoidal layout: all sines then all cosines (Marian), not interleaved pairs
    head_transform: bool = False  # dense + activation + norm before the vocabulary head (BERT's masked-LM head)
    head_bias: bool = False  # a bias added to every logit (BERT's decoder bias, Marian's final_logits_bias)

    # ---- derived sizes -------------------------------------------------------------------------
    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def accepted_length(self) -> int:
        """Longest input accepted: a learned table has its rows only; the other schemes compute any position, and
        the app accepts up to MAX_STRETCH_LENGTH of them (or the trained length, if longer)."""
        if self.positional == "learned":
            return self.context_length
        return max(self.context_length, MAX_STRETCH_LENGTH)

    def length_refusal(self, length: int) -> str:
        """Why an input of `length` tokens is refused, or "" when it is accepted."""
        if length <= self.accepted_length:
            return ""
        if self.positional == "learned":
            return (f"{length} tokens exceed the model's context length of {self.context_length} "
                    f"(its learned position table has {self.context_length} rows)")
        return (f"{length} tokens exceed the {self.accepted_length:,} the app accepts for {self.positional} positions "
                f"(trained at {self.context_length})")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def encoder_layers(self) -> int:
        """Blocks in the encoder tower (0 for a decoder-only model)."""
        if self.architecture == "decoder":
            return 0
        if self.architecture == "encoder":
            return self.n_layers
        return self.n_layers if self.n_encoder_layers is None else self.n_encoder_layers

    @property
    def decoder_layers(self) -> int:
        """Blocks in the decoder tower (0 for an encoder-only model)."""
        return 0 if self.architecture == "encoder" else self.n_layers

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def self_attention_causal(self) -> bool:
        """Whether the self-attention of the token stream (the decoder, or the only stack) is causal."""
        return self.architecture != "encoder" and self.attention == "causal"

    # ---- construction helpers -----------------------------------------------------------------
    def replace(self, **changes: Any) -> ModelConfig:
        """A validated copy with some fields changed."""
        return dataclasses.replace(self, **changes).validated()

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> ModelConfig:
        """Build and validate a config from untrusted JSON-like data."""
        if not isinstance(data, dict):
            raise ConfigError("config", "expected a JSON object of config fields")
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ConfigError(unknown[0], f"unknown config field; known fields are {', '.join(known)}")
        values: dict[str, Any] = {}
        for name, value in data.items():
            values[name] = _coerce_field(name, known[name], value)
        return cls(**values).validated()

    def validated(self) -> ModelConfig:
        validate(self)
        return self

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def choices(cls, field_name: str) -> tuple[str, ...]:
        """The allowed values of a Literal-typed field (empty for numeric fields)."""
        return _LITERAL_CHOICES.get(field_name, ())


_LITERAL_CHOICES: dict[str, tuple[str, ...]] = {
    "norm": get_args(Norm),
    "norm_placement": get_args(NormPlacement),
    "activation": get_args(Activation),
    "positional": get_args(Positional),
    "attention": get_args(AttentionKind),
    "architecture": get_args(Architecture),
}
_INT_FIELDS = {"vocab_size", "context_length", "d_model", "n_heads", "n_layers", "d_ff", "n_experts", "top_k"}
_OPTIONAL_INT_FIELDS = {"n_kv_heads", "n_encoder_layers"}
_FLOAT_FIELDS = {"norm_eps", "rope_base", "rope_scale"}
BOOL_FIELDS = frozenset({"attention_only", "bias", "qkv_bias", "tie_embeddings", "final_norm", "embed_scale",
                         "embed_norm", "sinusoidal_halves", "head_transform", "head_bias"})

# Sinusoidal, RoPE, ALiBi and no positions place any position; past the trained length this bound keeps an input's
# attention (T x T per head) small enough for the lab's views and commands.
MAX_STRETCH_LENGTH = 1024
MAX_NAME_CHARS = 256  # one line in the title bar, status bar and captions; a folder name (255 bytes) fits
# Beyond these sizes a single dimension is a typo, not a model (Llama-3 405B has d_model 16384).
_MAX_DIM = 1 << 20
_MAX_VOCAB = 1 << 22


def _coerce_field(name: str, spec: dataclasses.Field, value: Any) -> Any:
    """Check the JSON type of one field value; numbers stay numbers, strings stay strings."""
    if name in BOOL_FIELDS:
        if not isinstance(value, bool):
            raise ConfigError(name, f"expected true or false, got {_shown(value)}")
        return value
    if name in _INT_FIELDS or name in _OPTIONAL_INT_FIELDS:
        if value is None and name in _OPTIONAL_INT_FIELDS:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(name, f"expected a whole number, got {_shown(value)}")
        return value
    if name in _FLOAT_FIELDS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(name, f"expected a number, got {_shown(value)}")
        return float(value)
    if not isinstance(value, str):
        raise ConfigError(name, f"expected text, got {_shown(value)}")
    return value


def validate(config: ModelConfig) -> None:
    """Raise ConfigError for the first impossible setting, naming the field and the fix."""
    c = config
    for name in _LITERAL_CHOICES:
        value = getattr(c, name)
        if value not in _LITERAL_CHOICES[name]:
            raise ConfigError(name, f"{_shown(value)} is not one of {', '.join(_LITERAL_CHOICES[name])}")
    for name in ("vocab_size", "context_length", "d_model", "n_heads", "n_layers", "d_ff"):
        value = getattr(c, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(name, f"must be a positive whole number, got {_shown(value)}")
    if c.vocab_size > _MAX_VOCAB:
        raise ConfigError("vocab_size", f"{c.vocab_size:,} is beyond any real tokenizer; use at most {_MAX_VOCAB:,}")
    for name in ("context_length", "d_model", "d_ff"):
        if getattr(c, name) > _MAX_DIM:
            raise ConfigError(name, f"{getattr(c, name):,} is too large; use at most {_MAX_DIM:,}")
    if c.n_layers > 1024:
        raise ConfigError("n_layers", "use at most 1024 blocks")
    if c.d_model % c.n_heads:
        raise ConfigError(
            "n_heads",
            f"d_model {c.d_model} is not divisible by n_heads {c.n_heads}; pick n_heads among "
            f"{_divisors_hint(c.d_model, c.n_heads)} or change d_model",
        )
    _check_optional_count(c, "n_kv_heads")
    _check_optional_count(c, "n_encoder_layers")
    if c.n_kv_heads is not None:
        if c.n_heads % c.n_kv_heads:
            raise ConfigError(
                "n_kv_heads",
                f"n_heads {c.n_heads} is not a multiple of n_kv_heads {c.n_kv_heads}; each key/value head "
                f"must serve the same number of query heads (try {_divisors_hint(c.n_heads, c.n_kv_heads)})",
            )
    if c.n_encoder_layers is not None and c.n_encoder_layers > 1024:
        raise ConfigError("n_encoder_layers", "use at most 1024 blocks")
    if c.positional == "rope" and c.d_head % 2:
        raise ConfigError(
            "positional",
            f"RoPE rotates (even, odd) pairs, but d_head = {c.d_model}/{c.n_heads} = {c.d_head} is odd; "
            "make d_model / n_heads even or pick another encoding",
        )
    if c.positional == "sinusoidal" and c.d_model % 2:
        raise ConfigError("d_model", f"sinusoidal encodings pair sin and cos, so d_model must be even (got {c.d_model})")
    for name in ("rope_base", "rope_scale", "norm_eps"):
        value = getattr(c, name)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
            raise ConfigError(name, f"must be a positive finite number, got {_shown(value)}")
    if c.rope_base <= 1:
        raise ConfigError("rope_base", f"must be greater than 1 so that wavelengths grow, got {c.rope_base}")
    if isinstance(c.n_experts, bool) or not isinstance(c.n_experts, int) or c.n_experts < 0:
        raise ConfigError("n_experts", f"must be 0 (dense FFN) or a positive number of experts, got {_shown(c.n_experts)}")
    if c.n_experts > 1024:
        raise ConfigError("n_experts", "use at most 1024 experts")
    if c.attention_only and c.n_experts:
        raise ConfigError("attention_only", "an attention-only model has no FFN, so no experts either; turn "
                          "attention_only off or set n_experts to 0")
    if c.n_experts:
        if isinstance(c.top_k, bool) or not isinstance(c.top_k, int) or not 1 <= c.top_k <= c.n_experts:
            raise ConfigError("top_k", f"must be between 1 and n_experts ({c.n_experts}), got {_shown(c.top_k)}")
    if c.architecture == "encoder" and c.attention == "causal":
        raise ConfigError(
            "attention",
            "an encoder-only model attends in both directions; set attention to bidirectional "
            "or architecture to decoder",
        )
    if not isinstance(c.name, str) or not c.name.strip():
        raise ConfigError("name", "give the model a non-empty name")
    if len(c.name) > MAX_NAME_CHARS:
        raise ConfigError("name", f"{len(c.name):,} characters; a name has at most {MAX_NAME_CHARS} (it titles the window)")


def _shown(value: Any) -> str:
    """A value as a message quotes it: a list of a million items or a page of text is cut to a glance."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _check_optional_count(config: ModelConfig, name: str) -> None:
    """An optional size: empty (None, meaning "same as the main setting") or a positive whole number."""
    value = getattr(config, name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(name, f"must be a positive whole number or empty, got {_shown(value)}")


def _divisors_hint(n: int, near: int | None = None) -> str:
    """A few divisors of n, the ones closest to the value the user tried first."""
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    if near is not None:
        divisors = sorted(sorted(divisors, key=lambda d: abs(d - near))[:6])
    else:
        divisors = divisors[:6]
    return ", ".join(str(d) for d in divisors)


def config_field_docs() -> dict[str, str]:
    """The trailing comment of each field, for tooltips and `--help` texts."""
    import inspect

    try:
        source = inspect.getsource(ModelConfig)
    except (OSError, TypeError):  # frozen bundles ship bytecode only
        return {}
    docs: dict[str, str] = {}
    for line in source.splitlines():
        stripped = line.strip()
        if ":" in stripped and "#" in stripped and not stripped.startswith(("#", "def", "@", "class")):
            name = stripped.split(":", 1)[0].strip()
            if name in ModelConfig.field_names():
                docs[name] = stripped.split("#", 1)[1].strip()
    return docs


__all__ = ["BOOL_FIELDS", "ConfigError", "MAX_STRETCH_LENGTH", "ModelConfig", "config_field_docs", "validate"]
