"""The instantiated count: the real module tree built on the meta device, against the formula's total.

A small view of its own beside the breakdown and under the comparison, so that the analytic
numbers are on screen at once while the module tree is built on the worker (tens of milliseconds
to half a second for the big presets).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout

from core.config import ConfigError, ModelConfig
from core.params import parameter_breakdown
from gui import theme
from gui.panels.base import Refusal, View
from gui.panels.parameters.common import AGREES, DIFFERS

COUNT_CACHE_SIZE = 32


class MetaCountCache:
    """Counts already made (config -> parameters), so that flipping between models does not rebuild them.

    Touched on the worker thread only; it rides along in the inputs, outside their equality.
    """

    def __init__(self, size: int = COUNT_CACHE_SIZE) -> None:
        self._size = size
        self._counts: dict[ModelConfig, int] = {}

    def count(self, config: ModelConfig, token) -> int:
        if config not in self._counts:
            from core.params import instantiated_parameter_count

            token.check()
            counted = instantiated_parameter_count(config)
            if len(self._counts) >= self._size:
                self._counts.pop(next(iter(self._counts)))
            self._counts[config] = counted
        return self._counts[config]


@dataclass(frozen=True)
class CountInputs:
    configs: tuple[ModelConfig, ...]
    cache: MetaCountCache = field(compare=False, repr=False)


@dataclass(frozen=True)
class Count:
    config: ModelConfig
    counted: int  # parameters of the module tree built on the meta device
    formula: int  # core.params' analytic total

    @property
    def agrees(self) -> bool:
        return self.counted == self.formula


def compute_counts(inputs: CountInputs, token) -> tuple[Count, ...]:
    return tuple(Count(config, inputs.cache.count(config, token), parameter_breakdown(config).total)
                 for config in inputs.configs)


def describe_count(count: Count, named: bool) -> str:
    """'124,439,808 ✓ agrees' (rich text), with the model's name first when several are counted."""
    difference = "" if count.agrees else f" (by {count.counted - count.formula:+,})"
    name = f"{html.escape(count.config.name)}: " if named else ""
    return f"{name}{count.counted:,}  <b>{AGREES if count.agrees else DIFFERS}</b>{difference}"


class MetaCountView(View):
    """'Instantiated on the meta device: N ✓ agrees' for the configs `configs()` names."""

    name = "Meta count"
    reads = frozenset({"config"})
    compute_fn = staticmethod(compute_counts)

    def __init__(self, state, compute, configs: Callable[[], tuple[ModelConfig, ...]], cache: MetaCountCache,
                 channel_prefix: str = "", parent=None) -> None:
        """configs(): the models to count (raises ConfigError for a choice that cannot be built)."""
        super().__init__(state, compute, channel_prefix, parent)
        self.configs = configs
        self.cache = cache
        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 0, 0, 0)
        self.label = QLabel("")
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.RichText)  # the app's markup around numbers and preset names
        self.label.setToolTip("the analytic total against the parameters of the real module tree built on the meta device")
        layout.addWidget(self.label)
        self.message.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.stale_labels = [self.label]

    def inputs(self) -> CountInputs | Refusal:
        try:
            configs = tuple(dict.fromkeys(self.configs()))
        except ConfigError as error:
            return Refusal(f"{error.field}: {error.message}")
        return CountInputs(configs, self.cache)

    def show_result(self, counts: tuple[Count, ...]) -> None:
        named = len(counts) > 1
        self.label.setText("Instantiated on the meta device: " + ";  ".join(describe_count(c, named) for c in counts))
        agrees = all(count.agrees for count in counts)
        self.label.setStyleSheet(f"color: {theme.color('tertiary' if agrees else 'warning').name()};")


class CompareCountView(MetaCountView):
    name = "Compared meta count"  # a channel of its own: it must not supersede the breakdown's count
