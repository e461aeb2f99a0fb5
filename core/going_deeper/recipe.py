"""The one recipe of the going-deeper models: the ladder's rungs, the context models and the interpolation fine-tune.

Every model here is a character model of the bundled Shakespeare (its 65 characters, sorted: tiny-gpt's
tokenizer), trained for the same steps, batch, window and schedule on the first nine tenths of the corpus, and
scored on the last tenth, which no run trains on. The sizes are chosen so that one run takes about a minute on one
CPU thread: the ladder (7 rungs x 3 seeds) and the six context models together fit in well under an hour on a
2-core machine. Imports neither Qt nor torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.config import ModelConfig

CORPUS = "tinyshakespeare.txt"  # under resources/
# core.training.VALIDATION_FRACTION, not imported: core.training reaches the presets, which list these models
HELD_OUT_FRACTION = 0.1
TRAINED_LENGTH = 64  # the window every model here trains at (and the context length it records)
# Shared by every run: one thread, so that a rerun on the same CPU type and torch version repeats the weights.
RECIPE: dict[str, Any] = {"steps": 800, "batch_size": 16, "seq_len": TRAINED_LENGTH, "lr": 3e-3, "warmup_steps": 100,
                          "eval_every": 0}
THREADS = 1
LADDER_SEEDS = (0, 1, 2)
BUNDLED_SEED = 0  # the seed whose weights ship as each rung's model

# The 2017 block at lab size: d_model 64, 4 heads, 3 blocks, FFN 3x wide. 2017 scaled the token embeddings by
# sqrt(d_model) so that the added sinusoids (amplitude 1) do not drown them; it had no final norm.
_BASE = dict(vocab_size=65, context_length=TRAINED_LENGTH, d_model=64, n_heads=4, n_layers=3, d_ff=192,
             norm="layernorm", norm_placement="post", activation="relu", positional="sinusoidal", bias=True,
             tie_embeddings=True, final_norm=False, embed_scale=True)


@dataclass(frozen=True)
class Rung:
    name: str  # short, as the chart labels it
    change: str  # what this rung changes in the one before, in words
    fields: dict[str, Any]  # the config fields it changes (one or two)

    @property
    def model(self) -> str:
        return f"ladder-{self.name.lower().replace(' ', '-')}"


# Each rung changes one part of the one before; the FFN widths keep every rung's parameter count within 2%.
RUNGS: tuple[Rung, ...] = (
    Rung("2017", "the original block: post-norm, LayerNorm, ReLU, sinusoidal positions, biases on", {}),
    Rung("pre-norm", "post-norm to pre-norm (with the final norm a pre-norm stack needs)",
         {"norm_placement": "pre", "final_norm": True}),
    Rung("RMSNorm", "LayerNorm to RMSNorm (scale only, no centring)", {"norm": "rmsnorm"}),
    Rung("SwiGLU", "ReLU to SwiGLU (its gate matrix paid for by an FFN 128 wide instead of 192)",
         {"activation": "swiglu", "d_ff": 128}),
    Rung("RoPE", "sinusoidal to RoPE (the embedding scale that balanced the added table goes with it)",
         {"positional": "rope", "embed_scale": False}),
    Rung("no biases", "biases dropped from every linear layer", {"bias": False}),
    Rung("GQA", "grouped-query attention: 2 key/value heads for 4 query heads (the FFN widened to 149 to keep "
         "the count): today's block", {"n_kv_heads": 2, "d_ff": 149}),
)


def rung_configs() -> list[tuple[Rung, ModelConfig]]:
    """Every rung with its full config: the 2017 block, then each change applied on top of the one before."""
    fields = dict(_BASE)
    configs = []
    for rung in RUNGS:
        fields.update(rung.fields)
        configs.append((rung, ModelConfig(name=rung.model, **fields).validated()))
    return configs


# ---- the context models -----------------------------------------------------------------------------------------
CONTEXT_POSITIONALS = ("learned", "sinusoidal", "rope", "alibi", "none")
CONTEXT_SEED = 0
INTERPOLATION = "ctx-rope-pi"
PI_SCALE = 4.0  # positions divided by 4: 256 positions land where 64 did in training
PI_LENGTH = 4 * TRAINED_LENGTH
# The brief fine-tune at the longer length: as many characters a step as the recipe's 16 x 64.
PI_FINE_TUNE: dict[str, Any] = {"steps": 200, "batch_size": 4, "seq_len": PI_LENGTH, "lr": 1e-3, "warmup_steps": 20,
                                "eval_every": 0}


def context_model_name(positional: str) -> str:
    return f"ctx-{positional}"


def context_configs() -> list[ModelConfig]:
    """Today's block (the ladder's last rung) trained at 64, differing only in how order enters."""
    today = rung_configs()[-1][1]
    return [today.replace(name=context_model_name(p), positional=p) for p in CONTEXT_POSITIONALS]


def interpolation_config(rope: ModelConfig) -> ModelConfig:
    """ctx-rope with its positions divided by PI_SCALE and a context of PI_LENGTH: what the fine-tune trains."""
    return rope.replace(name=INTERPOLATION, rope_scale=PI_SCALE, context_length=PI_LENGTH)


def context_model_names() -> list[str]:
    return [context_model_name(p) for p in CONTEXT_POSITIONALS] + [INTERPOLATION]


def bundled_configs() -> list[ModelConfig]:
    """The configs of every bundled going-deeper model (each a preset, so that a lesson or a click loads it)."""
    contexts = context_configs()
    rope = next(config for config in contexts if config.positional == "rope")
    return [config for _rung, config in rung_configs()] + contexts + [interpolation_config(rope)]


def held_out_text(text: str) -> str:
    """The last tenth of the corpus (core.training's validation split, by characters): every figure here is on it."""
    return text[int(len(text) * (1 - HELD_OUT_FRACTION)):]


__all__ = ["BUNDLED_SEED", "bundled_configs", "CONTEXT_POSITIONALS", "INTERPOLATION", "LADDER_SEEDS", "PI_FINE_TUNE", "PI_LENGTH",
           "PI_SCALE", "RECIPE", "RUNGS", "Rung", "THREADS", "TRAINED_LENGTH", "context_configs", "context_model_names",
           "held_out_text", "interpolation_config", "rung_configs"]
