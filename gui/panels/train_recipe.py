"""The Train panel's recipe row: the settings that trained the chosen preset's bundled model, filled in and shown.

When the sidebar's config is a preset with a recipe (core.recipes), the row names it ("Recipe of the bundled
tiny-induction: 4,000 steps, batch 32 x 64, ...") and says whether the run's fields are that recipe. The fields
follow the preset only while they hold what the panel itself put there (the defaults, or an earlier recipe): a
value the user typed is never overwritten by a preset change, and the row's Use recipe button puts the recipe
back on request. A config with no recipe returns untouched fields to the panel's defaults and hides the row.
When the fields are the recipe, the run also takes the recipe's warm-up and matmul precision (`request_extras`);
the tokenizer follows the preset whenever it starts from fresh weights (tiny-gpt-bpe learns its BPE).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QHBoxLayout, QPushButton, QSpinBox, QWidget

from core.config import ModelConfig
from core.recipes import BPE_VOCAB, DATES, REPEATED_LETTERS, SHAKESPEARE, Recipe, recipe_for
from core.training_job import format_duration
from gui.panels.common import plain_label

CORPUS_CHOICES = {SHAKESPEARE: "bundled", REPEATED_LETTERS: "repeated", DATES: "dates"}  # recipe -> corpus combo data
FIELD_NAMES = {"steps": "steps", "batch_size": "batch", "seq_len": "seq len", "lr": "learning rate", "seed": "seed",
               "corpus": "corpus", "start": "start", "mask_mode": "mask"}


def bundled_time(recipe: Recipe) -> str:
    """How long the bundled run took and where, from its training.json; "" when there is none."""
    record = recipe.record()
    seconds = record.get("wall_time_s") if record else None
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return ""
    threads = record.get("threads")
    where = f" on {threads} CPU thread{'s' if threads != 1 else ''}" if isinstance(threads, int) else ""
    machine = record.get("machine")
    machine_text = f" ({machine})" if isinstance(machine, str) and machine else ""
    return f"the bundled run took {format_duration(float(seconds))}{where}{machine_text}"


class RecipeRow(QObject):
    """The recipe line and its Use recipe button over the panel's run fields (the panel owns the widgets)."""

    def __init__(self, steps: QSpinBox, batch: QSpinBox, seq: QSpinBox, lr: QDoubleSpinBox, seed: QSpinBox,
                 corpus: QComboBox, start: QComboBox, mask: QComboBox, is_training: Callable[[], bool],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._spins = {"steps": steps, "batch_size": batch, "seq_len": seq, "seed": seed}
        self._lr, self._combos = lr, {"corpus": corpus, "start": start, "mask_mode": mask}
        self._is_training = is_training
        self.recipe: Recipe | None = None
        self.defaults = self.values()  # what the panel starts with: where untouched fields go back to
        self.filled = dict(self.defaults)  # what the panel itself last put in the fields
        self.label = plain_label()  # as high as its lines: at projector scale the recipe wraps onto four
        self.use_button = QPushButton("Use recipe")
        self.use_button.setToolTip("put the recipe back in the run's fields (steps, batch, sequence length, learning "
                                   "rate, seed, corpus; fresh weights, causal mask)")
        self.row = QWidget()
        layout = QHBoxLayout(self.row)  # the line takes the width the button leaves, and wraps in it
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.use_button, 0, Qt.AlignmentFlag.AlignTop)
        self.row.hide()
        self.use_button.clicked.connect(self.use_recipe)
        for box in self._spins.values():
            box.valueChanged.connect(self.update_line)
        lr.valueChanged.connect(self.update_line)
        for combo in self._combos.values():
            combo.currentIndexChanged.connect(self.update_line)

    # ---- the fields ----
    def values(self) -> dict[str, Any]:
        values: dict[str, Any] = {name: box.value() for name, box in self._spins.items()}
        values["lr"] = self._lr.value()
        values.update({name: combo.currentData() for name, combo in self._combos.items()})
        return values

    def target(self, recipe: Recipe | None) -> dict[str, Any]:
        """The fields a recipe fills in (the panel's defaults without one), the window clipped to the context."""
        if recipe is None:
            values = dict(self.defaults)
        else:
            settings = recipe.settings
            values = {"steps": settings["steps"], "batch_size": settings["batch_size"], "seq_len": settings["seq_len"],
                      "lr": settings["lr"], "seed": settings["seed"], "corpus": CORPUS_CHOICES[recipe.corpus],
                      "start": "fresh", "mask_mode": "causal"}
        values["seq_len"] = min(values["seq_len"], self._spins["seq_len"].maximum())
        return values

    def differences(self, values: dict[str, Any], target: dict[str, Any]) -> list[str]:
        """The fields (by their captions) where `values` are not `target`."""
        def same(name: str) -> bool:
            if name == "lr":  # the box keeps five decimals
                return math.isclose(values[name], target[name], rel_tol=1e-9, abs_tol=0.5e-5)
            return values[name] == target[name]
        return [FIELD_NAMES[name] for name in target if not same(name)]

    def _write(self, values: dict[str, Any]) -> None:
        for name, box in self._spins.items():
            box.setValue(values[name])
        self._lr.setValue(values["lr"])
        for name, combo in self._combos.items():
            index = combo.findData(values[name])
            if index >= 0:
                combo.setCurrentIndex(index)  # the corpus combo has the chosen corpus made on the worker

    # ---- following the config ----
    def follow(self, config: ModelConfig) -> None:
        """The config changed (or the panel refreshed): untouched fields follow its recipe; typed ones stay."""
        untouched = not self.differences(self.values(), self.filled)
        self._spins["seq_len"].setMaximum(max(2, config.context_length))
        self.recipe = recipe_for(config)
        if untouched and not self._is_training():
            self._write(self.target(self.recipe))
            self.filled = self.values()
        self.update_line()

    def use_recipe(self) -> None:
        """Put the recipe back in the fields (the button: the user asked)."""
        if self.recipe is None or self._is_training():
            return
        self._write(self.target(self.recipe))
        self.filled = self.values()
        self.update_line()

    def is_recipe(self) -> bool:
        """The fields hold the chosen preset's recipe."""
        return self.recipe is not None and not self.differences(self.values(), self.target(self.recipe))

    def request_extras(self) -> dict[str, Any]:
        """What a run takes from the recipe besides its fields: the tokenizer of a fresh run of the preset; the
        warm-up and matmul precision when every field is the recipe (else the panel's own warm-up rule)."""
        recipe = self.recipe
        if recipe is None or self.values()["start"] != "fresh":
            return {}
        extras: dict[str, Any] = {"tokenizer": recipe.tokenizer,
                                  "bpe_vocab": int(recipe.settings.get("bpe_vocab", BPE_VOCAB))}
        if self.is_recipe():
            extras.update(warmup_steps=recipe.warmup_steps, bf16_autocast=bool(recipe.settings.get("bf16_autocast")))
        return extras

    def update_line(self, *_args: Any) -> None:
        recipe = self.recipe
        if recipe is None:
            self.row.hide()
            return
        bundled = recipe.record() is not None
        title = (f"Recipe of the bundled {recipe.preset}" if bundled
                 else f"Recipe of {recipe.preset} (not shipped trained; the Models guide gives its run's figures)")
        took = bundled_time(recipe)
        line = f"{title}: {recipe.summary()}" + (f"; {took}" if took else "") + "."
        differ = self.differences(self.values(), self.target(recipe))
        if differ:
            line += f" Your settings differ in {', '.join(differ)}: Use recipe puts it back."
        else:
            line += " The run's settings are this recipe."
        self.label.setText(line)
        self.use_button.setEnabled(bool(differ) and not self._is_training())
        self.row.show()


__all__ = ["CORPUS_CHOICES", "RecipeRow", "bundled_time"]
