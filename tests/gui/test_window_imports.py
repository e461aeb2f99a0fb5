"""The window shows before torch has loaded: importing the main window and every registered panel loads no torch
(torch is imported on the compute worker, and a panel that imported it would hold the window back by seconds)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = "import sys\n{imports}\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'torch')[:3])\n"


def _torch_modules_after(imports: str) -> str:
    result = subprocess.run([sys.executable, "-c", PROBE.format(imports=imports)], capture_output=True, text=True,
                            cwd=ROOT, check=True, env={"QT_QPA_PLATFORM": "offscreen", "PATH": ""})
    return result.stdout.strip()


def test_the_window_and_every_panel_import_without_torch():
    assert _torch_modules_after("import gui.main_window\nimport gui.panels\nfrom gui.panels import PANEL_CLASSES") == "[]"


def test_the_probe_would_see_torch():
    # The check above is only worth something if the same probe reports torch when a module imports it.
    assert _torch_modules_after("import core.going_deeper.extrapolation") != "[]"
