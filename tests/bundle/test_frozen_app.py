"""Build the real PyInstaller bundle once, then use it as a user would: self-test, CLI, install, uninstall."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bundle import spec_support
from bundle.spec_support import APP_ID
from tests.bundle import background_build
from tests.reading_figures import assert_matches_reading

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(background_build.BUILD_TIMEOUT_S + 300)]


def user_environment(home: Path) -> dict[str, str]:
    """What a desktop user's process has: no virtual environment, no source tree, a home of its own."""
    return {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "QT_QPA_PLATFORM": "offscreen",
            "TRANSFORMER_EXPLORER_DEVICE": "cpu"}


@pytest.fixture(scope="module")
def bundle_dir(request) -> Path:
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        pytest.fail("PyInstaller is not installed; the test extra installs it (pip install -e '.[test]')")
    return background_build.bundle_of(request.config)  # started at collection, built beside the other tests


@pytest.fixture
def home(tmp_path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def run_app(executable: Path, home: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(executable), *args], env=user_environment(home), cwd=home, capture_output=True,
                          text=True, timeout=timeout)


def test_the_bundled_app_opens_loads_the_model_and_runs_every_panel(bundle_dir, home):
    result = run_app(bundle_dir / APP_ID, home, "--self-test")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "self-test passed" in result.stdout and "on cpu" in result.stdout
    assert "Traceback" not in result.stderr


def test_the_bundled_command_line_prints_the_readings_figures(bundle_dir, home):
    result = run_app(bundle_dir / APP_ID, home, "causal", "--textbook")
    assert result.returncode == 0, result.stderr
    assert_matches_reading(result.stdout.splitlines())  # the last digits follow the CPU: float32 bounds


def test_bad_input_to_the_bundled_command_line_is_one_line_and_exit_2(bundle_dir, home):
    result = run_app(bundle_dir / APP_ID, home, "params", "--preset", "gpt5")
    assert result.returncode == 2
    assert "gpt5" in result.stderr and result.stderr.strip().count("\n") == 0
    assert "Traceback" not in result.stderr


def test_the_bundle_carries_the_resources_and_leaves_out_unused_qt_and_cuda(bundle_dir):
    internal = bundle_dir / "_internal"
    for needed in ("resources/tinyshakespeare.txt", "resources/models/tiny-gpt/model.safetensors",
                   "resources/models/tiny-llama/config.json", "resources/lessons/08-exercises.json",
                   f"resources/icons/{APP_ID}.svg", f"resources/icons/hicolor/256x256/apps/{APP_ID}.png",
                   "core/config.py", "torch/bin/torch_shm_manager", "docs/index.md", "docs/images/window.png"):
        assert (internal / needed).is_file(), needed
    names = [path.relative_to(internal).as_posix() for path in internal.rglob("*")]
    unwanted = ("Qt6Qml", "Qt6Quick", "Qt6Network", "Qt6Pdf", "Qt6WebEngine", "Qt6VirtualKeyboard", "libcudnn",
                "libcublas", "libnccl", "libtorch_cuda", "torch/test/", "torch/bin/protoc", "EglFS")
    found = [name for name in names if any(part in name for part in unwanted)]
    assert not found, found[:10]
    dangling = [path for path in internal.rglob("*") if path.is_symlink() and not path.exists()]
    assert not dangling, dangling[:10]
    assert not [name for name in names if name.startswith(("transformers/", "pytest", "hypothesis/", "tests/"))]


def test_the_bundle_asks_for_no_newer_glibc_than_its_python_and_leaves_the_desktop_libraries_to_it(bundle_dir):
    internal = bundle_dir / "_internal"
    python_needs, _ = spec_support.required_glibc_of(next(internal.glob("libpython3*.so*")))
    bundle_needs, culprit = spec_support.required_glibc(bundle_dir)
    assert bundle_needs <= python_needs, culprit
    host_libraries = [path.name for path in internal.iterdir() if spec_support.is_host_library(path.name)]
    assert not host_libraries


def test_the_installed_bundle_starts_from_its_menu_command_and_uninstalls(bundle_dir, home):
    install = ROOT / "bundle" / "linux" / "install.sh"
    env = user_environment(home)
    subprocess.run(["bash", str(install), "--bundle", str(bundle_dir)], env=env, check=True, capture_output=True,
                   timeout=300)
    launcher = home / ".local" / "bin" / APP_ID
    result = run_app(launcher, home, "presets")
    assert result.returncode == 0, result.stderr
    assert "tiny-gpt" in result.stdout and "gpt2-small" in result.stdout
    desktop = home / ".local" / "share" / "applications" / f"{APP_ID}.desktop"
    assert f'Exec="{home}/.local/opt/{APP_ID}/{APP_ID}"' in desktop.read_text()
    subprocess.run(["bash", str(home / ".local" / "opt" / APP_ID / "install.sh"), "--uninstall"], env=env, check=True,
                   capture_output=True, timeout=300)
    assert not launcher.exists() and not desktop.exists() and not (home / ".local" / "opt" / APP_ID).exists()


def test_the_licence_folder_lists_every_shipped_component_and_gnu_readline_stays_out(bundle_dir):
    import importlib.metadata

    internal = bundle_dir / "_internal"
    licenses = internal / "licenses"
    readme = (licenses / "README.txt").read_text(encoding="utf-8")
    assert (licenses / "Transformer-Explorer" / "LICENSE").read_text().startswith("MIT License")
    providers = importlib.metadata.packages_distributions()
    shipped = {dist for folder in internal.iterdir() if folder.is_dir()
               for dist in providers.get(folder.name.removesuffix(".libs"), [])}
    shipped |= {"torch", "numpy", "PySide6_Essentials", "shiboken6", "pyqtgraph", "safetensors", "tokenizers"}
    for name in shipped:
        dist = importlib.metadata.distribution(name)
        assert f"  {dist.metadata['Name']} {dist.version}: " in readme, name
        assert any((licenses / dist.metadata["Name"]).iterdir()), name
    qt = licenses / importlib.metadata.distribution("PySide6_Essentials").metadata["Name"]
    assert {"LGPL-3.0.txt", "GPL-3.0.txt", "Qt-and-PySide6.txt"} <= {path.name for path in qt.iterdir()}
    for library in internal.iterdir():
        # Links (Qt's libraries, which live in PySide6/Qt/lib) are not libraries of their own.
        if library.is_file() and not library.is_symlink() and ".so" in library.name and not library.name.startswith("libpython"):
            assert f"  {library.name}: " in readme, library.name
    everything = [path.relative_to(internal).as_posix() for path in internal.rglob("*")]
    assert not [name for name in everything if "readline" in name.lower()]
