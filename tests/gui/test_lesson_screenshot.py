"""`--lesson NAME --screenshot FILE --size WxH` with a fresh home: the step as the window shows it, at that size
whatever the saved geometry, and a refused lesson exits non-zero. Each case is one run of main.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

ROOT = Path(__file__).resolve().parents[2]


def run_app(home: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_CACHE_HOME": str(home / ".cache"), "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, "main.py", *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def save_big_window(home: Path) -> None:
    """A home whose saved window geometry is 1920 x 1080, written as the app files it."""
    script = ("import sys; sys.path.insert(0, '.');"
              "from PySide6.QtWidgets import QApplication, QMainWindow; from PySide6.QtCore import QSettings;"
              "from gui.app import name_application; app = QApplication([]); name_application(app);"
              "w = QMainWindow(); w.resize(1920, 1080); QSettings().setValue('window/geometry', w.saveGeometry());"
              "QSettings().sync()")
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "QT_QPA_PLATFORM": "offscreen"}
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True, timeout=60)


@pytest.mark.slow
@pytest.mark.parametrize("saved", [False, True], ids=["fresh-home", "saved-geometry"])
def test_a_lesson_screenshot_shows_the_steps_panel_at_the_size_asked(tmp_path, saved):
    if saved:
        save_big_window(tmp_path)
    out = tmp_path / "step.png"
    result = run_app(tmp_path, "--lesson", "03-counting-parameters", "--screenshot", str(out), "--size", "1366x768")
    assert result.returncode == 0, result.stderr[-2000:]
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1366, 768)


def test_a_refused_lesson_makes_the_screenshot_fail(tmp_path):
    lesson = tmp_path / "bad.json"
    lesson.write_text(json.dumps({"title": "t", "steps": [{"title": "a", "text": "b", "panel": "Parametres"}]}))
    out = tmp_path / "step.png"
    result = run_app(tmp_path, "--lesson", str(lesson), "--screenshot", str(out), "--size", "1366x768")
    assert result.returncode != 0 and not out.exists()
    assert "step 1: 'panel': unknown panel 'Parametres'" in result.stderr
