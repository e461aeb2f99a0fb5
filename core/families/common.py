"""What every Hugging Face family module shares: the Family record, config field reading, tensor taking.

A family module (core/families/gpt2.py, llama.py, ...) fills one `Family`: how its config.json maps
onto the lab's ModelConfig, how its tensors map onto the lab's state dict, and, where the lab can
write the family back, the inverse of both. core.families keeps them in a registry keyed by model_type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from core.checkpoint_files import CheckpointError
from core.config import ModelConfig

HFConfig = dict[str, Any]
Tensors = dict[str, torch.Tensor]

# The lab's fields every causal decoder family imports as.
CAUSAL_DECODER = {"architecture": "decoder", "attention": "causal", "norm_placement": "pre"}


@dataclass(frozen=True)
class Family:
    """One Hugging Face model family: config and tensors both ways, and what it needs of a lab model."""

    model_type: str  # config.json's model_type
    title: str  # how messages and lists name it: "GPT-2"
    architectures: tuple[str, ...]  # config.json's architectures on export; the first is written
    auto_class: str  # the transformers class that loads the folder: "AutoModelForCausalLM"
    # config.json -> the ModelConfig fields (name aside); raises CheckpointError naming `where`
    config_fields: Callable[[HFConfig, str], dict[str, Any]]
    # Hugging Face tensors -> the lab's state dict for a config (and its config.json); raises CheckpointError naming `where`
    import_tensors: Callable[[Tensors, ModelConfig, HFConfig, str], Tensors]
    # Export, where the lab can write this family. `export_needs` is None for a model of another kind,
    # else what the model lacks ([] when it can be written).
    export_needs: Callable[[ModelConfig], list[str] | None] | None = None
    export_config: Callable[[ModelConfig], HFConfig] | None = None
    export_tensors: Callable[[Tensors, ModelConfig], Tensors] | None = None
    # What sets the family apart, for the refusal of a model no family fits; "" for a variant of another
    signature: str = ""
    text_input: bool = True  # False when the folder's tokenizer cannot be read (ids only)
    tokenizer_note: str = ""  # why not, in words, when text_input is False

    @property
    def exports(self) -> bool:
        return self.export_needs is not None


def causal_decoder_needs(config: ModelConfig) -> list[str]:
    """What a lab model lacks to be any of the causal decoder families."""
    shared = [
        (config.architecture == "decoder" and config.self_attention_causal, "a causal decoder"),
        (config.norm_placement == "pre", "pre-norm"),
        (config.final_norm, "a final norm"),
        (not config.attention_only, "an FFN in every block (they have no attention-only form)"),
        (config.n_experts == 0, "a dense FFN (no experts)"),
        (not config.embed_scale and not config.embed_norm, "plain token embeddings (no scale, no norm)"),
        (not config.head_transform and not config.head_bias, "a plain vocabulary head (no transform, no bias)"),
    ]
    return [need for ok, need in shared if not ok]


# ---- configs ------------------------------------------------------------------------------------


def field(hf: HFConfig, key: str, where: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    """config.json's `key`, checked against `kind`; missing means `default`, or an error without one."""
    if key not in hf or hf[key] is None:
        if default is ...:
            raise CheckpointError(f"{where}: missing {key}")
        return default
    value = hf[key]
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise CheckpointError(f"{where}: {key} must be a number, got {value!r}")
    if not isinstance(value, kind):
        raise CheckpointError(f"{where}: {key} has the wrong type ({value!r})")
    return value


# ---- tensors ------------------------------------------------------------------------------------


class TensorSource:
    """Takes tensors out of the Hugging Face dict by name, so leftovers can be reported at the end."""

    def __init__(self, tensors: Tensors, where: str, prefixes: tuple[str, ...]) -> None:
        self.where = where
        self.remaining: Tensors = {}
        for name, tensor in tensors.items():
            for prefix in prefixes:  # e.g. "transformer." is absent in the original OpenAI GPT-2 upload
                if name.startswith(prefix):
                    name = name[len(prefix) :]
                    break
            self.remaining[name] = tensor

    def take(self, name: str) -> torch.Tensor:
        if name not in self.remaining:
            raise CheckpointError(f"{self.where}: missing tensor {name}")
        tensor = self.remaining.pop(name)
        if not tensor.is_floating_point():
            raise CheckpointError(
                f"{self.where}: tensor {name} holds {tensor.dtype} values; weights must be floating point"
            )
        return tensor.to(torch.float32)

    def take_optional(self, name: str) -> torch.Tensor | None:
        return self.take(name) if name in self.remaining else None

    def finish(self, ignorable: Callable[[str], bool]) -> None:
        unknown = sorted(name for name in self.remaining if not ignorable(name))
        if unknown:
            shown = ", ".join(unknown[:4]) + (f" and {len(unknown) - 4} more" if len(unknown) > 4 else "")
            raise CheckpointError(
                f"{self.where}: unexpected tensors {shown} (a model variant this import does not know)"
            )


def check_shape(tensor: torch.Tensor, shape: tuple[int, ...], name: str, where: str) -> torch.Tensor:
    if tuple(tensor.shape) != shape:
        raise CheckpointError(
            f"{where}: tensor {name} has shape {list(tensor.shape)} but config.json implies {list(shape)}"
        )
    return tensor


def take_head(source: TensorSource, config: ModelConfig, state: Tensors, where: str, embedding_name: str,
              head_name: str = "lm_head.weight") -> None:
    """The output head: the token table itself when tied (a stored copy must agree), else its own matrix."""
    head = source.take_optional(head_name)
    if config.tie_embeddings:
        if head is not None and not torch.equal(head, state["tok_emb.weight"]):
            raise CheckpointError(f"{where}: tie_word_embeddings is true but {head_name} differs from {embedding_name}")
    elif head is None:
        raise CheckpointError(f"{where}: missing tensor {head_name} (tie_word_embeddings is false)")
    else:
        state["head.weight"] = head


def take_tied_copy(source: TensorSource, name: str, expected: torch.Tensor, where: str) -> None:
    """A stored copy of a tied tensor (older uploads save both) must equal the tensor it copies."""
    copy = source.take_optional(name)
    if copy is not None and not torch.equal(copy, expected):
        raise CheckpointError(f"{where}: {name} differs from the tensor it is tied to")


__all__ = [
    "CAUSAL_DECODER",
    "Family",
    "HFConfig",
    "TensorSource",
    "Tensors",
    "causal_decoder_needs",
    "check_shape",
    "field",
    "take_head",
    "take_tied_copy",
]
