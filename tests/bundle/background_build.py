"""One PyInstaller build of the standalone bundle, started when the tests that use it are collected.

The build is mostly single-threaded (module analysis, file copies) and the rest of the suite runs torch
on one thread per process, so the two overlap: the tests that need the bundle run last and find it built.
The build runs at a lower priority so that GUI tests measuring the event loop keep most of their CPU.

Under pytest-xdist the workers collect the same tests and the first to claim the build folder starts the
build; whichever worker runs the bundle's tests waits for it. The folder belongs to the controller, which
hands it to the workers and removes it (stopping the build if it still runs) when the session ends: a
worker that runs out of tests is shut down while another may still wait for the build.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from bundle.spec_support import APP_ID

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 1500
FIXTURE = "bundle_dir"
NICENESS = 5
WORKER_INPUT = "bundle_build_folder"
POLL_S = 0.5

# Runs the build and writes its exit status whole (rename) when it ends, so that any process can wait for it. Where
# it can, it forks and runs on in the child, so that the process that started it (perhaps a worker that ends first)
# reaps it at once and holds no running child; the child leads its own process group, which stop() ends.
_RUNNER = """
import os, subprocess, sys
nice, status, pid = sys.argv[1:4]
if hasattr(os, "fork") and os.fork():
    os._exit(0)
if hasattr(os, "setsid"):
    os.setsid()
with open(pid + ".part", "w") as file:
    file.write(str(os.getpid()))
os.replace(pid + ".part", pid)
if hasattr(os, "nice"):
    os.nice(int(nice))
code = subprocess.call(sys.argv[4:])
with open(status + ".part", "w") as file:
    file.write(str(code))
os.replace(status + ".part", status)
"""
_STARTED: list[subprocess.Popen] = []  # where the runner cannot fork, it stays this process's child until its end


class BackgroundBuild:
    """The build in `folder`: its log, the runner's process id and, once it ended, its exit status."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.log = folder / "build.log"
        self.status = folder / "returncode"
        self.pid = folder / "pid"

    def claim(self) -> bool:
        """True for the one process that gets to start the build in this folder."""
        try:
            os.close(os.open(self.folder / "claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return False
        return True

    def start(self) -> None:
        with self.log.open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-c", _RUNNER, str(NICENESS), str(self.status), str(self.pid),
                 sys.executable, str(ROOT / "bundle" / "build.py"), "--dist", str(self.folder / "dist"),
                 "--work", str(self.folder / "work"), "--no-archive"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT,
            )
        if hasattr(os, "fork"):
            process.wait()  # the forked runner goes on
        else:
            _STARTED.append(process)

    def bundle(self) -> Path:
        """The built bundle's folder, waiting for the build; a failed build fails the test with its log."""
        deadline = time.monotonic() + BUILD_TIMEOUT_S
        while not self.status.exists():
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"the bundle build took over {BUILD_TIMEOUT_S} s")
            if self._died():
                pytest.fail("the bundle build was stopped:\n" + self.log.read_text(errors="replace")[-6000:])
            time.sleep(POLL_S)  # the build runs in another process group, perhaps started by another worker
        returncode = int(self.status.read_text())
        if returncode != 0:
            pytest.fail(f"the bundle build exited {returncode}:\n" + self.log.read_text(errors="replace")[-6000:])
        shutil.rmtree(self.folder / "work", ignore_errors=True)
        return self.folder / "dist" / APP_ID

    def _died(self) -> bool:
        """The runner is gone without writing a status (killed from outside)."""
        if self.status.exists() or not self.pid.exists():  # ended, or its starter has not written the id yet
            return False
        try:
            os.kill(int(self.pid.read_text()), 0)
        except ProcessLookupError:
            return not self.status.exists()  # it may have written its status since the first look
        except OSError:  # not ours to signal: it runs
            pass
        return False

    def stop(self) -> None:
        """Stop the build if it still runs (the runner leads its own process group)."""
        if self.pid.exists() and not self.status.exists():
            try:
                os.killpg(int(self.pid.read_text()), signal.SIGKILL)
            except (ProcessLookupError, PermissionError, AttributeError):  # ended meanwhile; no killpg (Windows)
                pass


FOLDER_KEY = pytest.StashKey[Path]()


def _build(config: pytest.Config) -> BackgroundBuild:
    """This session's build folder: the controller's under xdist, else this process's own, made on first use."""
    shared = getattr(config, "workerinput", {}).get(WORKER_INPUT)
    if shared is not None:
        return BackgroundBuild(Path(shared))
    if FOLDER_KEY not in config.stash:
        config.stash[FOLDER_KEY] = Path(tempfile.mkdtemp(prefix="frozen-"))
    return BackgroundBuild(config.stash[FOLDER_KEY])


def uses_bundle(item: pytest.Item) -> bool:
    return FIXTURE in getattr(item, "fixturenames", ())


def start_for(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start the build if a selected test needs it, and run those tests last."""
    needing = [item for item in items if uses_bundle(item)]
    if not needing or config.option.collectonly:
        return
    items[:] = [item for item in items if not uses_bundle(item)] + needing
    build = _build(config)
    if build.claim():
        build.start()


def hand_to_worker(config: pytest.Config, worker_input: dict) -> None:
    """Under xdist, on the controller: every worker gets the one build folder."""
    worker_input[WORKER_INPUT] = str(_build(config).folder)


def stop_for(config: pytest.Config) -> None:
    """At the end of the session, in the process that owns the folder: stop the build and remove the folder."""
    if FOLDER_KEY in config.stash:
        build = _build(config)
        build.stop()
        shutil.rmtree(build.folder, ignore_errors=True)


def bundle_of(config: pytest.Config) -> Path:
    build = _build(config)
    if build.claim():  # the fixture was requested without collection seeing it (pytest --fixtures-per-test, plugins)
        build.start()
    return build.bundle()
