"""One PyInstaller build of the standalone bundle, started when the tests that use it are collected.

The build is mostly single-threaded (module analysis, file copies) and the rest of the suite runs torch
on one thread, so on a 2-core machine the two overlap almost fully: the tests that need the bundle run
last and find it built. The build runs at a lower priority so that GUI tests measuring the event loop
see the same machine they would without it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bundle.spec_support import APP_ID

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 1500
FIXTURE = "bundle_dir"
NICENESS = 10


class BackgroundBuild:
    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="frozen-"))
        self.log = self.folder / "build.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(ROOT / "bundle" / "build.py"), "--dist", str(self.folder / "dist"),
                 "--work", str(self.folder / "work"), "--no-archive"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT,
                start_new_session=True,
            )
        if hasattr(os, "setpriority"):  # the build's own subprocesses start later and inherit it
            os.setpriority(os.PRIO_PROCESS, self.process.pid, NICENESS)

    def bundle(self) -> Path:
        """The built bundle's folder, waiting for the build; a failed build fails the test with its log."""
        try:
            returncode = self.process.wait(timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"the bundle build took over {BUILD_TIMEOUT_S} s")
        if returncode != 0:
            pytest.fail(f"the bundle build exited {returncode}:\n" + self.log.read_text(errors="replace")[-6000:])
        shutil.rmtree(self.folder / "work", ignore_errors=True)
        return self.folder / "dist" / APP_ID

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


BUILD_KEY = pytest.StashKey[BackgroundBuild]()


def uses_bundle(item: pytest.Item) -> bool:
    return FIXTURE in getattr(item, "fixturenames", ())


def start_for(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start the build if a selected test needs it, and run those tests last."""
    needing = [item for item in items if uses_bundle(item)]
    if not needing or config.option.collectonly:
        return
    items[:] = [item for item in items if not uses_bundle(item)] + needing
    config.stash[BUILD_KEY] = BackgroundBuild()


def stop_for(config: pytest.Config) -> None:
    build = config.stash.get(BUILD_KEY, None)
    if build is not None:
        build.stop()


def bundle_of(config: pytest.Config) -> Path:
    build = config.stash.get(BUILD_KEY, None)
    if build is None:  # the fixture was requested without collection seeing it (pytest --fixtures-per-test, plugins)
        build = config.stash[BUILD_KEY] = BackgroundBuild()
    return build.bundle()
