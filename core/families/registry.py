"""The Hugging Face families this app imports (and exports), keyed by config.json's model_type.

Import, export, the `models` command and the model library read this table only. Adding a family
is its module (see core/families/gpt2.py for the shape) and one line below.
"""

from __future__ import annotations

from core.checkpoint_files import CheckpointError
from core.config import ModelConfig
from core.families import bert, distilbert, gpt2, llama, marian, qwen2, roberta
from core.families.common import Family, causal_decoder_needs

FAMILIES: dict[str, Family] = {
    family.model_type: family
    for family in (
        gpt2.FAMILY,
        llama.FAMILY,
        qwen2.FAMILY,
        bert.FAMILY,
        distilbert.FAMILY,
        roberta.FAMILY,
        marian.FAMILY,
    )
}
SUPPORTED_MODEL_TYPES = tuple(FAMILIES)


def family_of(model_type: object, where: str) -> Family:
    """The family of a config.json's model_type; CheckpointError naming the supported ones otherwise."""
    family = FAMILIES.get(model_type) if isinstance(model_type, str) else None
    if family is None:
        raise CheckpointError(
            f"{where}: model_type {model_type!r} is not supported; this app imports {', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    return family


def export_family(config: ModelConfig) -> Family:
    """The family a lab model is written as; CheckpointError saying what it lacks when none fits."""
    exporters = [family for family in FAMILIES.values() if family.export_needs is not None]
    nearest: list[str] | None = None
    for family in exporters:
        assert family.export_needs is not None
        needs = family.export_needs(config)
        if needs == []:
            return family
        if needs is not None and nearest is None:
            nearest = needs
    if nearest is None:
        kinds = [family.signature for family in exporters if family.signature]
        nearest = causal_decoder_needs(config) + [", or ".join(kinds)]
    titles = [family.title for family in exporters if family.signature]
    raise CheckpointError(
        f"{config.name} has no Hugging Face equivalent: {' and '.join(titles)} models need {', '.join(nearest)}"
    )


__all__ = ["FAMILIES", "SUPPORTED_MODEL_TYPES", "export_family", "family_of"]
