"""Positions: attention cannot see order until positions are added, and RoPE makes scores depend on m - n alone.

The rows on top pick q and k (the reading's seeded pair, or one head of the current RoPE model)
and the RoPE base, interpolation scale and positions P that the scrubber and the grids read. Each
sub-tab is a view of its own (gui/panels/positions/*.py): only the one on screen computes, and one
shown again catches up with what changed while it was hidden. The query and key positions m and n
are shared by the scrubber and the grids and are no input of either: moving them only indexes
what the worker computed.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QSizePolicy, QSpinBox, QWidget

from gui.panels.base import Panel
from gui.panels.positions.common import PositionsControls, ScrubPosition, labelled, model_rope_problem, plain_label
from gui.panels.positions.encodings import EncodingsView
from gui.panels.positions.grids import GridsView
from gui.panels.positions.permutation import PermutationView, parse_permutation
from gui.panels.positions.reading import ReadingPositionsView
from gui.panels.positions.scrubber import ScrubberView
from gui.panels.reading_mode import ReadingMode
from gui.widgets.flow_layout import FlowLayout
from gui.widgets.page_tabs import PageTabs

SUB_TABS = ("RoPE scrubber", "Score grids", "Encodings", "Permutation")

CONTROL_NAMES = ("source_combo", "seed_spin", "d_spin", "layer_spin", "head_spin", "query_token_spin",
                 "key_token_spin", "base_spin", "scale_spin", "positions_spin")
# Widgets of the views that lessons (focus, {{name}}), tests and benchmarks reach as panel attributes.
SCRUBBER_NAMES = ("m_slider", "n_slider", "m_line", "n_line", "m_caption", "n_caption", "lock_check",
                  "compare_sinusoidal_check", "rope_score_label", "sinusoidal_score_label", "offset_label",
                  "trace_plot", "trace_rope", "trace_sinusoidal", "row_plot", "arrow_plot", "norm_plot", "norm_label")
GRIDS_NAMES = ("grids_note", "rope_grid", "sinusoidal_grid", "learned_grid", "offset_plot")
ENCODINGS_NAMES = ("encoding_width_spin", "fingerprint_spin", "alibi_heads_spin", "alibi_length_spin",
                   "alibi_head_combo", "sinusoid_map", "fingerprint_plot", "wavelength_plot", "learned_note",
                   "learned_map", "alibi_map")
PERMUTATION_NAMES = ("permutation_length_spin", "permutation_width_spin", "permutation_seed_spin",
                     "permutation_edit", "shuffle_button", "permutation_message", "permutation_plot",
                     "permutation_table", "permutation_summary")


class PositionsPanel(Panel):
    title = "Positions"
    refresh_on = frozenset()  # every view subscribes to what it reads

    def __init__(self, state, compute, parent: QWidget | None = None) -> None:
        super().__init__(state, compute, parent)
        self.controls = PositionsControls(self)
        self.position = ScrubPosition(self.controls, self)
        for name in CONTROL_NAMES:
            setattr(self, name, getattr(self.controls, name))
        layout = self.layout()
        layout.addLayout(self._build_source_rows())

        prefix = f"{self.channel}/"
        self.scrubber_view = self.add_view(ScrubberView(state, compute, self.controls, self.position, prefix))
        self.grids_view = self.add_view(GridsView(state, compute, self.controls, self.position, prefix))
        self.encodings_view = self.add_view(EncodingsView(state, compute, self.controls, prefix))
        self.permutation_view = self.add_view(PermutationView(state, compute, prefix))
        self.tabs = PageTabs()  # sized by the view on show, not the widest view
        self.tabs.setObjectName("positions-tabs")
        self.tabs.setDocumentMode(True)
        for view in self.views:
            self.tabs.addTab(view, view.name)
        # The reading's scripts replace the sub-tabs while checked; they read none of the controls above,
        # so leaving them shows the views as the user left them.
        self.reading_view = self.add_view(ReadingPositionsView(state, compute, prefix))
        self.reading_seed_spin = self.reading_view.reading_seed_spin
        self.reading_mode = ReadingMode(self.tabs, self.reading_view, "positions-reading-toggle",
                                        "Show the reading's RoPE and permutation scripts, run here with their seeds "
                                        "and random inputs; uncheck to return to the views and their settings", self)
        self.reading_check = self.reading_mode.check
        layout.addWidget(self.reading_mode.container, 1)
        for view, names in ((self.scrubber_view, SCRUBBER_NAMES), (self.grids_view, GRIDS_NAMES),
                            (self.encodings_view, ENCODINGS_NAMES), (self.permutation_view, PERMUTATION_NAMES)):
            for name in names:
                setattr(self, name, getattr(view, name))

        self.source_combo.currentIndexChanged.connect(self._source_changed)
        state.model_changed.connect(self._update_source_availability)
        state.tokens_changed.connect(self._update_source_availability)
        # After the views' own handlers: they mark themselves stale first, then the label follows.
        self.controls.changed.connect(self._update_source_label)
        state.model_changed.connect(self._update_source_label)
        state.tokens_changed.connect(self._update_source_label)
        for view in (self.scrubber_view, self.grids_view):
            view.result_shown.connect(self._update_source_label)
            view.error_shown.connect(self._update_source_label)
        self._update_source_availability()
        self.apply_theme()

    def _build_source_rows(self) -> FlowLayout:
        """The q, k source and the RoPE formula's knobs: groups that wrap onto further rows as the panel narrows."""
        controls = self.controls
        rows = FlowLayout()
        labelled(rows, "q, k:", controls.source_combo)
        self.random_controls = QWidget()
        random_row = FlowLayout(self.random_controls)
        labelled(random_row, "seed", controls.seed_spin)
        labelled(random_row, "d", controls.d_spin)
        rows.addWidget(self.random_controls)
        self.model_controls = QWidget()
        model_row = FlowLayout(self.model_controls)
        labelled(model_row, "layer", controls.layer_spin)
        labelled(model_row, "head", controls.head_spin)
        labelled(model_row, "q token", controls.query_token_spin)
        labelled(model_row, "k token", controls.key_token_spin)
        rows.addWidget(self.model_controls)
        self.model_controls.hide()
        labelled(rows, "RoPE base", controls.base_spin)
        labelled(rows, "interpolation scale", controls.scale_spin)
        labelled(rows, "positions P", controls.positions_spin)
        self.source_label = plain_label(name="positions-source-label")
        # Wraps rather than widens (a long model label must not push the panel past a projector screen),
        # and takes what its row leaves over, so a short one stays on one line.
        self.source_label.setWordWrap(True)
        self.source_label.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        rows.addWidget(self.source_label)
        return rows

    # ---- the q, k source -----------------------------------------------------------------------
    def model_rope_problem(self) -> str:
        """Why q and k cannot come from the current model, or "" when they can."""
        return model_rope_problem(self.state.model, self.state.tokens)

    def _update_source_availability(self) -> None:
        problem = self.model_rope_problem()
        item = self.source_combo.model().item(1)
        item.setEnabled(not problem)
        item.setToolTip(problem or "q and k of one head of the current RoPE model, un-rotated to their content")
        if problem and self.source_combo.currentIndex() == 1:
            self.source_combo.setCurrentIndex(0)
        model = self.state.model
        if model is not None:
            config = model.config
            tokens = min(len(self.state.tokens), config.context_length)
            for spin, high in ((self.layer_spin, config.n_layers - 1), (self.head_spin, config.n_heads - 1),
                               (self.query_token_spin, max(0, tokens - 1)), (self.key_token_spin, max(0, tokens - 1))):
                spin.setMaximum(high)

    def _source_changed(self, index: int) -> None:
        from_model = index == 1
        self.random_controls.setVisible(not from_model)
        self.model_controls.setVisible(from_model)
        model = self.state.model
        if from_model and not self.model_rope_problem():
            # Start from the model's own formula; the spins then ask "what if it were stretched".
            last_token = max(0, min(len(self.state.tokens), model.config.context_length) - 1)
            config, state = model.config, self.state
            for spin, value in ((self.base_spin, config.rope_base), (self.scale_spin, config.rope_scale),
                                (self.layer_spin, state.selected_layer), (self.head_spin, state.selected_head),
                                (self.key_token_spin, 0), (self.query_token_spin, last_token)):
                spin.setValue(value)

    def _update_source_label(self, *_args) -> None:
        """Where the shown q and k came from: the label of a current result of the scrubber or the grids."""
        shown = [view.result for view in (self.scrubber_view, self.grids_view)
                 if view.result is not None and not view.is_stale]
        if not shown:
            self.source_label.setText("")
            self.source_label.setToolTip("")
            return
        data = shown[0]
        self.source_label.setText(data.label)  # base and scale stand in their own boxes
        self.source_label.setToolTip(f"{data.label}; base {data.base:g}, scale {data.scale:g}")

    # ---- positions m, n ------------------------------------------------------------------------
    @property
    def m(self) -> int:
        return self.position.m

    @property
    def n(self) -> int:
        return self.position.n

    def set_positions(self, m: int | None = None, n: int | None = None, locked: bool | None = None) -> None:
        """Move the query and/or key position; with the offset locked, moving one moves the other."""
        self.position.set(m, n, self.lock_check.isChecked() if locked is None else locked)

    # ---- what is shown -------------------------------------------------------------------------
    @property
    def scrubber(self):
        """The scrubber's shown ScrubberData, or None while it is stale or has none."""
        return self.scrubber_view.data

    def shown_scores(self) -> tuple[float, float]:
        return self.scrubber_view.shown_scores()

    def locked_traces(self):
        return self.scrubber_view.locked_traces()

    def score_grids(self):
        return self.grids_view.score_grids()

    def permutation_figures(self) -> dict[str, float]:
        """Max |difference| per encoding, as shown."""
        return self.permutation_view.figures()

    @property
    def last_error(self) -> str:
        """The panel's own error, else the first error a view shows."""
        own = self._own_error
        return own or next((view.last_error for view in getattr(self, "views", []) if view.last_error), "")

    @last_error.setter
    def last_error(self, message: str) -> None:
        self._own_error = message

    def current_view(self):
        return self.reading_view if self.reading_script else self.tabs.currentWidget()

    @property
    def reading_script(self) -> bool:
        return self.reading_mode.on

    def set_reading_script(self, on: bool) -> None:
        """Show the reading's scripts instead of the sub-tabs (on), or the sub-tabs again."""
        self.reading_mode.set_on(on)

    # ---- theme, export, session ----------------------------------------------------------------

    def _spins(self) -> dict[str, QSpinBox]:
        return {**self.controls.spins(), **self.encodings_view.spins(), **self.permutation_view.spins()}

    def settings(self) -> dict[str, Any]:
        data: dict[str, Any] = {key: spin.value() for key, spin in self._spins().items()}
        permutation = self.permutation_view.valid_permutation
        data.update(
            source="model" if self.controls.from_model else "random",
            m=self.m,
            n=self.n,
            lock_offset=self.lock_check.isChecked(),
            compare_sinusoidal=self.compare_sinusoidal_check.isChecked(),
            permutation=list(permutation) if permutation is not None else None,
            tab=self.tabs.tabText(self.tabs.currentIndex()),
            reading_script=self.reading_script,
            reading_seed=self.reading_seed_spin.value(),
            alibi_head=self.encodings_view.alibi_head,
        )
        return data

    def restore_settings(self, data: dict[str, Any]) -> None:
        if not isinstance(data, dict):
            return
        # The source first: choosing the model source resets base, scale, layer, head and tokens to the
        # model's, and the saved values below must win over those defaults.
        if data.get("source") == "model" and not self.model_rope_problem():
            self.source_combo.setCurrentIndex(1)
        elif data.get("source") == "random":
            self.source_combo.setCurrentIndex(0)
        for key, spin in self._spins().items():
            value = data.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if isinstance(spin, QSpinBox) and value != int(value):
                    continue
                spin.setValue(int(value) if isinstance(spin, QSpinBox) else float(value))
        for key, check in (("lock_offset", self.lock_check), ("compare_sinusoidal", self.compare_sinusoidal_check)):
            if isinstance(data.get(key), bool):
                check.setChecked(data[key])
        permutation = data.get("permutation")
        if isinstance(permutation, list) and all(isinstance(p, int) and not isinstance(p, bool) for p in permutation):
            try:
                order = parse_permutation(" ".join(map(str, permutation)), self.permutation_length_spin.value())
            except ValueError:
                order = None
            self.permutation_view.set_permutation(order)
        head = data.get("alibi_head")
        if isinstance(head, int) and not isinstance(head, bool):
            self.encodings_view.set_alibi_head(head)
        tab = data.get("tab")
        if tab in SUB_TABS:
            self.tabs.setCurrentIndex(SUB_TABS.index(tab))
        positions_m, positions_n = data.get("m"), data.get("n")
        if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (positions_m, positions_n)):
            self.position.set(m=positions_m, n=positions_n)
        seed = data.get("reading_seed")
        if isinstance(seed, int) and not isinstance(seed, bool):
            self.reading_seed_spin.setValue(seed)
        # Settings that do not ask for the reading's scripts (a lesson step's) show the sub-tabs they set up.
        self.set_reading_script(data.get("reading_script") is True)
