"""Transformer Explorer, installed as this one package.

The app's own modules keep their short names (`core`, `gui`, `resources`) and live inside this package
folder, never at the top of site-packages, where another distribution's `core` or `resources` would
overwrite them or an uninstall would delete them. Importing this package puts the folder that holds them
first on sys.path, so that those names resolve to the app's copies whatever else is installed (the way
Frescobaldi runs). In a source checkout that folder is the repository root.
"""

from __future__ import annotations

import sys
from pathlib import Path

OWN_MODULES = ("core", "gui", "resources")


def modules_folder() -> Path:
    """The folder that holds core/, gui/ and resources/: this package's own (installed) or its parent (checkout)."""
    here = Path(__file__).resolve().parent
    return here if (here / "core").is_dir() else here.parent


def use_own_modules() -> None:
    """Put the app's modules folder first on sys.path (once); a frozen app has its modules inside the executable."""
    if getattr(sys, "frozen", False):
        return
    folder = str(modules_folder())
    if sys.path[:1] != [folder]:
        sys.path.insert(0, folder)


def foreign_modules() -> list[str]:
    """The app's short module names already imported from somewhere else, as 'name (path)'."""
    folder = modules_folder()
    found = []
    for name in OWN_MODULES:
        module = sys.modules.get(name)
        origin = getattr(module, "__file__", None) if module is not None else None
        if origin and not Path(origin).resolve().is_relative_to(folder / name):
            found.append(f"{name} ({origin})")
    return found


# Every entry point imports this package before anything else, so the path is right before the first
# `import core`.
use_own_modules()
