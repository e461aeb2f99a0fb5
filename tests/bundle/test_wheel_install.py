"""The built wheel, installed into a fresh virtual environment beside a distribution that ships its own
top-level `core/`, `gui/` and `resources/`: the app still starts, passes its self-test, and survives that
distribution's uninstall."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.reading_figures import assert_matches_reading

ROOT = Path(__file__).resolve().parents[2]
SOURCE_IGNORED = shutil.ignore_patterns(".git", ".venv", "build", "dist", "out", "*.egg-info", "__pycache__",
                                        ".pytest_cache", ".hypothesis", "*.pyc")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

CLASHING_PACKAGE = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n'
                      '[project]\nname = "generic-names"\nversion = "1.0"\n'
                      '[tool.setuptools]\npackages = ["core", "gui", "resources"]\n',
    "core/__init__.py": 'CLASH = "core"\n',
    "gui/__init__.py": 'CLASH = "gui"\n',
    "resources/__init__.py": 'CLASH = "resources"\n',
}


def pip(*args: str, cwd: Path | None = None) -> None:
    result = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], cwd=cwd,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]


def build_wheel(project: Path, out: Path) -> Path:
    # The build backend comes from this environment: nothing is downloaded.
    pip("wheel", str(project), "--no-deps", "--no-build-isolation", "-w", str(out), cwd=project)
    (wheel,) = out.glob(f"{project.name.replace('-', '_')}*.whl") or out.glob("*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "transformer-explorer"
    shutil.copytree(ROOT, source, ignore=SOURCE_IGNORED)  # a clean copy: the build writes nothing into the checkout
    app_wheel = build_wheel(source, work / "app-wheel")
    clash = work / "generic_names"
    for name, text in CLASHING_PACKAGE.items():
        (clash / name).parent.mkdir(parents=True, exist_ok=True)
        (clash / name).write_text(text, encoding="utf-8")
    clash_wheel = build_wheel(clash, work / "clash-wheel")

    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # The dependencies (torch, PySide6, ...) come from this environment's site-packages, after the fresh one's
    # own: a path line in a .pth file adds the folder without running the .pth files inside it, so this
    # environment's editable install of the app stays out.
    (site / "dependencies-from-the-test-environment.pth").write_text(sysconfig.get_path("purelib") + "\n")
    pip("--python", str(python), "install", "--no-deps", str(app_wheel))
    pip("--python", str(python), "install", "--no-deps", str(clash_wheel))
    return {"venv": venv, "python": python, "site": site, "app_wheel": app_wheel, "work": work}


def run(command: list[str], home: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TRANSFORMER_EXPLORER_DEVICE": "cpu"}
    if "SYSTEMROOT" in os.environ:  # Windows needs it to start any process
        env["SYSTEMROOT"] = os.environ["SYSTEMROOT"]
    return subprocess.run(command, env=env, cwd=home, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def home(tmp_path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def script(installed, name: str) -> Path:
    bin_dir = installed["python"].parent
    return bin_dir / (f"{name}.exe" if os.name == "nt" else name)


def test_the_wheel_installs_one_package_under_the_apps_name(installed):
    top_level = {name.split("/")[0] for name in zipfile.ZipFile(installed["app_wheel"]).namelist()}
    assert top_level == {"transformer_explorer", "transformer_explorer-0.1.0.dist-info"}
    entry_points = (installed["site"] / "transformer_explorer-0.1.0.dist-info" / "entry_points.txt").read_text()
    assert "[console_scripts]" in entry_points and "[gui_scripts]" in entry_points


def test_the_clashing_package_really_owns_the_generic_names(installed, home):
    result = run([str(installed["python"]), "-c", "import core, gui, resources; print(core.CLASH, gui.CLASH, resources.CLASH)"],
                 home)
    assert result.stdout.split() == ["core", "gui", "resources"], result.stderr


def test_beside_the_clash_the_app_passes_its_self_test(installed, home):
    result = run([str(script(installed, "transformer-explorer")), "--self-test"], home)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "self-test passed" in result.stdout
    assert "Traceback" not in result.stderr


def test_beside_the_clash_python_m_and_the_gui_script_run(installed, home):
    result = run([str(installed["python"]), "-m", "transformer_explorer", "causal", "--textbook"], home)
    assert result.returncode == 0, result.stderr[-3000:]
    assert_matches_reading(result.stdout.splitlines())  # the last digits follow the CPU: float32 bounds
    result = run([str(script(installed, "transformer-explorer-gui")), "--size", "big"], home)
    assert result.returncode == 2 and "WIDTHxHEIGHT" in result.stderr


def test_uninstalling_the_clash_leaves_the_app_whole(installed, home):
    pip("--python", str(installed["python"]), "uninstall", "--yes", "generic-names")
    result = run([str(script(installed, "transformer-explorer")), "presets"], home)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "tiny-gpt" in result.stdout
    assert (installed["site"] / "transformer_explorer" / "resources" / "models" / "tiny-gpt" / "model.safetensors").is_file()


def test_the_user_guide_ships_beside_the_code(installed, home):
    check = ("import transformer_explorer; from gui.user_guide import guide_folder; "
             "print((guide_folder() / 'index.md').is_file(), (guide_folder() / 'images' / 'window.png').is_file())")
    result = run([str(installed["python"]), "-c", check], home)
    assert result.stdout.split() == ["True", "True"], result.stderr[-3000:]
