"""The Train panel's corpora are made on the worker: the window stays live, Train waits, the newest choice wins."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtGui import QTextDocument

import core.date_corpus
import core.repeated_corpus
from core.config import ModelConfig
from core.presets import get_preset
from gui.panels.train import TrainPanel
from gui.state import LabState

TINY = ModelConfig(name="test-tiny", vocab_size=65, context_length=32, d_model=32, n_heads=2, n_layers=1, d_ff=64)


@pytest.fixture
def panel(qtbot, compute):
    state = LabState()
    state.set_config(TINY)
    widget = TrainPanel(state, compute)
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    widget.show()
    state.set_torch_ready(True)
    return widget


@pytest.fixture
def makers(monkeypatch):
    """Records the thread each generated corpus is made on; holds them at a gate while it is closed."""
    gate, threads = threading.Event(), []
    gate.set()
    for module, name in ((core.date_corpus, "date_pairs"), (core.repeated_corpus, "repeated_letters")):
        made = getattr(module, name)

        def held(*args, made=made, **kwargs):
            threads.append(threading.current_thread())
            gate.wait(30)
            return made(*args, **kwargs)

        monkeypatch.setattr(module, name, held)
    return gate, threads


def shown_text(label) -> str:
    """What a rich-text label shows a reader."""
    document = QTextDocument()
    document.setHtml(label.text())
    return document.toPlainText()


def test_a_chosen_corpus_is_made_off_the_gui_thread_while_train_waits_and_says_so(qtbot, panel, makers):
    gate, threads = makers
    gate.clear()
    panel.corpus_combo.setCurrentIndex(panel.corpus_combo.findData("dates"))
    assert threads == [] or threads[0] is not threading.current_thread()
    assert not panel.train_button.isEnabled() and shown_text(panel.corpus_label).startswith("Making the dates corpus")
    assert not panel.start_training() and "still being made" in panel.last_error
    assert panel.corpus.name == "tinyshakespeare.txt"  # the corpus in use until the new one arrives
    with qtbot.waitSignal(panel.corpus_loaded, timeout=30_000) as loaded:
        gate.set()
    assert loaded.args == [True] and "dates" in panel.corpus.name and "\t" in panel.corpus.text
    assert threads and all(thread is not threading.current_thread() for thread in threads)
    assert panel.train_button.isEnabled() and shown_text(panel.corpus_label).startswith(f"{len(panel.corpus.text):,}")


def test_a_newer_choice_supersedes_one_still_being_made(qtbot, panel, makers):
    gate, _threads = makers
    gate.clear()
    outcomes = []
    panel.corpus_loaded.connect(outcomes.append)
    panel.corpus_combo.setCurrentIndex(panel.corpus_combo.findData("dates"))
    panel.corpus_combo.setCurrentIndex(panel.corpus_combo.findData("repeated"))
    panel.seed_spin.setValue(3)  # the repeated letters follow the run's seed
    gate.set()
    qtbot.waitUntil(lambda: outcomes == [True] and not panel.compute.busy, timeout=30_000)
    assert "random letters (seed 3)" in panel.corpus.name and panel.corpus_combo.currentData() == "repeated"
    assert panel.train_button.isEnabled()


def test_a_cancelled_corpus_puts_the_choice_back_on_the_corpus_in_use(qtbot, panel, makers):
    gate, _threads = makers
    gate.clear()
    panel.corpus_combo.setCurrentIndex(panel.corpus_combo.findData("dates"))
    qtbot.waitUntil(lambda: panel.compute.running_name.startswith("making the dates"), timeout=30_000)
    with qtbot.waitSignal(panel.corpus_loaded, timeout=30_000) as loaded:
        panel.compute.cancel()  # Esc; the job has no cancellation point: it ends, and its corpus is dropped
        gate.set()
    assert loaded.args == [False] and panel.corpus_combo.currentData() == "bundled"
    assert panel.corpus.name == "tinyshakespeare.txt" and panel.train_button.isEnabled()


def test_the_corpus_line_shows_what_it_quotes_as_plain_text(qtbot, panel, tmp_path):
    panel.state.set_config(get_preset("tiny-encoder-decoder").replace(name="my-encoder-decoder"))  # no recipe
    qtbot.waitUntil(lambda: "one source<TAB>target a line" in shown_text(panel.corpus_label))  # not read as a tag
    panel.state.set_config(TINY)  # 65 tokens against the file's 5 characters: the problem names the file
    named = tmp_path / "x<b>y&amp;.txt"
    named.write_text("abc abc abc\n" * 100, encoding="utf-8")
    with qtbot.waitSignal(panel.corpus_loaded, timeout=30_000):
        panel.load_corpus_file(named)
    qtbot.waitUntil(lambda: "x<b>y&amp;.txt has 5 distinct characters" in shown_text(panel.corpus_label))
