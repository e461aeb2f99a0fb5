"""Opening the window where it cannot open: one line that names the missing display or system library."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gui.display_check import DEBIAN_PACKAGES, display_problem, missing_libraries

ROOT = Path(__file__).resolve().parents[2]

LDD_WITHOUT_CURSOR = """\
\tlinux-vdso.so.1 (0x00007ffd)
\tlibQt6XcbQpa.so.6 => /venv/PySide6/Qt/lib/libQt6XcbQpa.so.6 (0x00007f3a)
\tlibxcb-cursor.so.0 => not found
\tlibxcb-icccm.so.4 => /lib/x86_64-linux-gnu/libxcb-icccm.so.4 (0x00007f3b)
\tlibxcb-cursor.so.0 => not found
\tlibxkbcommon-x11.so.0 => not found
"""


def fake_plugin_folder(tmp_path: Path):
    plugin = tmp_path / "plugins" / "platforms" / "libqxcb.so"
    plugin.parent.mkdir(parents=True)
    plugin.write_bytes(b"")
    return lambda: tmp_path / "plugins"


def test_no_display_is_named_as_such(tmp_path):
    problem = display_problem({}, "linux", plugin_folder=fake_plugin_folder(tmp_path), missing=lambda _: [])
    assert problem is not None and "DISPLAY and WAYLAND_DISPLAY are unset" in problem and "\n" not in problem


def test_missing_xcb_libraries_are_named_with_their_packages(tmp_path):
    missing = missing_libraries(Path("libqxcb.so"), ldd_output=lambda _: LDD_WITHOUT_CURSOR, load_error=lambda _: None)
    assert missing == ["libxcb-cursor.so.0", "libxkbcommon-x11.so.0"]
    problem = display_problem({"DISPLAY": ":0"}, "linux", plugin_folder=fake_plugin_folder(tmp_path),
                              missing=lambda _: missing)
    assert "libxcb-cursor.so.0, libxkbcommon-x11.so.0" in problem
    assert "sudo apt install libxcb-cursor0 libxkbcommon-x11-0" in problem and "\n" not in problem


def test_without_ldd_the_loaders_message_names_the_library():
    error = "libxcb-cursor.so.0: cannot open shared object file: No such file or directory"
    assert missing_libraries(Path("x"), ldd_output=lambda _: None, load_error=lambda _: error) == ["libxcb-cursor.so.0"]
    assert missing_libraries(Path("x"), ldd_output=lambda _: None, load_error=lambda _: None) == []


def test_what_needs_no_desktop_display_is_not_checked(tmp_path):
    folder = fake_plugin_folder(tmp_path)
    def broken(_plugin):
        return ["libxcb-cursor.so.0"]
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux", folder, broken) is None
    assert display_problem({}, "win32", folder, broken) is None
    # A Wayland session uses Qt's Wayland plugin, not xcb.
    assert display_problem({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland"},
                           "linux", folder, broken) is None
    assert display_problem({"DISPLAY": ":0"}, "linux", folder, lambda _: []) is None


def test_a_platform_asked_for_without_its_display_is_named(tmp_path):
    folder = fake_plugin_folder(tmp_path)
    assert "WAYLAND_DISPLAY is unset" in display_problem({"DISPLAY": ":0", "QT_QPA_PLATFORM": "wayland"}, "linux",
                                                         folder, lambda _: [])
    assert "DISPLAY is unset" in display_problem({"WAYLAND_DISPLAY": "w", "QT_QPA_PLATFORM": "xcb"}, "linux",
                                                 folder, lambda _: [])


def test_every_library_in_the_table_has_a_package_name():
    assert all(name.startswith("lib") and ".so." in name and package for name, package in DEBIAN_PACKAGES.items())


def environment_without_a_display() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a display is a Linux (X11 / Wayland) notion here")
def test_the_window_without_a_display_exits_2_in_one_line():
    result = subprocess.run([sys.executable, "main.py", "--theme", "dark"], cwd=ROOT, env=environment_without_a_display(),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "no display" in result.stderr


def test_the_self_test_ignores_a_display_it_cannot_reach():
    env = {**environment_without_a_display(), "DISPLAY": ":97"}
    result = subprocess.run([sys.executable, "main.py", "--self-test"], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "self-test passed" in result.stdout


@pytest.mark.skipif(not (shutil.which("Xvfb") and shutil.which("xprop") and shutil.which("xdotool")),
                    reason="needs Xvfb, xprop and xdotool")
def test_under_x11_the_window_class_is_the_app_id_when_run_as_main_py(tmp_path):
    display = ":" + str(90 + os.getpid() % 900)
    missing = display_problem({"DISPLAY": display}, sys.platform)
    if missing:
        pytest.skip(missing)  # this machine lacks what Qt's X11 plugin needs, which the check names
    server = subprocess.Popen(["Xvfb", display, "-screen", "0", "1600x1000x24", "-nolisten", "tcp"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = {**environment_without_a_display(), "DISPLAY": display, "HOME": str(tmp_path)}
    app = None
    try:
        def ask(*command: str) -> subprocess.CompletedProcess:
            return subprocess.run(list(command), env=env, capture_output=True, text=True, timeout=30)

        deadline = time.monotonic() + 30
        while ask("xdotool", "getdisplaygeometry").returncode != 0:
            assert time.monotonic() < deadline, "Xvfb did not start"
            time.sleep(0.1)
        log = tmp_path / "stderr.txt"
        with log.open("w") as stderr:
            app = subprocess.Popen([sys.executable, "main.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                   stderr=stderr)
        deadline = time.monotonic() + 120
        windows = ""
        while not windows:
            assert app.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, "the window did not appear"
            windows = ask("xdotool", "search", "--name", "Transformer Explorer").stdout.split()
            time.sleep(0.2)
        wm_class = ask("xprop", "-id", windows[0], "WM_CLASS").stdout
        assert '"transformer-explorer"' in wm_class.split("=", 1)[1].split(",")[0], wm_class
    finally:
        if app is not None:
            app.terminate()
            app.wait(timeout=30)
        server.terminate()
        server.wait(timeout=30)
