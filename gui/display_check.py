"""Before the window opens on Linux: is there a display, and can Qt's xcb platform plugin load?

Without either, Qt aborts the process (exit 134) with a message about libxcb that names neither the missing
display nor the missing package. This check says which in one line. It imports no Qt widgets, only
QtCore to find the plugin folder.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

# The library Qt's xcb plugin needs, and the Debian / Ubuntu package that ships it.
DEBIAN_PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libOpenGL.so.0": "libopengl0",
    "libfontconfig.so.1": "libfontconfig1",
    "libdbus-1.so.3": "libdbus-1-3",
}

_NOT_FOUND = re.compile(r"^\s*(\S+) => not found", re.MULTILINE)
_CANNOT_OPEN = re.compile(r"([\w.+-]+\.so[\w.]*): cannot open shared object file")


def _ldd_output(plugin: Path) -> str | None:
    ldd = shutil.which("ldd")
    if ldd is None:
        return None
    try:
        return subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def _load_error(plugin: Path) -> str | None:
    try:
        ctypes.CDLL(str(plugin))
    except OSError as error:
        return str(error)
    return None


def missing_libraries(plugin: Path, ldd_output: Callable[[Path], str | None] = _ldd_output,
                      load_error: Callable[[Path], str | None] = _load_error) -> list[str]:
    """The shared libraries that keep `plugin` from loading: every one ldd cannot find (it follows the whole
    tree), or else the one the dynamic loader names."""
    listed = ldd_output(plugin)
    if listed is not None:
        return list(dict.fromkeys(_NOT_FOUND.findall(listed)))
    error = load_error(plugin)
    if error is None:
        return []
    named = _CANNOT_OPEN.search(error)
    return [named.group(1) if named else error.splitlines()[0]]


def _qt_plugin_folder() -> Path:
    from PySide6.QtCore import QLibraryInfo

    return Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath))


def _requested_platforms(environ: Mapping[str, str]) -> list[str]:
    # QT_QPA_PLATFORM may list fallbacks ("wayland;xcb") and carry options ("xcb:nograb").
    return [name.split(":")[0].strip() for name in environ.get("QT_QPA_PLATFORM", "").split(";") if name.strip()]


def display_problem(environ: Mapping[str, str] | None = None, platform: str | None = None,
                    plugin_folder: Callable[[], Path] = _qt_plugin_folder,
                    missing: Callable[[Path], list[str]] = missing_libraries) -> str | None:
    """One line that says why the window cannot open here, or None when nothing is known to be wrong."""
    environ = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux"):
        return None
    requested = _requested_platforms(environ)
    if requested and not {"xcb", "wayland", "wayland-egl"} & set(requested):
        return None  # offscreen, vnc, eglfs, ...: no desktop display involved
    x11, wayland = environ.get("DISPLAY"), environ.get("WAYLAND_DISPLAY")
    if not x11 and not wayland:
        return ("no display to open the window on: DISPLAY and WAYLAND_DISPLAY are unset (over SSH use `ssh -X`; "
                "subcommands and --self-test need no display)")
    if requested[:1] == ["xcb"] and not x11:
        return "QT_QPA_PLATFORM asks for X11 (xcb), but DISPLAY is unset: unset QT_QPA_PLATFORM or set DISPLAY"
    if requested and requested[0].startswith("wayland") and not wayland and "xcb" not in requested:
        return "QT_QPA_PLATFORM asks for Wayland, but WAYLAND_DISPLAY is unset: unset QT_QPA_PLATFORM or set WAYLAND_DISPLAY"
    # Qt 6 takes Wayland in a Wayland session and X11 (xcb) otherwise, unless told which.
    wayland_session = bool(wayland) and environ.get("XDG_SESSION_TYPE") == "wayland"
    uses_xcb = requested[:1] == ["xcb"] or (bool(x11) and not requested and not wayland_session)
    if not uses_xcb:
        return None
    plugin = plugin_folder() / "platforms" / "libqxcb.so"
    if not plugin.is_file():
        return None
    absent = missing(plugin)
    if not absent:
        return None
    packages = [DEBIAN_PACKAGES[name] for name in absent if name in DEBIAN_PACKAGES]
    hint = f"; on Debian or Ubuntu: sudo apt install {' '.join(packages)}" if packages else ""
    return (f"Qt's X11 platform plugin (xcb) cannot load, these system libraries are missing: {', '.join(absent)}"
            f"{hint} (the README's quick start lists every package)")
