"""The third-party licence notices that go into the bundle's licenses/ folder.

Every Python distribution whose modules or files the bundle carries gets its own folder with the licence
files of its wheel (torch's include those of its third-party code, numpy's those of the libraries it ships);
a wheel that ships none (PySide6, shiboken6, tokenizers) gets the texts that its licence names, kept in
bundle/licenses/. Shared libraries taken from the build machine get their distribution's copyright file
where the system has one (Debian and Ubuntu: /usr/share/doc/PACKAGE/copyright), Python its own LICENSE.
licenses/README.txt lists every component, its version and licence, and the files that carry it.

Nothing here imports PyInstaller, Qt or torch: the spec calls it with PyInstaller's TOCs.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterable
from pathlib import Path, PurePath

TEXTS = Path(__file__).resolve().parent / "licenses"
FOLDER = "licenses"

# Wheels that ship no licence file: the texts their licence names.
TEXTS_FOR_DISTRIBUTION = {
    "pyside6-essentials": ["Qt-and-PySide6.txt", "LGPL-3.0.txt", "GPL-3.0.txt", "ICU.txt"],
    "shiboken6": ["Qt-and-PySide6.txt", "LGPL-3.0.txt", "GPL-3.0.txt"],
    "tokenizers": ["Apache-2.0.txt"],
}
# For a wheel without licence files (older safetensors and tokenizers releases, say): the text that a word of
# its declared licence names.
TEXTS_FOR_LICENCE = {"Apache": ["Apache-2.0.txt"], "LGPL-3": ["LGPL-3.0.txt", "GPL-3.0.txt"], "GPL-3": ["GPL-3.0.txt"]}
# Libraries inside a wheel that its own licence files do not cover, and the texts that do.
BUNDLED_LIBRARIES = {
    "torch": [("torch/lib/libgomp*", "GNU OpenMP runtime (libgomp): GPL-3.0-or-later WITH GCC-exception-3.1",
               ["GPL-3.0.txt", "GCC-exception-3.1.txt"])],
}
QT_DISTRIBUTIONS = {"pyside6-essentials", "pyside6", "shiboken6"}
# The app's own packages carry the project's LICENSE.
OWN_MODULES = {"core", "gui", "resources", "transformer_explorer"}
_LICENCE_FILE = re.compile(r"^(licen[cs]e|copying|notice|authors|copyright)", re.IGNORECASE)


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def top_level_names(pure: Iterable[tuple], binaries: Iterable[tuple], datas: Iterable[tuple]) -> set[str]:
    """The top-level import names (and wheel-library folders such as numpy.libs) the TOCs carry."""
    names = {entry[0].split(".")[0] for entry in pure}
    for entry in (*binaries, *datas):
        parts = PurePath(entry[0]).parts
        if len(parts) > 1:
            names.add(parts[0].removesuffix(".libs"))
    return names


def shipped_distributions(names: Iterable[str]) -> dict[str, importlib.metadata.Distribution]:
    """The installed distributions that provide those names, by normalized name."""
    providers = importlib.metadata.packages_distributions()
    found = {}
    for name in names:
        for dist_name in providers.get(name, []):
            dist = importlib.metadata.distribution(dist_name)
            found[normalize(dist.metadata["Name"])] = dist
    return found


def licence_expression(dist: importlib.metadata.Distribution) -> str:
    metadata = dist.metadata
    if metadata.get("License-Expression"):
        return metadata["License-Expression"]
    licence = (metadata.get("License") or "").strip()
    if licence and "\n" not in licence and len(licence) < 120:
        return licence
    classifiers = [c.split(" :: ")[-1] for c in metadata.get_all("Classifier") or [] if c.startswith("License ::")]
    return "; ".join(classifiers) or "see the files"


def licence_files(dist: importlib.metadata.Distribution) -> list[tuple[str, Path]]:
    """(path inside the distribution's notice folder, source) for each licence file in its dist-info."""
    files = []
    for entry in dist.files or []:
        parts = PurePath(entry).parts
        if not parts or not parts[0].endswith(".dist-info"):
            continue
        inner = PurePath(*parts[1:])
        if inner.parts and (inner.parts[0] == "licenses" or _LICENCE_FILE.match(inner.name)):
            relative = PurePath(*inner.parts[1:]) if inner.parts[0] == "licenses" else inner
            files.append((relative.as_posix(), Path(dist.locate_file(entry))))
    return files


def _owner_candidates(library: Path) -> list[str]:
    # dpkg knows a file by the path its package installed, which with a merged /usr may be the /lib one.
    paths = []
    for path in (library, library.resolve()):
        text = path.as_posix()
        paths += [text, text.removeprefix("/usr")] if text.startswith("/usr/lib/") else [text, "/usr" + text]
    return list(dict.fromkeys(paths))


def debian_copyright(library: Path, run: Callable = subprocess.run) -> Path | None:
    """The copyright file of the Debian / Ubuntu package that owns a system library, if the system says."""
    if shutil.which("dpkg") is None:
        return None
    try:
        owners = run(["dpkg", "-S", *_owner_candidates(library)], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in owners.splitlines():
        package = line.split(":", 1)[0].strip() if ": " in line else ""
        copyright_file = Path("/usr/share/doc") / package / "copyright"
        if package and copyright_file.is_file():
            return copyright_file
    return None


def python_licence() -> Path | None:
    for candidate in (Path(sysconfig.get_path("stdlib")) / "LICENSE.txt", Path(sys.base_prefix) / "LICENSE.txt"):
        if candidate.is_file():
            return candidate
    return None


def collect(pure, binaries, datas, staging: Path, project_licence: Path,
            copyright_of: Callable[[Path], Path | None] = debian_copyright) -> list[tuple[str, str, str]]:
    """Write licenses/README.txt into `staging` and return the DATA TOC entries of the whole folder."""
    entries: list[tuple[str, str, str]] = []
    lines = ["Third-party components of this bundle, their licences, and where their texts are in this folder.",
             "", "Transformer Explorer itself: MIT (Transformer-Explorer/LICENSE).", ""]
    entries.append((f"{FOLDER}/Transformer-Explorer/LICENSE", str(project_licence), "DATA"))

    def add(folder: str, name: str, source: Path) -> str:
        destination = f"{FOLDER}/{folder}/{name}"
        entries.append((destination, str(source), "DATA"))
        return f"{folder}/{name}"

    names = top_level_names(pure, binaries, datas) - OWN_MODULES
    folders: dict[str, str] = {}
    lines.append("Python packages:")
    for key, dist in sorted(shipped_distributions(names).items()):
        folder = dist.metadata["Name"]
        folders[folder] = key
        carried = [add(folder, name, source) for name, source in licence_files(dist)]
        carried += [add(folder, text, TEXTS / text) for text in TEXTS_FOR_DISTRIBUTION.get(key, [])]
        expression = licence_expression(dist)
        if not carried:
            word = next((word for word in TEXTS_FOR_LICENCE if word in expression), None)
            carried = [add(folder, text, TEXTS / text) for text in TEXTS_FOR_LICENCE.get(word, [])]
        lines.append(f"  {dist.metadata['Name']} {dist.version}: {expression}")
        lines.append(f"      {', '.join(carried[:4])}{f' and {len(carried) - 4} more in {folder}/' if len(carried) > 4 else ''}"
                     if carried else "      no licence file found")
        for pattern, description, texts in BUNDLED_LIBRARIES.get(key, []):
            if any(PurePath(entry[0]).match(pattern) for entry in binaries):
                files = [add(folder, text, TEXTS / text) for text in texts]
                lines.append(f"      bundles {description}: {', '.join(files)}")

    lines += ["", "Shared libraries from the build machine (beside the executable):"]
    for entry in sorted(binaries, key=lambda e: e[0]):
        path = PurePath(entry[0])
        if len(path.parts) != 1 or ".so" not in path.name and not path.name.endswith((".dll", ".dylib")):
            continue
        source = Path(entry[1])
        if path.name.startswith(("libpython", "python3")):
            text = python_licence()
            carried = add("Python", "LICENSE.txt", text) if text else None
            label = f"Python {sys.version.split()[0]}: PSF-2.0"
        else:
            text = copyright_of(source)
            carried = add(path.name, "copyright", text) if text else None
            label = path.name
        lines.append(f"  {label}: {carried or 'no copyright file on the build machine (' + str(source) + ')'}")

    qt = [f"{folder}/Qt-and-PySide6.txt" for folder, key in folders.items() if key in QT_DISTRIBUTIONS]
    if qt:
        lines += ["", f"Qt and PySide6 are used under the LGPL-3.0: {qt[0]} says how to replace them with your own",
                  "build (relinking) and where their sources are."]
    readme = staging / "licenses-README.txt"
    staging.mkdir(parents=True, exist_ok=True)
    readme.write_text("\n".join(lines) + "\n", encoding="utf-8")
    entries.append((f"{FOLDER}/README.txt", str(readme), "DATA"))
    return sorted(set(entries))
