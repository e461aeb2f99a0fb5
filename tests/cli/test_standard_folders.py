"""Settings and logs go where the platform keeps them, under names without spaces or capitals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import core.cli.inspect
from core import cli

ROOT = Path(__file__).resolve().parents[2]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG folders are the Linux convention")


@linux_only
def test_an_unexpected_cli_error_is_logged_under_xdg_cache_home(monkeypatch, tmp_path, capsys):
    def broken(_args):
        raise RuntimeError("a bug")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(core.cli.inspect, "run_presets", broken)
    assert cli.main(["presets"]) == 1
    log = tmp_path / "cache" / "transformer-explorer" / "cli-errors.log"
    assert "RuntimeError: a bug" in log.read_text(encoding="utf-8")
    err = capsys.readouterr().err
    assert str(log) in err and err.count("\n") == 1


SETTINGS_PROBE = (
    "from PySide6.QtCore import QSettings\n"
    "from PySide6.QtGui import QGuiApplication\n"
    "from gui.app import name_application\n"
    "app = QGuiApplication(['transformer-explorer'])\n"
    "name_application(app)\n"
    "print(QSettings().fileName())\n"
    "print(QSettings().value('theme'))\n"
)


@linux_only
def test_the_settings_file_is_named_after_the_app_id_and_keeps_earlier_settings(tmp_path):
    config = tmp_path / "config"
    earlier = config / "transformer-explorer" / "Transformer Explorer.conf"
    earlier.parent.mkdir(parents=True)
    earlier.write_text("[General]\ntheme=projector\n", encoding="utf-8")
    env = {**os.environ, "XDG_CONFIG_HOME": str(config), "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run([sys.executable, "-c", SETTINGS_PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    path, theme = result.stdout.splitlines()
    assert path == str(config / "transformer-explorer" / "transformer-explorer.conf")
    assert theme == "projector" and not earlier.exists()
