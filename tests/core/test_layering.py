"""core/ is the Qt-free lab: it must import and run without any Qt binding present."""

import ast
import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "core"
QT_MODULES = ("PySide6", "PyQt5", "PyQt6", "PySide2", "pyqtgraph", "shiboken6", "gui")


def test_no_module_under_core_imports_qt_or_the_gui():
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            offenders += [f"{path.relative_to(CORE.parent)}: {n}" for n in names if n.split(".")[0] in QT_MODULES]
    assert not offenders, offenders
    assert len(list(CORE.rglob("*.py"))) > 5  # the scan really saw the package


def test_importing_every_core_module_loads_no_qt():
    modules = sorted(
        ".".join(path.relative_to(CORE.parent).with_suffix("").parts).removesuffix(".__init__")
        for path in CORE.rglob("*.py")
    )
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {QT_MODULES!r}))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=CORE.parent, check=True)
    assert result.stdout.strip() == "[]"
