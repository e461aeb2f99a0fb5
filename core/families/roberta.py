"""RoBERTa (RobertaForMaskedLM): BERT's encoder and masked-LM head under other names, positions offset.

RoBERTa numbers positions from padding_idx + 1 (pad_token_id + 1, so 2 for the released models):
rows 0..padding_idx of its position table are never used by a text without padding, so the lab's
position p is RoBERTa's row padding_idx + 1 + p and the context is max_position_embeddings minus
those rows (514 - 2 = 512). RoBERTa gives a padding token inside a text the padding row instead of
its place; the lab gives it its place, so a text must not contain the padding token (`<pad>`).
"""

from __future__ import annotations

import re
from typing import Any

from core.checkpoint_files import CheckpointError
from core.config import ModelConfig
from core.families import bert
from core.families.common import Family, HFConfig, Tensors, TensorSource, field, take_tied_copy


def _first_position(hf: HFConfig, where: str) -> int:
    padding = field(hf, "pad_token_id", where, int, 1)
    if padding < 0:
        raise CheckpointError(f"{where}: pad_token_id must not be negative, got {padding}")
    return padding + 1


def config_fields(hf: HFConfig, where: str) -> dict[str, Any]:
    fields = bert.config_fields(hf, where, positions_offset=_first_position(hf, where))
    if fields["context_length"] < 1:
        raise CheckpointError(f"{where}: max_position_embeddings leaves no position after the padding rows")
    return fields


def import_tensors(tensors: Tensors, config: ModelConfig, hf_config: HFConfig, where: str) -> Tensors:
    source = TensorSource(tensors, where, ())
    first = _first_position(hf_config, where)
    state = bert.encoder_tensors(source, config, where, "roberta.", first_position=first)
    state["head_transform.dense.weight"] = source.take("lm_head.dense.weight")
    state["head_transform.dense.bias"] = source.take("lm_head.dense.bias")
    state["head_transform.norm.weight"] = source.take("lm_head.layer_norm.weight")
    state["head_transform.norm.bias"] = source.take("lm_head.layer_norm.bias")
    state["head.bias"] = source.take("lm_head.bias")  # (V,)
    take_tied_copy(source, "lm_head.decoder.weight", state["tok_emb.weight"], where)
    take_tied_copy(source, "lm_head.decoder.bias", state["head.bias"], where)
    source.finish(lambda name: re.fullmatch(r"roberta\.embeddings\.(position_ids|token_type_ids)|roberta\.pooler\..*",
                                            name) is not None)
    return state


FAMILY = Family(
    model_type="roberta",
    title="RoBERTa",
    architectures=("RobertaForMaskedLM",),
    auto_class="AutoModelForMaskedLM",
    config_fields=config_fields,
    import_tensors=import_tensors,
)
