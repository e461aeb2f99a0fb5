"""No refusal strands a view: every registered view of every panel keeps its inputs visible and enabled while it
refuses, says why in one line where the result would be, and shows a result again once the input is corrected,
without another tab being opened. A view that can refuse nothing says so here, and its bounded controls are
pushed to their limits to show it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from PySide6.QtWidgets import (QAbstractSpinBox, QCheckBox, QComboBox, QLineEdit, QStackedWidget, QTabWidget,
                               QToolButton, QWidget)

from core.model import Transformer
from core.objectives.masked_lm import MASK_CHAR
from core.presets import get_preset
from gui import theme
from gui.compute import ComputeController
from gui.panels import PANEL_CLASSES
from gui.panels.base import View
from gui.state import LabState
from tests import family_models
from tests.gui.panel_labs import RESULT_TIMEOUT_MS, close_panel_lab

CONTEXT = 32
TEXT = "to be or not to be"  # 18 characters: inside the context
LONG = "to be or not to be, that is the question"  # 40 characters: past it


def decoder(**changes) -> Transformer:
    """A small decoder over the Shakespeare characters with a learned position table of 32 rows: it refuses a longer
    text (RoPE would take one past its trained length)."""
    config = get_preset("tiny-llama").replace(
        **{"vocab_size": family_models.shakespeare_tokenizer().vocab_size, "context_length": CONTEXT,
           "positional": "learned", "name": "small-decoder", **changes})
    return Transformer.from_seed(config, 0)


@dataclass
class Lab:
    state: LabState
    panel: object
    base: Transformer

    def use(self, model: Transformer, tokenizer=None, text: str | None = None) -> None:
        state = self.state
        state.set_config(model.config)
        state.set_tokenizer(tokenizer or family_models.shakespeare_tokenizer())
        state.set_model(model)
        if text is not None:
            state.set_text(text)


@pytest.fixture(scope="module")
def base_model():
    return decoder()


def build(qtbot, panel_class, base_model):
    state = LabState()
    compute = ComputeController(torch_threads=1)
    panel = panel_class(state, compute)
    panel.resize(1366, 768)
    panel.show()
    lab = Lab(state, panel, base_model)
    lab.use(base_model, text=TEXT)
    state.set_torch_ready(True)
    return lab, compute


def reveal(panel: QWidget, view: View) -> None:
    """Bring the view's sub-tab (and any tab above it) to the front, as a click on its tab would."""
    child, parent = view, view.parentWidget()
    while child is not panel and parent is not None:
        if isinstance(parent, QStackedWidget):
            tabs = parent.parentWidget()
            (tabs if isinstance(tabs, QTabWidget) else parent).setCurrentWidget(child)
        child, parent = parent, parent.parentWidget()


def tab_indexes(panel: QWidget) -> list[int]:
    return [tabs.currentIndex() for tabs in panel.findChildren(QTabWidget)]


def input_widgets(view: View) -> list[QWidget]:
    """The inputs in the view's controls area: an action on the shown result (Sample next) may wait for one."""
    kinds = (QAbstractSpinBox, QComboBox, QLineEdit, QCheckBox, QToolButton)
    return [widget for widget in view.controls_area.findChildren(QWidget) if isinstance(widget, kinds)]


def wait_for_result(qtbot, view: View) -> None:
    qtbot.waitUntil(lambda: view.result is not None and not view.is_stale and not view.showing_message,
                    timeout=RESULT_TIMEOUT_MS)


# ---- how each view is refused and put right ----------------------------------------------------------------
@dataclass(frozen=True)
class Recipe:
    refuse: Callable[[Lab, View], QWidget | None]  # makes the refused input; returns the control it edited, if any
    correct: Callable[[Lab, View], None]
    prepare: Callable[[Lab, View], None] = lambda lab, view: None
    phrase: str = ""  # in the refusal line


def _long_text(lab, view):
    lab.state.set_text(LONG)


def _text_back(lab, view):
    lab.state.set_text(TEXT)


TEXT_TOO_LONG = Recipe(_long_text, _text_back, phrase=f"delete at least {len(LONG) - CONTEXT} tokens")


def _family(model_fn, tokenizer_fn, text=TEXT) -> Recipe:
    """A view of another family: its result on its model, refused (with the offer of that model) on a decoder."""
    def prepare(lab, view):
        lab.use(model_fn(), tokenizer_fn(), text)

    return Recipe(lambda lab, view: lab.use(lab.base, text=TEXT), lambda lab, view: prepare(lab, view), prepare,
                  phrase="small-decoder")


def _norms_heads(value):
    def edit(lab, view):
        lab.panel.width_spin.setValue(64)
        lab.panel.heads_spin.setValue(value)
        return lab.panel.heads_spin
    return edit


def _shapes_heads(value):
    def edit(lab, view):
        lab.panel.controls.heads_spin.setValue(value)
        return lab.panel.controls.heads_spin
    return edit


def _bundled_tiny_gpt(lab):
    from core.checkpoints import load_bundled

    loaded = load_bundled("tiny-gpt")
    lab.use(loaded.model, loaded.tokenizer, TEXT)


def _train_on(lab, view, model, steps=None):
    lab.use(model, text=TEXT)
    if steps is not None:
        view.steps_spin.setValue(steps)
    from gui.panels.base import AwaitingStart

    assert isinstance(view.inputs(), AwaitingStart)  # nothing trains before the press
    view.train_button.click()


def _induction_encoder(lab, view):
    lab.use(family_models.encoder(), family_models.encoder_tokenizer(), TEXT)


RECIPES: dict[str, Recipe | None] = {
    # The text is past the context of 32.
    **dict.fromkeys(("FollowTokenView", "PropagationView", "MaskView", "AttentionView", "WorkedHeadView",
                     "PredictionsView", "SamplingView", "KVCacheView", "AttributionView", "PatchingView",
                     "AblationView"), TEXT_TOO_LONG),
    # A model of another family: the view offers its own and takes it back.
    "FillBlankView": _family(family_models.encoder, family_models.encoder_tokenizer, f"to be or {MASK_CHAR}ot"),
    "CrossAttentionView": _family(family_models.encoder_decoder, family_models.date_tokenizer),
    "RouterView": _family(family_models.moe, family_models.shakespeare_tokenizer),
    # An SAE reads the weights it was trained on: another model is refused, with the offer of its own.
    **dict.fromkeys(("DashboardView", "SteeringView"), Recipe(
        lambda lab, view: lab.use(lab.base, text=TEXT), lambda lab, view: _bundled_tiny_gpt(lab),
        lambda lab, view: _bundled_tiny_gpt(lab), phrase="small-decoder")),
    # Training starts on its button: the corrected model waits for a new press.
    "TrainView": Recipe(_induction_encoder, lambda lab, view: _train_on(lab, view, lab.base),
                        lambda lab, view: _train_on(lab, view, lab.base, steps=10), phrase="decoder"),
    "InductionView": Recipe(_induction_encoder, lambda lab, view: lab.use(lab.base, text=TEXT), phrase="decoder"),
    # A width that does not split into the heads.
    "NormsView": Recipe(_norms_heads(5), lambda lab, view: _norms_heads(4)(lab, view), phrase="5 heads"),
    "ShapesView": Recipe(_shapes_heads(7), lambda lab, view: _shapes_heads(4)(lab, view), phrase="divisible"),
    # Every input is a bounded control or a preset: there is nothing to refuse. (The Positions panel greys out
    # "q, k from the model" for a model without RoPE and falls back to the random pair.)
    **dict.fromkeys(("ScrubberView", "GridsView", "HeadSplitView", "ReadingCausalView", "EncodingsView",
                     "PermutationView", "ReadingPositionsView",
                     "BreakdownView", "CompareView", "SweepView", "BudgetView"), None),
    # The bundled context models and the bundled ladder record: a slider bounded to the scales it takes, no text.
    **dict.fromkeys(("StretchingView", "LadderView"), None),
}


@pytest.mark.parametrize("panel_class", PANEL_CLASSES, ids=lambda cls: cls.__name__)
def test_every_view_keeps_its_controls_through_a_refusal_and_comes_back(qtbot, panel_class, base_model):
    lab, compute = build(qtbot, panel_class, base_model)
    panel = lab.panel
    try:
        for view in panel.views:
            assert type(view).__name__ in RECIPES, f"{type(view).__name__}: say here how it is refused and put right"
            recipe = RECIPES[type(view).__name__]
            reveal(panel, view)
            if recipe is None:
                _walk_bounded(qtbot, panel, view)
                continue
            recipe.prepare(lab, view)
            wait_for_result(qtbot, view)
            before = {id(widget): (widget.isVisible(), widget.isEnabled()) for widget in input_widgets(view)}
            tabs = tab_indexes(panel)
            edited = recipe.refuse(lab, view)
            qtbot.waitUntil(lambda: view.refused, timeout=RESULT_TIMEOUT_MS)
            name = type(view).__name__
            line = view.message.text()
            assert view.message.isVisible() and recipe.phrase in line and "\n" not in line, (name, line)
            assert theme.current().warning in view.message.styleSheet(), name
            assert view.offer_button.isVisible() == bool(view.refusal.offer), name  # "Load tiny-encoder"
            assert view.result is None and not view.content.isVisible(), name
            assert all(label.text().strip() == "" for label in (*view.readouts, *view.stale_labels)), name
            if input_widgets(view):
                assert view.controls_area.isVisible(), name
            # What was shown and usable beside the result still is (a choice a model lacks stays hidden).
            after = {id(widget): (widget.isVisible(), widget.isEnabled()) for widget in input_widgets(view)}
            assert after == before, name
            if edited is not None:
                assert edited.isVisible() and edited.isEnabled(), name
            with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
                recipe.correct(lab, view)
            assert not view.showing_message and view.content.isVisible() and tab_indexes(panel) == tabs, name
    finally:
        close_panel_lab(qtbot, compute, panel)


def _walk_bounded(qtbot, panel: QWidget, view: View) -> None:
    """A view with nothing to refuse: its result shows, and its spins and the panel's shared ones, at either end,
    still give inputs, not a refusal."""
    from gui.panels.base import Refusal

    wait_for_result(qtbot, view)
    others = [other for other in panel.views if other is not view]
    spins = [spin for spin in panel.findChildren(QAbstractSpinBox)
             if view.controls_area.isAncestorOf(spin) or not any(other.isAncestorOf(spin) for other in others)
             and not view.content.isAncestorOf(spin)]
    for spin in spins:
        for end in ("minimum", "maximum"):
            value = spin.value()
            spin.setValue(getattr(spin, end)())
            assert not isinstance(view.inputs(), Refusal), (type(view).__name__, spin.objectName(), end)
            spin.setValue(value)


# ---- the four refusals found in class -----------------------------------------------------------------------
@pytest.fixture
def causal_lab(qtbot, base_model):
    from gui.panels.causal_lab import CausalLabPanel

    lab, compute = build(qtbot, CausalLabPanel, base_model)
    yield lab
    close_panel_lab(qtbot, compute, lab.panel)


def _assert_refused_in_place(view: View, control: QWidget, phrase: str) -> None:
    assert view.refused and phrase in view.message.text() and "\n" not in view.message.text(), view.message.text()
    assert control.isVisible() and control.isEnabled() and view.controls_area.isVisible()
    assert not view.content.isVisible() and view.result is None


def test_ablation_picks_heads_instead_of_refusing_a_typed_l(qtbot, causal_lab):
    panel = causal_lab.panel
    view = panel.ablation_view
    reveal(panel, view)
    wait_for_result(qtbot, view)
    picker = view.heads_picker
    config = causal_lab.base.config
    assert picker.shape == (config.n_layers, config.n_heads) and picker.selected() == ((0, 0),)
    panel.restore_settings({"heads": "L", "ffns": ""})  # a session's or a lesson's text: nothing a model has
    qtbot.waitUntil(lambda: view.refused, timeout=RESULT_TIMEOUT_MS)
    _assert_refused_in_place(view, picker, "tick a head or an FFN layer")
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        picker.box(1, 1).setChecked(True)
    assert "zero-ablating L1H1:" in view.summary_label.text()
    assert panel.settings()["heads"] == "L1H1" and panel.settings()["ffns"] == ""


def test_patching_at_mlp_out_of_an_attention_only_model_is_greyed_and_corrected_in_place(qtbot, causal_lab):
    panel = causal_lab.panel
    view = panel.patching_view
    reveal(panel, view)
    wait_for_result(qtbot, view)
    combo = view.site_combo
    combo.setCurrentIndex(combo.findData("mlp_out"))
    wait_for_result(qtbot, view)
    causal_lab.use(decoder(attention_only=True), text=TEXT)
    # A new model lacking the site resets it, and says so; a lesson or a session can still name it.
    assert view.site == "resid_pre" and view.note_label.text().startswith("site reset to resid_pre")
    panel.restore_settings({"site": "mlp_out"})
    qtbot.waitUntil(lambda: view.refused, timeout=RESULT_TIMEOUT_MS)
    _assert_refused_in_place(view, combo, "Patch site: ")
    assert "patch resid_pre, attn_out or head" in view.message.text()
    item = combo.model().item(combo.findData("mlp_out"))
    assert not item.isEnabled() and "no mlp_out" in item.toolTip()
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        combo.setCurrentIndex(combo.findData("attn_out"))


def test_the_induction_period_stops_at_half_the_context(qtbot, causal_lab):
    panel = causal_lab.panel
    view = panel.induction_view
    reveal(panel, view)
    wait_for_result(qtbot, view)
    spin = view.period_spin
    assert spin.maximum() == CONTEXT // 2  # two repeats of 16 fill the context of 32
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        spin.setValue(10)
    with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
        panel.restore_settings({"period": 40})  # a lesson's period for a longer context
    assert spin.value() == CONTEXT // 2 and not view.showing_message
    assert view.result.period == CONTEXT // 2
    causal_lab.use(decoder(context_length=64), text=TEXT)
    assert spin.maximum() == 32


def test_cross_attention_names_the_character_outside_the_vocabulary_and_takes_the_fix(qtbot, base_model):
    from gui.panels.families import FamiliesPanel

    lab, compute = build(qtbot, FamiliesPanel, base_model)
    panel = lab.panel
    try:
        view = panel.cross_view
        reveal(panel, view)
        lab.use(family_models.encoder_decoder(), family_models.date_tokenizer())
        wait_for_result(qtbot, view)
        panel.source_edit.setText("5 März 2021")
        qtbot.waitUntil(lambda: view.refused, timeout=RESULT_TIMEOUT_MS)
        _assert_refused_in_place(view, panel.source_edit, "Source: character 'ä'")
        assert "remove it" in view.message.text() and panel.step_button.isEnabled()
        with qtbot.waitSignal(view.result_shown, timeout=RESULT_TIMEOUT_MS):
            panel.source_edit.setText("5 March 2021")
        assert panel.cross_output.text().startswith("Source: 5 March 2021")
    finally:
        close_panel_lab(qtbot, compute, panel)
