"""The Train panel's corpus: picked in a combo or read from a file, made or read on the worker, described in a line.

The bundled text, the repeated letters and the dates are made on the worker like a file is read (the
dates take a few hundred milliseconds: on the GUI thread that is a visible stall). Until the chosen
corpus arrives the line says it is being made and Train waits (`pending`); a newer choice supersedes an
older one on the corpus channel, and a cancelled one puts the combo back on the corpus in use.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QLabel, QSpinBox, QWidget

from core.corpus import Corpus, bundled_corpus, dates_corpus, read_corpus, repeated_letters_corpus
from gui import theme
from gui.compute import CANCELLED, ComputeController

CORPUS_CHANNEL = "train-corpus"
SEEDED = {"repeated": repeated_letters_corpus, "dates": dates_corpus}  # made from the run's seed
MADE_NAMES = {"bundled": "Tiny Shakespeare", "repeated": "repeated random letters", "dates": "dates"}


def make_corpus(choice: str, seed: int) -> Corpus:
    """A corpus the lab makes (on the worker): the bundled text, or one made from `seed`."""
    return SEEDED[choice](seed) if choice in SEEDED else bundled_corpus()


class CorpusPicker(QObject):
    """Keeps `corpus` the one the combo names; `loaded(ok)` when a choice arrived (True) or was refused (False)."""

    loaded = Signal(bool)
    pending_changed = Signal()

    def __init__(self, compute: ComputeController, combo: QComboBox, label: QLabel, seed_spin: QSpinBox,
                 problem: Callable[[], str], show_error: Callable[[str], None], clear_error: Callable[[], None],
                 parent: QWidget) -> None:
        super().__init__(parent)
        self.compute, self.combo, self.label, self.seed_spin = compute, combo, label, seed_spin
        self._problem, self._show_error, self._clear_error = problem, show_error, clear_error
        self.corpus: Corpus = bundled_corpus()  # at start-up, before the window shows: the panel needs one
        self._in_use: tuple[str, int] = ("bundled", 0)  # the combo's data of `corpus`, and the seed it was made from
        self.wanted: tuple[str, int] | None = None  # (combo data, seed) on its way from the worker
        # Rich text for the warning colour of a vocabulary problem; what it quotes (a file's name) is escaped.
        label.setTextFormat(Qt.TextFormat.RichText)
        combo.currentIndexChanged.connect(self._chosen)
        seed_spin.valueChanged.connect(self._seed_changed)

    @property
    def pending(self) -> bool:
        """The chosen corpus is still being made or read: training waits for it."""
        return self.wanted is not None

    def _chosen(self, index: int) -> None:
        data = self.combo.itemData(index)
        if data in MADE_NAMES:
            self.make(data)
        elif isinstance(data, str):
            self.load_file(data)

    def _seed_changed(self) -> None:
        if self.combo.currentData() in SEEDED:  # a made corpus follows the run's seed, as the run will
            self.make(self.combo.currentData())

    def make(self, choice: str) -> None:
        seed = self.seed_spin.value() if choice in SEEDED else 0
        if self.wanted is None and self._in_use == (choice, seed):
            return  # the corpus in use already
        self._request((choice, seed), lambda: make_corpus(choice, seed), f"making the {MADE_NAMES[choice]} corpus",
                      lambda corpus: self._arrived((choice, seed), corpus), self._refused_made)

    def load_file(self, path: str | Path) -> None:
        """Use a text file as the corpus, read and checked on the worker; `loaded(ok)` follows. A file that cannot
        be one shows why and changes nothing."""
        path = str(path)
        self._request((path, 0), lambda: read_corpus(path), f"reading {Path(path).name}",
                      lambda corpus: self._arrived((path, 0), corpus), self._refused_file)

    def choose_file(self, parent: QWidget) -> None:
        path, _ = QFileDialog.getOpenFileName(parent, "Train on a text file", str(Path.home()),
                                              "Text files (*.txt);;All files (*)")
        if path:
            self.load_file(path)

    def _request(self, wanted, make, name: str, arrived, refused) -> None:
        self.wanted = wanted
        self.compute.submit(CORPUS_CHANNEL, make, arrived, name, on_error=refused, on_dropped=self._dropped)
        self.describe()
        self.pending_changed.emit()

    def _arrived(self, made: tuple[str, int], corpus: Corpus) -> None:
        self._clear_error()
        self.corpus, self._in_use, self.wanted = corpus, made, None
        self._show_in_combo(made[0])
        self._settled(True)

    def _refused_file(self, message: str) -> None:
        self.wanted = None
        self._show_error(f"That file cannot be a corpus: {message}. The corpus is still {self.corpus.name}.")
        self._show_in_combo(self._in_use[0])
        self._settled(False)

    def _refused_made(self, message: str) -> None:
        self.wanted = None
        self._show_error(f"The corpus could not be made: {message}. The corpus is still {self.corpus.name}.")
        self._show_in_combo(self._in_use[0])
        self._settled(False)

    def _dropped(self, reason: str) -> None:
        if reason != CANCELLED:
            return  # a newer choice took its place and ends in a callback of its own
        self.wanted = None
        self._show_in_combo(self._in_use[0])  # the combo names the corpus a run would use
        self._settled(False)

    def _show_in_combo(self, choice: str) -> None:
        index = self.combo.findData(choice)
        if index < 0:
            self.combo.addItem(Path(choice).name, choice)
            index = self.combo.count() - 1
        self.combo.blockSignals(True)
        self.combo.setCurrentIndex(index)
        self.combo.blockSignals(False)

    def _settled(self, ok: bool) -> None:
        self.describe()
        self.pending_changed.emit()
        self.loaded.emit(ok)

    def describe(self) -> None:
        if self.wanted is not None:
            choice, seed = self.wanted
            what = (f"Making the {MADE_NAMES[choice]} corpus" + (f" (seed {seed})" if choice in SEEDED else "")
                    if choice in MADE_NAMES else f"Reading {Path(choice).name}")
            self.label.setText(html.escape(f"{what}... Train waits for it."))
            return
        corpus = self.corpus
        text = f"{len(corpus.text):,} characters, {corpus.vocab_size} distinct"
        problem = self._problem()
        if problem:
            text += f" <span style='color:{theme.current().warning}'>- {html.escape(problem)}</span>"
        self.label.setText(text)


__all__ = ["CorpusPicker", "CORPUS_CHANNEL", "make_corpus"]
