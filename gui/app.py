"""Start the desktop app: the window is on screen first, then torch loads behind it on the worker.

    python main.py [gui] [--device NAME] [--kernels auto|default|onednn] [--precision fp32|bf16|fp16]
                         [--session FILE] [--theme NAME] [--font-scale X] [--size WxH]
                         [--lesson NAME|FILE [--step N] [--presentation]] [--self-test] [--screenshot FILE]
                         [--panel TITLE[/TAB]]

Importing this module (and everything the window needs) does not import torch; the compute worker
imports it as its first job, and the panels fill in when it is ready.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

STARTED_AT = time.time()
TIMING_ENV = "TRANSFORMER_EXPLORER_TIMING"


class _OneLineParser(argparse.ArgumentParser):
    """A mistaken option is one line that names it and what to give, as in the subcommands; no usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message[:300]} (see {self.prog} --help)\n")


def window_options_parser(add_help: bool = True) -> argparse.ArgumentParser:
    """The window's options, in a group of their own so that the root --help can list them as a parent."""
    from core.cli.bounds import real_number, whole_number
    from core.limits import MAX_LESSON_STEPS

    parser = _OneLineParser(prog="transformer-explorer gui", description="Open the Transformer Explorer window.",
                            add_help=add_help)
    window = parser.add_argument_group("window options (no subcommand, or `gui`, opens the desktop app)")
    window.add_argument("--device", metavar="NAME", help="cpu, cuda, cuda:N or mps (default: the best present)")
    from core.kernel_cache import KERNEL_OPTIONS, PRECISIONS

    window.add_argument("--kernels", choices=KERNEL_OPTIONS,
                        help="the linear layers' CPU path: auto (measured once per machine, the default), default (BLAS) or onednn")
    window.add_argument("--precision", choices=PRECISIONS,
                        help="the linear layers' precision: fp32 (the default), bf16 (a CPU with native bf16, or CUDA) or "
                        "fp16 (CUDA); shown in the status bar, every value then differs from fp32")
    window.add_argument("--session", metavar="FILE", help="open a saved session")
    window.add_argument("--theme", choices=("light", "dark", "projector"), help="colour theme for this run")
    window.add_argument("--font-scale", type=float, metavar="X", help="text and plot scale for this run, e.g. 1.5")
    window.add_argument("--self-test", action="store_true",
                        help="open the window, wait for torch and the model, run every panel once, exit 0 if all worked")
    window.add_argument("--screenshot", metavar="FILE", help="once every panel has shown a result, save the window as PNG and exit")
    window.add_argument("--size", metavar="WxH", help="window size in pixels for this run, e.g. 1920x1080")
    window.add_argument("--panel", metavar="TITLE[/TAB]",
                        help="open on this panel, and on one of its sub-tabs after a slash (e.g. Families/Router); "
                        "with --screenshot, the panel the PNG shows")
    window.add_argument("--lesson", metavar="NAME|FILE",
                        help="open straight into a lesson: a bundled one by name (e.g. causal-mask) or a lesson file")
    window.add_argument("--step", type=whole_number(1, MAX_LESSON_STEPS), metavar="N",
                        help="with --lesson: start at step N (counted from 1)")
    window.add_argument("--presentation", action="store_true", help="with --lesson: start in presentation view")
    window.add_argument("--timeout", type=real_number(1.0, 3600.0), default=180.0, help=argparse.SUPPRESS)
    return parser


# Options of the window, so that `transformer-explorer --theme projector` opens it without `gui`.
GUI_OPTIONS = frozenset(
    option for action in window_options_parser()._actions for option in action.option_strings if option not in ("-h", "--help")
)


def _timing(event: str) -> None:
    if os.environ.get(TIMING_ENV):
        print(f"timing {event} {time.time():.6f}", file=sys.stderr, flush=True)


def application_icon():
    """The window icon from the rendered PNG sizes (no image plugin needed), with the SVG for any other size."""
    from PySide6.QtGui import QIcon

    from resources import resource_path

    icon = QIcon()
    for png in sorted(resource_path("icons", "hicolor").glob("*/apps/*.png")):
        icon.addFile(str(png))
    svg = resource_path("icons", "transformer-explorer.svg")
    if svg.exists():
        icon.addFile(str(svg))
    return icon


def name_application(app) -> None:
    """The names Qt files things under: the settings file is <config>/transformer-explorer/transformer-explorer.conf
    (no space, no capitals), and Wayland docks match the installed .desktop file by the desktop file name."""
    from PySide6.QtCore import QSettings

    from gui import APP_ID, APP_NAME, APP_ORGANIZATION, APP_VERSION

    app.setOrganizationName(APP_ORGANIZATION)
    app.setApplicationVersion(APP_VERSION)
    app.setDesktopFileName(APP_ID)
    # The application name, not a display name: Qt would append a display name to every window title,
    # and the titles already name the app (APP_NAME). Earlier versions filed settings under APP_NAME.
    app.setApplicationName(APP_NAME)
    earlier = QSettings().fileName()
    app.setApplicationName(APP_ID)
    _keep_earlier_settings(Path(earlier), Path(QSettings().fileName()))


def _keep_earlier_settings(earlier: Path, current: Path) -> None:
    """Settings saved under the app's display name ("Transformer Explorer.conf") move to the current file once."""
    if earlier == current or not earlier.is_file() or current.exists():
        return
    try:
        current.parent.mkdir(parents=True, exist_ok=True)
        earlier.rename(current)
    except OSError:
        pass  # unreadable or read-only: the app starts with default preferences, as on a first run


def main(argv: list[str] | None = None) -> int:
    args = window_options_parser().parse_args(sys.argv[1:] if argv is None else argv)
    from core.limits import DEVICE_NAME, DEVICE_NAMES_HINT, MAX_WINDOW_SIDE

    size = None
    if args.size:
        try:
            size = tuple(int(n) for n in args.size.lower().split("x") if len(n) <= 6)
            if len(size) != 2 or min(size) < 100 or max(size) > MAX_WINDOW_SIDE:
                raise ValueError
        except ValueError:
            print(f"--size expects WIDTHxHEIGHT from 100x100 to {MAX_WINDOW_SIDE}x{MAX_WINDOW_SIDE}, e.g. 1920x1080 "
                  f"(got {args.size[:40]!r})", file=sys.stderr)  # fmt: skip
            return 2
    if args.device is not None and not DEVICE_NAME.fullmatch(args.device):
        print(f"--device expects {DEVICE_NAMES_HINT} (got {args.device[:40]!r})", file=sys.stderr)
        return 2
    device_env = os.environ.get("TRANSFORMER_EXPLORER_DEVICE")
    if args.device is None and device_env and not DEVICE_NAME.fullmatch(device_env):
        print(f"TRANSFORMER_EXPLORER_DEVICE expects {DEVICE_NAMES_HINT} (got {device_env[:40]!r})", file=sys.stderr)
        return 2
    from core.kernel_cache import KERNEL_OPTIONS, KERNELS_ENV

    kernels_env = os.environ.get(KERNELS_ENV)
    if args.kernels is None and kernels_env and kernels_env.strip().lower() not in KERNEL_OPTIONS:
        print(f"{KERNELS_ENV} expects {', '.join(KERNEL_OPTIONS)} (got {kernels_env[:40]!r})", file=sys.stderr)
        return 2
    from core.lessons import FONT_SCALE_RANGE

    if args.font_scale is not None and not FONT_SCALE_RANGE[0] <= args.font_scale <= FONT_SCALE_RANGE[1]:
        print(f"--font-scale expects a number from {FONT_SCALE_RANGE[0]} to {FONT_SCALE_RANGE[1]} (got {args.font_scale})",
              file=sys.stderr)
        return 2
    session = None
    if args.session is not None:
        from gui.session import SessionError, read_session

        try:
            session = read_session(args.session)
        except SessionError as error:  # refused here, with exit code 2, not in a box
            print(f"transformer-explorer: --session: {error}", file=sys.stderr)
            return 2
    problem = _file_option_problem(args) or _panel_option_problem(args)
    if problem:
        print(f"transformer-explorer: {problem}", file=sys.stderr)
        return 2
    lesson = None
    if args.lesson is not None or args.step is not None or args.presentation:
        from gui.lesson_launch import LaunchError, lesson_to_launch

        try:
            lesson = lesson_to_launch(args.lesson, args.step, args.presentation)
        except LaunchError as error:
            print(f"transformer-explorer: {error}", file=sys.stderr)
            return 2
    headless = args.self_test or args.screenshot
    if args.self_test:
        # The diagnostic must work exactly where the display does not, so it never uses one.
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    elif headless and not os.environ.get("QT_QPA_PLATFORM") and not os.environ.get("DISPLAY") and sys.platform.startswith("linux"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"

    from PySide6.QtCore import QCoreApplication, QEvent, QTimer

    if not headless and QCoreApplication.instance() is None:
        from gui.display_check import display_problem

        problem = display_problem()
        if problem:
            print(f"transformer-explorer: {problem}", file=sys.stderr)
            return 2
    from PySide6.QtWidgets import QApplication

    from gui import APP_ID

    _timing("qt_imported")
    # Fusion draws the same on every platform, so the light, dark and projector palettes look as designed.
    # The program name Qt is given becomes the X11 WM_CLASS instance, which docks match to the .desktop
    # file's StartupWMClass: it must be the app's id, not "main.py" or "python3".
    app = QApplication.instance() or QApplication([APP_ID, "-style", "Fusion"])
    name_application(app)
    app.setWindowIcon(application_icon())

    from gui.compute import leave_if_worker_unfinished
    from gui.errors import ErrorReporter, setup_logging
    from gui.main_window import MainWindow

    setup_logging()
    _timing("app_imported")
    window = MainWindow(requested_device=args.device, requested_kernels=args.kernels, requested_precision=args.precision)
    # However the event loop ends, the worker thread is stopped before Qt tears down.
    app.aboutToQuit.connect(window.compute.shutdown)
    reporter = ErrorReporter(window)
    reporter.install()
    window.set_look_for_this_run(args.theme, args.font_scale)
    _timing("window_built")
    if size is not None:
        window.resize_for_this_run(*size)
    window.show()
    app.processEvents()  # the first paint: the window is on screen from here on
    _timing("window_shown")
    window.torch_loaded.connect(lambda: _timing("torch_ready"))
    window.model_loaded.connect(lambda: _timing("model_ready"))
    QTimer.singleShot(0, window.start_loading)
    if args.panel is not None and not headless:
        QTimer.singleShot(0, lambda: _report_panel_problem(show_panel_option(window, args.panel)))
    if session is not None:
        # Applied once torch is ready so that its device choice can be checked against the machine; it was
        # read before the window opened, so nothing is read on the GUI thread and the lesson comes after it.
        window.torch_loaded.connect(lambda: window.apply_opened_session(args.session, session))
    if lesson is not None:
        # After the session: the lesson's first step sets up the lab from there.
        window.torch_loaded.connect(lambda: lesson.start_in(window))

    if headless:
        window.remember_preferences = False  # a scripted run must not change the user's saved look
    elif lesson is None:
        from gui.start_page import show_on_first_launch

        show_on_first_launch(window)  # a newcomer's first window says where to start
    try:
        if headless:
            code = _run_headless(app, window, args, reporter)
        else:
            code = app.exec()
    finally:
        reporter.uninstall()
        if headless:
            window.close()
    leave_if_worker_unfinished(window.compute, code)
    # The widgets go while Python is whole: left to interpreter shutdown, a plot's layout can still call
    # back into a Python override whose module is already gone, and the process crashes on its way out.
    window.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    return code


def _file_option_problem(args) -> str:
    """Why --screenshot cannot work, checked before the window opens ("" when it can)."""
    if args.screenshot is not None:
        path = Path(args.screenshot)
        folder = path.parent
        if not args.screenshot.strip() or path.is_dir():
            return f"--screenshot expects the name of a PNG file to write (got {args.screenshot[:80]!r})"
        if path.exists() and not path.is_file():
            return f"--screenshot: {path} is not a regular file (a device, pipe or socket)"
        if not folder.is_dir():
            return f"--screenshot: the folder {folder} does not exist"
        if not os.access(folder, os.W_OK):
            return f"--screenshot: there is no permission to write in {folder}"
    return ""


def _panel_option_problem(args) -> str:
    """Why --panel names no panel, checked before the window opens ("" when it names one); sub-tabs exist once it has."""
    if args.panel is None:
        return ""
    from gui.panels import PANEL_CLASSES

    titles = [panel.title for panel in PANEL_CLASSES]
    title = args.panel.partition("/")[0]
    if title not in titles:
        return f"--panel: there is no panel {title[:80]!r}; the panels are {', '.join(titles)}"
    return ""


def show_panel_option(window, spec: str) -> str:
    """Bring the panel `TITLE` or `TITLE/TAB` of --panel to the front; why not, or ""."""
    from PySide6.QtWidgets import QTabWidget

    title, _, tab = spec.partition("/")
    if not window.show_panel(title):
        return f"--panel: there is no panel {title[:80]!r}"
    if not tab:
        return ""
    tab_sets = window.panel(title).findChildren(QTabWidget)
    for tabs in tab_sets:
        for index in range(tabs.count()):
            if tabs.tabText(index).replace("&", "") == tab:
                tabs.setCurrentIndex(index)
                return ""
    names = [tabs.tabText(index) for tabs in tab_sets for index in range(tabs.count())]
    return f"--panel: {title} has no sub-tab {tab[:80]!r}; its sub-tabs are {', '.join(names) or 'none'}"


def _report_panel_problem(problem: str) -> None:
    if problem:
        print(f"transformer-explorer: {problem}", file=sys.stderr)


def _run_headless(app, window, args, reporter) -> int:
    """Drive the real window to completion: every panel must show a result without an error."""
    deadline = time.monotonic() + args.timeout
    shown: set[str] = set()
    failures: dict[str, str] = {}

    def wait_until(condition) -> bool:
        while not condition():
            if time.monotonic() > deadline:
                return False
            app.processEvents()
            time.sleep(0.005)
        return True

    model_problem: list[str] = []
    lesson_ended: list[str] = []
    window.lessons.lesson_open_ended.connect(lesson_ended.append)
    window.compute.error.connect(lambda message: model_problem.append(message) if message.startswith(("building", "loading")) else None)
    window.torch_failed.connect(lambda message: model_problem.append(f"torch could not be loaded: {message}"))
    # A --lesson is read off the GUI thread once torch is ready: the panels are run in the state it sets.
    if not wait_until(lambda: (window.loaded is not None and window.panels and not window.file_reader.busy()) or model_problem):
        print("self-test: torch and the model did not load in time", file=sys.stderr)
        return 1
    if model_problem:
        print(f"self-test: {model_problem[0]}", file=sys.stderr)
        return 1
    # A lesson's screenshot is of its step's panel: the others may rightly refuse the step's model.
    checked = window.panels if args.lesson is None or args.self_test else []
    refusals: dict[str, str] = {}

    def on_error(panel, message: str) -> None:
        # A refusal in words (an encoder has no next token to sample) is the panel working as it should.
        failed = panel.last_error == message or any(view.last_error == message for view in panel.views)
        (failures if failed else refusals)[panel.title] = message
        if not failed:
            shown.add(panel.title)

    for panel in checked:
        panel.result_shown.connect(lambda p=panel: shown.add(p.title))
        panel.error_shown.connect(lambda message, p=panel: on_error(p, message))
    for panel in checked:
        window.tabs.setCurrentWidget(panel)
        panel.refresh()
        if not wait_until(lambda p=panel: p.title in shown or p.title in failures or _shows_current_results(p)):
            failures.setdefault(panel.title, "no result in time")
    wait_until(lambda: not window.compute.busy)
    if args.lesson is not None and not wait_until(lambda: lesson_ended):
        failures.setdefault("lesson", "the lesson did not open in time")
    elif args.lesson is not None and lesson_ended[0]:
        print(f"transformer-explorer: --lesson: {lesson_ended[0]}", file=sys.stderr)
        return 2
    if args.screenshot and args.lesson is not None and not lesson_ended[0]:
        from gui.lesson_launch import settle_step

        problem = settle_step(window, wait_until)
        if problem:  # a screenshot of a step that is not as written would pass for the lesson
            print(f"transformer-explorer: --lesson: {problem}", file=sys.stderr)
            window.close()
            return 2
    elif args.screenshot and args.panel is not None:
        problem = show_panel_option(window, args.panel)
        if problem:
            failures["--panel"] = problem
        panel = window.current_panel()
        wait_until(lambda: not window.compute.busy and (not getattr(panel, "views", None) or _shows_current_results(panel)))
    elif args.screenshot:
        window.tabs.setCurrentIndex(0)
    if args.screenshot:
        app.processEvents()
        if not window.grab().save(args.screenshot, "PNG"):
            print(f"could not write {args.screenshot}", file=sys.stderr)
            return 1
    window.close()
    failures.update(_installation_problems(app))
    for summary in reporter.summaries:
        failures.setdefault(f"uncaught error {len(failures) + 1}", summary)
    if failures:
        for title, message in failures.items():
            print(f"self-test: {title}: {message}", file=sys.stderr)
        return 1
    if args.self_test:
        for title, message in refusals.items():
            print(f"self-test: {title} refused, in words: {message}")
        print(f"self-test passed: torch {window.runtime.torch_version if window.runtime else '?'} on {window.state.device}, "
              f"{len(window.panels)} panel(s) computed")
    return 0


def _shows_current_results(panel) -> bool:
    """A panel of views whose views on screen already show the results of the current inputs (or offer a model).

    Such a panel computed before the self-test asked (the first tab, at start-up), and computes
    nothing again for the same inputs.
    """
    on_screen = [view for view in panel.views if view.isVisible()]
    # A view that offers the model of its family (the lab holds another) shows what it is meant to show.
    return bool(on_screen) and all((view.result is not None and not view.is_stale) or view.offering_model
                                   for view in on_screen)


def _installation_problems(app) -> dict[str, str]:
    """What a packaged copy can lose without any panel failing: the window icon and the sidebar's help."""
    from core.config import config_field_docs

    problems = {}
    if app.windowIcon().isNull():
        problems["window icon"] = "no icon file could be read from resources/icons"
    if not config_field_docs():
        problems["sidebar help"] = "the field descriptions could not be read (core/config.py source is missing)"
    return problems


if __name__ == "__main__":
    sys.exit(main())
