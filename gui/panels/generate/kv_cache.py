"""KV cache: prefill, decode the last tokens one by one against each layer's cache, and prove it equals a recompute.

Three tables, all measured by core.experiments.kv_cache on the current model and tokens: the cache
after prefill and after each decode step (shapes and bytes of one layer's K and V, the whole cache,
and each step's logits compared with a recompute of the whole sequence); each layer's cache after
the last step; and the bytes per generated token of the model's multi-head, grouped-query and
multi-query variants beside the KV-cache budget the Parameters panel computes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSpinBox, QSplitter, QVBoxLayout

from core.display import display_token, format_bytes
from gui.panels.base import Refusal, View
from gui.panels.common import caption, fit_table, sequence_refusal, set_cell, table
from gui.panels.common import format_change
from gui.widgets.flow_layout import FlowLayout, control_group
from gui.widgets.table_rows import keep_rows_in_view

DEFAULT_DECODE_STEPS = 8
MAX_DECODE_STEPS = 256  # core.experiments.kv_cache.MAX_DECODE_STEPS (torch-free here)


@dataclass(frozen=True)
class KVCacheInputs:
    model: Any
    tokenizer: Any  # None, or another vocabulary's: the table gives ids only
    tokens: tuple[int, ...]
    decode_steps: int


def compute_kv_cache(inputs: KVCacheInputs, token) -> Any:
    from core.experiments import kv_cache

    return kv_cache.kv_cache_proof(inputs.model, list(inputs.tokens), inputs.decode_steps, token)


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"


def _token_cell(inputs: KVCacheInputs, token_id: int) -> str:
    """The decoded token as the text shows it, with its id; the id alone where the tokenizer is another vocabulary's."""
    tokenizer = inputs.tokenizer
    if tokenizer is None or getattr(tokenizer, "vocab_size", None) != inputs.model.config.vocab_size:
        return f"id {token_id}"
    try:
        return f"'{display_token(tokenizer.token_text(token_id))}' ({token_id})"
    except Exception:  # each tokenizer has its own unknown-id error; the id still identifies the token
        return f"id {token_id}"


class KVCacheView(View):
    name = "KV cache"
    reads = frozenset({"model", "tokens", "tokenizer"})
    compute_fn = staticmethod(compute_kv_cache)

    def __init__(self, state, compute, channel_prefix: str = "", parent=None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 4, 0, 0)
        row = FlowLayout()
        self.decode_steps_spin = QSpinBox()
        self.decode_steps_spin.setObjectName("generate-decode-steps")
        self.decode_steps_spin.setRange(1, MAX_DECODE_STEPS)
        self.decode_steps_spin.setValue(DEFAULT_DECODE_STEPS)
        self.decode_steps_spin.setKeyboardTracking(False)
        self.decode_steps_spin.setToolTip("Prefill all tokens but the last N, then decode those N one at a time")
        self.decode_steps_spin.valueChanged.connect(self.inputs_changed)
        label = QLabel("Decode the last")
        label.setBuddy(self.decode_steps_spin)
        row.addWidget(control_group(label, self.decode_steps_spin, QLabel("tokens")))
        self.add_controls(row)
        self.proof_label = caption("")
        self.proof_label.setObjectName("generate-kv-proof")
        layout.addWidget(self.proof_label)
        # Short headers: at projector scale every column must stay in view.
        self.steps_table = table(("step", "position", "token", "cached", "K = V shape", "K+V / layer", "cache",
                                  "max |Δ logit| vs recompute"))
        self.layers_table = table(("layer", "K shape", "V shape", "K bytes", "V bytes"))
        self.variants_table = table(("attention", "kv heads", "measured B/token", "2·L·h_kv·d_head·B",
                                     "budget B/token", "full context"))
        # One above the other, full width (a projector's text makes each table wide); the splitter sets the heights.
        tables = QSplitter(Qt.Orientation.Vertical)
        tables.setChildrenCollapsible(False)
        for widget, stretch in ((self.steps_table, 3), (self.variants_table, 2), (self.layers_table, 2)):
            widget.horizontalHeader().setStretchLastSection(False)  # a right-aligned last column stays beside the others
            tables.addWidget(widget)
            tables.setStretchFactor(tables.count() - 1, stretch)
        layout.addWidget(tables, 1)
        self.bytes_label = caption("")
        self.bytes_label.setObjectName("generate-kv-bytes")
        layout.addWidget(self.bytes_label)
        self.stale_labels = [self.proof_label, self.bytes_label]

    def inputs(self) -> KVCacheInputs | Refusal | None:
        model, tokens = self.state.model, self.state.tokens
        if model is None:
            return None
        problem = sequence_refusal(model, tokens)
        if problem:
            return Refusal(problem)
        config = model.config
        from core.experiments.kv_cache import cache_refusal  # torch is loaded: a model is

        problem = cache_refusal(config)
        if problem:
            return Refusal(f"{problem[0].upper()}{problem[1:]}. Pick a decoder preset.")
        if len(tokens) < 2:
            return Refusal("The cached decode needs at least two tokens: one to prefill, one to decode. Type more text.")
        steps = min(self.decode_steps_spin.value(), len(tokens) - 1)
        return KVCacheInputs(model, self.state.tokenizer, tuple(tokens), steps)

    def on_stale(self) -> None:
        for widget in (self.steps_table, self.layers_table, self.variants_table):
            widget.setRowCount(0)

    def show_result(self, proof) -> None:
        inputs: KVCacheInputs = self.shown_inputs
        rows = [("prefill", f"0..{proof.prefill_length - 1}", "", proof.prefill_length, proof.prefill_layers, None)]
        rows += [(str(index + 1), str(step.position), _token_cell(inputs, step.token), step.cached_positions, step.layers, step)
                 for index, step in enumerate(proof.steps)]
        self.steps_table.setRowCount(len(rows))
        for row, (label, position, token_id, cached, layers, step) in enumerate(rows):
            first = layers[0]
            whole = sum(layer.k_bytes + layer.v_bytes for layer in layers)
            set_cell(self.steps_table, row, 0, label)
            set_cell(self.steps_table, row, 1, position, right=True)
            set_cell(self.steps_table, row, 2, token_id, right=True)
            set_cell(self.steps_table, row, 3, f"{cached:,}", right=True)
            set_cell(self.steps_table, row, 4, _shape(first.k_shape))
            set_cell(self.steps_table, row, 5, format_bytes(first.k_bytes + first.v_bytes), right=True)
            set_cell(self.steps_table, row, 6, format_bytes(whole), right=True)
            set_cell(self.steps_table, row, 7, "(the model's own forward)" if step is None
                     else format_change(step.max_difference, step.exact))
        fit_table(self.steps_table, scrolls=True)  # many columns: it scrolls sideways beside a lesson
        keep_rows_in_view(self.steps_table)
        last = proof.steps[-1].layers
        self.layers_table.setRowCount(len(last))
        for row, layer in enumerate(last):
            set_cell(self.layers_table, row, 0, str(layer.layer), right=True)
            set_cell(self.layers_table, row, 1, _shape(layer.k_shape))
            set_cell(self.layers_table, row, 2, _shape(layer.v_shape))
            set_cell(self.layers_table, row, 3, format_bytes(layer.k_bytes), right=True)
            set_cell(self.layers_table, row, 4, format_bytes(layer.v_bytes), right=True)
        fit_table(self.layers_table, scrolls=True)  # many columns: it scrolls sideways beside a lesson
        keep_rows_in_view(self.layers_table)
        self.variants_table.setRowCount(len(proof.variants))
        for row, variant in enumerate(proof.variants):
            budget = "—" if variant.budget_bytes_per_token is None else f"{variant.budget_bytes_per_token:,} B"
            set_cell(self.variants_table, row, 0, variant.label + (" (this model)" if variant.is_current else ""),
                     bold=variant.is_current)
            set_cell(self.variants_table, row, 1, str(variant.kv_heads), right=True)
            set_cell(self.variants_table, row, 2, f"{variant.measured_bytes_per_token:,} B", right=True)
            set_cell(self.variants_table, row, 3, f"{variant.formula_bytes_per_token:,} B", right=True)
            set_cell(self.variants_table, row, 4, budget, right=True)
            set_cell(self.variants_table, row, 5, format_bytes(variant.measured_bytes_per_token * proof.context_length),
                     right=True)
        fit_table(self.variants_table, scrolls=True)  # many columns: it scrolls sideways beside a lesson
        keep_rows_in_view(self.variants_table)
        verdict = "0 (exact)" if proof.exact else format_change(proof.max_difference, False)
        self.proof_label.setText(
            f"Prefilled {proof.prefill_length} tokens, decoded {len(proof.steps)} one at a time against the cache. "
            f"Cached logits vs recomputing the whole sequence at each step: max |Δ| = {verdict}; {proof.cause}.")
        budget_dtype = f" ({proof.budget_dtype})" if proof.budget_dtype else ""
        self.bytes_label.setText(
            f"This model caches {proof.measured_bytes_per_token:,} bytes per token = 2 (K, V) × {proof.n_layers} layers × "
            f"{proof.kv_heads} kv heads × {proof.d_head} d_head × {proof.bytes_per_element} bytes ({proof.dtype}); "
            f"{len(inputs.tokens)} tokens hold {format_bytes(proof.measured_bytes_per_token * len(inputs.tokens))}, "
            f"the full context of {proof.context_length:,} would hold "
            f"{format_bytes(proof.measured_bytes_per_token * proof.context_length)}. The Parameters budget{budget_dtype} "
            "counts the same bytes per token.")

    def export_targets(self) -> list[tuple[str, Any]]:
        return [("KV cache steps", self.steps_table), ("KV cache variants", self.variants_table)]
