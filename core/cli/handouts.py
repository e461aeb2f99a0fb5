"""`export-html` and `lesson-answers`: a lesson or a view as one offline web page, and a class's answers summarised.

`export-html --lesson FILE --out PAGE.html` writes every step's title, text and figures with the reveal behind a
button and the step's prediction asked first; `export-html --panel NAME --out PAGE.html` one view at its default
inputs (or as a saved `--session` left it). The output path is checked before anything is computed.
`lesson-answers FILES... [--json]` reads the answers CSVs the pages download and prints, per step, how many
answered, how many were right and the most common wrong answers. Bad input is one line and exit 2.
"""

from __future__ import annotations

import argparse
import sys

from core.cli import CliError
from core.cli.common import print_json

MAX_FILES = 10_000  # answers files in one summary: a large lecture's worth


def register(subparsers: argparse._SubParsersAction) -> None:
    export = subparsers.add_parser(
        "export-html", help="a lesson or a view as one self-contained web page that opens offline",
        description="Write one HTML file holding a lesson's steps (title, text, figures, the reveal behind a button, "
        "the step's prediction asked first) or one view's figures, drawn with Vega-Lite inlined into the page. The "
        "page refers to nothing on the network and stays under 5 MB. Figures are computed by the same experiments "
        "the window's views run.")
    what = export.add_mutually_exclusive_group(required=True)
    what.add_argument("--lesson", metavar="FILE", help="a lesson file (.json), e.g. resources/lessons/02-rope.json")
    what.add_argument("--panel", metavar="NAME", help="a panel's title, e.g. Positions (at its default inputs)")
    export.add_argument("--session", metavar="FILE", help="with --panel: the view as this saved session left it")
    export.add_argument("--out", metavar="PAGE.html", required=True, help="the page to write (replaced whole)")
    export.set_defaults(run=run_export)
    answers = subparsers.add_parser(
        "lesson-answers", help="summarise a class's answers CSVs from exported lesson pages, per step",
        description="Read the answers CSVs that exported lesson pages download (one per student) and print, per "
        "lesson step, how many predicted, how many were right, how many skipped, and the most common wrong answers.")
    answers.add_argument("files", nargs="+", metavar="FILE", help="answers CSV files")
    answers.add_argument("--json", action="store_true", help="print the summary as JSON")
    answers.set_defaults(run=run_answers)


def run_export(args: argparse.Namespace) -> int:
    from core.handouts.page import PageError, write_page, write_problem

    problem = write_problem(args.out)
    if problem:
        raise CliError(f"--out: {problem}")
    if args.session and not args.panel:
        raise CliError("--session goes with --panel: a lesson sets its own state")
    try:
        html, what = _lesson_page(args.lesson) if args.lesson else _view_page(args.panel, args.session)
        path = write_page(args.out, html)
    except PageError as error:
        raise CliError(str(error)) from None
    print(f"wrote {path}: {what}, {len(html.encode('utf-8')):,} bytes, no network reference")
    return 0


def _lesson_page(name: str) -> tuple[str, str]:
    from core.handouts.collect import lesson_figures
    from core.handouts.page import lesson_page
    from core.lessons import lesson_problems, load_lesson

    problems = lesson_problems(name)
    if problems:
        raise CliError(f"--lesson: {problems[0]}" + (f" (and {len(problems) - 1} more; see check-lesson)"
                                                      if len(problems) > 1 else ""))
    lesson = load_lesson(name)
    return lesson_page(lesson, lesson_figures(lesson)), f"{len(lesson.steps)} step(s)"


def _view_page(panel: str, session: str | None) -> tuple[str, str]:
    from core.handouts.collect import EXPORTABLE_PANELS, default_view, view_figures
    from core.handouts.page import view_page
    from core.handouts.sessions import SessionFileError, session_view
    from core.lesson_runs import StepProblem

    if panel not in EXPORTABLE_PANELS:
        raise CliError(f"--panel: {panel[:60]!r} cannot be exported; use one of {', '.join(EXPORTABLE_PANELS)}")
    try:
        request = session_view(session, panel) if session else default_view(panel)
        figures = view_figures(request)
    except (SessionFileError, StepProblem) as error:
        raise CliError(str(error)) from None
    where = f"as {session} left it" if session else "at its default inputs"
    title = f"{panel}: {request.config.name}"
    return view_page(title, f"The {panel} view {where}, seed {request.seed}.", figures), f"the {panel} view"


def run_answers(args: argparse.Namespace) -> int:
    from core.handouts.answers import AnswersError, read_answers, summarise, summary_lines

    if len(args.files) > MAX_FILES:
        raise CliError(f"at most {MAX_FILES:,} files at once, not {len(args.files):,}")
    rows = []
    try:
        for name in args.files:
            rows += read_answers(name)
    except AnswersError as error:
        raise CliError(str(error)) from None
    summaries = summarise(rows)
    if args.json:
        print_json({"files": len(args.files), "steps": [item.to_json() for item in summaries]})
    else:
        print("\n".join(summary_lines(summaries, len(args.files))))
    return 0
