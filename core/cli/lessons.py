"""`check-lesson FILE...`: the checks the window runs on a lesson before opening it, without a window."""

from __future__ import annotations

import argparse
import sys

from core.handouts.check import prediction_problems
from core.lesson_runs import lesson_run_problems
from core.lessons import lesson_problems, load_lesson

MAX_FILES = 1000  # lesson files checked in one run


def register(subparsers: argparse._SubParsersAction) -> None:
    check = subparsers.add_parser(
        "check-lesson",
        help="check lesson files: panels, parts, quotes and panel settings, one line per problem",
        description="Check each lesson file as the window does before opening it: its fields, the panel each step "
        "names, the parts it focuses, shows, covers or quotes with {{name}}, and its panel settings with their "
        "ranges. Then walk it without a window: each step's model, text and token edit, and on the Causal lab and "
        "Families the step's view computed from them (refused where the view would refuse), with no figure of its "
        "result typed into the prose instead of quoted, and each step's prediction computed and its written answer "
        "checked against the step's figures. Prints one line per problem naming the file and step, and "
        "exits 2 when there is any.",
    )
    check.add_argument("files", nargs="+", metavar="FILE", help="lesson files (.json)")
    check.set_defaults(run=run_check_lesson)


def run_check_lesson(args: argparse.Namespace) -> int:
    files = args.files
    if len(files) > MAX_FILES:
        print(f"check-lesson: error: at most {MAX_FILES:,} files at once, not {len(files):,}", file=sys.stderr)
        return 2
    failed = steps = 0
    for name in files:
        problems = lesson_problems(name)
        if not problems:
            lesson = load_lesson(name)
            problems = lesson_run_problems(lesson) + prediction_problems(lesson)
        if problems:
            failed += 1
            for problem in problems:
                print(f"{name}: {problem}")
        else:
            steps += len(load_lesson(name).steps)
    clean = len(files) - failed
    if failed:
        print(f"check-lesson: error: {failed} of {len(files)} lesson file(s) have problems (listed above)", file=sys.stderr)
        return 2
    print(f"{clean} lesson file(s) checked, {steps} step(s), no problems")
    return 0
