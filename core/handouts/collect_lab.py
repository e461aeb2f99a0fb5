"""The KV cache view of Generate, Tensor shapes and Train for a page, each computed by the core experiment its window
view runs (gui.panels.generate.kv_cache, gui.panels.shapes), with the views' tables and sentences.

Train draws the curves of a training run the student starts: a page cannot train, so its Train steps say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.config import ConfigError
from core.display import display_token, format_bytes, format_change, plural
from core.experiments.shapes_what_if import what_if_config
from core.handouts.figures import StepFigures, bars, lines, table

DEFAULT_DECODE_STEPS = 8  # gui.panels.generate.kv_cache
SHAPES_DEFAULTS = {"batch": 1, "seq": 128, "source_seq": 128}  # gui.panels.shapes: B, T and S as they start
TRAIN_NOTE = ("Training happens in the app: the Train panel draws the curves of a run started in Transformer Explorer, "
              "which a page cannot run.")


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"


# ---- KV cache -------------------------------------------------------------------------------------

def kv_cache_figures(settings: Mapping[str, Any], lab: Any, model: Any) -> StepFigures:
    """Prefill all tokens but the last N, decode those N against the cache, and compare with recomputing."""
    from core.experiments import kv_cache

    tokens = list(lab.tokens)
    proof = kv_cache.kv_cache_proof(model, tokens, int(settings.get("decode_steps", DEFAULT_DECODE_STEPS)), None)
    tokenizer = lab.tokenizer

    def token_cell(token_id: int) -> str:
        if tokenizer is None or getattr(tokenizer, "vocab_size", None) != model.config.vocab_size:
            return f"id {token_id}"
        try:
            return f"'{display_token(tokenizer.token_text(token_id))}' ({token_id})"
        except Exception:  # each tokenizer has its own unknown-id error; the id still identifies the token
            return f"id {token_id}"

    rows = [("prefill", f"0..{proof.prefill_length - 1}", "", proof.prefill_length, proof.prefill_layers, None)]
    rows += [(str(index + 1), str(step.position), token_cell(step.token), step.cached_positions, step.layers, step)
             for index, step in enumerate(proof.steps)]
    steps = [(label, position, token, f"{cached:,}", _shape(layers[0].k_shape),
              format_bytes(layers[0].k_bytes + layers[0].v_bytes),
              format_bytes(sum(layer.k_bytes + layer.v_bytes for layer in layers)),
              "(the model's own forward)" if step is None else format_change(step.max_difference, step.exact))
             for label, position, token, cached, layers, step in rows]
    layers = [(str(layer.layer), _shape(layer.k_shape), _shape(layer.v_shape), format_bytes(layer.k_bytes),
               format_bytes(layer.v_bytes)) for layer in proof.steps[-1].layers]
    variants = [(variant.label + (" (this model)" if variant.is_current else ""), str(variant.kv_heads),
                 f"{variant.measured_bytes_per_token:,} B", f"{variant.formula_bytes_per_token:,} B",
                 "—" if variant.budget_bytes_per_token is None else f"{variant.budget_bytes_per_token:,} B",
                 format_bytes(variant.measured_bytes_per_token * proof.context_length)) for variant in proof.variants]
    figures = (
        table("steps_table", "Prefill, then one token at a time against the cache",
              ("step", "position", "token", "cached", "K = V shape", "K+V / layer", "cache",
               "max |Δ logit| vs recompute"), steps),
        table("layers_table", "The cache after the last step, layer by layer",
              ("layer", "K shape", "V shape", "K bytes", "V bytes"), layers),
        table("variants_table", "Bytes per token by attention variant",
              ("attention", "kv heads", "measured B/token", "2·L·h_kv·d_head·B", "budget B/token", "full context"),
              variants),
    )
    verdict = "0 (exact)" if proof.exact else format_change(proof.max_difference, False)
    proof_label = (f"Prefilled {proof.prefill_length} tokens, decoded {len(proof.steps)} one at a time against the "
                   f"cache. Cached logits vs recomputing the whole sequence at each step: max |Δ| = {verdict}; "
                   f"{proof.cause}.")
    budget_dtype = f" ({proof.budget_dtype})" if proof.budget_dtype else ""
    bytes_label = (f"This model caches {proof.measured_bytes_per_token:,} bytes per token = 2 (K, V) × "
                   f"{proof.n_layers} layers × {proof.kv_heads} kv heads × {proof.d_head} d_head × "
                   f"{proof.bytes_per_element} bytes ({proof.dtype}); {len(tokens)} tokens hold "
                   f"{format_bytes(proof.measured_bytes_per_token * len(tokens))}, the full context of "
                   f"{proof.context_length:,} would hold "
                   f"{format_bytes(proof.measured_bytes_per_token * proof.context_length)}. The Parameters "
                   f"budget{budget_dtype} counts the same bytes per token.")
    return StepFigures(figures, {"proof_label": proof_label, "bytes_label": bytes_label},
                       {"bytes_per_token": proof.measured_bytes_per_token,
                        "cache_exact": "yes" if proof.exact else "no",
                        "max_difference": float(proof.max_difference)})


# ---- Tensor shapes --------------------------------------------------------------------------------

def shapes_figures(settings: Mapping[str, Any], lab_config: Any) -> StepFigures:
    """The traced walk-through: every tensor's shape and memory, and how attention's grows with T."""
    from core.experiments.shapes import attention_growth, growth_lengths, meta_model, trace_shapes

    settings = {**SHAPES_DEFAULTS, "d_model": lab_config.d_model, "heads": lab_config.n_heads, **settings}
    try:
        config = what_if_config(lab_config, int(settings["d_model"]), int(settings["heads"]))
    except ConfigError as error:
        raise ValueError(f"{error.field}: {error.message}") from None
    batch, seq = int(settings["batch"]), int(settings["seq"])
    if seq > config.context_length:
        raise ValueError(f"T = {seq} exceeds the context length of {config.context_length}; lower T or raise "
                         "context_length")
    source = int(settings["source_seq"]) if config.architecture == "encoder-decoder" else None
    if source is not None and source > config.context_length:
        raise ValueError(f"S = {source} exceeds the context length of {config.context_length}; lower S or raise "
                         "context_length")
    model = meta_model(config)
    trace = trace_shapes(config, batch, seq, model=model, source_seq=source)
    growth = attention_growth(config, batch, growth_lengths(config.context_length, seq), model=model,
                              source_seq=source)
    rows = [(row.name, _shape(row.shape), f"{row.elements:,}", format_bytes(row.bytes), row.note)
            for row in trace.rows]
    two_towers = trace.source_seq is not None
    memory = bars("memory_plot", "Memory per tensor (one block of each tower)" if two_towers
                  else "Memory per tensor (one block)", [row.name for row in trace.rows],
                  [row.bytes for row in trace.rows], "tensor", "bytes")
    growth_figure = lines("growth_plot", "Memory as T grows: attention matrix against one activation",
                          list(growth.seqs), {"(B, h, T, T) attention matrix": growth.attention_bytes,
                                              "(B, T, d_model) activation": growth.residual_bytes},
                          "sequence length T", "bytes", scale="log", x_scale="log")
    matrix = trace.attention_matrix_bytes
    if two_towers:
        kept = (f"{format_bytes(trace.all_attention_weights_bytes)} if every layer keeps its weights ("
                f"{plural(config.n_layers, 'decoder block')} of T x T and T x S, "
                f"{plural(config.encoder_layers, 'encoder block')} of S x S)")
    else:
        kept = (f"{format_bytes(trace.all_attention_weights_bytes)} if all {plural(config.n_layers, 'layer')} keep "
                "theirs")
    source_text = (f", S={trace.source_seq} (the encoder's source; cross-attention is (B, h, T, S))"
                   if two_towers else "")
    towers = "block 0 of each tower" if two_towers else "block 0"
    summary = (f"{config.name}: B={trace.batch}, T={trace.seq}{source_text}, d_model={config.d_model}, "
               f"h={config.n_heads}, d_head={config.d_head}; traced on the {trace.device} device through {towers}. "
               f"The (B, h, T, T) attention matrix is {format_bytes(matrix)} per layer "
               f"({matrix / max(1, trace.residual_bytes):.1f}x one (B, T, d_model) activation), {kept}; doubling T "
               "quadruples it.")
    figures = (table("table", "Every tensor of one block, traced", ("step", "shape", "elements", "memory", "meaning"),
                     rows), memory, growth_figure)
    return StepFigures(figures, {"summary": summary},
                       {"attention_matrix_bytes": int(matrix),
                        "attention_to_activation": float(matrix / max(1, trace.residual_bytes))})


# ---- Train ----------------------------------------------------------------------------------------

def train_figures() -> StepFigures:
    return StepFigures(note=TRAIN_NOTE)


__all__ = ["kv_cache_figures", "shapes_figures", "train_figures"]
