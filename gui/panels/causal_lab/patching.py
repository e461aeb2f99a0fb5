"""Patching: the corrupted input run with one activation from the clean run, as a map over layers.

Rows arrive as the worker finishes each layer and are drawn at once; the rows still to come stay
blank. Beside the map, the two checks the experiment makes: every position of a layer's stream
patched gives the clean logits, and nothing patched the corrupted ones (torch.equal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtWidgets import QComboBox, QVBoxLayout, QWidget

from gui.panels.base import Refusal, View
from gui.panels.causal_lab.common import POSITION_TIP, CausalControls, chosen_position, position_spin
from gui.panels.common import as_sentence, labelled, note_label, plain_label, sequence_refusal, set_title, token_labels
from gui.widgets.flow_layout import FlowLayout
from gui.widgets.heatmap import Heatmap

MAP_TITLE = "Metric with one activation patched (0 = corrupted, 1 = clean)"
UNDEFINED = "undefined: clean and corrupted agree"  # core.experiments.patching.UNDEFINED, without importing torch
SITE_CHOICES = (
    ("resid_pre", "stream entering each block (layer x position)"),
    ("attn_out", "attention's write (layer x position)"),
    ("mlp_out", "FFN's write (layer x position)"),
    ("head", "one head at every position (layer x head)"),
)


@dataclass(frozen=True)
class PatchingInputs:
    model: Any
    clean: tuple[int, ...]
    corrupt: tuple[int, ...]
    answer: int | None  # None: the model's top prediction
    foil: int | None
    site: str
    position: int = -1  # where the metric is read


@dataclass(frozen=True)
class PatchingRow:
    layer: int
    values: np.ndarray  # (columns,) raw metric
    n_layers: int


def compute_patching(inputs: PatchingInputs, token):
    from core.experiments.patching import activation_patch

    return activation_patch(
        inputs.model, list(inputs.clean), list(inputs.corrupt), inputs.answer, inputs.foil, inputs.site,
        position=inputs.position, progress=token.report,
        on_row=lambda layer, values: token.partial(PatchingRow(layer, values, inputs.model.config.n_layers)),
    )


def patching_refusal(model, clean, corrupt, site: str) -> str:
    if model.config.architecture == "encoder-decoder":
        return "Patching runs one stack; an encoder-decoder model reads a second sequence through its encoder."
    if not clean:
        return "Type a clean text above, then edit tokens of it in the corrupted strip."
    for ids in (clean, corrupt):
        problem = sequence_refusal(model, list(ids))
        if problem:
            return problem
    if len(corrupt) != len(clean):
        return (f"The clean input has {len(clean)} tokens and the corrupted one {len(corrupt)}: patching compares "
                "activations position by position, so replace tokens without inserting or deleting any.")
    from core.experiments.patching import cost_problem, site_problem

    problem = site_problem(model.config, site)
    if problem:
        return f"Patch site: {problem}."
    problem = cost_problem(model.config, len(clean), site)
    return problem[0].upper() + problem[1:] + "." if problem else ""


class PatchingView(View):
    name = "Patching"
    reads = frozenset({"model", "tokens", "tokenizer"})
    compute_fn = staticmethod(compute_patching)

    def __init__(self, state, compute, controls: CausalControls, channel_prefix: str = "",
                 parent: QWidget | None = None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self.controls = controls
        controls.changed.connect(self.inputs_changed)
        self.partial_values: np.ndarray | None = None
        self.partial_inputs: PatchingInputs | None = None
        column = QVBoxLayout(self.content)
        column.setContentsMargins(0, 4, 0, 0)
        row = FlowLayout()
        self.site_combo = QComboBox()
        self.site_combo.setObjectName("patching-site")
        for site, text in SITE_CHOICES:
            self.site_combo.addItem(f"{site}: {text}", site)
        self.site_combo.setToolTip("Which activation is taken from the clean run, one at a time")
        self.site_combo.currentIndexChanged.connect(self.inputs_changed)
        state.signal("model").connect(self._offer_sites)
        self._offer_sites()
        labelled(row, "patch", self.site_combo)
        self.position_spin = position_spin("patching-position", f"Where the metric is read; {POSITION_TIP}")
        self.position_spin.valueChanged.connect(self.inputs_changed)
        state.tokens_changed.connect(self._update_position_range)
        self._update_position_range()
        labelled(row, "metric at", self.position_spin)
        self.note_label = note_label("patching-note")
        row.addWidget(self.note_label)
        state.model_changed.connect(self._follow_model)
        self.add_controls(row)
        self.summary_label = plain_label(name="patching-summary")
        self.checks_label = plain_label(name="patching-checks")
        self.stale_labels += [self.summary_label, self.checks_label, self.note_label]
        column.addWidget(self.summary_label)
        self.patch_map = Heatmap("position", "layer", MAP_TITLE, value_format="{:.3f}")
        # Rows of cells a reader can tell apart at projector scale: the panel scrolls before the map is squeezed.
        self.patch_map.setMinimumHeight(10 * self.fontMetrics().height())
        column.addWidget(self.patch_map, 1)
        column.addWidget(self.checks_label)

    def _offer_sites(self) -> None:
        """A site the model lacks (mlp_out of an attention-only model) is greyed out in the list, and says why."""
        model = self.state.model
        if model is None:
            return
        from core.experiments.patching import site_problem  # torch is loaded: a model is

        items = self.site_combo.model()
        for index, (site, text) in enumerate(SITE_CHOICES):
            problem = site_problem(model.config, site)
            item = items.item(index)
            item.setEnabled(not problem)
            item.setToolTip(as_sentence(problem) if problem else text)

    def _follow_model(self) -> None:
        """A new model without the chosen site (an FFN's write in an attention-only model): back to the stream."""
        model = self.state.model
        if model is None:
            return
        from core.experiments.patching import site_problem  # torch is loaded: a model is

        note = ""
        if site_problem(model.config, self.site):
            self.site_combo.setCurrentIndex(self.site_combo.findData("resid_pre"))
            note = f"site reset to resid_pre: {model.config.name} is attention-only, with no FFN to patch"
        self.note_label.setText(note)

    def _update_position_range(self) -> None:
        self.position_spin.setMaximum(max(0, len(self.state.tokens) - 1))

    @property
    def site(self) -> str:
        return self.site_combo.currentData()

    def inputs(self):
        model = self.state.model
        if model is None:
            return None
        clean, corrupt = tuple(self.state.tokens), tuple(self.controls.corrupt_ids)
        problem = patching_refusal(model, clean, corrupt, self.site)
        if problem:
            return Refusal(problem)
        answer, foil, problem = self.controls.answer_and_foil(self.state.tokenizer, model.config.vocab_size)
        if problem:
            return Refusal(problem[0].upper() + problem[1:] + ".")
        return PatchingInputs(model, clean, corrupt, answer, foil, self.site, chosen_position(self.position_spin, len(clean)))

    def _labels(self, inputs: PatchingInputs, n_columns: int) -> tuple[list[str], list[str]]:
        config = inputs.model.config
        rows = [f"L{layer}" for layer in range(config.n_layers)]
        if inputs.site == "head":
            return rows, [f"H{head}" for head in range(n_columns)]
        labels = token_labels(self.state.tokenizer, inputs.corrupt)
        clean = token_labels(self.state.tokenizer, inputs.clean)
        return rows, [f"{c}>{k}" if a != b else k for a, b, c, k in zip(inputs.clean, inputs.corrupt, clean, labels)]

    def show_partial(self, partial: PatchingRow) -> None:
        inputs = self._current_inputs()
        if not isinstance(inputs, PatchingInputs):
            return
        if self.partial_inputs != inputs or self.partial_values is None:
            self.partial_inputs = inputs
            self.partial_values = np.full((partial.n_layers, len(partial.values)), np.nan)
        self.partial_values[partial.layer] = partial.values
        done = int(np.isfinite(self.partial_values).all(axis=1).sum())
        rows, columns = self._labels(inputs, len(partial.values))
        self.patch_map.plot.setLabel("bottom", "head" if inputs.site == "head" else "position")
        self.patch_map.nan_text = "not computed yet"
        set_title(self.patch_map.plot, "Metric with one activation patched (raw values until every layer is done)")
        self.patch_map.set_data(self.partial_values, rows, columns)  # raw until both metrics are known
        self.summary_label.setText(f"Raw values: {done} of {partial.n_layers} layers computed...")
        self.checks_label.setText("")
        self.switch_to_content()

    def switch_to_content(self) -> None:
        """Partial rows describe the current inputs: shown undimmed, the rest of the map blank."""
        self._stack.setCurrentWidget(self.content)
        self._stale.set(False)
        self._set_children_stale(False)

    def show_result(self, result) -> None:
        inputs: PatchingInputs = self.shown_inputs
        self.partial_inputs = self.partial_values = None
        rows, columns = self._labels(inputs, result.values.shape[1])
        self.patch_map.plot.setLabel("bottom", "head" if inputs.site == "head" else "position")
        normalised = result.normalised
        if result.metrics_agree:
            # No cell has a number: each would divide by the difference of two equal metrics.
            self.patch_map.nan_text = UNDEFINED
            set_title(self.patch_map.plot, f"Normalised metric {UNDEFINED}")
            self.patch_map.set_data(normalised, rows, columns, levels=(0.0, 1.0))
            scale = f"{UNDEFINED} (a cell is the metric's share of the way from corrupted to clean)"
        else:
            self.patch_map.nan_text = "no value"
            set_title(self.patch_map.plot, MAP_TITLE)
            self.patch_map.set_data(normalised, rows, columns, levels=(min(0.0, float(np.nanmin(normalised))),
                                                                     max(1.0, float(np.nanmax(normalised)))))
            scale = "0 = corrupted, 1 = clean"
        metric = self.controls.metric_text(self.state.tokenizer, result.answer, result.foil)
        top = " (the clean run's top prediction)" if inputs.answer is None else ""
        if result.answer == result.foil:
            top += ", the same token as the foil: every value is 0 by construction"
        if inputs.clean == inputs.corrupt:
            scale += ". The corrupted input equals the clean one: replace a token in the corrupted strip"
        where = "the last position" if inputs.position == len(inputs.clean) - 1 else f"position {inputs.position}"
        if inputs.model.config.architecture == "encoder":
            where += " (an encoder's logits there score the token that belongs at that position: read it at a blank)"
        self.summary_label.setText(f"{metric}{top} at {where}: clean {result.clean_metric:.5g}, corrupted "
                                   f"{result.corrupt_metric:.5g}; map: {scale}.")
        every = all(result.patch_all_equal)
        self.checks_label.setText(
            f"Checks: every position of a layer's stream patched gives the clean logits (torch.equal) in "
            f"{sum(result.patch_all_equal)} of {len(result.patch_all_equal)} layers"
            f"{'' if every else ' (NOT all)'}; nothing patched gives the corrupted logits: "
            f"{'yes' if result.patch_none_equal else 'NO'}.")

    def inputs_changed(self, *args) -> None:
        # Partial rows of a first computation have no shown inputs to compare with: they go stale here.
        if self.partial_inputs is not None and not self.inputs_held and self._current_inputs() != self.partial_inputs:
            self._mark_stale()
        super().inputs_changed(*args)

    def on_stale(self) -> None:
        self.partial_inputs = self.partial_values = None

    def shown_values(self) -> np.ndarray | None:
        return None if self.result is None or self.is_stale else self.result.values

    def export_targets(self):
        return [("Patching map (heatmap)", self.patch_map.plot.getPlotItem())]
