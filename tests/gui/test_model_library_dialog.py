"""File > Get a model...: the dialog lists, downloads (from a Hub on 127.0.0.1), cancels and opens."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QDialog

from core.tokenizers import load_pretrained_tokenizer
from gui.model_library_dialog import COLUMNS, ModelLibraryDialog
from tests.hf_folders import SAMPLE_TEXT
from tests.hub_server import closed_port, repo_from_folder, start_hub, stop_hub

pytest.importorskip("transformers")  # the served model is written by transformers

SERVED = "openai-community/gpt2"  # a catalogue name, served with a tiny GPT-2 behind it
SMALL_CHUNK = 16 * 1024


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    from tests.hf_folders import gpt2_folder

    return gpt2_folder(tmp_path_factory.mktemp("served") / "gpt2")


@pytest.fixture
def hub(tiny_gpt2, tmp_path, monkeypatch):
    server = start_hub([repo_from_folder(SERVED, tiny_gpt2)])
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    yield server
    stop_hub(server)


def _dialog(qtbot, compute, opened):
    dialog = ModelLibraryDialog(compute, opened.append)
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.listed, timeout=30_000):
        dialog.show()
    return dialog


def _row(dialog, name):
    return next(row for row, entry in enumerate(dialog.entries) if entry.name == name)


def _cell(dialog, name, column):
    return dialog.table.item(_row(dialog, name), COLUMNS.index(column)).text()


def test_lists_bundled_and_catalogue_models_with_sizes(qtbot, compute, hub):
    dialog = _dialog(qtbot, compute, [])
    assert _cell(dialog, "tiny-gpt", "Where") == "bundled"
    assert _cell(dialog, SERVED, "Where") == "Hugging Face Hub"
    assert _cell(dialog, SERVED, "Parameters") == "124,439,808"
    assert _cell(dialog, "Qwen/Qwen2.5-0.5B", "Size").startswith("~")
    dialog.select("tiny-gpt")
    assert dialog.open_button.isEnabled() and not dialog.download_button.isEnabled()
    dialog.select(SERVED)
    assert dialog.download_button.isEnabled() and not dialog.open_button.isEnabled()
    assert "Transformer Explainer" in dialog.about.text()


def test_download_then_open(qtbot, compute, hub):
    opened = []
    dialog = _dialog(qtbot, compute, opened)
    dialog.select(SERVED)
    progress = []
    dialog.download_progressed.connect(lambda done, total: progress.append((done, total)))
    with qtbot.waitSignal(dialog.download_finished, timeout=60_000) as finished:
        dialog.download_button.click()
        assert dialog.cancel_button.isEnabled() and not dialog.download_button.isEnabled()
    assert finished.args == [True]
    weights = len(hub.repos[SERVED].files["model.safetensors"])
    assert progress and progress[-1][0] == progress[-1][1] > weights  # every byte of every file counted
    qtbot.waitUntil(lambda: dialog.selected_entry() is not None and dialog.selected_entry().where == "cache",
                    timeout=30_000)
    assert _cell(dialog, SERVED, "Where") == "on this computer"
    assert _cell(dialog, SERVED, "Parameters") != "124,439,808"  # the cached config, not the catalogue's
    assert dialog.open_button.isEnabled()
    dialog.open_button.click()
    assert len(opened) == 1
    assert (opened[0] / "model.safetensors").is_file() and "models--openai-community--gpt2" in str(opened[0])
    assert dialog.result() == QDialog.DialogCode.Accepted


def test_cancel_stops_the_download(qtbot, compute, hub, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "DOWNLOAD_CHUNK_SIZE", SMALL_CHUNK)
    dialog = _dialog(qtbot, compute, [])
    dialog.select(SERVED)
    with qtbot.waitSignal(dialog.download_finished, timeout=60_000) as finished:
        dialog.download_button.click()
        dialog.cancel_download()  # before the first chunk arrives or between chunks: either way it stops
    assert finished.args == [False]
    assert "cancelled" in dialog.status.text()
    assert dialog.download_button.isEnabled() and not dialog.cancel_button.isEnabled()


def test_without_a_network_the_download_fails_in_one_line(qtbot, compute, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", closed_port())
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    dialog = _dialog(qtbot, compute, [])
    dialog.select("distilbert/distilgpt2")
    with qtbot.waitSignal(dialog.download_finished, timeout=60_000) as finished:
        dialog.download_button.click()
    assert finished.args == [False]
    text = dialog.status.text()
    assert text.startswith("Download failed: cannot reach http://127.0.0.1:") and "\n" not in text
    assert not dialog.progress.isVisible()


def test_file_menu_opens_the_library_and_a_model_from_it(qtbot, window, hub, tiny_gpt2):
    file_menu = next(action.menu() for action in window.menuBar().actions() if action.text() == "&File")
    titles = [action.text() for action in file_menu.actions()]
    assert titles.index("&Get a model...") == titles.index("Open &model folder...") + 1
    get_model = file_menu.actions()[titles.index("&Get a model...")]
    get_model.trigger()
    dialog = window.findChild(ModelLibraryDialog)
    assert dialog is not None
    qtbot.waitUntil(lambda: bool(dialog.entries), timeout=30_000)
    dialog.select(SERVED)
    with qtbot.waitSignal(dialog.download_finished, timeout=60_000):
        dialog.download_button.click()
    qtbot.waitUntil(lambda: dialog.selected_entry() is not None and dialog.selected_entry().openable, timeout=30_000)
    with qtbot.waitSignal(window.model_loaded, timeout=60_000):
        dialog.open_button.click()
    reference = load_pretrained_tokenizer(tiny_gpt2)
    assert window.state.model.config.vocab_size == reference.vocab_size
    tokenizer = window.state.tokenizer
    assert tokenizer.encode(SAMPLE_TEXT) == reference.encode(SAMPLE_TEXT)
    assert "".join(tokenizer.token_text(i) for i in tokenizer.encode(" to be")) == " to be"  # no Ġ on screen


def test_save_model_for_transformers(qtbot, window, tmp_path):
    """File > Save model for transformers: the window's model as a folder transformers loads, same logits."""
    import torch

    from core.checkpoints import resolve_checkpoint

    import transformers

    folder = tmp_path / "for-transformers"
    with qtbot.waitSignal(window.compute.result_delivered, timeout=60_000,
                          check_params_cb=lambda channel: channel == "save-model"):
        window.export_model(folder)
    reference = transformers.AutoModelForCausalLM.from_pretrained(str(folder)).eval()
    ids = torch.tensor([window.state.tokens[:16]])  # (1, T)
    with torch.no_grad():
        torch.testing.assert_close(reference(ids).logits, window.state.model(ids), atol=1e-4, rtol=0)
        assert resolve_checkpoint(folder).config == window.state.model.config
