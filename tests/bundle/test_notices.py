"""The licence notices collected into the bundle, from PyInstaller-shaped lists of what it ships."""

from __future__ import annotations

import importlib.metadata
import subprocess
from pathlib import Path

from bundle import notices, spec_support

ROOT = Path(__file__).resolve().parents[2]
PURE = [(name, f"/site-packages/{name.replace('.', '/')}.py", "PYMODULE") for name in (
    "torch.nn.functional", "numpy.linalg", "PySide6.QtCore", "shiboken6", "pyqtgraph.graphicsItems",
    "safetensors.torch", "tokenizers", "core.cli", "gui.app", "resources", "transformer_explorer.launcher")]
TORCH_LIB = Path(importlib.metadata.distribution("torch").locate_file("torch/lib"))
BINARIES = [
    ("numpy.libs/libgfortran-040039e1.so.5.0.0", "/site-packages/numpy.libs/libgfortran-040039e1.so.5.0.0", "BINARY"),
    ("torch/lib/libgomp.so.1", str(TORCH_LIB / "libgomp.so.1"), "BINARY"),
    ("PySide6/Qt/lib/libQt6Core.so.6", "/site-packages/PySide6/Qt/lib/libQt6Core.so.6", "BINARY"),
    ("libpython3.11.so.1.0", "/usr/lib/libpython3.11.so.1.0", "BINARY"),
    ("libxcb-cursor.so.0", "/usr/lib/x86_64-linux-gnu/libxcb-cursor.so.0", "BINARY"),
    ("libunknown.so.1", "/opt/somewhere/libunknown.so.1", "BINARY"),
]


def collected(tmp_path):
    copyright_file = tmp_path / "xcb-cursor-copyright"
    copyright_file.write_text("Copyright the XCB authors. MIT.\n")

    def copyright_of(library: Path):
        return copyright_file if library.name == "libxcb-cursor.so.0" else None

    entries = notices.collect(PURE, BINARIES, [], tmp_path / "staging", ROOT / "LICENSE", copyright_of)
    return {destination: Path(source) for destination, source, kind in entries if kind == "DATA"}


def folder_of(name: str) -> str:
    return importlib.metadata.distribution(name).metadata["Name"]


def test_every_shipped_package_gets_its_licence_files_and_a_line_in_the_readme(tmp_path):
    files = collected(tmp_path)
    assert all(source.is_file() for source in files.values())
    readme = files["licenses/README.txt"].read_text(encoding="utf-8")
    for name in ("torch", "numpy", "PySide6-Essentials", "shiboken6", "pyqtgraph", "safetensors", "tokenizers"):
        dist = importlib.metadata.distribution(name)
        assert f"  {dist.metadata['Name']} {dist.version}: " in readme, name
        assert any(path.startswith(f"licenses/{folder_of(name)}/") for path in files), name
    assert files["licenses/Transformer-Explorer/LICENSE"].read_text().startswith("MIT License")
    # The app's own modules are not a third party.
    assert not [path for path in files if "/core/" in path or "/gui/" in path]


def test_qt_gets_the_lgpl_the_gpl_it_supplements_and_the_relinking_note(tmp_path):
    files = collected(tmp_path)
    qt = f"licenses/{folder_of('PySide6-Essentials')}"
    assert "GNU LESSER GENERAL PUBLIC LICENSE" in files[f"{qt}/LGPL-3.0.txt"].read_text()
    assert "GNU GENERAL PUBLIC LICENSE" in files[f"{qt}/GPL-3.0.txt"].read_text()
    note = files[f"{qt}/Qt-and-PySide6.txt"].read_text()
    assert "Relinking" in note and "code.qt.io" in note
    assert "Apache License" in files[f"licenses/{folder_of('tokenizers')}/Apache-2.0.txt"].read_text()
    readme = files["licenses/README.txt"].read_text()
    assert "relinking" in readme


def test_libraries_inside_wheels_and_from_the_system_are_accounted_for(tmp_path):
    files = collected(tmp_path)
    readme = files["licenses/README.txt"].read_text()
    assert "libgomp" in readme and "GCC-exception-3.1" in readme
    assert "GCC RUNTIME LIBRARY EXCEPTION" in files["licenses/torch/GCC-exception-3.1.txt"].read_text()
    assert files["licenses/libxcb-cursor.so.0/copyright"].read_text().startswith("Copyright the XCB")
    assert "libunknown.so.1: no copyright file on the build machine (/opt/somewhere/libunknown.so.1)" in readme
    assert "Python 3." in readme
    # numpy's own licence file names the libraries its wheel ships.
    numpy_licence = files[f"licenses/{folder_of('numpy')}/LICENSE.txt"].read_text()
    assert "libgfortran" in numpy_licence or "gfortran" in numpy_licence.lower()


def test_gnu_readline_stays_out_of_the_bundle():
    assert "readline" in spec_support.EXCLUDED_MODULES
    toc = [(name, f"/src/{name}", "BINARY") for name in (
        "libreadline.so.8", "python3.11/lib-dynload/readline.cpython-311-x86_64-linux-gnu.so", "libncursesw.so.6")]
    kept = spec_support.drop_unused_binaries(toc, with_cuda=False, linux=True)
    assert [name for name, _, _ in kept] == ["libncursesw.so.6"]


def test_a_system_library_is_found_under_its_merged_usr_path_too(monkeypatch, tmp_path):
    asked = []

    def dpkg(command, **_kwargs):
        asked.append(command)
        # dpkg knows the file by the /lib path its package installed; the build found it under /usr/lib.
        return subprocess.CompletedProcess(command, 1, stdout="libbz2-1.0:amd64: /lib/x86_64-linux-gnu/libbz2.so.1.0\n")

    monkeypatch.setattr(notices.shutil, "which", lambda name: "/usr/bin/dpkg")
    found = notices.debian_copyright(Path("/usr/lib/x86_64-linux-gnu/libbz2.so.1.0"), run=dpkg)
    assert "/lib/x86_64-linux-gnu/libbz2.so.1.0" in asked[0]
    if Path("/usr/share/doc/libbz2-1.0/copyright").is_file():
        assert found == Path("/usr/share/doc/libbz2-1.0/copyright")
    else:
        assert found is None  # a system without that package's documentation


def test_a_wheel_without_licence_files_gets_the_text_its_licence_names(monkeypatch, tmp_path):
    real_licence_files = notices.licence_files

    def as_older_safetensors(dist):  # safetensors 0.4.0's wheel carried no licence file
        return [] if notices.normalize(dist.metadata["Name"]) == "safetensors" else real_licence_files(dist)

    monkeypatch.setattr(notices, "licence_files", as_older_safetensors)
    files = collected(tmp_path)
    folder = folder_of("safetensors")
    assert "Apache License" in files[f"licenses/{folder}/Apache-2.0.txt"].read_text()
    assert f"licenses/{folder}/LICENSE" not in files
