"""What the PyInstaller spec puts in the bundle and what it leaves out.

Kept as plain functions so that the tests can check the rules without running PyInstaller. Nothing
here imports Qt or torch at module level: the spec runs inside PyInstaller's own process.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import sys
import tomllib
from pathlib import Path, PurePath

APP_ID = "transformer-explorer"
APP_TITLE = "Transformer Explorer"

# Qt modules that PySide6 ships but the app never uses. pyqtgraph imports QtOpenGL, QtOpenGLWidgets,
# QtSvg and QtTest itself, so those stay.
UNUSED_QT_MODULES = [
    "Qt3DAnimation", "Qt3DCore", "Qt3DExtras", "Qt3DInput", "Qt3DLogic", "Qt3DRender",
    "QtAxContainer", "QtBluetooth", "QtCharts", "QtConcurrent", "QtDataVisualization", "QtDBus",
    "QtDesigner", "QtGraphs", "QtHelp", "QtHttpServer", "QtLocation", "QtMultimedia",
    "QtMultimediaWidgets", "QtNetwork", "QtNetworkAuth", "QtNfc", "QtPdf", "QtPdfWidgets",
    "QtPositioning", "QtPrintSupport", "QtQml", "QtQuick", "QtQuick3D", "QtQuickControls2",
    "QtQuickTest", "QtQuickWidgets", "QtRemoteObjects", "QtScxml", "QtSensors", "QtSerialBus",
    "QtSerialPort", "QtSpatialAudio", "QtSql", "QtStateMachine", "QtSvgWidgets", "QtTextToSpeech",
    "QtUiTools", "QtWebChannel", "QtWebEngineCore", "QtWebEngineQuick", "QtWebEngineWidgets",
    "QtWebSockets", "QtWebView", "QtXml",
]

# Python packages that are importable in a development environment (tests, notebooks, optional
# integrations of torch and pyqtgraph) but that the app never needs at run time.
UNUSED_PYTHON_MODULES = [
    "tkinter", "_tkinter", "IPython", "jupyter_client", "ipykernel", "notebook", "matplotlib",
    "PIL", "scipy", "pandas", "h5py", "cv2", "pytest", "_pytest", "pytestqt", "hypothesis",
    "transformers", "huggingface_hub", "tensorboard", "torchvision", "torchaudio", "triton",
    "onnx", "onnxruntime", "PyQt5", "PyQt6", "PySide2", "pyqtgraph.examples", "pyqtgraph.opengl",
    "OpenGL", "torch.utils.tensorboard", "setuptools", "pip", "bench", "tests", "bundle",
    # GNU readline is GPL-3.0: only an interactive prompt uses it, and the app has none.
    "readline",
]

EXCLUDED_MODULES = [f"PySide6.{name}" for name in UNUSED_QT_MODULES] + UNUSED_PYTHON_MODULES

# The CLI loads its subcommands by name and the panels are listed in one place; collecting the
# app's own packages whole keeps both working frozen.
HIDDEN_PACKAGES = ["core", "gui", "resources"]

# Shared libraries and Qt plugins that only the excluded modules need. A Qt plugin would otherwise
# drag its Qt library back in (the virtual keyboard plugin alone brings Qt Quick and QML).
UNUSED_BINARY_PATTERNS = [
    "*Qt6Qml*", "*Qt6Quick*", "*Qt6Pdf*", "*Qt6VirtualKeyboard*", "*Qt6Network*", "*Qt6Designer*",
    "*Qt6Sql*", "*Qt6Help*", "*Qt6WebEngine*", "*Qt6Multimedia*", "*Qt6Lottie*", "*Qt6Labs*",
    "*Qt6PrintSupport*", "*Qt6WaylandCompositor*",
    "*/plugins/platforminputcontexts/*virtualkeyboard*", "*/plugins/imageformats/*qpdf*",
    "*/plugins/tls/*", "*/plugins/networkinformation/*", "*/plugins/sqldrivers/*",
    "*/plugins/qmltooling/*", "*/plugins/qmllint/*", "*/plugins/designer/*", "*/plugins/printsupport/*",
    "*/plugins/wayland-graphics-integration-server/*", "*/plugins/vectorimageformats/*",
    "*/plugins/platforms/*qvnc*", "*/plugins/platforms/*qvkkhrdisplay*",
    # The GTK theme plugin needs the system's GTK 3, and with it would bring the build machine's cairo,
    # pango and GDK into the bundle, to be mixed with the user's GTK; the app draws its own Fusion theme.
    "*/plugins/platformthemes/*qgtk3*",
    # Embedded-device platforms (framebuffer, EGL without a window system): not a classroom desktop.
    "*Qt6EglF[sS]*", "*/plugins/egldeviceintegrations/*", "*/plugins/generic/*tuiotouch*", "*/plugins/platforms/*qeglfs*",
    "*/plugins/platforms/*qlinuxfb*", "*/plugins/platforms/*qminimalegl*",
    # torch's wheel carries its own C++ test programs and test libraries.
    "torch/bin/*", "torch/test/*", "torch/lib/*test*", "torch/lib/libbackend_with_compiler*",
    "torch/lib/libaoti_custom_ops*",
    "*readline*",  # GPL-3.0, and needed only by the excluded readline module
]

# The desktop's own libraries, which PyInstaller would copy from the build machine: they are taken from
# the user's system instead, as a pip-installed PySide6 takes them. The build machine's copies would tie
# the app to its glibc (Debian 12's libstdc++ and libexpat need glibc 2.36, which Ubuntu 22.04 lacks) and
# clash with the system's GL drivers, which load the system's newer libstdc++. Top-level names only: the
# libraries that torch, numpy and PySide6 vendor in their own folders stay.
HOST_LIBRARY_PATTERNS = [
    "libstdc++.so*", "libgcc_s.so*", "libexpat.so*", "libz.so*",
    "libGL.so*", "libEGL.so*", "libGLX*", "libGLdispatch*", "libOpenGL*", "libdrm.so*", "libgbm.so*",
    "libX11.so*", "libX11-xcb.so*", "libxcb.so*", "libXau.so*", "libXdmcp.so*", "libXext.so*", "libXrender.so*",
    "libfontconfig.so*", "libfreetype.so*", "libdbus-1.so*", "libsystemd.so*",
    "libglib-2.0.so*", "libgobject-2.0.so*", "libgio-2.0.so*", "libgmodule-2.0.so*", "libgthread-2.0.so*",
]

# Matched by the patterns above but needed: `import torch` looks for its shared-memory manager.
NEEDED_BINARIES = ["torch/bin/torch_shm_manager", "torch/bin/torch_shm_manager.exe"]

# NVIDIA's runtime libraries. A CPU build of torch has none; when one is found beside a CPU torch
# (a stray nvidia-* wheel in the environment) it would only add gigabytes.
CUDA_BINARY_PATTERNS = [
    "*libcu*", "*libnv*", "*libcudnn*", "*libnccl*", "*cudart*", "*cublas*", "*cufft*", "*curand*",
    "*cusolver*", "*cusparse*", "*libtorch_cuda*", "*/nvidia/*", "*triton*",
]

# Parts of torch's data that serve building extensions or other tools, never running a model.
UNUSED_DATA_PATTERNS = [
    "torch/include/*", "torch/share/cmake/*", "torch/test/*", "torch/_inductor/codegen/*.h",
    "*/__pycache__/*", "*.pyi", "*.a", "*.lib", "*.h", "*.hpp", "*.cuh",
]

PNG_ICON_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)


def version(root: Path) -> str:
    with (root / "pyproject.toml").open("rb") as handle:
        return tomllib.load(handle)["project"]["version"]


DATA_FOLDERS = ("resources", "docs")  # docs/: the user guide that Help > User guide opens


def data_files(root: Path) -> list[tuple[str, str]]:
    """Every file under resources/ and docs/ except Python package files, at the same relative place."""
    files = []
    for path in sorted(path for folder in DATA_FOLDERS for path in (root / folder).rglob("*")):
        if not path.is_file() or path.suffix in {".py", ".pyc"} or "__pycache__" in path.parts:
            continue
        files.append((str(path), str(path.parent.relative_to(root))))
    return files


def hidden_imports() -> list[str]:
    from PyInstaller.utils.hooks import collect_submodules

    names: list[str] = []
    for package in HIDDEN_PACKAGES:
        names += collect_submodules(package)
    return names


def platform_icon(root: Path) -> str | None:
    """The executable's icon on Windows and macOS; PyInstaller converts the PNG with Pillow there."""
    if sys.platform.startswith("linux"):
        return None  # Linux takes the icon from the .desktop entry and the icon theme
    return str(root / "resources" / "icons" / "hicolor" / "512x512" / "apps" / f"{APP_ID}.png")


def torch_has_cuda() -> bool:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return False
    version_file = Path(spec.origin).parent / "version.py"
    if not version_file.exists():
        return False
    # torch/version.py states the CUDA version it was built against; reading it avoids importing torch.
    for line in version_file.read_text().splitlines():
        if line.startswith("cuda"):
            return "None" not in line
    return False


def _matches(path: str, patterns: list[str]) -> bool:
    posix = PurePath(path).as_posix()
    return any(fnmatch.fnmatch(posix, pattern) or fnmatch.fnmatch("/" + posix, pattern) for pattern in patterns)


def is_host_library(dest_name: str) -> bool:
    path = PurePath(dest_name)
    return len(path.parts) == 1 and any(fnmatch.fnmatch(path.name, pattern) for pattern in HOST_LIBRARY_PATTERNS)


def drop_unused_binaries(binaries, with_cuda: bool | None = None, linux: bool | None = None):
    """PyInstaller's TOC of binaries minus unused Qt parts, the desktop's own libraries (Linux) and, for a
    CPU torch, CUDA libraries."""
    with_cuda = torch_has_cuda() if with_cuda is None else with_cuda
    linux = sys.platform.startswith("linux") if linux is None else linux
    patterns = UNUSED_BINARY_PATTERNS + ([] if with_cuda else CUDA_BINARY_PATTERNS)
    return [entry for entry in binaries
            if _matches(entry[0], NEEDED_BINARIES)
            or not (_matches(entry[0], patterns) or (linux and is_host_library(entry[0])))]


def drop_orphaned_libraries(binaries, needed_names=None):
    """The binaries minus the top-level shared libraries that no kept file needs any more.

    PyInstaller gathers a library's whole dependency tree before the spec filters anything, so what only
    a dropped plugin needed (the GTK theme's cairo and pango, say) would stay behind. Python's own
    library is loaded by the bootloader by name, not linked, so it always stays. `needed_names(path)`
    gives the names a file links against, directly or through others (PyInstaller's reader, which asks
    ldd on Linux): what a kept file can load stays, even through a library the system now provides.
    """
    if needed_names is None:
        from PyInstaller.depend.bindepend import get_imports

        def needed_names(source: str) -> set[str] | None:
            try:
                return {name for name, _resolved in get_imports(source)}
            except Exception:  # an unreadable file: unknown needs, so nothing may be dropped on its account
                return None

    def top_level_library(entry) -> bool:
        path = PurePath(entry[0])
        return len(path.parts) == 1 and ".so" in path.name and not path.name.startswith("libpython")

    kept = [entry for entry in binaries if not top_level_library(entry)]
    candidates = {PurePath(entry[0]).name: entry for entry in binaries if top_level_library(entry)}
    pending = list(kept)
    while pending:
        entry = pending.pop()
        names = needed_names(entry[1])
        for name in list(candidates) if names is None else names:
            if name in candidates:
                found = candidates.pop(name)
                kept.append(found)
                pending.append(found)
    order = {id(entry): index for index, entry in enumerate(binaries)}
    return sorted(kept, key=lambda entry: order[id(entry)])


def drop_unused_data(datas):
    return [entry for entry in datas if not _matches(entry[0], UNUSED_DATA_PATTERNS)]


def prune(binaries, datas, with_cuda: bool | None = None, linux: bool | None = None):
    """Both TOCs minus what the app does not use, and minus the links that pointed at it.

    PyInstaller records a top-level symbolic link for each Qt library (a SYMLINK entry among the data,
    target relative to the link), so a library left out must take its link along.
    """
    linux = sys.platform.startswith("linux") if linux is None else linux
    binaries = drop_unused_binaries(binaries, with_cuda, linux)
    if linux:
        binaries = drop_orphaned_libraries(binaries)
    datas = drop_unused_data(datas)
    present = {PurePath(entry[0]).as_posix() for entry in (*binaries, *datas) if entry[2] != "SYMLINK"}

    def link_target_present(entry) -> bool:
        if entry[2] != "SYMLINK":
            return True
        target = posixpath.normpath(posixpath.join(posixpath.dirname(PurePath(entry[0]).as_posix()), entry[1]))
        return target in present

    return [e for e in binaries if link_target_present(e)], [e for e in datas if link_target_present(e)]


_GLIBC_VERSION = re.compile(rb"GLIBC_2\.(\d+)")
_ELF_MAGIC = b"\x7fELF"


def required_glibc_of(path: Path) -> tuple[tuple[int, int], Path | None]:
    """The newest glibc version one ELF file asks for ((2, 0) and None for anything else).

    Symbol versions live as GLIBC_2.N strings in the file's dynamic string table, and a file can only
    ask for versions it names, so the highest name found bounds the glibc it runs with.
    """
    if path.is_symlink() or not path.is_file():
        return (2, 0), None
    with path.open("rb") as handle:
        if handle.read(4) != _ELF_MAGIC:
            return (2, 0), None
        data = handle.read()
    versions = [(2, int(match.group(1))) for match in _GLIBC_VERSION.finditer(data)]
    return (max(versions), path) if versions else ((2, 0), None)


def required_glibc(folder: Path) -> tuple[tuple[int, int], Path | None]:
    """The newest glibc version any ELF file in folder asks for, and the first file that asks for it."""
    newest, culprit = (2, 0), None
    for path in sorted(folder.rglob("*")):
        version, source = required_glibc_of(path)
        if version > newest:
            newest, culprit = version, source
    return newest, culprit
