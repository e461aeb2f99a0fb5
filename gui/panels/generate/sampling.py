"""Sampling: the next-token distribution with temperature, top-k and top-p cut-offs, its entropy and a seeded draw.

The bars are the most likely tokens after the last position, in the order the draw sums them (most likely
first, ties by id; tokens a cut-off removed follow in the model's order): the outline is the
tempered distribution softmax(logits / T) before the cut-offs, the filled bar the renormalised
distribution a token is drawn from (empty where a cut-off removed the token, the drawn token's in
the highlight colour). The top-k and top-p cut-offs are the lines between the last kept bar and the
first cut one. The dotted line is the running total of the filled bars, top down: the draw picks the
first bar where it passes u (the vertical line). The draw is uniform n of the
seed's stream (core.sampling): "Sample next" appends the drawn token to the tokens, for every panel,
and moves on to draw n + 1, so stepping from a prompt gives what `generate --seed` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDoubleSpinBox, QLabel, QPushButton, QSpinBox, QVBoxLayout

from core.limits import MAX_SEED
from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.common import caption, sequence_refusal, set_title
from gui.panels.generate.common import SetTokensCommand
from gui.widgets.flow_layout import FlowLayout, control_group
from gui.widgets.plot_titles import min_plot_height

BARS_SHOWN = 10  # most likely tokens drawn as bars (each label legible at projector scale beside a lesson)
CONTEXT_SHOWN = 48  # tokens of context quoted above the bars
MAX_DRAW_INDEX = 1_000_000
DEFAULT_TEMPERATURE = 1.0


@dataclass(frozen=True)
class SamplingInputs:
    model: Any
    tokenizer: Any
    tokens: tuple[int, ...]
    temperature: float
    top_k: int | None
    top_p: float | None
    seed: int
    draw_index: int


@dataclass(frozen=True)
class SamplingResult:
    sampling: Any  # core.sampling.NextTokenSampling
    order: np.ndarray  # (N,) token ids of the bars, most likely first
    labels: tuple[str, ...]  # (N,) their labels
    drawn_label: str
    drawn_rank: int  # the drawn token's rank in the model's order (0 = most likely)
    context_labels: tuple[str, ...]
    top_p_cumulative: float  # tempered-after-top-k mass of the kept tokens: what reached p
    running_total: np.ndarray  # (N,) the draw's cumulative probability at each bar, top down


def compute_sampling(inputs: SamplingInputs, token) -> SamplingResult:
    import torch

    from core import sampling
    from core.experiments.common import token_labels

    model = inputs.model
    device = next(model.parameters()).device
    with torch.no_grad():
        logits = model(torch.tensor([inputs.tokens], device=device))[0, -1].float().cpu()  # (V,)
    result = sampling.next_token_sampling(logits, len(inputs.tokens) - 1, inputs.temperature, inputs.top_k,
                                          inputs.top_p, inputs.seed, inputs.draw_index)
    # The draw's order for the kept tokens, then the cut ones in the model's order (ties by id): the bars,
    # the ranks, the running total and the cut-off lines all read it.
    kept_ids = sampling.draw_order(torch.from_numpy(result.probabilities)).numpy()[:result.kept_count]  # (K,)
    cut_ids = np.nonzero(~result.kept)[0]  # (V - K,)
    cut_ids = cut_ids[np.lexsort((cut_ids, -logits.numpy()[cut_ids]))]  # (V - K,)
    ranking = np.concatenate([kept_ids, cut_ids])  # (V,)
    order = ranking[:BARS_SHOWN]
    after_k = result.after_top_k
    tempered_after_k = np.where(after_k, result.tempered, 0.0)
    mass = float(tempered_after_k[result.kept].sum() / max(tempered_after_k.sum(), np.finfo(np.float64).tiny))
    return SamplingResult(
        sampling=result,
        order=order,
        labels=token_labels(order.tolist(), inputs.tokenizer),
        drawn_label=token_labels([result.token], inputs.tokenizer)[0],
        drawn_rank=int(np.nonzero(ranking == result.token)[0][0]),
        context_labels=token_labels(list(inputs.tokens[-CONTEXT_SHOWN:]), inputs.tokenizer),
        top_p_cumulative=mass,
        running_total=np.cumsum(result.probabilities[order]),
    )


def _probability(p: float) -> str:
    return f"{p:.3f}" if p >= 1e-3 or p == 0 else f"{p:.1e}"


class SamplingView(View):
    name = "Sampling"
    reads = frozenset({"model", "tokens", "tokenizer"})
    compute_fn = staticmethod(compute_sampling)

    def __init__(self, state, compute, channel_prefix: str = "", parent=None) -> None:
        super().__init__(state, compute, channel_prefix, parent)
        self._own_tokens: list[int] | None = None  # the tokens our last step made (another edit restarts the draws)
        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 4, 0, 0)
        controls = FlowLayout()  # wraps on a narrow window or at a large text scale
        self.temperature_spin = QDoubleSpinBox()
        self.temperature_spin.setObjectName("generate-temperature")
        self.temperature_spin.setRange(0.0, 10.0)
        self.temperature_spin.setDecimals(2)
        self.temperature_spin.setSingleStep(0.1)
        self.temperature_spin.setValue(DEFAULT_TEMPERATURE)
        self.temperature_spin.setSpecialValueText("0 (greedy)")
        self.temperature_spin.setToolTip("softmax(logits / T): below 1 sharpens, above 1 flattens; 0 takes the argmax")
        self.top_k_spin = QSpinBox()
        self.top_k_spin.setObjectName("generate-top-k")
        self.top_k_spin.setRange(0, 1_000_000)
        self.top_k_spin.setSpecialValueText("off")
        self.top_k_spin.setToolTip("keep only the k most likely tokens (ties with the k-th stay); off keeps all")
        self.top_p_spin = QDoubleSpinBox()
        self.top_p_spin.setObjectName("generate-top-p")
        self.top_p_spin.setRange(0.001, 1.0)
        self.top_p_spin.setDecimals(3)
        self.top_p_spin.setSingleStep(0.05)
        self.top_p_spin.setValue(1.0)
        self.top_p_spin.setToolTip("nucleus: keep the fewest most likely tokens whose probability reaches p; 1 keeps all")
        self.seed_spin = QSpinBox()
        self.seed_spin.setObjectName("generate-seed")
        self.seed_spin.setRange(0, MAX_SEED)
        self.seed_spin.setToolTip("the seed of the uniform stream the draws take their numbers from")
        self.draw_spin = QSpinBox()
        self.draw_spin.setObjectName("generate-draw")
        self.draw_spin.setRange(0, MAX_DRAW_INDEX)
        self.draw_spin.setToolTip("which uniform of the seed's stream this draw uses; a step moves on by one")
        for spin in (self.temperature_spin, self.top_k_spin, self.top_p_spin, self.seed_spin, self.draw_spin):
            spin.setKeyboardTracking(False)
            spin.valueChanged.connect(self.inputs_changed)
        for text, spin in (("Temperature", self.temperature_spin), ("Top k", self.top_k_spin),
                           ("Top p", self.top_p_spin), ("Seed", self.seed_spin), ("Draw #", self.draw_spin)):
            label = QLabel(text)
            label.setBuddy(spin)
            controls.addWidget(control_group(label, spin))
        self.sample_button = QPushButton("Sample next")
        self.sample_button.setObjectName("generate-sample-next")
        self.sample_button.setToolTip("Step: append the drawn token to the tokens (every panel follows) and move to the next draw")
        self.step_back_button = QPushButton("Step back")
        self.step_back_button.setObjectName("generate-step-back")
        self.step_back_button.setToolTip("Remove the last token and go back one draw")
        self.sample_button.clicked.connect(self.sample_next)
        self.step_back_button.clicked.connect(self.step_back)
        controls.addWidget(control_group(self.sample_button, self.step_back_button))
        self.add_controls(controls)
        self.context_label = caption("")
        self.context_label.setObjectName("generate-context")
        layout.addWidget(self.context_label)
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.invertY(True)
        self.plot.setLabel("bottom", "probability")
        self.plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.tempered_bars = pg.BarGraphItem(x0=[0], y=[0], height=0.8, width=[0])
        self.sampled_bars = pg.BarGraphItem(x0=[0], y=[0], height=0.5, width=[0])
        self.plot.addItem(self.tempered_bars)
        self.plot.addItem(self.sampled_bars)
        self.running_total_curve = pg.PlotDataItem()
        self.uniform_line = pg.InfiniteLine(angle=90, movable=False)
        self.plot.addItem(self.running_total_curve)
        self.plot.addItem(self.uniform_line)
        self.top_k_line = pg.InfiniteLine(angle=0, movable=False)
        self.top_p_line = pg.InfiniteLine(angle=0, movable=False)
        # Above the top-k line and below the top-p line, so that the two never cover each other.
        self.top_k_text = pg.TextItem(anchor=(0, 1))
        self.top_p_text = pg.TextItem(anchor=(0, 0))
        self.drawn_text = pg.TextItem(anchor=(0, 0.5))
        for item in (self.top_k_line, self.top_p_line, self.top_k_text, self.top_p_text, self.drawn_text):
            self.plot.addItem(item)
            item.hide()
        layout.addWidget(self.plot, 1)
        self.legend_label = caption("Outline: softmax(logits / T). Filled: what the draw uses, the drawn token "
                                    "highlighted. Dashed: the top-k and top-p cut-offs. Dotted: the running total, top "
                                    "down; the draw takes the first bar where it passes u (the vertical line).")
        layout.addWidget(self.legend_label)
        self.entropy_label = caption("")
        self.entropy_label.setObjectName("generate-entropy")
        self.draw_label = caption("")
        self.draw_label.setObjectName("generate-draw-result")
        self.hover_label = caption(" ")
        for label in (self.entropy_label, self.draw_label, self.hover_label):
            layout.addWidget(label)
        self.stale_labels = [self.entropy_label, self.draw_label, self.context_label]
        self.readouts = [self.hover_label]
        self._mouse_proxy = pg.SignalProxy(self.plot.scene().sigMouseMoved, rateLimit=30, slot=self._mouse_moved)
        self._hover_row: int | None = None
        state.tokens_changed.connect(self._tokens_changed)
        self._sync_buttons()

    # ---- inputs and result -----------------------------------------------------------------------
    def inputs(self) -> SamplingInputs | Refusal | None:
        model, tokens = self.state.model, self.state.tokens
        if model is None:
            return None
        problem = sequence_refusal(model, tokens)
        if problem:
            return Refusal(problem)
        from core.experiments.next_token import continuation_refusal  # torch is loaded: a model is

        problem = continuation_refusal(model.config)
        if problem:
            return Refusal(f"{problem[0].upper()}{problem[1:]}. Pick a decoder preset.")
        top_k = self.top_k_spin.value() or None
        top_p = round(self.top_p_spin.value(), 3)
        return SamplingInputs(model, self.state.tokenizer, tuple(tokens), round(self.temperature_spin.value(), 2),
                              top_k, None if top_p >= 1 else top_p, self.seed_spin.value(), self.draw_spin.value())

    def on_stale(self) -> None:
        for item in (self.top_k_line, self.top_p_line, self.top_k_text, self.top_p_text, self.drawn_text,
                     self.running_total_curve, self.uniform_line):
            item.hide()
        self._sync_buttons()

    def show_result(self, result: SamplingResult) -> None:
        inputs: SamplingInputs = self.shown_inputs
        s = result.sampling
        n = len(result.order)
        ys = np.arange(n, dtype=float)
        tempered = s.tempered[result.order]
        renormalised = s.probabilities[result.order]
        self.tempered_bars.setOpts(x0=np.zeros(n), y=ys, width=tempered, height=0.8, brush=pg.mkBrush(None),
                                   pen=theme.pen("muted", width=1))
        # The drawn token's bar in the highlight colour: the bars say which token the seed picked.
        drawn = [row == result.drawn_rank for row in range(n)]
        self.sampled_bars.setOpts(x0=np.zeros(n), y=ys, width=renormalised, height=0.5,
                                  brushes=[theme.brush("highlight" if d else "primary") for d in drawn],
                                  pens=[theme.pen("highlight" if d else "primary", width=1) for d in drawn])
        # Quoted: a lone ',' or '.' is a speck on the axis; in quotes it reads as a token at any text size.
        # A line of height for each bar's label, and the title, the axis and its label: no label is left out.
        self.plot.setMinimumHeight(min_plot_height(n + 4))
        self.plot.getAxis("left").setTicks([[(row, f"'{label}'") for row, label in enumerate(result.labels)]])
        # The axis reaches u and the running total where it passes u, so the crossing is always in view.
        top = float(max(tempered.max(initial=0.0), renormalised.max(initial=0.0), s.uniform))
        x_range = min(1.0, top * 1.15) or 1.0
        self.plot.setXRange(0, x_range, padding=0)
        self.plot.setYRange(-0.6, n - 0.4, padding=0)
        self.running_total_curve.setData(result.running_total, ys, pen=theme.pen("text", width=2, style=Qt.PenStyle.DotLine),
                                         symbol="o", symbolSize=6, symbolBrush=theme.brush("text"), symbolPen=None)
        self.running_total_curve.show()
        self.uniform_line.setPen(theme.pen("highlight", width=1, style=Qt.PenStyle.DashLine))
        self.uniform_line.setPos(s.uniform)
        self.uniform_line.show()
        x_text = 0.3 * x_range  # right of the short bars of cut tokens, left of a long top bar's marker
        kept_after_k = int(s.after_top_k.sum())
        self._place_cut(self.top_k_line, self.top_k_text, kept_after_k, n, x_text,
                        f"top-k = {inputs.top_k}: {kept_after_k} kept" if inputs.top_k is not None else "")
        self._place_cut(self.top_p_line, self.top_p_text, s.kept_count, n, x_text,
                        f"top-p = {inputs.top_p:g}: {s.kept_count} kept, together {result.top_p_cumulative:.3f} "
                        f"of the mass{' after top-k' if inputs.top_k is not None else ''}"
                        if inputs.top_p is not None else "")
        bar_end = float(max(tempered[result.drawn_rank], renormalised[result.drawn_rank])) if result.drawn_rank < n else 1.0
        if bar_end < 0.6 * x_range:  # room right of the bar; a longer bar's colour alone marks it
            self.drawn_text.setText(f"◀ drawn (u = {s.uniform:.4f})", color=theme.color("highlight"))
            self.drawn_text.setFont(theme.font(0.9, bold=True))
            self.drawn_text.setPos(bar_end, result.drawn_rank)
            self.drawn_text.show()
        else:
            self.drawn_text.hide()
        greedy = " (greedy: T = 0)" if inputs.temperature == 0 else f" (T = {inputs.temperature:g})"
        passed = ("the running total first passes u at its bar" if result.drawn_rank < n
                  else f"the running total passes u below the {n} bars shown")
        set_title(self.plot, f"Next token after position {s.position}{greedy}")
        vocab = len(s.kept)
        self.entropy_label.setText(
            f"Entropy of the distribution sampled from: {s.entropy_nats:.3f} nats = {s.entropy_bits:.3f} bits; "
            f"the model's own (T = 1, no cut-offs): {s.model_entropy_nats:.3f} nats = {s.model_entropy_bits:.3f} bits. "
            f"Kept {s.kept_count:,} of {vocab:,} tokens, which held {s.kept_mass:.3f} of the tempered probability.")
        self.draw_label.setText(
            f"Seed {inputs.seed}, draw {inputs.draw_index}: u = {s.uniform:.6f} lands on '{result.drawn_label}' "
            f"(rank {result.drawn_rank + 1}, p = {_probability(float(s.probabilities[s.token]))} after the cut-offs, "
            f"{_probability(float(s.model_probabilities[s.token]))} in the model's own distribution): "
            f"{passed}.")
        ellipsis = "…" if len(inputs.tokens) > CONTEXT_SHOWN else ""
        self.context_label.setText(f"{len(inputs.tokens)} tokens: {ellipsis}{''.join(result.context_labels)}")
        self._sync_buttons()

    def _place_cut(self, line: pg.InfiniteLine, text: pg.TextItem, kept: int, shown: int, x: float, words: str) -> None:
        """A cut-off line between the last kept bar and the first cut one (bars are in the model's order)."""
        if not words:
            line.hide()
            text.hide()
            return
        line.setPen(theme.pen("highlight" if line is self.top_p_line else "tertiary", width=2, style=Qt.PenStyle.DashLine))
        if kept < shown:
            line.setPos(kept - 0.5)
            line.show()
            text.setText(words, color=theme.color("text"))
            text.setPos(x, kept - 0.5)
        else:
            line.hide()
            text.setText(f"{words} (below the {shown} bars shown)", color=theme.color("text"))
            text.setPos(x, shown - 0.5)
        text.setFont(theme.font(0.85))
        text.show()

    # ---- hover -----------------------------------------------------------------------------------
    def _mouse_moved(self, event) -> None:
        position = event[0]
        if not self.plot.sceneBoundingRect().contains(position):
            self._hover_row = None
        else:
            point = self.plot.getPlotItem().vb.mapSceneToView(position)
            self._hover_row = int(round(point.y()))
        self.refresh_hover()

    def refresh_hover(self) -> None:
        if self.is_stale or self.result is None or self._hover_row is None:
            self.hover_label.setText(" ")
            return
        result: SamplingResult = self.result
        row = self._hover_row
        if not 0 <= row < len(result.order):
            self.hover_label.setText(" ")
            return
        s = result.sampling
        token_id = int(result.order[row])
        state = "kept" if s.kept[token_id] else ("cut by top-p" if s.after_top_k[token_id] else "cut by top-k")
        self.hover_label.setText(
            f"'{result.labels[row]}' (id {token_id}, rank {row + 1}): model p = {_probability(float(s.model_probabilities[token_id]))}, "
            f"tempered {_probability(float(s.tempered[token_id]))}, sampled from {_probability(float(s.probabilities[token_id]))}; {state}")

    # ---- stepping --------------------------------------------------------------------------------
    def _current_result(self) -> SamplingResult | None:
        """The shown result, if it belongs to what the controls and tokens say now."""
        if self.result is None or self.is_stale or self.shown_inputs is None:
            return None
        return self.result if self.shown_inputs == self._current_inputs() else None

    def _sync_buttons(self) -> None:
        result = self._current_result()
        inputs = self.shown_inputs
        full = inputs is not None and len(inputs.tokens) >= inputs.model.config.context_length
        self.sample_button.setEnabled(result is not None and not full)
        self.sample_button.setToolTip("The context is full: step back or shorten the text" if full else
                                      "Step: append the drawn token to the tokens (every panel follows) and move to the next draw")
        self.step_back_button.setEnabled(len(self.state.tokens) > 1)

    def sample_next(self) -> bool:
        """Append the drawn token (undoable) and move to the next draw; False when no current draw is shown."""
        result = self._current_result()
        if result is None or len(self.shown_inputs.tokens) >= self.shown_inputs.model.config.context_length:
            return False
        old = list(self.shown_inputs.tokens)
        new = old + [int(result.sampling.token)]
        self._own_tokens = new
        self.draw_spin.setValue(self.draw_spin.value() + 1)
        self.state.undo_stack.push(SetTokensCommand(self.state, old, new, f"sample token {len(old)}"))
        return True

    def step_back(self) -> bool:
        """Remove the last token (undoable) and go back one draw."""
        old = self.state.tokens
        if len(old) <= 1:
            return False
        new = old[:-1]
        self._own_tokens = new
        self.draw_spin.setValue(max(0, self.draw_spin.value() - 1))
        self.state.undo_stack.push(SetTokensCommand(self.state, old, new, f"remove token {len(new)}"))
        return True

    def _tokens_changed(self) -> None:
        if self._own_tokens is None or self.state.tokens != self._own_tokens:
            self.draw_spin.setValue(0)  # a new prompt (typed, edited elsewhere, undone) starts at draw 0
        self._own_tokens = None
        self._sync_buttons()

    def export_targets(self) -> list[tuple[str, Any]]:
        return [("Next-token sampling", self.plot.getPlotItem())]
