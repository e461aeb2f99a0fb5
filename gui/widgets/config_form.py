"""The model sidebar: a preset, every ModelConfig field, the seed, the device and the input text.

Each edit builds a candidate config with ModelConfig.from_dict. A valid one goes to the LabState; an
invalid one shows the ConfigError message beside the offending field while the state (and so the
loaded model) keeps the last valid config.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QLabel,
    QLineEdit,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from core.config import BOOL_FIELDS as _BOOL_FIELDS
from core.config import ConfigError, ModelConfig, config_field_docs
from core.presets import PRESETS
from gui import theme
from gui.state import LabState

_OPTIONAL_FIELDS = {"n_kv_heads": "same as n_heads", "n_encoder_layers": "same as n_layers"}
_FLOAT_FIELDS = {"norm_eps", "rope_base", "rope_scale"}
CUSTOM_PRESET = "(edited)"


def _format(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


class ConfigForm(QWidget):
    """Editors for every ModelConfig field, bound to `state.config`."""

    config_rejected = Signal(str, str)  # field, message

    def __init__(self, state: LabState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.editors: dict[str, QWidget] = {}
        self.error_labels: dict[str, QLabel] = {}
        self._updating = False
        self.labels: dict[str, QLabel] = {}
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        for name in ModelConfig.field_names():
            editor = self._make_editor(name)
            editor.setObjectName(f"config-{name}")
            error = QLabel("")
            error.setObjectName(f"config-error-{name}")
            error.setWordWrap(True)
            error.hide()
            box = QWidget()
            column = QVBoxLayout(box)
            column.setContentsMargins(0, 0, 0, 0)
            column.setSpacing(1)
            column.addWidget(editor)
            column.addWidget(error)
            label = QLabel(name)
            label.setBuddy(editor)
            self.labels[name] = label
            form.addRow(label, box)
            self.editors[name] = editor
            self.error_labels[name] = error
        state.config_changed.connect(lambda: self.show_config(self.state.config))
        state.theme_changed.connect(self._restyle_errors)
        state.font_scale_changed.connect(self._restyle_errors)
        self.show_config(state.config)
        # Reading the field docs parses config.py's source (50-200 ms): done after the window's first paint.
        QTimer.singleShot(400, self._set_tooltips)

    def _set_tooltips(self) -> None:
        for name, text in config_field_docs().items():
            if name in self.editors:
                self.editors[name].setToolTip(text)
                self.labels[name].setToolTip(text)

    def _make_editor(self, name: str) -> QWidget:
        choices = ModelConfig.choices(name)
        if choices:
            combo = QComboBox()
            combo.addItems(list(choices))
            combo.currentTextChanged.connect(lambda _text, name=name: self._edited(name))
            return combo
        if name in _BOOL_FIELDS:
            check = QCheckBox()
            check.toggled.connect(lambda _on, name=name: self._edited(name))
            return check
        line = QLineEdit()
        if name in _OPTIONAL_FIELDS:
            line.setPlaceholderText(_OPTIONAL_FIELDS[name])
        line.editingFinished.connect(lambda name=name: self._edited(name))
        return line

    # ---- state -> editors ----------------------------------------------------------------------
    def show_config(self, config: ModelConfig) -> None:
        self._updating = True
        try:
            for name, value in config.to_dict().items():
                editor = self.editors[name]
                if isinstance(editor, QComboBox):
                    editor.setCurrentText(str(value))
                elif isinstance(editor, QCheckBox):
                    editor.setChecked(bool(value))
                elif isinstance(editor, QLineEdit):
                    editor.setText(_format(value))
            self.clear_errors()
        finally:
            self._updating = False

    def _restyle_errors(self) -> None:
        for label in self.error_labels.values():
            if label.isVisible():
                label.setStyleSheet(f"color: {theme.current().warning};")

    # ---- editors -> state ----------------------------------------------------------------------
    def read_values(self) -> dict[str, Any]:
        """The editors' values as JSON-like data; unparsable numbers raise ConfigError."""
        data: dict[str, Any] = {}
        for name, editor in self.editors.items():
            if isinstance(editor, QComboBox):
                data[name] = editor.currentText()
            elif isinstance(editor, QCheckBox):
                data[name] = editor.isChecked()
            elif isinstance(editor, QLineEdit):
                text = editor.text().strip()
                if name == "name":
                    data[name] = text
                elif name in _OPTIONAL_FIELDS and text == "":
                    data[name] = None
                elif name in _FLOAT_FIELDS:
                    try:
                        data[name] = float(text)
                    except ValueError:
                        raise ConfigError(name, f"expected a number, got {text!r}") from None
                else:
                    try:
                        data[name] = int(text.replace(",", "").replace("_", ""))
                    except ValueError:
                        raise ConfigError(name, f"expected a whole number, got {text!r}") from None
        return data

    def _edited(self, field: str) -> None:
        if self._updating:
            return
        try:
            candidate = ModelConfig.from_dict(self.read_values())
        except ConfigError as error:
            self.show_error(error.field, error.message)
            return
        self.clear_errors()
        current = self.state.config
        if candidate == current:
            return
        if field != "name" and candidate.name == current.name and current.name in PRESETS:
            # Editing a preset makes a new model; the name says so, as on the command line.
            candidate = candidate.replace(name=f"{current.name} (edited)")
        self.state.set_config(candidate)

    def show_error(self, field: str, message: str) -> None:
        self.clear_errors()
        label = self.error_labels.get(field) or self.error_labels["name"]
        label.setText(message)
        label.setStyleSheet(f"color: {theme.current().warning};")
        label.show()
        editor = self.editors.get(field)
        if editor is not None:
            editor.setProperty("invalid", True)
            editor.setStyleSheet(f"border: 2px solid {theme.current().warning};")
        self.config_rejected.emit(field, message)

    def clear_errors(self) -> None:
        for name, label in self.error_labels.items():
            if label.isVisible() or label.text():
                label.hide()
                label.setText("")
                self.editors[name].setStyleSheet("")
                self.editors[name].setProperty("invalid", False)

    def current_error(self) -> tuple[str, str] | None:
        for name, label in self.error_labels.items():
            if label.text():
                return name, label.text()
        return None


class ModelSidebar(QScrollArea):
    """Preset chooser, config form, seed and input text: everything that defines the model run."""

    def __init__(self, state: LabState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        body = QWidget()
        column = QVBoxLayout(body)
        column.setContentsMargins(6, 6, 6, 6)

        top = QFormLayout()
        self.preset_combo = QComboBox()
        self.preset_combo.setObjectName("preset-combo")
        self.preset_combo.addItems([*PRESETS, CUSTOM_PRESET])
        self.preset_combo.setToolTip("Load a named configuration (the real models' shapes, or a small lab model)")
        self.preset_combo.activated.connect(self._preset_chosen)
        top.addRow("preset", self.preset_combo)
        self.seed_spin = QSpinBox()
        self.seed_spin.setObjectName("seed-spin")
        self.seed_spin.setRange(0, 2**31 - 1)
        self.seed_spin.setKeyboardTracking(False)
        self.seed_spin.setToolTip("Random seed of the weights: the same config and seed give the same model")
        self.seed_spin.valueChanged.connect(state.set_seed)
        top.addRow("seed", self.seed_spin)
        self.text_edit = QLineEdit()
        self.text_edit.setObjectName("text-edit")
        self.text_edit.setToolTip("The input text; it is split into tokens by the model's tokenizer")
        self.text_edit.editingFinished.connect(lambda: state.set_text(self.text_edit.text()))
        top.addRow("text", self.text_edit)
        self.text_problem = QLabel("")
        self.text_problem.setWordWrap(True)
        self.text_problem.hide()
        top.addRow("", self.text_problem)
        column.addLayout(top)

        group = QGroupBox("Model config")
        group_layout = QVBoxLayout(group)
        self.form = ConfigForm(state)
        group_layout.addWidget(self.form)
        column.addWidget(group)
        column.addStretch(1)
        self.setWidget(body)
        self.setMinimumWidth(300)
        for field in ("config", "seed", "text", "tokens"):
            state.signal(field).connect(self._sync)
        state.theme_changed.connect(self._fit_width)
        state.font_scale_changed.connect(self._fit_width)
        self._sync()

    def _preset_chosen(self, index: int) -> None:
        name = self.preset_combo.itemText(index)
        if name in PRESETS:
            self.state.set_config(PRESETS[name])

    def _fit_width(self) -> None:
        # Wide enough for the editors at large text, never so wide that a 1920-pixel projector overflows.
        self.setMinimumWidth(min(round(280 * theme.font_scale()), 460))

    def _sync(self) -> None:
        config = self.state.config
        name = config.name if PRESETS.get(config.name) == config else CUSTOM_PRESET
        self.preset_combo.setCurrentText(name)
        self.seed_spin.blockSignals(True)
        self.seed_spin.setValue(self.state.seed)
        self.seed_spin.blockSignals(False)
        if self.text_edit.text() != self.state.text:
            self.text_edit.setText(self.state.text)
        problem = self.state.text_problem
        self.text_problem.setText(f"{problem} (skipped)" if problem else "")
        self.text_problem.setStyleSheet(f"color: {theme.current().warning};")
        self.text_problem.setVisible(bool(problem))


__all__ = ["ConfigForm", "ModelSidebar", "CUSTOM_PRESET"]
