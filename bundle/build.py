"""Build the standalone app: a PyInstaller one-folder bundle and, on Linux, a release tarball.

    python bundle/build.py [--dist DIR] [--work DIR] [--no-archive]

Needs the `bundle` extra (`pip install -e '.[bundle]'`). The bundle lands in dist/transformer-explorer/
(on macOS also dist/Transformer Explorer.app); on Linux the tarball
dist/transformer-explorer-<version>-linux-<machine>.tar.gz holds the bundle, install.sh, the .desktop
entry and INSTALL.txt. Prints the bundle's size and the time the build took.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bundle.spec_support import APP_ID, required_glibc, version  # noqa: E402

SPEC = ROOT / "bundle" / f"{APP_ID}.spec"
LINUX_FILES = ROOT / "bundle" / "linux"


def folder_size(folder: Path) -> tuple[int, int]:
    """Bytes and file count of a folder, symbolic links not followed."""
    total = files = 0
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            total += path.stat().st_size
            files += 1
    return total, files


def release_name(machine: str | None = None) -> str:
    return f"{APP_ID}-{version(ROOT)}-linux-{machine or platform.machine()}"


def write_release_tarball(bundle_dir: Path, out_dir: Path, name: str | None = None,
                          glibc: tuple[int, int] | None = None) -> Path:
    """The Linux release: <name>/ with the bundle folder, install.sh, the .desktop entry and INSTALL.txt
    (which states `glibc`, the bundle's required version, read from its files when not given)."""
    name = name or release_name()
    target = out_dir / f"{name}.tar.gz"
    partial = target.with_suffix(".partial")

    def owned_by_nobody(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    major, minor = glibc or required_glibc(bundle_dir)[0]
    notes = (LINUX_FILES / "INSTALL.txt").read_text(encoding="utf-8").replace("@GLIBC@", f"{major}.{minor}")
    with tarfile.open(partial, "w:gz", compresslevel=6) as archive:
        archive.add(bundle_dir, arcname=f"{name}/{APP_ID}", filter=owned_by_nobody)
        for extra in ("install.sh", f"{APP_ID}.desktop"):
            archive.add(LINUX_FILES / extra, arcname=f"{name}/{extra}", filter=owned_by_nobody)
        data = notes.encode("utf-8")
        info = owned_by_nobody(archive.gettarinfo(LINUX_FILES / "INSTALL.txt", arcname=f"{name}/INSTALL.txt"))
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    partial.replace(target)  # an interrupted build never leaves a truncated tarball under the real name
    return target


def build(dist: Path, work: Path) -> Path:
    try:
        import PyInstaller.__main__
    except ImportError:
        raise SystemExit("PyInstaller is not installed: run `pip install -e '.[bundle]'` first") from None
    PyInstaller.__main__.run(
        [str(SPEC), "--noconfirm", "--clean", "--log-level", "WARN", "--distpath", str(dist), "--workpath", str(work)]
    )
    bundle_dir = dist / APP_ID
    executable = bundle_dir / (f"{APP_ID}.exe" if os.name == "nt" else APP_ID)
    if not executable.exists():
        raise SystemExit(f"PyInstaller finished but {executable} is missing")
    return bundle_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="where the bundle goes (default: dist/)")
    parser.add_argument("--work", type=Path, default=ROOT / "build", help="PyInstaller's scratch folder (default: build/)")
    parser.add_argument("--no-archive", action="store_true", help="skip the Linux release tarball")
    args = parser.parse_args(argv)

    started = time.monotonic()
    bundle_dir = build(args.dist.resolve(), args.work.resolve())
    built = time.monotonic() - started
    size, files = folder_size(bundle_dir)
    print(f"bundle: {bundle_dir} ({size / 1e6:,.0f} MB in {files:,} files), built in {built:.0f} s")
    if not sys.platform.startswith("linux"):
        return 0
    glibc, culprit = required_glibc(bundle_dir)
    print(f"runs on Linux with glibc {glibc[0]}.{glibc[1]} or newer (set by {culprit.relative_to(bundle_dir)})")
    if not args.no_archive:
        tarball = write_release_tarball(bundle_dir, args.dist.resolve(), glibc=glibc)
        print(f"release: {tarball} ({tarball.stat().st_size / 1e6:,.0f} MB), "
              f"in {time.monotonic() - started - built:.0f} s more")
    return 0


if __name__ == "__main__":
    sys.exit(main())
