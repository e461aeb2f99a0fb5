"""The code's shape: no file too long to read, the layering contracts hold, and no import circles."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 700


def test_no_python_file_in_core_or_gui_is_over_700_lines():
    long_files = {
        str(path.relative_to(ROOT)): n
        for package in ("core", "gui")
        for path in sorted((ROOT / package).rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long_files, f"split these into one concern per file: {long_files}"


def test_the_import_contracts_hold():
    # lint-imports as its console script would run it, with this interpreter (a fresh process: it imports nothing here).
    script = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def _cycles(graph, package: str) -> list[list[str]]:
    """Every import circle among the modules of `package`, each once, by a depth-first search."""
    modules = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()
    for start in modules:
        stack = [(start, [start])]
        while stack:
            module, path = stack.pop()
            for imported in sorted(graph.find_modules_directly_imported_by(module)):
                if imported == start and len(path) > 1 or imported == start == module:
                    key = frozenset(path)
                    if key not in seen:
                        seen.add(key)
                        found.append(path + [start])
                elif imported.startswith(package + ".") and imported not in path and imported > start:
                    stack.append((imported, path + [imported]))
    return found


def test_no_import_circles_in_core_or_gui():
    # An import under `if TYPE_CHECKING:` is for annotations only: it never runs, so it closes no circle.
    graph = grimp.build_graph("core", "gui", exclude_type_checking_imports=True, cache_dir=None)
    circles = {package: _cycles(graph, package) for package in ("core", "gui")}
    assert circles == {"core": [], "gui": []}, "\n".join(" -> ".join(c) for cs in circles.values() for c in cs)
