"""Every bundled lesson on a real X server, at a laptop's size and a projector's: screenshots and a fit check.

    python tools/lesson_screens.py [--out /tmp/lesson_shots] [--lesson NAME ...] [--size light-1366x768 ...]
                                   [--mode window|presentation ...] [--revealed] [--page-down] [--display N]

For each screen (1920x1080 in the projector theme at text 160%, 1366x768 in the light theme at 100%) an Xvfb
of that size is started, and each lesson is opened as an instructor would, `python main.py --lesson NAME
--theme T --font-scale S [--presentation]`, with a fresh settings folder. Each step is paged to with Next,
left to settle (its model built, its panels computed, its outline drawn) and the screen is saved as
`<lesson>-step<N>-<W>x<H>[-presentation][-revealed].png`. At each step the window, its minimum size and the
lesson's Next button must lie within the screen, nothing may be dropped, cut or squashed (gui.legibility), and at
projector scale no text or control may be under the legibility rule's sizes.
With --page-down the lesson is driven by the Page Down key alone, as a presentation clicker sends it: each
press must reveal a step's answer first (saved as -revealed) and only then go on to the next step.
A line per step is printed, the lot is written to report.json, and the exit status is 1 if any check failed.
Needs Xvfb (apt-get install xvfb).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCREENS = {  # name -> (width, height, theme, font scale)
    "projector-1920x1080": (1920, 1080, "projector", 1.6),
    "light-1366x768": (1366, 768, "light", 1.0),
}
MODES = ("window", "presentation")
SETTLE_MS = 900  # after a step is in place and the worker is idle: the outline's delay, a repaint
STEP_TIMEOUT_S = 120.0


# ---- the driver: runs inside the app's own process ------------------------------------------------

def drive(lesson: str, screen: str, presentation: bool, out: Path, revealed: bool, page_down: bool = False) -> int:
    """Start the app as `main.py --lesson` does and page through the lesson from inside its event loop."""
    sys.path.insert(0, str(ROOT))
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from gui import APP_ID

    width, height, theme_name, scale = SCREENS[screen]
    app = QApplication([APP_ID, "-style", "Fusion"])  # as gui.app makes it
    results: list[dict] = []
    steps = _Steps(app, lesson, f"{width}x{height}", presentation, out, revealed or page_down, results, page_down)
    timer = QTimer()
    timer.setInterval(50)
    timer.timeout.connect(steps.poll)
    timer.start()
    from transformer_explorer.launcher import main as launch

    argv = ["--lesson", lesson, "--theme", theme_name, "--font-scale", str(scale)]
    code = launch(argv + (["--presentation"] if presentation else []))
    for result in results:
        print("SHOT " + json.dumps(result), flush=True)
    if steps.failure:
        print(f"DRIVER {steps.failure}", flush=True)
        return 1
    return code


class _Steps:
    """A small state machine polled by a timer: wait for a step to settle, check and save it, go on."""

    def __init__(self, app, lesson, size, presentation, out, revealed, results, page_down: bool = False) -> None:
        self.app, self.lesson_name, self.size, self.presentation = app, lesson, size, presentation
        self.page_down = page_down
        self.out, self.revealed_too, self.results = out, revealed, results
        self.window = None
        self.index = -1
        self.phase = "start"
        self.since = time.monotonic()
        self.idle_since: float | None = None
        self.failure = ""

    def poll(self) -> None:
        from gui.main_window import MainWindow

        if self.window is None:
            self.window = next((w for w in self.app.topLevelWidgets() if isinstance(w, MainWindow)), None)
            return
        controller = self.window.lessons
        if time.monotonic() - self.since > STEP_TIMEOUT_S:
            self.failure = f"step {self.index + 1} did not settle in {STEP_TIMEOUT_S:.0f} s (phase {self.phase})"
            self.app.quit()
            return
        if controller.lesson is None or controller.presentation != self.presentation:
            return
        if self.phase == "start":
            self.index = controller.index
            self.phase = "settle"
            self.since = time.monotonic()
        if not self._settled(controller):
            return
        if self.phase == "settle":
            self._shoot(controller, revealed=False)
            step = controller.lesson.steps[self.index]
            if self.revealed_too and step.reveal:
                if self.page_down:
                    if controller.dock.prediction.pending:
                        self._press_page_down()  # a clicker's first press skips the step's prediction
                    self._press_page_down()  # and the next reveals the answer
                else:
                    controller.dock.prediction.skip()
                    controller.dock.reveal()
                self.phase = "revealed"
                self.idle_since = None
                return
        elif self.phase == "revealed":
            if not controller.dock.revealed or controller.index != self.index:
                self.failure = f"step {self.index + 1}: Page Down did not reveal the answer in place"
                self.app.quit()
                return
            self._shoot(controller, revealed=True)
        if self.index >= len(controller.lesson.steps) - 1:
            self.app.quit()
            return
        if self.page_down:
            self._press_page_down()  # the next press goes on
        else:
            controller.dock.next_button.click()  # Next, as the instructor pages
        self.index += 1
        self.phase = "settle"
        self.idle_since = None
        self.since = time.monotonic()

    def _press_page_down(self) -> None:
        """Page Down to whatever has the keyboard, through the application as a real key press travels."""
        from PySide6.QtCore import QEvent, Qt
        from PySide6.QtGui import QKeyEvent

        target = self.app.focusWidget() or self.window
        for kind in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease):
            self.app.sendEvent(target, QKeyEvent(kind, Qt.Key.Key_PageDown, Qt.KeyboardModifier.NoModifier))

    def _settled(self, controller) -> bool:
        window = self.window
        busy = window.compute.busy or controller._waiting_for_model or controller.index != self.index
        if busy or not window.panels:
            self.idle_since = None
            return False
        if self.idle_since is None:
            self.idle_since = time.monotonic()
        return time.monotonic() - self.idle_since >= SETTLE_MS / 1000

    def _shoot(self, controller, revealed: bool) -> None:
        from gui import theme
        from gui.legibility import legibility_problems

        window = self.window
        screen = window.screen()
        area, whole = screen.availableGeometry(), screen.geometry()
        frame = window.frameGeometry()
        minimum = window.minimumSizeHint().expandedTo(window.minimumSize())
        next_button = controller.dock.next_button
        next_rect = next_button.rect().translated(next_button.mapToGlobal(next_button.rect().topLeft()))
        problems = []
        if not whole.contains(frame):
            problems.append(f"window {_rect(frame)} leaves the screen {_rect(whole)}")
        if minimum.width() > area.width() or minimum.height() > area.height():
            problems.append(f"minimum size {minimum.width()}x{minimum.height()} exceeds the free area {area.width()}x{area.height()}")
        if not next_button.isVisible() or not whole.contains(next_rect):
            problems.append(f"Next is not on screen ({_rect(next_rect)})")
        # Text and control sizes are the projector's rule; nothing dropped, cut or squashed holds on every screen.
        projector = theme.current().name == "projector"
        problems += [str(problem) for problem in legibility_problems(window) if projector or problem.kind == "dropped"]
        suffix = ("-presentation" if self.presentation else "") + ("-revealed" if revealed else "")
        stem = Path(controller.lesson.path).stem if getattr(controller.lesson, "path", None) else self.lesson_name
        path = self.out / f"{stem}-step{self.index + 1}-{self.size}{suffix}.png"
        screen.grabWindow(0).save(str(path), "PNG")
        self.results.append({
            "shot": path.name, "lesson": stem, "step": self.index + 1, "size": self.size,
            "presentation": self.presentation, "revealed": revealed, "window": _rect(frame),
            "minimum": f"{minimum.width()}x{minimum.height()}", "problems": problems,
        })


def _rect(rect) -> str:
    return f"{rect.width()}x{rect.height()}+{rect.x()}+{rect.y()}"


# ---- the conductor: one Xvfb per screen, one app per lesson and view ---------------------------------

def start_xvfb(width: int, height: int, number: int | None = None) -> tuple[subprocess.Popen, str]:
    """An Xvfb of that size: on display `number`, else on the first free one (Xvfb picks it and says which)."""
    read, write = os.pipe()
    where = [f":{number}"] if number is not None else []
    server = subprocess.Popen(["Xvfb", *where, "-displayfd", str(write), "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp"],
                              pass_fds=(write,), stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as pipe:
        number = pipe.readline().strip()
    if not number:
        server.kill()
        raise RuntimeError("Xvfb did not start")
    return server, f":{number}"


def lesson_names() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from core.lessons import bundled_lesson_paths

    return [path.stem for path in bundled_lesson_paths()]


def conduct(args) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # a stopped run still stops its Xvfb
    if shutil.which("Xvfb") is None:
        print("lesson_screens: Xvfb is not installed (apt-get install xvfb)", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lessons = args.lesson or lesson_names()
    everything: list[dict] = []
    failed = False
    for screen in args.size or list(SCREENS):
        width, height, _theme, _scale = SCREENS[screen]
        server, display = start_xvfb(width, height, args.display)
        try:
            for lesson in lessons:
                for mode in args.mode or MODES:
                    with tempfile.TemporaryDirectory(prefix="lesson-screens-") as home:
                        env = dict(os.environ, DISPLAY=display, QT_QPA_PLATFORM="xcb", HOME=home,
                                   XDG_CONFIG_HOME=str(Path(home) / "config"))
                        command = [sys.executable, __file__, "--drive", lesson, "--screen", screen, "--out", str(out)]
                        command += (["--presentation"] if mode == "presentation" else []) + (["--revealed"] if args.revealed else [])
                        command += ["--page-down"] if args.page_down else []
                        run = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True,
                                             timeout=STEP_TIMEOUT_S * 20)
                    shots = [json.loads(line[5:]) for line in run.stdout.splitlines() if line.startswith("SHOT ")]
                    trouble = [line for line in run.stdout.splitlines() if line.startswith("DRIVER ")]
                    if run.returncode != 0 or trouble or not shots:
                        failed = True
                        tail = "\n".join((trouble or run.stderr.strip().splitlines()[-5:]))
                        print(f"FAIL {lesson} {screen} {mode}: exit {run.returncode}\n{tail}")
                    for shot in shots:
                        everything.append(shot)
                        failed |= bool(shot["problems"])
                        verdict = "ok" if not shot["problems"] else "; ".join(shot["problems"])
                        print(f"{shot['shot']}: window {shot['window']}, minimum {shot['minimum']}: {verdict}", flush=True)
        finally:
            server.terminate()
            server.wait(10)
    (out / "report.json").write_text(json.dumps(everything, indent=1), encoding="utf-8")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="/tmp/lesson_shots", help="folder for the PNGs and report.json")
    parser.add_argument("--lesson", action="append", help="a bundled lesson's name (repeatable; default: all)")
    parser.add_argument("--size", action="append", choices=list(SCREENS), help="a screen (repeatable; default: both)")
    parser.add_argument("--mode", action="append", choices=MODES, help="window or presentation (default: both)")
    parser.add_argument("--revealed", action="store_true", help="also save each step after Reveal")
    parser.add_argument("--page-down", action="store_true", help="drive the lesson with the Page Down key alone")
    parser.add_argument("--display", type=int, help="the X display number to start Xvfb on (default: the first free one)")
    parser.add_argument("--drive", metavar="LESSON", help=argparse.SUPPRESS)
    parser.add_argument("--screen", choices=list(SCREENS), help=argparse.SUPPRESS)
    parser.add_argument("--presentation", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drive:
        return drive(args.drive, args.screen, args.presentation, Path(args.out), args.revealed, args.page_down)
    return conduct(args)


if __name__ == "__main__":
    sys.exit(main())
