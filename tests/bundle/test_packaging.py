"""The packaging rules, icons, menu entry, install script and release tarball, without running PyInstaller."""

from __future__ import annotations

import configparser
import os
import shutil
import stat
import struct
import subprocess
import tarfile
from pathlib import Path

import pytest

from bundle import build, spec_support
from bundle.spec_support import APP_ID
from gui import APP_ID as GUI_APP_ID
from gui import APP_VERSION

ROOT = Path(__file__).resolve().parents[2]
LINUX = ROOT / "bundle" / "linux"
ICONS = ROOT / "resources" / "icons"


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", header[16:24])


# ---- what goes in and what stays out ----------------------------------------------------------


def test_names_and_version_agree():
    assert spec_support.APP_ID == GUI_APP_ID == APP_ID
    assert spec_support.version(ROOT) == APP_VERSION


def test_data_files_are_the_resources_without_python_files():
    files = spec_support.data_files(ROOT)
    destinations = {Path(source).relative_to(ROOT).as_posix(): dest for source, dest in files}
    for needed in ("resources/tinyshakespeare.txt", "resources/models/tiny-gpt/model.safetensors",
                   "resources/models/tiny-llama/tokenizer.json", "resources/lessons/01-causal-mask.json",
                   f"resources/icons/{APP_ID}.svg", f"resources/icons/hicolor/48x48/apps/{APP_ID}.png",
                   "docs/index.md", "docs/images/window.png"):
        assert needed in destinations, needed
        assert destinations[needed] == str(Path(needed).parent)
    assert not [path for path in destinations if path.endswith((".py", ".pyc"))]


def toc(*names: str) -> list[tuple[str, str, str]]:
    return [(name, f"/site-packages/{name}", "BINARY") for name in names]


QT_KEPT = [
    "PySide6/Qt/lib/libQt6Core.so.6", "PySide6/Qt/lib/libQt6Gui.so.6", "PySide6/Qt/lib/libQt6Widgets.so.6",
    "PySide6/Qt/lib/libQt6Svg.so.6", "PySide6/Qt/lib/libQt6OpenGL.so.6", "PySide6/Qt/lib/libQt6DBus.so.6",
    "PySide6/Qt/plugins/platforms/libqxcb.so", "PySide6/Qt/plugins/platforms/libqwayland.so",
    "PySide6/Qt/plugins/platforms/libqoffscreen.so", "PySide6/Qt/plugins/iconengines/libqsvgicon.so",
    "PySide6/Qt/plugins/imageformats/libqsvg.so", "PySide6/Qt6Core.dll", "torch/lib/libtorch_cpu.so",
    "torch/lib/libc10.so", "torch/lib/libgomp.so.1", "torch/bin/torch_shm_manager",
]
QT_DROPPED = [
    "PySide6/Qt/lib/libQt6Qml.so.6", "PySide6/Qt/lib/libQt6Quick.so.6", "PySide6/Qt/lib/libQt6Pdf.so.6",
    "PySide6/Qt/lib/libQt6Network.so.6", "PySide6/Qt/lib/libQt6VirtualKeyboard.so.6",
    "PySide6/Qt/plugins/platforminputcontexts/libqtvirtualkeyboardplugin.so",
    "PySide6/Qt/plugins/imageformats/libqpdf.so", "PySide6/Qt/plugins/sqldrivers/libqsqlite.so",
    "PySide6/Qt/plugins/platforms/libqeglfs.so", "PySide6/Qt6Qml.dll", "PySide6/Qt/lib/libQt6EglFsKmsSupport.so.6",
    "PySide6/Qt/plugins/generic/libqtuiotouchplugin.so", "torch/bin/protoc",
    "torch/test/Dict_test", "torch/lib/libtorchbind_test.so",
]
CUDA = ["nvidia/cublas/lib/libcublas.so.12", "torch/lib/libtorch_cuda.so", "nvidia/cudnn/lib/libcudnn.so.9",
        "torch/lib/cudart64_12.dll", "torch/lib/libnccl.so.2"]


def test_unused_qt_parts_and_torch_test_programs_are_dropped():
    kept = {name for name, _, _ in spec_support.drop_unused_binaries(toc(*QT_KEPT, *QT_DROPPED), with_cuda=False)}
    assert kept == set(QT_KEPT)


def test_cuda_libraries_are_dropped_for_a_cpu_torch_and_kept_for_a_cuda_torch():
    cpu = spec_support.drop_unused_binaries(toc(*QT_KEPT, *CUDA), with_cuda=False)
    assert {name for name, _, _ in cpu} == set(QT_KEPT)
    cuda = spec_support.drop_unused_binaries(toc(*QT_KEPT, *CUDA), with_cuda=True)
    assert {name for name, _, _ in cuda} == set(QT_KEPT) | set(CUDA)


def test_the_desktops_own_libraries_are_left_to_the_system_on_linux():
    system = ["libstdc++.so.6", "libgcc_s.so.1", "libexpat.so.1", "libX11.so.6", "libxcb.so.1",
              "libfontconfig.so.1", "libglib-2.0.so.0", "libGL.so.1", "libdbus-1.so.3"]
    bundled = ["libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxkbcommon.so.0", "libpython3.11.so.1.0",
               "libssl.so.3", "torch/lib/libgomp.so.1", "numpy.libs/libgfortran-040039e1.so.5.0.0",
               "PySide6/Qt/lib/libicuuc.so.73", "PySide6/Qt/lib/libQt6Core.so.6"]
    kept = {name for name, _, _ in spec_support.drop_unused_binaries(toc(*system, *bundled), with_cuda=False,
                                                                      linux=True)}
    assert kept == set(bundled)
    # Elsewhere the same names mean nothing special.
    kept = {name for name, _, _ in spec_support.drop_unused_binaries(toc("libstdc++.so.6"), with_cuda=False,
                                                                      linux=False)}
    assert kept == {"libstdc++.so.6"}


def test_libraries_that_only_dropped_files_needed_go_too():
    links = {
        "/src/python3.11/lib-dynload/_ssl.so": {"libssl.so.3"},
        "/src/libssl.so.3": {"libcrypto.so.3"},
        "/src/libcrypto.so.3": set(),
        "/src/libpython3.11.so.1.0": {"libz.so.1"},
        "/src/PySide6/Qt/plugins/platforms/libqxcb.so": {"libxcb-cursor.so.0", "libQt6Core.so.6"},
        "/src/libxcb-cursor.so.0": {"libxcb-image.so.0"},
        "/src/libxcb-image.so.0": set(),
        "/src/libcairo.so.2": {"libpixman-1.so.0"},  # the GTK theme plugin that needed it is gone
        "/src/libpixman-1.so.0": set(),
    }
    binaries = [(source.removeprefix("/src/"), source, "BINARY") for source in links]
    kept = spec_support.drop_orphaned_libraries(binaries, needed_names=lambda source: links[source])
    assert [name for name, _, _ in kept] == [
        "python3.11/lib-dynload/_ssl.so", "libssl.so.3", "libcrypto.so.3", "libpython3.11.so.1.0",
        "PySide6/Qt/plugins/platforms/libqxcb.so", "libxcb-cursor.so.0", "libxcb-image.so.0"]
    # A file whose links cannot be read might need anything: nothing is dropped on its account.
    unreadable = {**links, "/src/python3.11/lib-dynload/_ssl.so": None}
    kept = spec_support.drop_orphaned_libraries(binaries, needed_names=lambda source: unreadable[source])
    assert len(kept) == len(binaries)


def test_the_newest_glibc_any_elf_file_asks_for(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "old.so").write_bytes(b"\x7fELF" + b"\0" * 12 + b"GLIBC_2.2.5\0GLIBC_2.17\0")
    (tmp_path / "lib" / "new.so").write_bytes(b"\x7fELF" + b"\0" * 12 + b"GLIBC_2.9\0GLIBC_2.34\0GLIBC_2.4\0")
    (tmp_path / "notes.txt").write_bytes(b"GLIBC_2.99 is only text here")
    (tmp_path / "link.so").symlink_to(tmp_path / "lib" / "new.so")
    assert spec_support.required_glibc(tmp_path) == ((2, 34), tmp_path / "lib" / "new.so")
    (tmp_path / "lib" / "old.so").unlink()
    (tmp_path / "lib" / "new.so").unlink()
    assert spec_support.required_glibc(tmp_path) == ((2, 0), None)


def test_the_installed_torch_is_read_without_importing_it():
    import torch

    assert spec_support.torch_has_cuda() == (torch.version.cuda is not None)


def test_links_to_dropped_libraries_go_with_them():
    binaries = toc("PySide6/Qt/lib/libQt6Core.so.6", "PySide6/Qt/lib/libQt6Network.so.6")
    datas = [("libQt6Core.so.6", "PySide6/Qt/lib/libQt6Core.so.6", "SYMLINK"),
             ("libQt6Network.so.6", "PySide6/Qt/lib/libQt6Network.so.6", "SYMLINK"),
             ("torch/lib/libgomp.so", "libgomp.so.1", "SYMLINK"),
             ("resources/tinyshakespeare.txt", "/src/resources/tinyshakespeare.txt", "DATA")]
    binaries += toc("torch/lib/libgomp.so.1")
    kept_binaries, kept_datas = spec_support.prune(binaries, datas, with_cuda=False, linux=False)
    assert {name for name, _, _ in kept_binaries} == {"PySide6/Qt/lib/libQt6Core.so.6", "torch/lib/libgomp.so.1"}
    assert {name for name, _, _ in kept_datas} == {"libQt6Core.so.6", "torch/lib/libgomp.so",
                                                  "resources/tinyshakespeare.txt"}


def test_build_only_data_is_dropped():
    datas = [(name, f"/src/{name}", "DATA") for name in (
        "torch/include/ATen/ATen.h", "torch/share/cmake/Torch/TorchConfig.cmake", "torch/nn/modules/linear.py",
        "torch/_C/__init__.pyi", "resources/models/tiny-gpt/model.safetensors", "pyqtgraph/icons/auto.png")]
    kept = {name for name, _, _ in spec_support.drop_unused_data(datas)}
    assert kept == {"torch/nn/modules/linear.py", "resources/models/tiny-gpt/model.safetensors",
                    "pyqtgraph/icons/auto.png"}


def test_excluded_modules_spare_what_the_app_imports():
    excluded = set(spec_support.EXCLUDED_MODULES)
    for needed in ("PySide6.QtCore", "PySide6.QtGui", "PySide6.QtWidgets", "PySide6.QtSvg", "PySide6.QtOpenGL",
                   "PySide6.QtOpenGLWidgets", "PySide6.QtTest", "torch", "numpy", "pyqtgraph", "safetensors",
                   "tokenizers", "core", "gui", "resources"):
        assert needed not in excluded
    assert {"PySide6.QtQml", "PySide6.QtNetwork", "transformers", "pytest"} <= excluded


# ---- icons and the menu entry -----------------------------------------------------------------


def test_png_icons_exist_in_every_size_of_the_icon_theme():
    for size in spec_support.PNG_ICON_SIZES:
        assert png_size(ICONS / "hicolor" / f"{size}x{size}" / "apps" / f"{APP_ID}.png") == (size, size)


def test_the_window_icon_carries_every_png_size(qapp):
    from gui.app import application_icon

    icon = application_icon()
    assert not icon.isNull()
    available = {size.width() for size in icon.availableSizes()}
    assert set(spec_support.PNG_ICON_SIZES) <= available


def read_desktop_entry(path: Path) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # keys are case-sensitive
    parser.read(path, encoding="utf-8")
    assert parser.sections() == ["Desktop Entry"]
    return dict(parser["Desktop Entry"])


def test_desktop_entry_template_has_the_required_keys():
    entry = read_desktop_entry(LINUX / f"{APP_ID}.desktop")
    assert entry["Type"] == "Application"
    assert entry["Name"] == "Transformer Explorer"
    assert entry["Icon"] == APP_ID
    assert entry["Exec"] == "@EXEC@" and entry["TryExec"] == "@TRYEXEC@"
    assert entry["Terminal"] == "false"
    assert entry["Categories"].endswith(";") and "Education" in entry["Categories"].split(";")
    assert entry["StartupWMClass"] == APP_ID


# ---- the install script, on a stand-in bundle --------------------------------------------------


@pytest.fixture
def fake_release(tmp_path) -> Path:
    """A release folder as the tarball unpacks, with a shell script standing in for the executable."""
    release = tmp_path / "release"
    bundle_dir = release / APP_ID
    (bundle_dir / "_internal" / "resources").mkdir(parents=True)
    shutil.copytree(ICONS, bundle_dir / "_internal" / "resources" / "icons")
    executable = bundle_dir / APP_ID
    executable.write_text("#!/bin/sh\necho \"stand-in $*\"\n")
    executable.chmod(0o755)
    (bundle_dir / "_internal" / "libstand-in.so").write_bytes(b"\x7fELF" + b"\0" * 12 + b"GLIBC_2.17\0GLIBC_2.31\0")
    for name in ("install.sh", f"{APP_ID}.desktop", "INSTALL.txt"):
        shutil.copy2(LINUX / name, release / name)
    return release


def run_install(release: Path, home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "LANG": "C.UTF-8"}
    result = subprocess.run(["bash", str(release / "install.sh"), *args], env=env, capture_output=True, text=True,
                            timeout=120)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def installed_paths(home: Path) -> dict[str, Path]:
    share = home / ".local" / "share"
    return {
        "prefix": home / ".local" / "opt" / APP_ID,
        "launcher": home / ".local" / "bin" / APP_ID,
        "desktop": share / "applications" / f"{APP_ID}.desktop",
        "icon48": share / "icons" / "hicolor" / "48x48" / "apps" / f"{APP_ID}.png",
        "svg": share / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg",
    }


def test_install_adds_app_menu_entry_icons_and_command_then_uninstall_removes_them(fake_release, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    result = run_install(fake_release, home)
    paths = installed_paths(home)
    assert "Installed Transformer Explorer" in result.stdout
    assert (paths["prefix"] / APP_ID).stat().st_mode & stat.S_IXUSR
    assert paths["launcher"].is_symlink() and paths["launcher"].resolve() == (paths["prefix"] / APP_ID).resolve()
    assert subprocess.run([str(paths["launcher"]), "--self-test"], capture_output=True, text=True,
                          check=True).stdout.strip() == "stand-in --self-test"
    entry = read_desktop_entry(paths["desktop"])
    assert entry["Exec"] == f'"{paths["prefix"] / APP_ID}"'
    assert entry["TryExec"] == str(paths["prefix"] / APP_ID)
    assert png_size(paths["icon48"]) == (48, 48)
    assert paths["svg"].read_bytes() == (ICONS / f"{APP_ID}.svg").read_bytes()
    for size in spec_support.PNG_ICON_SIZES:
        assert (home / ".local/share/icons/hicolor" / f"{size}x{size}" / "apps" / f"{APP_ID}.png").exists()
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(["desktop-file-validate", str(paths["desktop"])], capture_output=True, text=True)
        assert check.returncode == 0 and not check.stdout.strip(), check.stdout

    # The installed copy removes itself, the menu entry, the icons and the command.
    result = run_install(paths["prefix"], home, "--uninstall")
    assert "Removed Transformer Explorer" in result.stdout
    for path in paths.values():
        assert not path.exists() and not path.is_symlink(), path
    assert (home / ".local" / "share" / "applications").is_dir()  # shared folders stay


def test_reinstall_replaces_the_old_copy(fake_release, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    run_install(fake_release, home)
    prefix = installed_paths(home)["prefix"]
    (prefix / "stale-file").write_text("from the old version")
    (fake_release / APP_ID / "new-file").write_text("from the new version")
    run_install(fake_release, home)
    assert not (prefix / "stale-file").exists()
    assert (prefix / "new-file").read_text() == "from the new version"
    assert not list(prefix.parent.glob("*.partial.*"))


def test_install_to_a_chosen_prefix_and_uninstall_from_there(fake_release, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    prefix = tmp_path / "apps with space" / "te"
    run_install(fake_release, home, "--prefix", str(prefix))
    entry = read_desktop_entry(installed_paths(home)["desktop"])
    assert entry["Exec"] == f'"{prefix / APP_ID}"'
    run_install(prefix, home, "--uninstall")
    assert not prefix.exists() and not installed_paths(home)["desktop"].exists()


def test_install_refuses_to_overwrite_a_folder_it_did_not_make(fake_release, tmp_path):
    home = tmp_path / "home"
    foreign = home / ".local" / "opt" / APP_ID
    foreign.mkdir(parents=True)
    (foreign / "precious.txt").write_text("keep me")
    result = run_install(fake_release, home, check=False)
    assert result.returncode != 0 and "was not made by this script" in result.stderr
    result = run_install(fake_release, home, "--uninstall", check=False)
    assert result.returncode != 0 and "was not made by this script" in result.stderr
    assert (foreign / "precious.txt").read_text() == "keep me"


def test_install_without_a_bundle_says_what_is_missing(tmp_path):
    release = tmp_path / "empty"
    release.mkdir()
    shutil.copy2(LINUX / "install.sh", release / "install.sh")
    result = run_install(release, tmp_path, check=False)
    assert result.returncode != 0
    assert "no app found" in result.stderr and "Traceback" not in result.stderr


def test_unknown_option_is_one_line(fake_release, tmp_path):
    result = run_install(fake_release, tmp_path, "--frobnicate", check=False)
    assert result.returncode != 0 and result.stderr.strip().count("\n") == 0 and "--frobnicate" in result.stderr


# ---- the release tarball ----------------------------------------------------------------------


def test_release_tarball_holds_bundle_installer_and_notes(fake_release, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    tarball = build.write_release_tarball(fake_release / APP_ID, out, name="te-test")
    assert tarball == out / "te-test.tar.gz" and not list(out.glob("*.partial"))
    with tarfile.open(tarball) as archive:
        members = {member.name: member for member in archive.getmembers()}
    for name in (f"te-test/{APP_ID}/{APP_ID}", "te-test/install.sh", f"te-test/{APP_ID}.desktop",
                 "te-test/INSTALL.txt", f"te-test/{APP_ID}/_internal/resources/icons/{APP_ID}.svg"):
        assert name in members, name
    assert members[f"te-test/{APP_ID}/{APP_ID}"].mode & 0o111
    assert members["te-test/install.sh"].mode & 0o111
    assert {member.uid for member in members.values()} == {0}
    with tarfile.open(tarball) as archive:
        notes = archive.extractfile("te-test/INSTALL.txt").read().decode("utf-8")
    assert "glibc 2.31 or newer" in notes and "@" not in notes  # what the stand-in library asks for


def test_release_name_carries_version_and_machine():
    assert build.release_name("x86_64") == f"{APP_ID}-{APP_VERSION}-linux-x86_64"


def test_help_shows_the_usage_and_nothing_else(fake_release, tmp_path):
    result = run_install(fake_release, tmp_path, "--help")
    assert "--uninstall" in result.stdout and "--prefix DIR" in result.stdout
    assert "set -" not in result.stdout and not (tmp_path / ".local").exists()
