"""CI: the test suite on the lowest version of every dependency that pyproject.toml claims to support.

    python3 .ci/lowest_versions.py [--venv DIR] [--keep] [--torch-index URL|pypi] [-- PYTEST ARGS]

Each runtime requirement `name>=X` (whose marker holds for this Python) is installed as `name==X` into a
fresh virtual environment, torch from PyTorch's CPU-only index (`--torch-index pypi`: PyPI's build, on
Linux the CUDA one, 2.5 GB); the test tools come at their current
versions and `transformers` is left out (the tests that compare against it skip). Then it runs
`pytest -m "not slow"` there and exits with pytest's status. Needs the network (PyPI and
download.pytorch.org), about 600 MB of downloads and the packaging module (pip and setuptools carry it).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TEST_TOOLS = ["pytest>=8", "pytest-qt>=4.4", "hypothesis>=6.100", "pytest-timeout>=2.3", "pytest-xdist>=3.8"]


def lowest_pins(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """`name==lower bound` for every runtime requirement that applies to this interpreter."""
    dependencies = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    pins = []
    for text in dependencies:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        lower = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        if len(lower) != 1:
            raise SystemExit(f"{requirement.name}: no single lower bound (>=) to test in {text!r}")
        pins.append(f"{requirement.name}=={lower[0]}")
    return pins


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, help="where to make the environment (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the environment afterwards")
    parser.add_argument("--torch-index", default=TORCH_CPU_INDEX, help="where torch comes from (default: %(default)s)")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest after -m 'not slow'")
    args = parser.parse_args(argv)

    pins = lowest_pins()
    print("lowest versions:", " ".join(pins), flush=True)
    venv = args.venv or Path(tempfile.mkdtemp(prefix="lowest-versions-"))
    python = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        index = [] if args.torch_index == "pypi" else ["--extra-index-url", args.torch_index]
        subprocess.run([*pip, *index, *pins, *TEST_TOOLS], check=True)
        subprocess.run([*pip, "--no-deps", "-e", str(ROOT)], check=True)
        subprocess.run([str(python), "-m", "pip", "list", "--disable-pip-version-check"], check=True)
        return subprocess.run([str(python), "-m", "pytest", "-m", "not slow", "-p", "no:cacheprovider",
                               *args.pytest_args], cwd=ROOT).returncode
    finally:
        if not args.keep:
            shutil.rmtree(venv, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
